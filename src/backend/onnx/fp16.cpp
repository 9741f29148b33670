// Converting float32 weights and activations to float16: convert_to_fp16() (see graph.h).
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/proto_fields.h"

#include "backend/onnx/domain.h"
#include "backend/onnx/external_data.h"
#include "backend/onnx/graph_internal.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {

const std::vector<std::string> kFp16DefaultBlockList = {"ArrayFeatureExtractor",
                                                        "Binarizer",
                                                        "CastMap",
                                                        "CategoryMapper",
                                                        "DictVectorizer",
                                                        "FeatureVectorizer",
                                                        "Imputer",
                                                        "LabelEncoder",
                                                        "LinearClassifier",
                                                        "LinearRegressor",
                                                        "Normalizer",
                                                        "OneHotEncoder",
                                                        "SVMClassifier",
                                                        "SVMRegressor",
                                                        "Scaler",
                                                        "TreeEnsembleClassifier",
                                                        "TreeEnsembleRegressor",
                                                        "ZipMap",
                                                        "NonMaxSuppression",
                                                        "TopK",
                                                        "RoiAlign",
                                                        "Resize",
                                                        "Upsample",
                                                        "Range",
                                                        "CumSum",
                                                        "Min",
                                                        "Max",
                                                        "RandomNormal",
                                                        "RandomNormalLike",
                                                        "RandomUniform",
                                                        "RandomUniformLike",
                                                        "Multinomial",
                                                        "Bernoulli",
                                                        "QuantizeLinear",
                                                        "DequantizeLinear",
                                                        "DynamicQuantizeLinear",
                                                        "EyeLike"};

namespace {

constexpr int32_t kOnnxFloat = onnx::TensorProto::FLOAT;

void tensor_proto_to_half(onnx::TensorProto& proto, DataType target) {
    if (proto.data_type() != kOnnxFloat) return;
    Tensor half = tensor_from_proto(proto).cast(target);
    onnx::TensorProto converted = tensor_to_proto(half, proto.name());
    converted.set_doc_string(proto.doc_string());
    proto.Swap(&converted);
}

int32_t cast_target(const onnx::NodeProto& node) {
    for (const auto& attribute : node.attribute())
        if (attribute.name() == "to") return static_cast<int32_t>(attribute.i());
    return onnx::TensorProto::UNDEFINED;
}

// Removes the Casts of a converted graph that do nothing: a Cast to the type its input has, and a
// Cast back to 16 bits of a Cast that widened a 16-bit tensor to float32 (exact both ways). Their
// readers read the earlier tensor. `dtypes` are the float tensors' ONNX types after conversion;
// `keep` are names that must stay (graph outputs, reads of subgraph bodies). Returns how many went.
std::size_t remove_redundant_casts(onnx::GraphProto& graph, const std::unordered_map<std::string, int32_t>& dtypes,
                                   const std::unordered_set<std::string>& keep) {
    auto dtype_of = [&](const std::string& name) {
        const auto found = dtypes.find(name);
        return found == dtypes.end() ? int32_t{onnx::TensorProto::UNDEFINED} : found->second;
    };
    std::unordered_map<std::string, const onnx::NodeProto*> cast_producing;
    std::unordered_map<std::string, std::string> same_as;  // a removed Cast's output -> the tensor it equals
    auto resolve = [&](const std::string& name) {
        const auto found = same_as.find(name);
        return found == same_as.end() ? name : found->second;
    };
    std::vector<bool> removed(static_cast<std::size_t>(graph.node_size()), false);
    for (int n = 0; n < graph.node_size(); ++n) {
        onnx::NodeProto& node = *graph.mutable_node(n);
        for (auto& input : *node.mutable_input())
            if (!input.empty()) input = resolve(input);
        if (node.op_type() != "Cast" || !is_default_domain(node.domain()) || node.input_size() != 1 ||
            node.output_size() != 1)
            continue;
        const std::string& input = node.input(0);
        const std::string& output = node.output(0);
        const int32_t to = cast_target(node);
        std::optional<std::string> equal;
        if (dtype_of(input) == to && to != onnx::TensorProto::UNDEFINED) equal = input;
        if (const auto widening = cast_producing.find(input); !equal && widening != cast_producing.end()) {
            const std::string& source = widening->second->input(0);
            const int32_t source_dtype = dtype_of(source);
            const bool is_half =
                source_dtype == onnx::TensorProto::FLOAT16 || source_dtype == onnx::TensorProto::BFLOAT16;
            if (is_half && cast_target(*widening->second) == kOnnxFloat && to == source_dtype) equal = source;
        }
        if (equal && !keep.contains(output)) {
            same_as[output] = *equal;
            removed[static_cast<std::size_t>(n)] = true;
            continue;
        }
        cast_producing[output] = &node;
    }
    // Casts whose every reader now reads past them go too (never a graph output or a body's read).
    std::unordered_set<std::string> read(keep.begin(), keep.end());
    for (int n = 0; n < graph.node_size(); ++n)
        if (!removed[static_cast<std::size_t>(n)])
            for (const auto& name : node_reads(graph.node(n))) read.insert(name);
    std::size_t count = 0;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(graph.mutable_node());
    for (int n = 0; n < nodes.size(); ++n) {
        const onnx::NodeProto& node = nodes.Get(n);
        const bool unread_cast = node.op_type() == "Cast" && is_default_domain(node.domain()) &&
                                 node.output_size() == 1 && !read.contains(node.output(0));
        if (removed[static_cast<std::size_t>(n)] || unread_cast) {
            ++count;
            continue;
        }
        graph.mutable_node()->Add(std::move(*nodes.Mutable(n)));
    }
    return count;
}

}  // namespace

