#include "polygraphy/backend/onnx/shard.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/onnx/graph_internal.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/backend/onnx/pattern.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/name_match.h"

namespace polygraphy {

const std::vector<std::string> kShardReduceOps = {"sum", "prod", "min", "max", "avg"};

namespace {

// ---- the hints file ------------------------------------------------------------------------------

// Reads Polygraphy's JSON encoding of ShardHints: every field its decoder reads must be present
// (ShardTensor's rank may be missing), objects may carry their "polygraphy_class".
class HintsReader {
public:
    HintsReader(std::string_view text, const std::string& source) : cursor_(text, source) {}

    ShardHints read() {
        ShardHints hints;
        std::set<std::string> seen;
        begin_object("the hints file", "ShardHints");
        std::string scratch;
        while (auto key = cursor_.next_key(scratch)) {
            const std::string field(*key);
            if (!seen.insert(field).second) fail("\"" + field + "\" appears twice");
            if (field == "polygraphy_class") {
                read_class("ShardHints");
            } else if (field == "parallelism") {
                hints.parallelism = read_string(field);
            } else if (field == "group_size") {
                hints.group_size = read_count(field);
            } else if (field == "root") {
                hints.root = read_count(field);
            } else if (field == "groups") {
                expect(json::Cursor::Type::kArray, field);
                cursor_.begin_array();
                while (cursor_.next_element()) hints.groups.push_back(read_count("groups (each)"));
            } else if (field == "attention_layers") {
                expect(json::Cursor::Type::kArray, field);
                cursor_.begin_array();
                while (cursor_.next_element()) hints.attention_layers.push_back(read_layer());
            } else if (field == "inputs" || field == "outputs") {
                expect(json::Cursor::Type::kArray, field);
                std::vector<ShardTensor>& tensors = field == "inputs" ? hints.inputs : hints.outputs;
                cursor_.begin_array();
                while (cursor_.next_element()) tensors.push_back(read_tensor(field));
            } else if (field == "k_seq_len_idx") {
                hints.k_seq_len_idx = read_count(field);
            } else if (field == "v_seq_len_idx") {
                hints.v_seq_len_idx = read_count(field);
            } else if (field == "kv_rank") {
                hints.kv_rank = read_optional_count(field);
            } else if (field == "reduce_scatter_reduce_op") {
                hints.reduce_scatter_reduce_op = read_string(field);
            } else {
                fail("unknown field \"" + field + "\" in ShardHints");
            }
        }
        cursor_.expect_end();
        for (const char* field : {"parallelism", "group_size", "root", "groups", "attention_layers", "inputs",
                                  "outputs", "k_seq_len_idx", "v_seq_len_idx", "kv_rank", "reduce_scatter_reduce_op"})
            if (!seen.count(field)) fail(std::string("ShardHints has no \"") + field + "\"");
        if (hints.parallelism != "CP")
            fail("parallelism \"" + hints.parallelism + "\" is not supported: only \"CP\" (context parallelism) is");
        if (std::find(kShardReduceOps.begin(), kShardReduceOps.end(), hints.reduce_scatter_reduce_op) ==
            kShardReduceOps.end())
            fail("reduce_scatter_reduce_op \"" + hints.reduce_scatter_reduce_op +
                 "\" is not one of sum, prod, min, max, avg");
        return hints;
    }

private:
    [[noreturn]] void fail(const std::string& problem) const { throw FormatError(cursor_.source() + ": " + problem); }

    void expect(json::Cursor::Type type, const std::string& what) {
        const json::Cursor::Type found = cursor_.peek();
        if (found != type)
            fail("\"" + what + "\" must be " + json::Cursor::type_name(type) + ", not " +
                 json::Cursor::type_name(found));
    }
    void begin_object(const std::string& what, const std::string& cls) {
        if (cursor_.peek() != json::Cursor::Type::kObject)
            fail(what + " must be an object (a " + cls + "), not " + json::Cursor::type_name(cursor_.peek()));
        cursor_.begin_object();
    }
    void read_class(const std::string& expected) {
        const std::string found = read_string("polygraphy_class");
        if (found != expected) fail("polygraphy_class \"" + found + "\" where a " + expected + " is expected");
    }
    std::string read_string(const std::string& what) {
        expect(json::Cursor::Type::kString, what);
        return cursor_.read_string();
    }
    bool read_bool(const std::string& what) {
        expect(json::Cursor::Type::kBool, what);
        return cursor_.read_bool();
    }
    // A whole number of 0 or more (ranks, indices, sizes).
    int64_t read_count(const std::string& what) {
        expect(json::Cursor::Type::kNumber, what);
        const double value = cursor_.read_number();
        if (!(value >= 0) || value != std::floor(value) || value > 1e15)
            fail("\"" + what + "\" must be a whole number of 0 or more, not " + json::format_float(value));
        return static_cast<int64_t>(value);
    }
    std::optional<int64_t> read_optional_count(const std::string& what) {
        if (cursor_.read_null()) return std::nullopt;
        return read_count(what);
    }

