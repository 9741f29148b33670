// Option groups of backends this build does not have (TensorRT, TensorFlow): declared so that
// Polygraphy command lines parse and fail with a clear message instead of "Unrecognized Options".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// A group whose options all fail while parsing with `<reason> (option: --fp16)`.
class UnavailableArgGroup : public ArgGroup {
public:
    UnavailableArgGroup(std::string title, std::string description, std::string reason, std::vector<OptionSpec> options)
        : title_(std::move(title)),
          description_(std::move(description)),
          reason_(std::move(reason)),
          options_(std::move(options)) {}

    std::string title() const override { return title_; }
    std::string description() const override { return description_; }
    std::vector<OptionSpec> options() const override { return options_; }
    void parse(const ParsedArgs& args) override;

private:
    std::string title_, description_, reason_;
    std::vector<OptionSpec> options_;
};

/// A runner group for an unavailable backend (`--trt`, `--tf`): selecting it fails while parsing.
class UnavailableRunnerArgGroup : public RunnerArgGroup {
public:
    UnavailableRunnerArgGroup(std::string title, std::string description, std::string display_name, std::string flag,
                              std::string reason, std::vector<OptionSpec> options)
        : title_(std::move(title)),
          description_(std::move(description)),
          display_name_(std::move(display_name)),
          flag_(std::move(flag)),
          reason_(std::move(reason)),
          options_(std::move(options)) {}

    std::string title() const override { return title_; }
    std::string description() const override { return description_; }
    std::vector<OptionSpec> options() const override { return options_; }
    void parse(const ParsedArgs& args) override;

    std::string runner_display_name() const override { return display_name_; }
    std::string runner_flag() const override { return flag_; }
    std::string runner_extra_help() const override { return "[not available in this build]"; }
    std::optional<std::string> unavailable_reason() const override { return reason_; }
    std::unique_ptr<BaseRunner> make_runner() override;

private:
    std::string title_, description_, display_name_, flag_, reason_;
    std::vector<OptionSpec> options_;
};

inline constexpr const char* kTensorRtUnavailable = "TensorRT is not available in this build";
inline constexpr const char* kTensorFlowUnavailable = "TensorFlow is not available in this build";

/// `--trt` and its options (a representative set of Polygraphy's: --trt-min/opt/max-shapes, --tf32,
/// --fp16, --bf16, --fp8, --int8, --precision-constraints, --save-engine, timing caches, tactics,
/// plugins, --trt-outputs, ...), in Polygraphy's groups.
std::unique_ptr<RunnerArgGroup> make_trt_runner_args();
std::vector<std::unique_ptr<ArgGroup>> make_trt_arg_groups();
/// `--tf` and its options (--ckpt, --tf-outputs, --save-pb, --xla, --opset, ...).
std::unique_ptr<RunnerArgGroup> make_tf_runner_args();
std::vector<std::unique_ptr<ArgGroup>> make_tf_arg_groups();

}  // namespace polygraphy::tools
