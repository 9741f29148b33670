// OnnxrtRunnerArgs: the `--onnxrt` runner of `polygraphy run` and its ONNX-Runtime session options.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polygraphy/backend/onnx/loader.h"
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
    /// Supplies the ONNX model of each new runner. Without a hook the loader chain of the tool's
    /// OnnxLoadArgs group is used (so --onnx-outputs and friends apply). Called once per
    /// make_runner(); the returned loader is invoked lazily, when the runner is activated.
    using ModelLoaderHook = std::function<OnnxLoader()>;

    /// `model_loader_hook` may be null (the tool's ONNX loader chain is used).
    explicit OnnxrtRunnerArgs(ModelLoaderHook model_loader_hook = nullptr)
        : model_loader_hook_(std::move(model_loader_hook)) {}

    /// Replaces the model loader hook.
    void set_model_loader_hook(ModelLoaderHook hook) { model_loader_hook_ = std::move(hook); }

    std::string title() const override { return "ONNX-Runtime Session Creation"; }
    std::string description() const override { return "Options for creating an ONNX-Runtime inference session"; }
    std::vector<OptionSpec> options() const override;
    /// Throws UsageError naming the option for a bad thread count or level.
    void parse(const ParsedArgs& args) override;
    /// Adds an OnnxrtRunner like make_runner()'s (a model loader hook cannot be scripted: returns false).
    bool add_to_script(Script& script) const override;

    std::string runner_display_name() const override { return "ONNX-Runtime"; }
    std::string runner_flag() const override { return "--onnxrt"; }
    /// Set when this build has no ONNX-Runtime backend (the message says how to install it). Same
    /// signature as the selector's optional RunnerArgGroup hook, so it overrides it where present.
    std::optional<std::string> unavailable_reason() const override;
    /// Checks that ONNX-Runtime can be used (UnsupportedError when not built in, PolygraphyException
    /// when the library is missing: both say how to install it), then returns an OnnxrtRunner over
    /// SessionFromOnnx(model loader, session_options()).
    std::unique_ptr<BaseRunner> make_runner() override;

    /// The parsed session options.
    const onnxrt::SessionOptions& session_options() const { return session_options_; }

private:
    ModelLoaderHook model_loader_hook_;
    onnxrt::SessionOptions session_options_;
};

/// The group to add to `polygraphy run` (the hook may also be set later with set_model_loader_hook()).
std::unique_ptr<RunnerArgGroup> make_onnxrt_runner_args(OnnxrtRunnerArgs::ModelLoaderHook model_loader_hook = nullptr);

}  // namespace polygraphy::tools