    AttentionLayerHint read_layer() {
        AttentionLayerHint layer;
        std::set<std::string> seen;
        begin_object("each of \"attention_layers\"", "AttentionLayerHint");
        std::string scratch;
        while (auto key = cursor_.next_key(scratch)) {
            const std::string field(*key);
            if (!seen.insert(field).second) fail("\"" + field + "\" appears twice in an attention layer");
            if (field == "polygraphy_class")
                read_class("AttentionLayerHint");
            else if (field == "q")
                layer.q = read_string("q");
            else if (field == "gather_kv")
                layer.gather_kv = read_bool("gather_kv");
            else if (field == "gather_q")
                layer.gather_q = read_bool("gather_q");
            else
                fail("unknown field \"" + field + "\" in an AttentionLayerHint");
        }
        for (const char* field : {"q", "gather_kv", "gather_q"})
            if (!seen.count(field)) fail(std::string("an AttentionLayerHint has no \"") + field + "\"");
        return layer;
    }

    ShardTensor read_tensor(const std::string& list) {
        ShardTensor tensor;
        std::set<std::string> seen;
        begin_object("each of \"" + list + "\"", "ShardTensor");
        std::string scratch;
        while (auto key = cursor_.next_key(scratch)) {
            const std::string field(*key);
            if (!seen.insert(field).second) fail("\"" + field + "\" appears twice in a ShardTensor");
            if (field == "polygraphy_class")
                read_class("ShardTensor");
            else if (field == "name")
                tensor.name = read_string("name");
            else if (field == "seq_len_idx")
                tensor.seq_len_idx = read_count("seq_len_idx");
            else if (field == "rank")
                tensor.rank = read_optional_count("rank");
            else
                fail("unknown field \"" + field + "\" in a ShardTensor");
        }
        for (const char* field : {"name", "seq_len_idx"})
            if (!seen.count(field)) fail("a ShardTensor of \"" + list + "\" has no \"" + field + "\"");
        return tensor;
    }

    json::Cursor cursor_;
};

void write_optional(json::Writer& writer, const std::optional<int64_t>& value) {
    if (value)
        writer.value(*value);
    else
        writer.null();
}

void write_tensors(json::Writer& writer, const std::string& key, const std::vector<ShardTensor>& tensors) {
    writer.key(key).begin_array();
    for (const ShardTensor& tensor : tensors) {
        writer.begin_object().key("name").value(tensor.name).key("seq_len_idx").value(tensor.seq_len_idx);
        writer.key("rank");
        write_optional(writer, tensor.rank);
        writer.key("polygraphy_class").value("ShardTensor").end_object();
    }
    writer.end_array();
}

// ---- the graph -----------------------------------------------------------------------------------

bool is_default_op(const onnx::NodeProto& node, const char* op, int inputs) {
    return node.op_type() == op && is_default_domain(node.domain()) && node.input_size() == inputs &&
           node.output_size() == 1 && !node.output(0).empty();
}

// Readers of every tensor (subgraph bodies' outer-scope reads included), and the graph outputs.
struct Readers {
    std::unordered_map<std::string, std::vector<std::size_t>> by_tensor;
    std::unordered_set<std::string> graph_outputs;

