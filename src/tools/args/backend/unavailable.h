// Option groups of backends this build does not have (TensorRT, TensorFlow): declared so that
// Polygraphy command lines parse and fail with a clear message instead of "Unrecognized Options".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// Options of an unavailable backend: a help section whose options all fail while parsing with
/// `<reason> (option: --fp16)` (the first one given).
struct UnavailableOptions {
    std::string title;        ///< help section heading
    std::string description;  ///< help section description
    std::string reason;  ///< "TensorRT is not available in this build"
    std::vector<OptionSpec> options;  ///< the backend's options, as Polygraphy declares them

    /// Throws UnsupportedError when any of the options was given.
    void check(const ParsedArgs& args) const;
};

/// A group of options of an unavailable backend (`--fp16`, `--save-engine`...).
class UnavailableArgGroup : public ArgGroup {
public:
    /// A group declaring `spec`'s options.
    explicit UnavailableArgGroup(UnavailableOptions spec) : spec_(std::move(spec)) {}

    std::string title() const override { return spec_.title; }
    std::string description() const override { return spec_.description; }
    std::vector<OptionSpec> options() const override { return spec_.options; }
    void parse(const ParsedArgs& args) override { spec_.check(args); }

private:
    UnavailableOptions spec_;
};

/// The runner group of an unavailable backend (`--trt`, `--tf`): selecting it fails while parsing
/// (RunnerSelectArgs checks unavailable_reason()), and so do its options.
class UnavailableRunnerArgGroup : public RunnerArgGroup {
public:
    /// A runner group with selection flag `flag` (e.g. "--trt") and `spec`'s options.
    UnavailableRunnerArgGroup(UnavailableOptions spec, std::string display_name, std::string flag)
        : spec_(std::move(spec)), display_name_(std::move(display_name)), flag_(std::move(flag)) {}

    std::string title() const override { return spec_.title; }
    std::string description() const override { return spec_.description; }
    std::vector<OptionSpec> options() const override { return spec_.options; }
    void parse(const ParsedArgs& args) override { spec_.check(args); }

    std::string runner_display_name() const override { return display_name_; }
    std::string runner_flag() const override { return flag_; }
    std::string runner_extra_help() const override { return "[not available in this build]"; }
    std::optional<std::string> unavailable_reason() const override { return spec_.reason; }
    /// Throws UnsupportedError (selecting the runner already fails while parsing).
    RunnerStep runner_step() const override;

private:
    UnavailableOptions spec_;
    std::string display_name_, flag_;
};

inline constexpr const char* kTensorRtUnavailable = "TensorRT is not available in this build";
inline constexpr const char* kTensorFlowUnavailable = "TensorFlow is not available in this build";

/// The tool whose TensorRT/TensorFlow options are declared: each subscribes to different groups, and
/// some groups have options for some tools only, as in Polygraphy 0.49.27.
enum class UnavailableArgsFor {
    kRun,           ///< every group (builder config, plugins, parser flags, network, engine saving/loading)
    kConvert,       ///< builder config with --engine-capability/--direct-io, --tensor-formats; no --save-engine
    kInspectModel,  ///< plugins, parser flags, network loading without custom outputs, --ckpt, --freeze-graph
};

/// `--trt` and its options: --optimization-profile, --allocation-strategy, --weight-streaming-budget.
std::unique_ptr<RunnerArgGroup> make_trt_runner_args();
/// The TensorRT option groups of `tool`: all of Polygraphy's TrtConfigArgs, TrtLoadPluginsArgs,
/// TrtOnnxFlagArgs, TrtLoadNetworkArgs, TrtSaveEngineBytesArgs, TrtLoadEngineBytesArgs and
/// TrtLoadEngineArgs options that `tool` takes in Polygraphy (TensorRT-RTX's are left out).
std::vector<std::unique_ptr<ArgGroup>> make_trt_arg_groups(UnavailableArgsFor tool);
/// `--tf` and its option --save-timeline.
std::unique_ptr<RunnerArgGroup> make_tf_runner_args();
/// The TensorFlow option groups of `tool` (TfTrtArgs with --tftrt/--use-tftrt, TfLoadArgs,
/// TfConfigArgs, OnnxFromTfArgs' --opset), as in Polygraphy.
std::vector<std::unique_ptr<ArgGroup>> make_tf_arg_groups(UnavailableArgsFor tool);

}  // namespace polygraphy::tools
