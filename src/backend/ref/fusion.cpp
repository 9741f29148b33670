#include "backend/ref/fusion.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "backend/onnx/domain.h"
#include "backend/ref/ops/families.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::ref {
namespace {

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
    for (const auto& attr : node.attribute())
        if (attr.name() == name) return &attr;
    return nullptr;
}

// The float32 scalars the graph fixes before running: initializers that are not also graph inputs
// (those can be fed) and Constant nodes. What cannot be read is left out, so it is never fused.
class ConstantScalars {
public:
    ConstantScalars(const onnx::GraphProto& graph, const std::vector<onnx::NodeProto>& nodes) {
        std::unordered_set<std::string> inputs;
        for (const auto& input : graph.input()) inputs.insert(input.name());
        for (const auto& initializer : graph.initializer())
            if (!inputs.contains(initializer.name())) protos_[initializer.name()] = &initializer;
        for (const auto& node : nodes) {
            if (!is_default_domain(node.domain()) || node.op_type() != "Constant" || node.output_size() != 1) continue;
            if (const auto* value = find_attr(node, "value"); value && value->has_t())
                protos_[node.output(0)] = &value->t();
            else if (const auto* number = find_attr(node, "value_float"))
                floats_[node.output(0)] = number->f();
        }
    }

    std::optional<float> get(const std::string& name) const {
        if (auto found = floats_.find(name); found != floats_.end()) return found->second;
        auto found = protos_.find(name);
        if (found == protos_.end()) return std::nullopt;
        try {
            const Tensor tensor = tensor_from_proto(*found->second);
            if (tensor.dtype() != DataType::kFloat32 || tensor.numel() != 1) return std::nullopt;
            return tensor.data_as<float>()[0];
        } catch (const PolygraphyException&) {
            return std::nullopt;  // session preparation reports a broken initializer itself
        }
    }

private:
    std::unordered_map<std::string, const onnx::TensorProto*> protos_;
    std::unordered_map<std::string, float> floats_;
};

void set_string_attr(onnx::NodeProto& node, std::string_view name, const std::string& value) {
    auto* attr = node.add_attribute();
    attr->set_name(std::string(name));
    attr->set_type(onnx::AttributeProto::STRING);
    attr->set_s(value);
}

void set_float_attr(onnx::NodeProto& node, std::string_view name, float value) {
    auto* attr = node.add_attribute();
    attr->set_name(std::string(name));
    attr->set_type(onnx::AttributeProto::FLOAT);
    attr->set_f(value);
}

}  // namespace

std::vector<bool> fuse_activations(std::vector<onnx::NodeProto>& nodes,
                                   const std::vector<std::vector<std::string>>& node_inputs,
                                   const onnx::GraphProto& graph, int64_t default_opset) {
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
    const ConstantScalars constants(graph, nodes);

    auto only_reader = [&](const std::string& name) -> std::optional<std::size_t> {
        auto found = readers.find(name);
        if (found == readers.end() || found->second.size() != 1 || graph_outputs.contains(name)) return std::nullopt;
        return found->second.front();
    };
    // Only well-formed activations (what their kernels accept) are folded, so that folding never
    // hides a node the session would have refused.
    auto op_is = [&](std::size_t index, const char* op) {
        const onnx::NodeProto& node = nodes[index];
        const int max_inputs = std::string_view(op) == "Clip" ? 3 : std::string_view(op) == "Mul" ? 2 : 1;
        return is_default_domain(node.domain()) && node.op_type() == op && node.input_size() >= 1 &&
               node.input_size() <= max_inputs && node.output_size() == 1;
    };

    std::vector<bool> removed(nodes.size(), false);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        onnx::NodeProto& conv = nodes[i];
        if (removed[i] || !is_default_domain(conv.domain()) || (conv.op_type() != "Conv" && conv.op_type() != "ConvTranspose") ||
            conv.output_size() != 1 || conv.output(0).empty() || find_attr(conv, std::string(kFusedActivationAttr)))
            continue;
        const std::string& y = conv.output(0);
        if (graph_outputs.contains(y) || producers[y] != 1) continue;
        const auto found = readers.find(y);
        if (found == readers.end()) continue;
        const std::vector<std::size_t>& uses = found->second;

        // The activation: its kind, Clip's bounds, and its nodes (the last one's output replaces y).
        std::string kind;
        float bounds[2] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
        std::vector<std::size_t> absorbed;
        if (uses.size() == 1 && op_is(uses[0], "Relu") && nodes[uses[0]].input(0) == y) {
            kind = "Relu";
            absorbed = {uses[0]};
        } else if (uses.size() == 1 && op_is(uses[0], "Clip") && nodes[uses[0]].input(0) == y) {
            // As the Clip kernel reads its bounds: inputs 1 and 2 since opset 11 (absent: unbounded);
            // before, attributes min/max (absent: the float range, so infinities are clipped to it).
            const onnx::NodeProto& clip = nodes[uses[0]];
            bool known = true;
            for (int k = 0; k < 2; ++k) {
                if (default_opset >= 11) {
                    if (clip.input_size() <= k + 1 || clip.input(k + 1).empty()) continue;
                    const std::optional<float> bound = constants.get(clip.input(k + 1));
                    known = known && bound && !std::isnan(*bound);
                    if (bound) bounds[k] = *bound;
                } else {
                    const auto* attr = find_attr(clip, k == 0 ? "min" : "max");
                    bounds[k] = attr ? attr->f()
                                     : (k == 0 ? std::numeric_limits<float>::lowest() : std::numeric_limits<float>::max());
                }
            }
            if (!known) continue;
            kind = "Clip";
            absorbed = {uses[0]};
        } else if (uses.size() == 2 && uses[0] != uses[1]) {
            // SiLU: y read by Sigmoid and by a Mul whose other input is that Sigmoid's output only.
            const std::size_t sigmoid = op_is(uses[0], "Sigmoid") ? uses[0] : uses[1];
            const std::size_t mul = sigmoid == uses[0] ? uses[1] : uses[0];
            if (!op_is(sigmoid, "Sigmoid") || !op_is(mul, "Mul") || nodes[sigmoid].output_size() != 1) continue;
            const std::string& s = nodes[sigmoid].output(0);
            const onnx::NodeProto& product = nodes[mul];
            if (s.empty() || only_reader(s) != mul || product.input_size() != 2 ||
                !((product.input(0) == y && product.input(1) == s) || (product.input(0) == s && product.input(1) == y)))
                continue;
            kind = "Silu";
            absorbed = {sigmoid, mul};
        } else {
            continue;
        }
        const onnx::NodeProto& last = nodes[absorbed.back()];
        if (last.output_size() < 1 || last.output(0).empty() || producers[last.output(0)] != 1) continue;

        set_string_attr(conv, kFusedActivationAttr, kind);
        if (kind == "Clip") {
            set_float_attr(conv, kFusedClipMinAttr, bounds[0]);
            set_float_attr(conv, kFusedClipMaxAttr, bounds[1]);
        }
        conv.set_output(0, last.output(0));
        for (std::size_t index : absorbed) removed[index] = true;
    }
    return removed;
}
}  // namespace polygraphy::ref
