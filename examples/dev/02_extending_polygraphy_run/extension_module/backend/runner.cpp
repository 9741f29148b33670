#include "backend/runner.h"

#include <chrono>
#include <map>
#include <thread>

#include "polygraphy/common/exception.h"

namespace polygraphy_reshape_destroyer {

using polygraphy::Tensor;
using polygraphy::TensorMap;

Speed speed_from_name(const std::string& name) {
    if (name == "slow") return Speed::kSlow;
    if (name == "medium") return Speed::kMedium;
    if (name == "fast") return Speed::kFast;
    // Like Polygraphy, unrecoverable errors are exceptions with one clear line (+ a Note).
    throw polygraphy::UsageError("Invalid speed: '" + name + "'\nNote: Valid speeds are: ['slow', 'medium', 'fast']");
}

IdentityOnlyRunner::IdentityOnlyRunner(polygraphy::OnnxLoader model, Speed speed, std::optional<std::string> name)
    : BaseRunner("identity-only-runner", std::move(name)), loader_(std::move(model)), speed_(speed) {}

void IdentityOnlyRunner::activate_impl() {
    // The loader runs now: a chain like ReplaceReshapes(OnnxFromPath(...)) reads and fixes the model here.
    model_ = loader_();
    for (const auto& node : model_->graph().node()) {
        if (node.op_type() != "Identity")
            throw polygraphy::UnsupportedError("Encountered an unsupported type of node: " + node.op_type() +
                                               " (node '" + node.name() +
                                               "')\nNote: This runner only supports Identity nodes!");
        if (node.input_size() != 1 || node.output_size() != 1)
            throw polygraphy::ModelError("Identity node '" + node.name() + "' must have one input and one output");
    }
}

void IdentityOnlyRunner::deactivate_impl() {
    model_.reset();
}

polygraphy::TensorMetadata IdentityOnlyRunner::get_input_metadata_impl() {
    // Used by Polygraphy's data loader to generate inputs of the right dtypes and shapes.
    return polygraphy::get_onnx_input_metadata(model_->graph());
}

TensorMap IdentityOnlyRunner::infer_impl(const TensorMap& feed) {
    const auto start = std::chrono::steady_clock::now();

    // An Identity's output is its input: bind every node's output to its input's value.
    std::map<std::string, Tensor> values;
    for (const auto& [name, tensor] : feed) values[name] = tensor;
    const auto& graph = model_->graph();
    for (const auto& node : graph.node()) {
        const auto input = values.find(node.input(0));
        if (input == values.end())
            throw polygraphy::ModelError("Identity node '" + node.name() + "' reads '" + node.input(0) +
                                         "', which is neither a graph input nor produced by an earlier node");
        values[node.output(0)] = input->second;
    }
    TensorMap outputs;
    for (const auto& output : graph.output()) {
        const auto value = values.find(output.name());
        if (value == values.end())
            throw polygraphy::ModelError("graph output '" + output.name() + "' is not produced by any node");
        outputs.set(output.name(), value->second.clone());  // our own copy: callers may change their inputs
    }

    // The artificial delay, so that `fast` mode shows massive performance gains!
    const std::chrono::milliseconds delay{speed_ == Speed::kSlow ? 1000 : speed_ == Speed::kMedium ? 500 : 0};
    if (delay.count() > 0) std::this_thread::sleep_for(delay);

    // Runners report their own inference time; Polygraphy prints it after the run.
    set_inference_time(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return outputs;
}

}  // namespace polygraphy_reshape_destroyer
