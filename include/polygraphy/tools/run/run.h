// `polygraphy run`: run inference on several backends and compare the results.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Groups: Logging, Runners, Model, ONNX loading/saving/shape inference, every runner group of
/// builtin_runner_arg_groups() and of registered extension modules, the TensorRT/TensorFlow groups
/// (refused), Data Loader, Comparator inference/postprocessing/comparisons, comparison functions.
///
/// Flow: runners (in flag order) -> Comparator::run over the data loader -> --save-outputs (this
/// invocation's results only) -> --load-outputs appended -> compare_accuracy when there are two or
/// more results to compare -> --validate. Exit status 0 when everything passed, 1 otherwise.
class RunTool : public Tool {
public:
    RunTool() : Tool("run") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs& args) const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