    explicit Readers(const onnx::GraphProto& graph) {
        for (int i = 0; i < graph.node_size(); ++i)
            for (const std::string& name : node_reads(graph.node(i)))
                by_tensor[name].push_back(static_cast<std::size_t>(i));
        for (const auto& output : graph.output()) graph_outputs.insert(output.name());
    }
    // Whether exactly one node, `reader`, reads `tensor`, and it is no graph output.
    bool only_reader(const std::string& tensor, std::size_t reader) const {
        const auto found = by_tensor.find(tensor);
        return found != by_tensor.end() && found->second == std::vector<std::size_t>{reader} &&
               !graph_outputs.count(tensor);
    }
};

std::optional<int64_t> declared_rank(const std::unordered_map<std::string, MetadataEntry>& types,
                                     const std::string& name) {
    const auto found = types.find(name);
    // A rank-0 declaration counts as unknown, as in Polygraphy (`len(shape) if shape else fallback`).
    if (found == types.end() || !found->second.shape || found->second.shape->empty()) return std::nullopt;
    return static_cast<int64_t>(found->second.shape->size());
}

// The index of the dim named "sequence_length" or "seq_len", else `fallback`.
int64_t guess_seq_len_idx(const std::unordered_map<std::string, MetadataEntry>& types, const std::string& name,
                          int64_t fallback) {
    const auto found = types.find(name);
    if (found == types.end() || !found->second.shape) return fallback;
    const DynShape& shape = *found->second.shape;
    for (std::size_t i = 0; i < shape.size(); ++i)
        if (shape[i].param == "sequence_length" || shape[i].param == "seq_len") return static_cast<int64_t>(i);
    return fallback;
}

// Polygraphy's GraphTraverser: the graph inputs a node depends on and the graph outputs that depend
// on it. Nodes visited for one layer are not visited again, and each terminal tensor is found once.
class DependencyWalker {
public:
    explicit DependencyWalker(const onnx::GraphProto& graph) : graph_(graph) {
        std::unordered_set<std::string> initializers;
        for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
        for (const auto& input : graph.input())
            if (!initializers.count(input.name())) inputs_.insert(input.name());
        for (const auto& output : graph.output()) outputs_.insert(output.name());
        for (int i = 0; i < graph.node_size(); ++i) {
            const auto index = static_cast<std::size_t>(i);
            for (const auto& name : graph.node(i).input()) readers_[name].push_back(index);
            for (const auto& name : graph.node(i).output()) producers_[name].push_back(index);
        }
    }

    std::vector<std::string> inputs_of(std::size_t node) {
        return walk(node, true, inputs_, producers_, visited_upstream_);
    }
    std::vector<std::string> outputs_of(std::size_t node) {
        return walk(node, false, outputs_, readers_, visited_downstream_);
    }

private:
    using Relatives = std::unordered_map<std::string, std::vector<std::size_t>>;

    std::vector<std::string> walk(std::size_t start, bool upstream, const std::unordered_set<std::string>& terminal,
                                  const Relatives& relatives, std::unordered_set<std::size_t>& visited) {
        std::vector<std::string> found;
        std::vector<std::size_t> stack = {start};
        while (!stack.empty()) {
            const std::size_t current = stack.back();
            stack.pop_back();
            if (!visited.insert(current).second) continue;
            const onnx::NodeProto& node = graph_.node(static_cast<int>(current));
            const auto& edges = upstream ? node.input() : node.output();
            for (const std::string& tensor : edges) {
                if (terminal.count(tensor) && !reached_.count(tensor)) {
                    reached_.insert(tensor);
                    found.push_back(tensor);
                } else if (const auto next = relatives.find(tensor); next != relatives.end()) {
                    for (std::size_t relative : next->second)
                        if (!visited.count(relative)) stack.push_back(relative);
                }
            }
        }
        return found;
    }

    const onnx::GraphProto& graph_;
    std::unordered_set<std::string> inputs_, outputs_;
    Relatives readers_, producers_;
    std::unordered_set<std::size_t> visited_upstream_, visited_downstream_;
    std::unordered_set<std::string> reached_;
};

// `names` in the order `order` lists them.
std::vector<std::string> in_order_of(std::vector<std::string> names, const std::vector<std::string>& order) {
    std::unordered_map<std::string, std::size_t> position;
    for (std::size_t i = 0; i < order.size(); ++i) position.emplace(order[i], i);
    std::sort(names.begin(), names.end(),
              [&](const std::string& a, const std::string& b) { return position[a] < position[b]; });
    return names;
}

void check_choice(const std::string& value, const std::vector<std::string>& choices, const std::string& flag) {
    if (std::find(choices.begin(), choices.end(), value) != choices.end()) return;
    std::string listed;
    for (const std::string& choice : choices) listed += (listed.empty() ? "" : ", ") + choice;
    throw UsageError(flag + ": '" + value + "' is not one of " + listed);
}

// ---- sharding ------------------------------------------------------------------------------------

class Sharder {
public:
    Sharder(onnx::ModelProto& model, const ShardHints& hints)
        : model_(model), graph_(*model.mutable_graph()), hints_(hints), types_(known_types(model.graph())) {
        for (const std::string& name : onnx_tensor_names(graph_)) tensor_names_.insert(name);
        for (const auto& node : graph_.node()) node_names_.insert(node.name());
        for (const auto& info : graph_.value_info()) value_infos_.emplace(info.name(), info.type());
        for (const auto& info : graph_.input()) value_infos_.emplace(info.name(), info.type());
        for (const auto& info : graph_.output()) value_infos_.emplace(info.name(), info.type());
        original_nodes_ = static_cast<std::size_t>(graph_.node_size());
    }

