// The structural node check: every node's input and output counts, required names and attributes
// against its operator's signature, before anything reads a node by position. libonnx 1.12's shape
// inference functions crash on nodes that miss inputs, outputs or graph attributes (issue 33), and
// so would every pass that reads node.input(0).
#include "polygraphy/backend/onnx/node_check.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include "backend/onnx/domain.h"

namespace polygraphy {
namespace {

using Table = std::map<std::tuple<std::string, std::string, int>, OperatorSignature>;

OperatorSignature fixed(int inputs_min, int inputs_max, int outputs_min = 1, int outputs_max = 1,
                        std::vector<std::string> required = {}) {
    return OperatorSignature{inputs_min, inputs_max, outputs_min, outputs_max, std::move(required), {}};
}

// The standard operators that were added, or whose inputs or outputs changed, after opset 17 (the
// last libonnx 1.12 knows): their signatures as the ONNX specification states them. Operators that
// changed only in types or attributes' meaning keep libonnx's schema.
Table standard_signatures_after_libonnx() {
    Table table;
    const auto add = [&](const std::string& domain, const std::string& op_type, int since, OperatorSignature sig) {
        table[{domain, op_type, since}] = std::move(sig);
    };
    for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) add("", op, 18, fixed(2, 2));
    add("", "BitwiseNot", 18, fixed(1, 1));
    add("", "CenterCropPad", 18, fixed(2, 2));
    add("", "Col2Im", 18, fixed(3, 3));
    add("", "GroupNormalization", 18, fixed(3, 3, 1, 1, {"num_groups"}));
    add("", "Mish", 18, fixed(1, 1));
    add("", "OptionalHasElement", 18, fixed(0, 1));  // its input became optional
    add("", "Pad", 18, fixed(2, 4));                 // data, pads, constant_value, axes
    for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSumSquare"})
        add("", op, 18, fixed(1, 2));  // axes became an input
    add("", "DeformConv", 19, fixed(3, 5));
    add("", "AffineGrid", 20, fixed(2, 2));
    add("", "DFT", 20, fixed(1, 3));  // axis became an input
    add("", "Gelu", 20, fixed(1, 1));
    add("", "ImageDecoder", 20, fixed(1, 1));
    add("", "RegexFullMatch", 20, fixed(1, 1));
    add("", "StringConcat", 20, fixed(2, 2));
    add("", "StringSplit", 20, fixed(1, 1, 2, 2));
    add("", "RMSNormalization", 23, fixed(2, 2));
    add("", "RotaryEmbedding", 23, fixed(3, 4));
    add("", "Attention", 23, fixed(3, 6, 1, 4));
    add("ai.onnx.ml", "TreeEnsemble", 5, fixed(1, 1));
    return table;
}

// ONNX Runtime's contrib operators (com.microsoft) that the built-in runtime runs, as ONNX Runtime
// 1.30 declares their inputs and outputs (libonnx has no schema for them).
void add_onnx_runtime_contrib_signatures(Table& table) {
    const auto add = [&](const std::string& op_type, OperatorSignature sig) {
        table[{kMicrosoftDomain, op_type, 1}] = std::move(sig);
    };
    add("Gelu", fixed(1, 1));
    add("QuickGelu", fixed(1, 1));
    add("FastGelu", fixed(1, 2));  // X, optional bias
    add("BiasGelu", fixed(2, 2));  // A, bias B
    add("FusedMatMul", fixed(2, 2));
    add("FusedGemm", fixed(2, 3));  // A, B, optional C
    add("FusedConv", fixed(2, 4));  // X, W, optional B and Z
    // input, skip, gamma, beta, bias; output, mean, inv_std_var, input_skip_bias_sum
    add("SkipLayerNormalization", fixed(3, 5, 1, 4));
    add("SkipSimplifiedLayerNormalization", fixed(3, 4, 1, 4));          // input, skip, gamma, bias
    add("MatMulNBits", fixed(3, 6, 1, 1, {"K", "N", "block_size"}));     // A, B, scales, zero_points?, g_idx?, bias?
    // QOperator-format operators: each quantized tensor followed by its scale and optional zero point.
    const auto with_optional_inputs = [](int min_inputs, int max_inputs, std::vector<int> optional,
                                         std::vector<std::string> required = {}) {
        OperatorSignature sig = fixed(min_inputs, max_inputs, 1, 1, std::move(required));
        sig.optional_inputs = std::move(optional);
        return sig;
    };
    add("QLinearAdd", with_optional_inputs(7, 8, {2, 5}));
    add("QLinearMul", with_optional_inputs(7, 8, {2, 5}));
    add("QLinearSigmoid", with_optional_inputs(4, 5, {2}));
    add("QLinearLeakyRelu", with_optional_inputs(4, 5, {2}));
    add("QLinearSoftmax", with_optional_inputs(5, 5, {2}, {"opset"}));
    add("QLinearGlobalAveragePool", with_optional_inputs(4, 5, {2}));
    add("QLinearAveragePool", with_optional_inputs(4, 5, {2}, {"kernel_shape"}));
    add("QLinearConcat", fixed(5, OperatorSignature::kUnbounded, 1, 1, {"axis"}));
    add("QuantizeLinear", fixed(2, 3));         // x, y_scale, y_zero_point?
    add("DequantizeLinear", fixed(2, 3));       // x, x_scale, x_zero_point?
    add("MatMulIntegerToFloat", fixed(4, 7));   // A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?
    add("DynamicQuantizeMatMul", fixed(3, 5));  // A, B, b_scale, b_zero_point?, bias?
    // input_ids, segment_ids?, word/position/segment? embeddings, gamma, beta, mask?, position_ids?;
    // output, mask_index?, embedding_sum?
    add("EmbedLayerNormalization", with_optional_inputs(7, 9, {1, 4}));
    table[{kMicrosoftDomain, "EmbedLayerNormalization", 1}].max_outputs = 3;
    add("RotaryEmbedding", fixed(4, 4));  // input, position_ids, cos_cache, sin_cache
    // The attention operators (src/backend/ref/ops/attention.cpp).
    // input, weights, bias?, mask_index?, past?, attention_bias?, past_sequence_length?; output, present?
    add("Attention", fixed(2, 7, 1, 2, {"num_heads"}));
    // query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?, past_value?,
    // past_sequence_length?, cache_indirection?; output, present_key?, present_value?, qk?
    add("MultiHeadAttention", fixed(1, 10, 1, 4, {"num_heads"}));
    // query, key?, value?, past_key?, past_value?, seqlens_k, total_sequence_length, cos_cache?,
    // sin_cache?, position_ids?, attention_bias?, head_sink?, k_scale?, v_scale?, q_norm_weight?,
    // k_norm_weight?; output, present_key?, present_value?, output_qk?
    add("GroupQueryAttention", with_optional_inputs(7, 16, {1, 2, 3, 4}, {"num_heads", "kv_num_heads"}));
    table[{kMicrosoftDomain, "GroupQueryAttention", 1}].max_outputs = 4;
    table[{"", "SimplifiedLayerNormalization", 1}] = fixed(2, 2, 1, 2);  // X, scale; Y, inv_std_var
    // The channel-blocked operators of optimization level `all` (src/backend/ref/ops/nchwc.cpp).
    const std::string nchwc = "com.microsoft.nchwc";
    table[{nchwc, "ReorderInput", 1}] = fixed(1, 1);
    table[{nchwc, "ReorderOutput", 1}] = fixed(1, 1, 1, 1, {"channels"});
    table[{nchwc, "Conv", 1}] = fixed(2, 4);  // X, W, B?, Sum?
    for (const char* op : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "Upsample"})
        table[{nchwc, op, 1}] = fixed(1, 1);
}

