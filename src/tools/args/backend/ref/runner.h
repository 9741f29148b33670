// The built-in reference runtime as a `polygraphy run` runner (`--ref`).
#pragma once

#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--ref` selects a RefRunnerStep: RefRunner(SessionFromOnnx(<the job's model>));
/// `--ref-threads N` sets the runtime's threads (0: the cores available); `--ref-no-fusion` runs
/// every node as written (SessionOptions::fuse_activations = false); `--ref-profile` times every node
/// and logs the profile when the runner finishes (SessionOptions::profile); `--ref-precision float64`
/// runs a float64 copy of the model (RefRunnerStep::precision).
class RefRunnerArgs : public RunnerArgGroup {
public:
    std::string title() const override { return "Reference Runtime Inference"; }
    std::string description() const override {
        return "Options related to running inference with Polygraphy's built-in reference runtime.";
    }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Adds nothing itself: the runner-selection group adds runner_step() once per `--ref`.
    bool add_to_job(RunJob& job) const override;

    std::string runner_display_name() const override { return "the built-in reference runtime (CPU)"; }
    std::string runner_flag() const override { return "--ref"; }
    RunnerStep runner_step() const override;

    /// `--ref-threads` (0: the cores available).
    int threads() const { return threads_; }
    /// False with `--ref-no-fusion`.
    bool fuse_activations() const { return fuse_activations_; }
    /// True with `--ref-profile`.
    bool profile() const { return profile_; }

private:
    int threads_ = 0;
    bool fuse_activations_ = true;
    bool profile_ = false;
    bool float64_ = false;
};

/// `--pluginref`: Polygraphy's runner of plugin reference implementations. Here it is the built-in
/// runtime, which runs the kernels that extension modules register for their own operators
/// (ExtensionRegistrar::add_ref_kernel) beside the built-in ones, so a custom operator whose ONNX
/// Runtime kernel comes from `--onnxrt-custom-op-libs` can be compared across the two; it takes the
/// `--ref-*` options.
class PluginRefRunnerArgs : public RunnerArgGroup {
public:
    std::string title() const override { return "Plugin Reference Inference"; }
    std::string description() const override {
        return "Polygraphy's --pluginref runner: the built-in runtime with the kernels that extension modules "
               "register for their own operators (TensorRT plugins have no place in this build). It takes the "
               "--ref-* options.";
    }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override { return {}; }
    void parse(const ParsedArgs& /*args*/) override {}
    bool add_to_job(RunJob& /*job*/) const override { return true; }

    std::string runner_display_name() const override {
        return "the built-in runtime with the extension modules' kernels";
    }
    std::string runner_flag() const override { return "--pluginref"; }
    RunnerStep runner_step() const override;
};

}  // namespace polygraphy::tools