    ShardStats run() {
        const std::vector<std::pair<AttentionLayerHint, AttentionLayer>> layers = pair_layers();
        check_tensors(hints_.inputs, "inputs");
        check_tensors(hints_.outputs, "outputs");

        for (const ShardTensor& input : hints_.inputs) reduce_scatter(input.name, input.seq_len_idx, input.rank);

        bool gathered_q = false;
        std::set<std::string> gathered;
        for (const auto& [hint, layer] : layers) {
            // The layer's tensors as they are named now (a reduce-scatter renamed what its readers read).
            const std::string q = graph_.node(static_cast<int>(layer.first_matmul)).input(0);
            const std::string k = graph_.node(static_cast<int>(layer.first_matmul)).input(1);
            const std::string v = graph_.node(static_cast<int>(layer.second_matmul)).input(1);
            const struct {
                std::string tensor;
                int64_t seq_len_idx;
                std::optional<int64_t> rank;
                bool wanted;
            } candidates[] = {{q, 0, std::nullopt, hint.gather_q},
                              {k, hints_.k_seq_len_idx, hints_.kv_rank, hint.gather_kv},
                              {v, hints_.v_seq_len_idx, hints_.kv_rank, hint.gather_kv}};
            for (const auto& candidate : candidates) {
                if (!candidate.wanted || !gathered.insert(candidate.tensor).second) continue;
                // Gathering Q (also as K or V) makes the model single-device from there on.
                if (candidate.tensor == q) gathered_q = true;
                all_gather(candidate.tensor, candidate.seq_len_idx, candidate.rank);
            }
        }
        if (!gathered_q)
            for (const ShardTensor& output : hints_.outputs)
                if (gathered.insert(output.name).second) all_gather(output.name, output.seq_len_idx, output.rank);

        reorder();
        cleanup(model_);
        toposort(model_);
        return stats_;
    }

private:
    // Each hinted layer with the first attention layer whose Q it names.
    std::vector<std::pair<AttentionLayerHint, AttentionLayer>> pair_layers() const {
        const std::vector<AttentionLayer> found = find_attention_layers(model_);
        std::vector<std::string> candidates;
        for (const AttentionLayer& layer : found) candidates.push_back(layer.q);
        std::vector<std::pair<AttentionLayerHint, AttentionLayer>> layers;
        std::set<std::string> seen;
        for (const AttentionLayerHint& hint : hints_.attention_layers) {
            if (!seen.insert(hint.q).second)
                throw ModelError("the hints list the attention layer with q '" + hint.q + "' twice");
            const auto match = std::find_if(found.begin(), found.end(),
                                            [&](const AttentionLayer& layer) { return layer.q == hint.q; });
            if (match == found.end()) {
                const std::optional<std::string> close = closest_match(hint.q, candidates);
                throw ModelError("the hints name q '" + hint.q +
                                 "', which no attention layer (MatMul -> Softmax -> MatMul) reads as its Q" +
                                 (close           ? " (did you mean '" + *close + "'?)"
                                  : found.empty() ? " (the model has no attention layer)"
                                                  : ""));
            }
            layers.emplace_back(hint, *match);
        }
        return layers;
    }

    void check_tensors(const std::vector<ShardTensor>& tensors, const std::string& list) const {
        std::set<std::string> seen;
        for (const ShardTensor& tensor : tensors) {
            if (!tensor_names_.count(tensor.name)) {
                const std::optional<std::string> close =
                    closest_match(tensor.name, std::vector<std::string>(tensor_names_.begin(), tensor_names_.end()));
                throw ModelError("the hints name '" + tensor.name + "' in \"" + list +
                                 "\", which is not a tensor of the model" +
                                 (close ? " (did you mean '" + *close + "'?)" : ""));
            }
            if (!seen.insert(tensor.name).second)
                throw ModelError("the hints list '" + tensor.name + "' twice in \"" + list + "\"");
        }
    }