Fp16Stats convert_to_fp16(onnx::ModelProto& model, const Fp16Options& options) {
    const bool to_float64 = options.target == DataType::kFloat64;
    if (options.target != DataType::kFloat16 && options.target != DataType::kBFloat16 && !to_float64)
        throw UsageError("Converting float32: the target type is float16, bfloat16 or float64, not " +
                         std::string(dtype_name(options.target)));
    const int32_t kOnnxHalf = dtype_to_onnx(options.target);  // the target type ("half" for short)
    const std::string half_suffix = options.target == DataType::kFloat16    ? "_fp16"
                                    : options.target == DataType::kBFloat16 ? "_bf16"
                                                                            : "_fp64";
    // The Casts written below take `to` as an int, which Cast does from opset 6 (before, a string).
    if (const auto opset = imported_opset(model, ""); opset && *opset < 6)
        throw UnsupportedError(
            "Converting to float16 needs ai.onnx opset 6 or later (for Cast), but the model "
            "imports opset " +
            std::to_string(*opset));
    {
        std::unordered_set<std::string> named;
        for (const auto& node : model.graph().node()) named.insert(node.name());
        for (const auto& name : options.node_block_list)
            if (!named.contains(name))
                throw UsageError("The node block list names '" + name + "', which no node of the model has");
    }
    infer_shapes(model);
    onnx::GraphProto& graph = *model.mutable_graph();
    tag_node_origins(graph);  // before the Casts below, which come from no node of the model
    const auto types = known_types(graph);
    auto is_float32 = [&](const std::string& name) {
        auto found = types.find(name);
        return found != types.end() && found->second.dtype == DataType::kFloat32;
    };
    // float64 is the precise reference: every op computes in it except those ONNX keeps in float32.
    std::unordered_set<std::string> blocked_ops =
        to_float64 ? std::unordered_set<std::string>{"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
                   : std::unordered_set<std::string>(kFp16DefaultBlockList.begin(), kFp16DefaultBlockList.end());
    blocked_ops.insert(options.op_block_list.begin(), options.op_block_list.end());
    const std::unordered_set<std::string> blocked_nodes(options.node_block_list.begin(), options.node_block_list.end());
    auto blocked = [&](const onnx::NodeProto& node) {
        if (!is_default_domain(node.domain()) || has_subgraph(node) || blocked_ops.contains(node.op_type()) ||
            (!node.name().empty() && blocked_nodes.contains(node.name())))
            return true;
        // value_float(s) Constants produce float32 whatever happens: compute them in float32.
        if (node.op_type() == "Constant")
            for (const auto& attribute : node.attribute())
                if (attribute.name() != "value") return true;
        return false;
    };

    Fp16Stats stats;
    enum class Home { kFp32, kFp16 };
    std::unordered_map<std::string, Home> home;  // precision each float32 tensor has after conversion

    // Graph inputs and initializers.
    std::unordered_set<std::string> graph_inputs;
    for (auto& input : *graph.mutable_input()) {
        graph_inputs.insert(input.name());
        if (!is_float32(input.name())) continue;
        if (options.keep_io_types) {
            home[input.name()] = Home::kFp32;
        } else {
            input.mutable_type()->mutable_tensor_type()->set_elem_type(kOnnxHalf);
            home[input.name()] = Home::kFp16;
        }
    }
    std::unordered_map<std::string, std::size_t> fp16_consumers;
    for (const auto& node : graph.node())
        if (!blocked(node))
            for (const auto& input : node.input()) ++fp16_consumers[input];
    for (auto& initializer : *graph.mutable_initializer()) {
        if (initializer.data_type() != kOnnxFloat || graph_inputs.contains(initializer.name())) continue;
        if (fp16_consumers[initializer.name()] == 0) {
            home[initializer.name()] = Home::kFp32;
            continue;
        }
        if (initializer.data_location() == onnx::TensorProto::EXTERNAL && !is_checked_external(initializer)) {
            home[initializer.name()] = Home::kFp32;  // data not loaded: leave it, cast at run time
            continue;
        }
        tensor_proto_to_half(initializer, options.target);
        home[initializer.name()] = Home::kFp16;
        ++stats.initializers_converted;
    }

    // Tensors that must keep their name in float32: graph outputs (when I/O types are kept) and
    // outer-scope reads of subgraph bodies. Their fp16 producer writes "<name>_fp16" and a Cast
    // restores the original name.
    std::unordered_set<std::string> pinned;
    if (options.keep_io_types)
        for (const auto& output : graph.output()) pinned.insert(output.name());
    for (const auto& node : graph.node()) {
        if (!has_subgraph(node)) continue;
        const std::vector<std::string> refs = outer_scope_inputs(node);
        pinned.insert(refs.begin(), refs.end());
    }

    const std::vector<std::string> names = onnx_tensor_names(graph);
    std::unordered_set<std::string> taken(names.begin(), names.end());
    auto fresh_name = [&](const std::string& base) {
        std::string name = base;
        for (int i = 1; taken.contains(name); ++i) name = fmt::format("{}_{}", base, i);
        taken.insert(name);
        return name;
    };
    auto make_cast = [&](const std::string& from, const std::string& to, int32_t type) {
        onnx::NodeProto cast;
        cast.set_op_type("Cast");
        cast.set_name(fresh_name(to + "_cast"));
        cast.add_input(from);
        cast.add_output(to);
        auto* attribute = cast.add_attribute();
        attribute->set_name("to");
        attribute->set_type(onnx::AttributeProto::INT);
        attribute->set_i(type);
        ++stats.casts_inserted;
        return cast;
    };

    std::unordered_map<std::string, std::string> renamed;     // pinned fp16 tensor -> its fp16 name
    std::unordered_map<std::string, std::string> cast_of[2];  // tensor -> its cast to fp32 [0] / fp16 [1]
    google::protobuf::RepeatedPtrField<onnx::NodeProto> old_nodes;
    old_nodes.Swap(graph.mutable_node());
    for (auto& node : old_nodes) {
        const bool keep_fp32 = blocked(node);
        if (keep_fp32) ++stats.nodes_in_fp32;
        const Home want = keep_fp32 ? Home::kFp32 : Home::kFp16;
        for (auto& input : *node.mutable_input()) {
            if (input.empty()) continue;
            auto alias = renamed.find(input);
            const std::string source = alias != renamed.end() && want == Home::kFp16 ? alias->second : input;
            if (source != input) {
                input = source;
                continue;
            }
            auto found = home.find(input);
            if (found == home.end() || found->second == want) continue;
            auto& casts = cast_of[want == Home::kFp16 ? 1 : 0];
            auto existing = casts.find(input);
            if (existing == casts.end()) {
                const std::string name = fresh_name(input + (want == Home::kFp16 ? "_to" + half_suffix : "_to_fp32"));
                *graph.add_node() = make_cast(input, name, want == Home::kFp16 ? kOnnxHalf : kOnnxFloat);
                existing = casts.emplace(input, name).first;
                home[name] = want;
            }
            input = existing->second;
        }
        if (!keep_fp32) {
            const bool is_default = is_default_domain(node.domain());
            for (auto& attribute : *node.mutable_attribute()) {
                if (is_default && node.op_type() == "Cast" && attribute.name() == "to" && attribute.i() == kOnnxFloat)
                    attribute.set_i(kOnnxHalf);
                if (is_default && (node.op_type() == "Constant" || node.op_type() == "ConstantOfShape") &&
                    attribute.has_t())
                    tensor_proto_to_half(*attribute.mutable_t(), options.target);
            }
        }
        std::vector<std::pair<std::string, std::string>> restore;  // fp16 name -> pinned name
        for (auto& output : *node.mutable_output()) {
            if (output.empty() || !is_float32(output)) continue;
            home[output] = want;
            if (want == Home::kFp16 && pinned.contains(output)) {
                const std::string half = fresh_name(output + half_suffix);
                renamed[output] = half;
                restore.emplace_back(half, output);
                home[half] = Home::kFp16;
                home[output] = Home::kFp32;
                output = half;
            }
        }
        graph.mutable_node()->Add(std::move(node));
        for (const auto& [half, name] : restore) *graph.add_node() = make_cast(half, name, kOnnxFloat);
    }
    // Graph outputs that are graph inputs or initializers converted to fp16 (no producer node).
    if (options.keep_io_types) {
        for (auto& output : *graph.mutable_output()) {
            auto found = home.find(output.name());
            if (found == home.end() || found->second != Home::kFp16 || renamed.contains(output.name())) continue;
            for (auto& initializer : *graph.mutable_initializer()) {
                if (initializer.name() != output.name()) continue;
                const std::string half = fresh_name(output.name() + half_suffix);
                initializer.set_name(half);
                *graph.add_node() = make_cast(half, output.name(), kOnnxFloat);
                for (auto& node : *graph.mutable_node())
                    for (auto& input : *node.mutable_input())
                        if (input == output.name() && node.op_type() != "Cast") input = half;
            }
        }
    } else {
        for (auto& output : *graph.mutable_output()) {
            auto found = home.find(output.name());
            if (found != home.end() && found->second == Home::kFp16)
                output.mutable_type()->mutable_tensor_type()->set_elem_type(kOnnxHalf);
        }
    }
    for (auto& info : *graph.mutable_value_info()) {
        auto found = home.find(info.name());
        if (found != home.end() && found->second == Home::kFp16 && info.type().tensor_type().elem_type() == kOnnxFloat)
            info.mutable_type()->mutable_tensor_type()->set_elem_type(kOnnxHalf);
    }
    toposort(model);
    std::unordered_map<std::string, int32_t> dtypes;
    for (const auto& [name, precision] : home) dtypes[name] = precision == Home::kFp16 ? kOnnxHalf : kOnnxFloat;
    std::unordered_set<std::string> keep = pinned;
    for (const auto& output : graph.output()) keep.insert(output.name());
    stats.casts_removed = remove_redundant_casts(graph, dtypes, keep);
    logger().info(
        fmt::format("Converted to {}: {} initializer(s), {} node(s) kept in float32, {} Cast(s) inserted, {} removed",
                    dtype_name(options.target), stats.initializers_converted, stats.nodes_in_fp32, stats.casts_inserted,
                    stats.casts_removed));
    return stats;
}

Fp16BlockLists read_fp16_block_lists(const std::string& path) {
    const std::string text = read_file(path);
    json::Cursor cursor(text, path);
    Fp16BlockLists lists;
    auto read_names = [&](std::vector<std::string>& names) {
        if (cursor.read_null()) return;
        cursor.begin_array();
        while (cursor.next_element()) names.push_back(cursor.read_string());
    };
    cursor.begin_object();
    std::string scratch;
    while (const auto key = cursor.next_key(scratch)) {
        if (*key == "node_block_list")
            read_names(lists.node_block_list);
        else if (*key == "op_block_list")
            read_names(lists.op_block_list);
        else
            cursor.skip_value();
    }
    cursor.expect_end();
    return lists;
}

void save_fp16_block_lists(const Fp16BlockLists& lists, const std::string& path) {
    std::string text;
    {
        json::Writer writer(&text);
        writer.begin_object();
        for (const auto& [key, names] :
             {std::pair{"node_block_list", &lists.node_block_list}, std::pair{"op_block_list", &lists.op_block_list}}) {
            writer.key(key).begin_array();
            for (const auto& name : *names) writer.value(name);
            writer.end_array();
        }
        writer.end_object();
        writer.finish();
    }
    write_file_atomically(path, text + "\n");
}

}  // namespace polygraphy
