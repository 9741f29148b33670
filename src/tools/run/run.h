// `polygraphy run`: run inference on several backends and compare the results.
#pragma once

#include "polygraphy/job/run_job.h"
#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Groups: Logging, Runners, Model, ONNX loading/saving/shape inference, every runner group of
/// builtin_runner_arg_groups() and of registered extension modules, the TensorRT/TensorFlow groups
/// (refused), Data Loader, Comparator inference/postprocessing/comparisons, comparison functions.
///
/// The groups fill in a RunJob (job()); the tool runs it with run_job() (polygraphy/job/run_job.h:
/// runners in flag order -> Comparator::run -> --save-outputs -> --load-outputs appended ->
/// --postprocess -> comparison -> --validate), or with `--gen-script FILE` writes it as a C++
/// program (job_program()). Exit status 0 when everything passed, 1 otherwise.
class RunTool : public Tool {
public:
    RunTool() : Tool("run") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs& args) const override;
    /// The job the parsed command line describes: every group's add_to_job(), in subscription order.
    RunJob job() const;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;

private:
    // job(), and the groups that have no part in a job (their add_to_job() returned false).
    RunJob describe_job(std::vector<const ArgGroup*>* undescribed) const;
};

}  // namespace polygraphy::tools