    std::string unique_tensor_name(const std::string& base) {
        std::string name = base;
        for (int k = 1; tensor_names_.count(name); ++k) name = base + "_" + std::to_string(k);
        tensor_names_.insert(name);
        return name;
    }

    std::string next_collective_name() {
        std::string name;
        do name = "DistCollective_" + std::to_string(collective_count_++);
        while (node_names_.count(name));
        node_names_.insert(name);
        return name;
    }

    void declare_like(const std::string& name, const std::string& like, bool with_shape) {
        const auto found = value_infos_.find(like);
        if (found == value_infos_.end() || !found->second.has_tensor_type()) return;
        onnx::ValueInfoProto* info = graph_.add_value_info();
        info->set_name(name);
        onnx::TypeProto type = found->second;
        if (!with_shape) type.mutable_tensor_type()->clear_shape();
        *info->mutable_type() = type;
        value_infos_.emplace(name, type);
    }

    // The declared rank (a tensor this rewrite added has the type of the one it stands for).
    std::optional<int64_t> rank_of(const std::string& name) const {
        const auto found = value_infos_.find(name);
        if (found != value_infos_.end() && found->second.has_tensor_type() && found->second.tensor_type().has_shape() &&
            found->second.tensor_type().shape().dim_size() > 0)
            return found->second.tensor_type().shape().dim_size();
        return declared_rank(types_, name);
    }

    onnx::NodeProto& add_collective(const std::string& operation, const std::string& reduce_op,
                                    const std::string& input, const std::string& output) {
        onnx::NodeProto& node = *graph_.add_node();
        node.set_name(next_collective_name());
        node.set_op_type("DistCollective");
        node.add_input(input);
        node.add_output(output);
        *node.add_attribute() = attribute_from_pattern_value("collective_operation", operation);
        *node.add_attribute() = attribute_from_pattern_value("reduce_op", reduce_op);
        *node.add_attribute() = attribute_from_pattern_value("root", hints_.root);
        *node.add_attribute() = attribute_from_pattern_value("group_size", hints_.group_size);
        *node.add_attribute() = attribute_from_pattern_value("groups", hints_.groups);
        collectives_.push_back(static_cast<std::size_t>(graph_.node_size() - 1));
        return node;
    }

    // T -> DistCollective(reduce_scatter) -> T_md, read where T was read.
    void reduce_scatter(const std::string& tensor, int64_t seq_len_idx, std::optional<int64_t> rank) {
        const std::string sharded = unique_tensor_name(tensor + "_md");
        for (auto& node : *graph_.mutable_node())
            for (auto& input : *node.mutable_input())
                if (input == tensor) input = sharded;
        declare_like(sharded, tensor, true);
        const int index = graph_.node_size();
        add_collective("reduce_scatter", hints_.reduce_scatter_reduce_op, tensor, sharded);
        ++stats_.reduce_scatters;
        if (seq_len_idx != 0) transpose_around(index, tensor, seq_len_idx, rank);
    }

    // The producer of T writes T_md; DistCollective(all_gather) turns it back into T.
    void all_gather(const std::string& tensor, int64_t seq_len_idx, std::optional<int64_t> rank) {
        const std::string local = unique_tensor_name(tensor + "_md");
        bool produced = false;
        for (auto& node : *graph_.mutable_node())
            for (auto& output : *node.mutable_output())
                if (output == tensor) {
                    output = local;
                    produced = true;
                }
        if (!produced)
            throw ModelError("the hints all-gather '" + tensor +
                             "', which no node computes (a graph input the hints do not reduce-scatter, or a "
                             "weight)");
        declare_like(local, tensor, true);
        const int index = graph_.node_size();
        add_collective("all_gather", "sum", local, tensor);
        ++stats_.all_gathers;
        if (seq_len_idx != 0) transpose_around(index, tensor, seq_len_idx, rank);
    }

