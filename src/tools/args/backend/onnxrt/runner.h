// OnnxrtRunnerArgs: the `--onnxrt` runner of `polygraphy run` and its ONNX-Runtime session options.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// Options (Polygraphy's OnnxrtSessionArgs plus polygraphy's own session settings):
///   --providers/--execution-providers P...   default cpu; exact or case-insensitive partial matches
///   --onnxrt-intra-op-threads N              0 (default): ONNX-Runtime's choice
///   --onnxrt-inter-op-threads N              0 (default): ONNX-Runtime's choice
///   --onnxrt-graph-optimization-level L      disable | basic | extended | all (default)
///   --onnxrt-execution-mode M                sequential (default) | parallel
/// The selection flag `--onnxrt` itself is declared by the runner-selection group (runner_flag()).
class OnnxrtRunnerArgs : public RunnerArgGroup {
public:
    std::string title() const override { return "ONNX-Runtime Session Creation"; }
    std::string description() const override { return "Options for creating an ONNX-Runtime inference session"; }
    std::vector<OptionSpec> options() const override;
    /// Throws UsageError naming the option for a bad thread count or level.
    void parse(const ParsedArgs& args) override;
    /// Adds nothing itself: the runner-selection group adds runner_step() once per `--onnxrt`.
    bool add_to_job(RunJob& job) const override;

    std::string runner_display_name() const override { return "ONNX-Runtime"; }
    std::string runner_flag() const override { return "--onnxrt"; }
    /// Set when this build has no ONNX-Runtime backend (the message says how to install it).
    std::optional<std::string> unavailable_reason() const override;
    /// An OnnxrtRunnerStep with session_options(): an OnnxrtRunner over the job's model (or over the
    /// model file itself when the job uses it unchanged).
    RunnerStep runner_step() const override;

    /// The parsed session options.
    const onnxrt::SessionOptions& session_options() const { return session_options_; }

private:
    onnxrt::SessionOptions session_options_;
};

/// The group to add to `polygraphy run`.
std::unique_ptr<RunnerArgGroup> make_onnxrt_runner_args();

}  // namespace polygraphy::tools
