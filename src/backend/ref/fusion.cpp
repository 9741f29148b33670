#include "backend/ref/fusion.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "backend/onnx/domain.h"
#include "backend/ref/fused_ops.h"
#include "backend/ref/graph_constants.h"

namespace polygraphy::ref {

namespace {

bool is_runtime_op(const onnx::NodeProto& node, std::string_view op) {
    return node.domain() == kRuntimeDomain && node.op_type() == op;
}

}  // namespace

std::vector<bool> fuse_activations(std::vector<onnx::NodeProto>& nodes,
                                   std::vector<std::vector<std::string>>& node_inputs, const onnx::GraphProto& graph,
                                   int64_t default_opset) {
    // Every read of a value, one entry per occurrence (Mul(x, x) reads x twice).
    std::unordered_map<std::string, std::vector<std::size_t>> readers;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        for (const auto& name : node_inputs[i])
            if (!name.empty()) readers[name].push_back(i);
    std::unordered_map<std::string, int> producers;  // a name made twice is reported by the session: leave it
    for (const auto& node : nodes)
        for (const auto& output : node.output()) ++producers[output];
    std::unordered_set<std::string> graph_outputs;
    for (const auto& output : graph.output()) graph_outputs.insert(output.name());
    const GraphConstants constants(graph, nodes);

    auto only_reader = [&](const std::string& name) -> std::optional<std::size_t> {
        auto found = readers.find(name);
        if (found == readers.end() || found->second.size() != 1 || graph_outputs.contains(name)) return std::nullopt;
        return found->second.front();
    };
    // Only well-formed nodes (what their kernels accept) are folded, so that folding never hides a
    // node the session would have refused.
    auto op_is = [&](std::size_t index, std::string_view op) {
        const onnx::NodeProto& node = nodes[index];
        const int max_inputs = op == "Clip" ? 3 : (op == "Mul" || op == "Add" || op == "Div") ? 2 : 1;
        return is_default_domain(node.domain()) && node.op_type() == op && node.input_size() >= 1 &&
               node.input_size() <= max_inputs && node.output_size() == 1;
    };
    // The operand of binary node `index` that is not `x`; empty unless the node reads x exactly once.
    auto other_operand = [&](std::size_t index, const std::string& x) -> std::string {
        const onnx::NodeProto& node = nodes[index];
        if (node.input_size() != 2 || (node.input(0) == x) == (node.input(1) == x)) return "";
        return node.input(0) == x ? node.input(1) : node.input(0);
    };
    auto is_scalar = [&](const std::string& name, float value) {
        const std::optional<float> constant = constants.scalar(name);
        return constant && std::abs(*constant - value) <= 1e-6f * std::abs(value);
    };
    // Dims of a constant whose type is one of `types`.
    auto constant_dims = [&](const std::string& name,
                             std::initializer_list<int32_t> types) -> std::optional<std::vector<int64_t>> {
        const auto found = constants.type_and_dims(name);
        if (!found || std::find(types.begin(), types.end(), found->first) == types.end()) return std::nullopt;
        return found->second;
    };
    // The readers of a producer's single output, when nothing else (a graph output, a second
    // producer) stands in the way of folding them.
    auto foldable_readers = [&](const onnx::NodeProto& producer) -> const std::vector<std::size_t>* {
        if (producer.output_size() != 1 || producer.output(0).empty()) return nullptr;
        const std::string& y = producer.output(0);
        if (graph_outputs.contains(y) || producers[y] != 1) return nullptr;
        const auto found = readers.find(y);
        return found == readers.end() ? nullptr : &found->second;
    };

    std::vector<bool> removed(nodes.size(), false);
    // The producer takes the output of the last absorbed node, and the absorbed nodes go.
    auto absorb = [&](std::size_t producer, const std::vector<std::size_t>& absorbed) {
        const onnx::NodeProto& last = nodes[absorbed.back()];
        if (last.output_size() < 1 || last.output(0).empty() || producers[last.output(0)] != 1) return false;
        nodes[producer].set_output(0, last.output(0));
        for (std::size_t index : absorbed) removed[index] = true;
        return true;
    };

    // A float32 rank-0 constant that is finite and not zero (a rank-1 [1] could change the rank of a
    // MatMul output of rank 0).
    auto scale_constant = [&](const std::string& name) -> std::optional<float> {
        const auto dims = constant_dims(name, {onnx::TensorProto::FLOAT});
        if (!dims || !dims->empty()) return std::nullopt;
        const std::optional<float> value = constants.scalar(name);
        if (!value || !std::isfinite(*value) || *value == 0.0f) return std::nullopt;
        return value;
    };
    // The factor by which node `index` (a Div or Mul reading `x` once) scales x, when the other
    // operand is a scale_constant (a Div's divisor only).
    auto scale_of = [&](std::size_t index, const std::string& x) -> std::optional<float> {
        if (op_is(index, "Div") && nodes[index].input_size() == 2 && nodes[index].input(0) == x &&
            nodes[index].input(1) != x) {
            const std::optional<float> divisor = scale_constant(nodes[index].input(1));
            if (divisor) return 1.0f / *divisor;
            return std::nullopt;
        }
        if (!op_is(index, "Mul")) return std::nullopt;
        const std::string other = other_operand(index, x);
        return other.empty() ? std::nullopt : scale_constant(other);
    };

    // Attention's scaling, as ONNX Runtime's MatMulScaleFusion folds it: MatMul(a, b) / s (BERT) or
    // MatMul(a / s, b) (ViT), Mul by a constant alike, for a MatMul whose B is computed (a MatMul
    // with constant weights takes the bias and activation folds below instead).
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        onnx::NodeProto& matmul = nodes[i];
        if (!is_default_domain(matmul.domain()) || matmul.op_type() != "MatMul" || matmul.input_size() != 2 ||
            matmul.output_size() != 1 || constants.type_and_dims(matmul.input(1)))
            continue;
        float factor = 1.0f;
        bool folded = false;
        // The A side: a Div or Mul whose output only this MatMul reads.
        const std::string a = matmul.input(0);
        const auto a_producer =
            std::find_if(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(i),
                         [&](const onnx::NodeProto& node) { return node.output_size() == 1 && node.output(0) == a; });
        const std::size_t p = static_cast<std::size_t>(a_producer - nodes.begin());
        if (!a.empty() && p < i && !removed[p] && producers[a] == 1 && only_reader(a) == i && matmul.input(1) != a &&
            nodes[p].input_size() == 2) {
            const std::string& x = nodes[p].input(0);
            const std::optional<float> input_scale = scale_of(p, x);
            const std::string& x_other = nodes[p].input(1);
            const std::optional<float> swapped = op_is(p, "Mul") ? scale_of(p, x_other) : std::nullopt;
            const std::string source = input_scale ? x : (swapped ? x_other : std::string());
            if (!source.empty()) {
                factor *= input_scale ? *input_scale : *swapped;
                matmul.set_input(0, source);
                node_inputs[i][0] = source;
                std::replace(readers[source].begin(), readers[source].end(), p, i);
                removed[p] = true;
                folded = true;
            }
        }
        // The output side: the MatMul's only reader.
        const std::vector<std::size_t>* uses = foldable_readers(matmul);
        if (uses && uses->size() == 1 && !removed[uses->front()]) {
            const std::optional<float> output_scale = scale_of(uses->front(), matmul.output(0));
            if (output_scale && absorb(i, {uses->front()})) {
                factor *= *output_scale;
                folded = true;
            }
        }
        if (folded) {  // ONNX Runtime's FusedMatMul without transposes
            set_operator(matmul, kMicrosoftDomain, "FusedMatMul");
            set_float_attr(matmul, kAlphaAttr, factor);
        }
    }

