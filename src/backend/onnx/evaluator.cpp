// GraphEvaluator helpers and the default evaluator (see include/polygraphy/backend/onnx/evaluator.h).
#include "polygraphy/backend/onnx/evaluator.h"

#include <atomic>

#include "backend/onnx/domain.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

constinit std::atomic<const GraphEvaluator*> g_default_evaluator{nullptr};

}  // namespace

bool GraphEvaluator::supports(std::string_view domain, std::string_view op_type, int64_t opset) const {
    domain = canonical_domain(domain);
    for (const SupportedOp& op : supported_ops())
        if (op.op_type == op_type && op.domain == domain && op.since_version <= opset && opset <= op.until_version)
            return true;
    return false;
}

bool GraphEvaluator::supports_some_opset(std::string_view domain, std::string_view op_type) const {
    domain = canonical_domain(domain);
    for (const SupportedOp& op : supported_ops())
        if (op.op_type == op_type && op.domain == domain) return true;
    return false;
}

std::vector<Tensor> evaluate_node(const GraphEvaluator& evaluator, const onnx::ModelProto& model,
                                  const onnx::NodeProto& node, const std::string& display_name,
                                  const std::vector<const Tensor*>& inputs) {
    if (inputs.size() != static_cast<std::size_t>(node.input_size()))
        throw InternalError("evaluate_node: " + std::to_string(inputs.size()) + " values for " +
                            std::to_string(node.input_size()) + " inputs");
    onnx::ModelProto single;
    single.set_ir_version(model.ir_version());
    *single.mutable_opset_import() = model.opset_import();
    *single.mutable_functions() = model.functions();  // a call to a local function runs its body
    onnx::GraphProto& graph = *single.mutable_graph();
    onnx::NodeProto& copy = *graph.add_node();
    copy = node;
    if (copy.name().empty()) copy.set_name(display_name);
    TensorMap constants;
    for (int i = 0; i < node.input_size(); ++i)
        if (!node.input(i).empty() && inputs[static_cast<std::size_t>(i)])
            constants.set(node.input(i), *inputs[static_cast<std::size_t>(i)]);
    for (const auto& output : node.output())
        if (!output.empty()) graph.add_output()->set_name(output);

    const TensorMap results = evaluator.prepare(single, constants, 0)->run({});
    std::vector<Tensor> outputs;
    for (const auto& output : node.output()) outputs.push_back(output.empty() ? Tensor() : results.at(output));
    return outputs;
}

const GraphEvaluator& default_graph_evaluator() {
    const GraphEvaluator* evaluator = g_default_evaluator.load();
    if (!evaluator)
        throw UnsupportedError("No runtime is registered to evaluate graphs (constant folding, shape inference, lint)");
    return *evaluator;
}

void set_default_graph_evaluator(const GraphEvaluator* evaluator) {
    g_default_evaluator.store(evaluator);
}

}  // namespace polygraphy