    // Transposes swapping dims 0 and `seq_len_idx` before and after the collective at `index`, so
    // that it works on the sequence dimension. `tensor` is the hinted tensor, whose rank it keeps.
    void transpose_around(int index, const std::string& tensor, int64_t seq_len_idx, std::optional<int64_t> rank) {
        const std::string collective = graph_.node(index).name();
        std::optional<int64_t> size = rank_of(tensor);
        if (!size) size = rank;
        if (!size)
            throw ModelError(fmt::format(
                "the hints give '{}' sequence index {}, but its rank is unknown: give its rank in the hints, or "
                "infer shapes (--shape-inference)",
                tensor, seq_len_idx));
        if (seq_len_idx >= *size)
            throw ModelError(fmt::format("the hints give '{1}' sequence index {0}, out of range for its rank {2} ({3})",
                                         seq_len_idx, tensor, *size, collective));
        std::vector<int64_t> perm(static_cast<std::size_t>(*size));
        for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::swap(perm[0], perm[static_cast<std::size_t>(seq_len_idx)]);

        const std::string before = unique_tensor_name("TensorPre_" + collective);
        const std::string after = unique_tensor_name("TensorPost_" + collective);
        onnx::NodeProto pre, post;
        pre.set_name("TransposePre_" + collective);
        pre.set_op_type("Transpose");
        pre.add_input(graph_.node(index).input(0));
        pre.add_output(before);
        *pre.add_attribute() = attribute_from_pattern_value("perm", perm);
        post.set_name("TransposePost_" + collective);
        post.set_op_type("Transpose");
        post.add_input(after);
        post.add_output(graph_.node(index).output(0));
        *post.add_attribute() = attribute_from_pattern_value("perm", perm);
        graph_.mutable_node(index)->set_input(0, before);
        graph_.mutable_node(index)->set_output(0, after);
        declare_like(before, tensor, false);
        declare_like(after, tensor, false);
        for (onnx::NodeProto* node : {&pre, &post}) {
            *graph_.add_node() = std::move(*node);
            transposes_.push_back(static_cast<std::size_t>(graph_.node_size() - 1));
        }
        stats_.transposes += 2;
    }

    // Polygraphy's node order before its toposort: the collectives first (newest first), then the
    // model's nodes, then the transposes.
    void reorder() {
        std::vector<std::size_t> order(collectives_.rbegin(), collectives_.rend());
        for (std::size_t i = 0; i < original_nodes_; ++i) order.push_back(i);
        order.insert(order.end(), transposes_.begin(), transposes_.end());
        google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
        for (std::size_t index : order) *nodes.Add() = std::move(*graph_.mutable_node(static_cast<int>(index)));
        graph_.mutable_node()->Swap(&nodes);
    }