    // MatMul(x, W) + b, as exporters write a Linear layer: W a float32 matrix, b a float32 [N].
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        onnx::NodeProto& matmul = nodes[i];
        if (!is_default_domain(matmul.domain()) || matmul.op_type() != "MatMul" || matmul.input_size() != 2) continue;
        const auto weight = constant_dims(matmul.input(1), {onnx::TensorProto::FLOAT});
        const std::vector<std::size_t>* uses = foldable_readers(matmul);
        if (!weight || weight->size() != 2 || !uses || uses->size() != 1 || !op_is(uses->front(), "Add")) continue;
        const std::string bias = other_operand(uses->front(), matmul.output(0));
        const auto bias_dims = bias.empty() ? std::nullopt : constant_dims(bias, {onnx::TensorProto::FLOAT});
        if (!bias_dims || *bias_dims != std::vector<int64_t>{weight->back()} || !absorb(i, {uses->front()})) continue;
        matmul.add_input(bias);
        node_inputs[i].push_back(bias);
        set_operator(matmul, kRuntimeDomain, "FusedMatMul");
    }

    // Conv(x, W[, B]) + r, a residual connection (ResNet, MobileNetV2): r becomes the Conv's fourth
    // input (B stays "" when absent), and the activation pass below may then fold what reads the sum.
    // Add broadcasts numpy-style from opset 7 on (before, its 'broadcast' and 'axis' attributes rule).
    for (std::size_t i = 0; i < nodes.size() && default_opset >= 7; ++i) {
        onnx::NodeProto& conv = nodes[i];
        if (removed[i] || !is_default_domain(conv.domain()) || conv.op_type() != "Conv" || conv.input_size() < 2 ||
            conv.input_size() > 3)
            continue;
        const std::vector<std::size_t>* uses = foldable_readers(conv);
        if (!uses || uses->size() != 1 || removed[uses->front()] || !op_is(uses->front(), "Add")) continue;
        const std::size_t add = uses->front();
        const std::string residual = other_operand(add, conv.output(0));
        if (residual.empty() || !absorb(i, {add})) continue;
        if (conv.input_size() == 2) {
            conv.add_input("");
            node_inputs[i].push_back("");
        }
        conv.add_input(residual);
        node_inputs[i].push_back(residual);
        // The Conv now reads r where the Add did (r may be another Conv's output, still to be visited).
        std::replace(readers[residual].begin(), readers[residual].end(), add, i);
        // Not ONNX Runtime's FusedConv: its Z may not broadcast, and r's shape is not known here.
        set_operator(conv, kRuntimeDomain, "FusedConv");
    }

    const std::initializer_list<int32_t> float_types = {onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT16,
                                                        onnx::TensorProto::BFLOAT16};
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        onnx::NodeProto& producer = nodes[i];
        const bool standard = is_default_domain(producer.domain());
        // A bias or residual was folded already (the runtime's FusedMatMul or FusedConv, no activation yet).
        const bool fused = (is_runtime_op(producer, "FusedConv") || is_runtime_op(producer, "FusedMatMul")) &&
                           !find_attr(producer, kActivationAttr);
        if (removed[i] || (!standard && !fused)) continue;
        const std::string op = fused ? producer.op_type().substr(5) : producer.op_type();
        // A MatMul or Gemm applies an activation to float products only: its weight says the type.
        const bool takes_activation = op == "Conv" || op == "ConvTranspose" ||
                                      ((op == "MatMul" || op == "Gemm") && producer.input_size() >= 2 &&
                                       constant_dims(producer.input(1), float_types));
        const std::vector<std::size_t>* found = takes_activation ? foldable_readers(producer) : nullptr;
        if (!found) continue;
        const std::vector<std::size_t>& uses = *found;
        const std::string& y = producer.output(0);

        // The activation: its kind, Clip's bounds, and its nodes (the last one's output replaces y).
        std::string kind;
        float bounds[2] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
        std::vector<std::size_t> absorbed;
        if (uses.size() == 1 && op_is(uses[0], "Relu") && nodes[uses[0]].input(0) == y) {
            kind = "Relu";
            absorbed = {uses[0]};
        } else if (uses.size() == 1 && op_is(uses[0], "Gelu") && default_opset >= 20 && nodes[uses[0]].input(0) == y) {
            const auto* approximate = find_attr(nodes[uses[0]], "approximate");
            if (approximate && approximate->s() != "none") continue;  // the tanh form is not the erf one
            kind = "Gelu";
            absorbed = {uses[0]};
        } else if (uses.size() == 1 && op_is(uses[0], "Clip") && nodes[uses[0]].input(0) == y) {
            // As the Clip kernel reads its bounds: inputs 1 and 2 since opset 11 (absent: unbounded);
            // before, attributes min/max (absent: the float range, so infinities are clipped to it).
            const onnx::NodeProto& clip = nodes[uses[0]];
            bool known = true;
            for (int k = 0; k < 2; ++k) {
                if (default_opset >= 11) {
                    if (clip.input_size() <= k + 1 || clip.input(k + 1).empty()) continue;
                    const std::optional<float> bound = constants.scalar(clip.input(k + 1));
                    known = known && bound && !std::isnan(*bound);
                    if (bound) bounds[k] = *bound;
                } else {
                    const auto* attr = find_attr(clip, k == 0 ? "min" : "max");
                    bounds[k] =
                        attr ? attr->f()
                             : (k == 0 ? std::numeric_limits<float>::lowest() : std::numeric_limits<float>::max());
                }
            }
            if (!known) continue;
            kind = "Clip";
            absorbed = {uses[0]};
        } else if (uses.size() == 2 && uses[0] != uses[1] && (op_is(uses[0], "Sigmoid") || op_is(uses[1], "Sigmoid"))) {
            // SiLU: y read by Sigmoid and by a Mul whose other input is that Sigmoid's output only.
            const std::size_t sigmoid = op_is(uses[0], "Sigmoid") ? uses[0] : uses[1];
            const std::size_t mul = sigmoid == uses[0] ? uses[1] : uses[0];
            if (!op_is(mul, "Mul") || nodes[sigmoid].output_size() != 1) continue;
            const std::string& s = nodes[sigmoid].output(0);
            if (s.empty() || only_reader(s) != mul || other_operand(mul, y) != s) continue;
            kind = "Silu";
            absorbed = {sigmoid, mul};
        } else if (uses.size() == 2 && uses[0] != uses[1]) {
            // GELU as torch exports it: Mul(Mul(y, Add(Erf(Div(y, sqrt(2))), 1)), 0.5), operands of
            // Add and Mul in either order.
            const std::size_t div = op_is(uses[0], "Div") ? uses[0] : uses[1];
            const std::size_t mul = div == uses[0] ? uses[1] : uses[0];
            if (!op_is(div, "Div") || !op_is(mul, "Mul") || nodes[div].input_size() != 2 || nodes[div].input(0) != y ||
                !is_scalar(nodes[div].input(1), static_cast<float>(M_SQRT2)))
                continue;
            const std::optional<std::size_t> erf = only_reader(nodes[div].output(0));
            if (!erf || !op_is(*erf, "Erf")) continue;
            const std::optional<std::size_t> add = only_reader(nodes[*erf].output(0));
            if (!add || !op_is(*add, "Add") || !is_scalar(other_operand(*add, nodes[*erf].output(0)), 1.0f)) continue;
            if (only_reader(nodes[*add].output(0)) != mul || other_operand(mul, y) != nodes[*add].output(0)) continue;
            const std::optional<std::size_t> half = only_reader(nodes[mul].output(0));
            if (!half || !op_is(*half, "Mul") || !is_scalar(other_operand(*half, nodes[mul].output(0)), 0.5f)) continue;
            kind = "Gelu";
            absorbed = {div, *erf, *add, mul, *half};
        } else {
            continue;
        }
        if (!absorb(i, absorbed)) continue;
        // ONNX Runtime's operator where it has one of this meaning, else the runtime's own.
        const bool relu_or_clip = kind == "Relu" || kind == "Clip";
        if (standard && op == "Conv" && relu_or_clip)
            set_operator(producer, kMicrosoftDomain, "FusedConv");
        else if (standard && op == "Gemm" && kind == "Relu")
            set_operator(producer, kMicrosoftDomain, "FusedGemm");
        else
            set_operator(producer, kRuntimeDomain, "Fused" + op);
        set_string_attr(producer, kActivationAttr, kind);
        if (kind == "Clip") set_floats_attr(producer, kActivationParamsAttr, {bounds[0], bounds[1]});
    }
    return removed;
}
}  // namespace polygraphy::ref
