// A kernel that runs another operator's kernel on the same node: a contrib operator whose meaning is a
// standard operator's at some opset (com.microsoft QuantizeLinear is QuantizeLinear at 21), or a
// quantized operator around its float twin (QLinearSoftmax around Softmax).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

/// The built-in kernel of `op_type` (in `domain`, the default domain unless given) at `opset`, made for
/// `node`: it reads the node's attributes, and its errors name the node. `constant_inputs` are the
/// values the twin sees as constants (NodeInfo::constant_input: weights it may prepare once); they
/// must outlive the twin.
class TwinKernel {
public:
    TwinKernel(const NodeInfo& node, const char* op_type, int64_t opset, const char* domain = "",
               std::vector<const Tensor*> constant_inputs = {})
        : info_(node.proto(), opset, node.name(), std::move(constant_inputs)) {
        const OpEntry* entry = OpRegistry::builtin().find(domain, op_type, opset);
        if (entry == nullptr) node.fail(fmt::format("{} has no kernel at opset {}", op_type, opset));
        kernel_ = entry->factory(info_);
    }

    /// The twin's `outputs` outputs for `inputs` (nullptr for omitted ones).
    std::vector<Tensor> run(std::vector<const Tensor*> inputs, std::size_t outputs, int threads) const {
        KernelContext context(info_, std::move(inputs), outputs, threads);
        kernel_->compute(context);
        return std::move(context.outputs());
    }

private:
    NodeInfo info_;
    std::unique_ptr<Kernel> kernel_;
};

/// A node computed entirely by its twin: every input passed through, every output taken back.
class RunAsTwinKernel final : public Kernel {
public:
    RunAsTwinKernel(const NodeInfo& node, const char* op_type, int64_t opset) : twin_(node, op_type, opset) {}

    void compute(KernelContext& context) const override {
        std::vector<const Tensor*> inputs;
        for (std::size_t i = 0; i < context.num_inputs(); ++i) inputs.push_back(context.input(i));
        std::vector<Tensor> outputs = twin_.run(std::move(inputs), context.num_outputs(), context.num_threads());
        for (std::size_t i = 0; i < outputs.size(); ++i) context.set_output(i, std::move(outputs[i]));
    }

private:
    TwinKernel twin_;
};

}  // namespace polygraphy::ref