Table known_signatures() {
    Table table = standard_signatures_after_libonnx();
    add_onnx_runtime_contrib_signatures(table);
    return table;
}

struct SignatureTable {
    std::mutex mutex;
    Table table = known_signatures();
};

SignatureTable& signature_table() {
    static SignatureTable instance;
    return instance;
}

// The declared signature with the highest since-version not above `opset`.
std::optional<std::pair<int, OperatorSignature>> declared_signature(const std::string& domain,
                                                                    const std::string& op_type, int64_t opset) {
    SignatureTable& table = signature_table();
    std::lock_guard<std::mutex> lock(table.mutex);
    std::optional<std::pair<int, OperatorSignature>> best;
    for (auto it = table.table.lower_bound({domain, op_type, 0});
         it != table.table.end() && std::get<0>(it->first) == domain && std::get<1>(it->first) == op_type; ++it) {
        const int since = std::get<2>(it->first);
        if (since <= opset) best = std::make_pair(since, it->second);
    }
    return best;
}

// What a node is checked against: libonnx's schema, or a declared signature.
struct Signature {
    int min_inputs = 0, max_inputs = 0, min_outputs = 0, max_outputs = 0;
    const onnx::OpSchema* schema = nullptr;       // null for a declared signature
    const OperatorSignature* declared = nullptr;  // null for a schema
};