    onnx::ModelProto& model_;
    onnx::GraphProto& graph_;
    const ShardHints& hints_;
    const std::unordered_map<std::string, MetadataEntry> types_;
    std::set<std::string> tensor_names_;
    std::set<std::string> node_names_;
    std::map<std::string, onnx::TypeProto> value_infos_;
    std::size_t original_nodes_ = 0;
    std::vector<std::size_t> collectives_, transposes_;
    int collective_count_ = 0;
    ShardStats stats_;
};

}  // namespace

ShardHints shard_hints_from_json(std::string_view text, const std::string& source) {
    return HintsReader(text, source).read();
}

std::string shard_hints_to_json(const ShardHints& hints) {
    std::string text;
    json::Writer writer(&text);
    writer.begin_object();
    writer.key("parallelism").value(hints.parallelism);
    writer.key("group_size").value(hints.group_size);
    writer.key("root").value(hints.root);
    writer.key("groups").begin_array();
    for (int64_t group : hints.groups) writer.value(group);
    writer.end_array();
    writer.key("attention_layers").begin_array();
    for (const AttentionLayerHint& layer : hints.attention_layers)
        writer.begin_object()
            .key("q")
            .value(layer.q)
            .key("gather_kv")
            .value(layer.gather_kv)
            .key("gather_q")
            .value(layer.gather_q)
            .key("polygraphy_class")
            .value("AttentionLayerHint")
            .end_object();
    writer.end_array();
    write_tensors(writer, "inputs", hints.inputs);
    write_tensors(writer, "outputs", hints.outputs);
    writer.key("k_seq_len_idx").value(hints.k_seq_len_idx);
    writer.key("v_seq_len_idx").value(hints.v_seq_len_idx);
    writer.key("kv_rank");
    write_optional(writer, hints.kv_rank);
    writer.key("reduce_scatter_reduce_op").value(hints.reduce_scatter_reduce_op);
    writer.key("polygraphy_class").value("ShardHints").end_object();
    writer.finish();
    return text;
}

std::vector<AttentionLayer> find_attention_layers(const onnx::ModelProto& model) {
    const onnx::GraphProto& graph = model.graph();
    const Readers readers(graph);
    std::unordered_map<std::string, std::size_t> producer;
    for (int i = 0; i < graph.node_size(); ++i)
        for (const auto& output : graph.node(i).output()) producer.emplace(output, static_cast<std::size_t>(i));

    std::vector<AttentionLayer> layers;
    for (int s = 0; s < graph.node_size(); ++s) {
        const auto softmax = static_cast<std::size_t>(s);
        const onnx::NodeProto& node = graph.node(s);
        if (!is_default_op(node, "Softmax", 1)) continue;
        const auto first = producer.find(node.input(0));
        if (first == producer.end()) continue;
        const onnx::NodeProto& first_matmul = graph.node(static_cast<int>(first->second));
        if (!is_default_op(first_matmul, "MatMul", 2) || !readers.only_reader(node.input(0), softmax)) continue;
        const auto second = readers.by_tensor.find(node.output(0));
        if (second == readers.by_tensor.end() || second->second.size() != 1 ||
            readers.graph_outputs.count(node.output(0)))
            continue;
        const onnx::NodeProto& second_matmul = graph.node(static_cast<int>(second->second[0]));
        if (!is_default_op(second_matmul, "MatMul", 2) || second_matmul.input(0) != node.output(0)) continue;
        layers.push_back(AttentionLayer{first_matmul.input(0), first_matmul.input(1), second_matmul.input(1),
                                        first->second, softmax, second->second[0]});
    }
    return layers;
}

ShardHints suggest_shard_hints(const onnx::ModelProto& model, const ShardHintOptions& options) {
    check_choice(options.parallelism, {"CP"}, "--parallelism");
    check_choice(options.cp_type, {"native", "ring_attention", "fused"}, "--cp-type");
    check_choice(options.scatter_op, kShardReduceOps, "--scatter-op");
    const auto types = known_types(model.graph());
    DependencyWalker walker(model.graph());
    std::vector<std::string> input_order, output_order;
    for (const auto& input : model.graph().input()) input_order.push_back(input.name());
    for (const auto& output : model.graph().output()) output_order.push_back(output.name());

    ShardHints hints;
    hints.parallelism = options.parallelism;
    hints.group_size = options.gpus;
    hints.root = options.root;
    hints.groups = options.groups;
    hints.k_seq_len_idx = options.k_seq_len_idx;
    hints.v_seq_len_idx = options.v_seq_len_idx;
    hints.reduce_scatter_reduce_op = options.scatter_op;
    const auto to_shard_tensors = [&](const std::vector<std::string>& names, int64_t seq_len_idx,
                                      const std::optional<int64_t>& rank, std::vector<ShardTensor>& into) {
        for (const std::string& name : names) {
            const std::optional<int64_t> declared = declared_rank(types, name);
            into.push_back(ShardTensor{name, guess_seq_len_idx(types, name, seq_len_idx), declared ? declared : rank});
        }
    };
    std::optional<int64_t> kv_rank;
    for (const AttentionLayer& layer : find_attention_layers(model)) {
        if (!kv_rank) {
            // K and V have the same rank: whichever declares one, else the option's.
            kv_rank = declared_rank(types, layer.k);
            if (!kv_rank) kv_rank = declared_rank(types, layer.v);
            if (!kv_rank) kv_rank = options.kv_rank;
        }
        if (options.suggest_io) {
            to_shard_tensors(in_order_of(walker.inputs_of(layer.second_matmul), input_order), options.input_seq_len_idx,
                             options.input_rank, hints.inputs);
            to_shard_tensors(in_order_of(walker.outputs_of(layer.second_matmul), output_order),
                             options.output_seq_len_idx, options.output_rank, hints.outputs);
        }
        hints.attention_layers.push_back(AttentionLayerHint{layer.q, options.cp_type == "native", false});
    }
    hints.kv_rank = kv_rank ? kv_rank : options.kv_rank;
    return hints;
}

ShardStats shard_model(onnx::ModelProto& model, const ShardHints& hints) {
    return Sharder(model, hints).run();
}

}  // namespace polygraphy