std::string count_range(int low, int high) {
    if (low == high) return fmt::format("exactly {}", low);
    if (high >= OperatorSignature::kUnbounded || high == std::numeric_limits<int>::max())
        return fmt::format("at least {}", low);
    return fmt::format("{} to {}", low, high);
}

std::string plural(int count, const char* noun) {
    if (count == 0) return fmt::format("no {}s", noun);
    return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

// protobuf's name of the enum value: "FLOAT", "GRAPH", ...
std::string attribute_type_name(int type) {
    return onnx::AttributeProto::AttributeType_IsValid(type)
               ? onnx::AttributeProto::AttributeType_Name(static_cast<onnx::AttributeProto::AttributeType>(type))
               : std::string("UNDEFINED");
}

using OpsetImports = std::unordered_map<std::string, int64_t>;

class SignatureChecker {
public:
    explicit SignatureChecker(const onnx::ModelProto& model) : model_(model) {
        const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
        for (const auto& [domain, range] : ranges) libonnx_max_[domain] = range.second;
        for (const auto& function : model.functions())
            functions_.emplace(function.domain() + "\n" + function.name(), &function);
    }

    std::vector<NodeProblem> run() {
        OpsetImports imports;
        for (const auto& import : model_.opset_import())
            imports[std::string(canonical_domain(import.domain()))] = import.version();
        check_graph(model_.graph(), imports, "");
        top_level_ = -1;
        for (const auto& function : model_.functions()) {
            OpsetImports own = imports;
            for (const auto& import : function.opset_import())
                own[std::string(canonical_domain(import.domain()))] = import.version();
            check_nodes(function.node(), own, "function " + function.name());
        }
        return std::move(problems_);
    }

private:
    void check_graph(const onnx::GraphProto& graph, const OpsetImports& imports, const std::string& where) {
        // Models built in code can nest without the parser's limit; the check must not exhaust the stack.
        if (depth_ >= kMaxSubgraphDepth) {
            problems_.push_back(NodeProblem{
                where, "", "", "", 0, fmt::format("subgraphs are nested deeper than {} levels", kMaxSubgraphDepth),
                top_level_, top_level_ < 0 ? std::string() : top_level_name_});
            return;
        }
        ++depth_;
        check_nodes(graph.node(), imports, where);
        --depth_;
    }

    void check_nodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, const OpsetImports& imports,
                     const std::string& where) {
        for (int i = 0; i < nodes.size(); ++i) {
            const onnx::NodeProto& node = nodes.Get(i);
            const std::string name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
            if (where.empty()) {
                top_level_ = i;
                top_level_name_ = name;
            }
            check_node(node, name, imports, where);
            for (const auto& attribute : node.attribute()) {
                const std::string inner = (where.empty() ? "" : where + "/") + name + "/" + attribute.name();
                if (attribute.has_g()) check_graph(attribute.g(), imports, inner);
                for (const auto& subgraph : attribute.graphs()) check_graph(subgraph, imports, inner);
            }
        }
    }

    void report(const onnx::NodeProto& node, const std::string& name, int64_t opset, const std::string& where,
                std::string what) {
        problems_.push_back(NodeProblem{where, name, node.op_type(), display_domain(node.domain()), opset,
                                        std::move(what), top_level_, top_level_ < 0 ? std::string() : top_level_name_});
    }

    void check_node(const onnx::NodeProto& node, const std::string& name, const OpsetImports& imports,
                    const std::string& where) {
        const std::string domain(canonical_domain(node.domain()));
        const auto imported = imports.find(domain);
        const int64_t opset = imported != imports.end() ? imported->second : kOpsetOfUnimportedDomain;
        const auto problem = [&](std::string what) { report(node, name, opset, where, std::move(what)); };

        if (node.op_type().empty()) {
            problem("it has no operator type");
            return;
        }
        if (auto function = functions_.find(node.domain() + "\n" + node.op_type()); function != functions_.end()) {
            check_function_call(node, *function->second, imports, problem);
            return;
        }

        std::optional<std::pair<int, OperatorSignature>> declared = declared_signature(domain, node.op_type(), opset);
        const onnx::OpSchema* schema = nullptr;
        if (libonnx_max_.count(domain) && opset <= std::numeric_limits<int>::max())
            schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), domain);
        // An ONNX operator used below its first opset (or at an invalid opset such as 0) has no schema
        // there, but the passes still see its op type: check it against its newest signature.
        if (!schema && !declared && libonnx_max_.count(domain))
            schema = onnx::OpSchemaRegistry::Schema(node.op_type(), std::numeric_limits<int>::max(), domain);
        Signature signature;
        if (declared && (!schema || declared->first > schema->since_version())) {
            signature = Signature{declared->second.min_inputs,
                                  declared->second.max_inputs,
                                  declared->second.min_outputs,
                                  declared->second.max_outputs,
                                  nullptr,
                                  &declared->second};
        } else if (schema) {
            signature = Signature{
                schema->min_input(), schema->max_input(), schema->min_output(), schema->max_output(), schema, nullptr};
        } else {
            return;  // no signature known: a custom operator, or one this opset lacks (the runtime says so)
        }

        const int inputs = node.input_size(), outputs = node.output_size();
        const std::string& op = node.op_type();
        // Schemas whose outputs are all optional (GRU, LSTM) allow none, but such a node computes
        // nothing, and passes take a node's first output as what it computes.
        signature.min_outputs = std::max(signature.min_outputs, 1);
        if (inputs < signature.min_inputs || inputs > signature.max_inputs) {
            problem(fmt::format("it has {}, but {} takes {}", plural(inputs, "input"), op,
                                count_range(signature.min_inputs, signature.max_inputs)));
        }
        if (outputs < signature.min_outputs || outputs > signature.max_outputs) {
            problem(fmt::format("it has {}, but {} gives {}", plural(outputs, "output"), op,
                                count_range(signature.min_outputs, signature.max_outputs)));
        }

        for (int i = 0; i < std::min(inputs, signature.max_inputs); ++i)
            if (node.input(i).empty() && !may_be_absent(signature, i, true))
                problem(fmt::format("input {} of {} is required, but its name is empty", i, op));
        for (int i = 0; i < std::min(outputs, signature.max_outputs); ++i)
            if (node.output(i).empty() && !may_be_absent(signature, i, false))
                problem(fmt::format("output {} of {} is required, but its name is empty", i, op));

        check_attributes(node, signature, problem);
    }

    // Whether input (or output) `index` is optional, so that an empty name marks it absent.
    static bool may_be_absent(const Signature& signature, int index, bool input) {
        if (signature.declared) {
            if (!input) return index >= signature.declared->min_outputs;
            if (index >= signature.declared->min_inputs) return true;
            const auto& optional = signature.declared->optional_inputs;
            return std::find(optional.begin(), optional.end(), index) != optional.end();
        }
        const auto& formal = input ? signature.schema->inputs() : signature.schema->outputs();
        if (formal.empty()) return false;
        const auto& parameter = formal[std::min<std::size_t>(static_cast<std::size_t>(index), formal.size() - 1)];
        return parameter.GetOption() == onnx::OpSchema::Optional;
    }

    template <typename Problem>
    static void check_attributes(const onnx::NodeProto& node, const Signature& signature, const Problem& problem) {
        std::unordered_map<std::string, const onnx::AttributeProto*> present;
        for (const auto& attribute : node.attribute()) {
            if (attribute.name().empty()) {
                problem("it has an attribute without a name");
                continue;
            }
            present.emplace(attribute.name(), &attribute);
            const bool referenced = !attribute.ref_attr_name().empty();  // a function body's attribute reference
            if (!referenced && attribute.type() == onnx::AttributeProto::GRAPH && !attribute.has_g())
                problem(fmt::format("attribute '{}' is a GRAPH, but holds no graph", attribute.name()));
        }
        const auto lacks = [&](const std::string& name) {
            problem(fmt::format("it lacks the required attribute '{}' of {}", name, node.op_type()));
        };
        if (signature.declared) {
            for (const auto& name : signature.declared->required_attributes)
                if (!present.count(name)) lacks(name);
            return;
        }
        for (const auto& [name, declared] : signature.schema->attributes()) {
            auto found = present.find(name);
            if (found == present.end()) {
                if (declared.required) lacks(name);
                continue;
            }
            const onnx::AttributeProto& attribute = *found->second;
            if (attribute.type() == onnx::AttributeProto::UNDEFINED) {
                if (declared.type == onnx::AttributeProto::GRAPH && !attribute.has_g())
                    problem(
                        fmt::format("attribute '{}' of {} must hold a graph, but holds none", name, node.op_type()));
                continue;
            }
            if (attribute.type() != declared.type)
                problem(fmt::format("attribute '{}' is {}, but {} takes {}", name,
                                    attribute_type_name(attribute.type()), node.op_type(),
                                    attribute_type_name(declared.type)));
        }
    }

    template <typename Problem>
    void check_function_call(const onnx::NodeProto& node, const onnx::FunctionProto& function,
                             const OpsetImports& imports, const Problem& problem) {
        if (node.input_size() > function.input_size())
            problem(fmt::format("it has {}, but the local function {} declares {}", plural(node.input_size(), "input"),
                                function.name(), plural(function.input_size(), "input")));
        if (node.output_size() > function.output_size())
            problem(fmt::format("it has {}, but the local function {} declares {}",
                                plural(node.output_size(), "output"), function.name(),
                                plural(function.output_size(), "output")));
        if (node.output_size() == 0) problem("it has no outputs");
        check_omitted_function_inputs(node, function, imports, problem);
    }

    // A call may leave out inputs (fewer, or empty names), which inlining binds to "", and
    // attributes its function's body refers to, which inlining drops; a body node
    // that requires one is malformed in this call. Checked here, at load, rather than by the pass
    // that inlines.
    template <typename Problem>
    void check_omitted_function_inputs(const onnx::NodeProto& call, const onnx::FunctionProto& function,
                                       const OpsetImports& imports, const Problem& problem) {
        std::vector<int> omitted;
        for (int i = 0; i < function.input_size(); ++i)
            if (i >= call.input_size() || call.input(i).empty()) omitted.push_back(i);
        std::set<std::string> given;
        for (const auto& attribute : call.attribute()) given.insert(attribute.name());
        std::set<std::string> unbound;
        for (const auto& body : function.node())
            for (const auto& attribute : body.attribute())
                if (!attribute.ref_attr_name().empty() && !given.contains(attribute.ref_attr_name()))
                    unbound.insert(attribute.ref_attr_name());
        if (omitted.empty() && unbound.empty()) return;
        for (const std::string& what : problems_from_omitting(function, omitted, unbound, imports)) problem(what);
    }

    // What binding the inputs `omitted` (positions) of `function` to "" and dropping the attributes
    // that refer to `unbound` breaks in its body, each as one line. Computed once per function and
    // what is left out: calls of calls would otherwise be followed once per path, and a function may
    // (wrongly) call itself.
    std::vector<std::string> problems_from_omitting(const onnx::FunctionProto& function,
                                                    const std::vector<int>& omitted,
                                                    const std::set<std::string>& unbound, const OpsetImports& imports) {
        std::string key = function.domain() + "\n" + function.name();
        for (int i : omitted) {
            key += '\n';
            key += std::to_string(i);
        }
        for (const std::string& attribute : unbound) {
            key += "\n@";
            key += attribute;
        }
        if (auto known = omission_results_.find(key); known != omission_results_.end()) return known->second;
        omission_results_[key] = {};  // while it is computed: a call of itself adds nothing
        std::unordered_set<std::string> names;
        for (int i : omitted) names.insert(function.input(i));
        OpsetImports own = imports;
        for (const auto& import : function.opset_import())
            own[std::string(canonical_domain(import.domain()))] = import.version();
        std::vector<std::string> found;
        for (int i = 0; i < function.node_size(); ++i) {
            const onnx::NodeProto& body = function.node(i);
            const bool reads_omitted = std::any_of(body.input().begin(), body.input().end(),
                                                   [&](const std::string& input) { return names.contains(input); });
            const bool refers_unbound =
                std::any_of(body.attribute().begin(), body.attribute().end(), [&](const onnx::AttributeProto& a) {
                    return !a.ref_attr_name().empty() && unbound.contains(a.ref_attr_name());
                });
            if (!reads_omitted && !refers_unbound) continue;
            onnx::NodeProto bound = body;
            for (auto& input : *bound.mutable_input())
                if (names.contains(input)) input.clear();
            auto* attributes = bound.mutable_attribute();
            for (int k = attributes->size() - 1; k >= 0; --k)
                if (!attributes->at(k).ref_attr_name().empty() && unbound.contains(attributes->at(k).ref_attr_name()))
                    attributes->DeleteSubrange(k, 1);
            const std::string name = body.name().empty() ? fmt::format("{}_{}", body.op_type(), i) : body.name();
            // Only what binding adds: the body's own problems are reported with the function.
            const std::vector<std::string> as_written = problems_of(body, name, own, function);
            for (const std::string& what : problems_of(bound, name, own, function))
                if (std::find(as_written.begin(), as_written.end(), what) == as_written.end())
                    found.push_back(
                        fmt::format("it leaves out inputs or attributes of the local function {}, so its node '{}' is "
                                    "malformed: {}",
                                    function.name(), name, what));
        }
        omission_results_[key] = found;
        return found;
    }

    std::vector<std::string> problems_of(const onnx::NodeProto& node, const std::string& name,
                                         const OpsetImports& imports, const onnx::FunctionProto& function) {
        const auto before = static_cast<std::ptrdiff_t>(problems_.size());
        check_node(node, name, imports, "function " + function.name());
        std::vector<std::string> found;
        for (auto it = problems_.begin() + before; it != problems_.end(); ++it) found.push_back(it->what);
        problems_.erase(problems_.begin() + before, problems_.end());
        return found;
    }

    const onnx::ModelProto& model_;
    std::unordered_map<std::string, int> libonnx_max_;
    std::unordered_map<std::string, const onnx::FunctionProto*> functions_;
    std::unordered_map<std::string, std::vector<std::string>> omission_results_;  // problems_from_omitting
    std::vector<NodeProblem> problems_;
    static constexpr int kMaxSubgraphDepth = 64;
    int depth_ = 0;               // graphs entered
    int top_level_ = -1;          // the main graph's node being checked
    std::string top_level_name_;  // its name
};

std::string first_problem_and_count(const std::vector<NodeProblem>& problems) {
    if (problems.empty()) return "MalformedNodeError without problems";
    std::string text = problems.front().message();
    if (problems.size() > 1)
        text += fmt::format(" (and {} more problem{}; `polygraphy check lint` lists them all)", problems.size() - 1,
                            problems.size() == 2 ? "" : "s");
    return text;
}

}  // namespace

std::string NodeProblem::message() const {
    if (node.empty()) return "Malformed model: " + what + (graph.empty() ? "" : " (in '" + graph + "')");
    std::string text = fmt::format("Malformed node '{}' ({}, {} opset {})", node, op_type, domain, opset);
    if (!graph.empty()) text += graph.rfind("function ", 0) == 0 ? " in " + graph : " in the subgraph '" + graph + "'";
    return text + ": " + what;
}

MalformedNodeError::MalformedNodeError(std::vector<NodeProblem> problems)
    : ModelError(first_problem_and_count(problems)), problems_(std::move(problems)) {}

std::vector<NodeProblem> find_node_problems(const onnx::ModelProto& model) {
    return SignatureChecker(model).run();
}

void check_nodes(const onnx::ModelProto& model) {
    std::vector<NodeProblem> problems = find_node_problems(model);
    if (!problems.empty()) throw MalformedNodeError(std::move(problems));
}

void declare_operator_signature(const std::string& domain, const std::string& op_type, int since_version,
                                OperatorSignature signature) {
    SignatureTable& table = signature_table();
    std::lock_guard<std::mutex> lock(table.mutex);
    table.table[{std::string(canonical_domain(domain)), op_type, since_version}] = std::move(signature);
}

}  // namespace polygraphy
