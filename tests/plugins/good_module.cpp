// A well-behaved test module: a runner (`--test-good`) with an option that has choices, and a subtool.
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/extension.h"

namespace {

using namespace polygraphy;
using namespace polygraphy::tools;

// Copies each input to the output of the same position (enough for one-input, one-output models).
class PassThroughRunner : public BaseRunner {
public:
    PassThroughRunner(OnnxLoader loader, std::string mode)
        : BaseRunner("test-good-runner"), loader_(std::move(loader)), mode_(std::move(mode)) {}

protected:
    void activate_impl() override { model_ = loader_(); }
    void deactivate_impl() override { model_.reset(); }
    TensorMetadata get_input_metadata_impl() override { return get_onnx_input_metadata(model_->graph()); }
    TensorMap infer_impl(const TensorMap& feed) override {
        logger().info("test-good-runner mode: " + mode_);
        TensorMap outputs;
        const auto& graph = model_->graph();
        for (int i = 0; i < graph.output_size() && i < static_cast<int>(feed.size()); ++i)
            outputs.set(graph.output(i).name(), feed[static_cast<std::size_t>(i)].second.clone());
        return outputs;
    }

private:
    OnnxLoader loader_;
    std::string mode_;
    OnnxModel model_;
};

class GoodRunnerArgs : public RunnerArgGroup {
public:
    std::string title() const override { return "Good Test Module"; }
    std::string description() const override { return "Options of the good test module."; }
    std::vector<OptionSpec> options() const override {
        return {Option({"--test-good-mode"}).help("Mode of the pass-through runner").choices({"plain", "fancy"})};
    }
    void parse(const ParsedArgs& args) override { mode_ = args.value("test_good_mode").value_or("plain"); }
    std::string runner_display_name() const override { return "PassThrough"; }
    std::string runner_flag() const override { return "--test-good"; }
    // The job hands the runner its model (a copy of its own, loaded with the command line's
    // --onnx-outputs and friends); printing is not implemented, so --gen-script refuses --test-good.
    RunnerStep runner_step() const override {
        return CustomRunnerStep{[mode = mode_](const OnnxLoader& model) -> std::unique_ptr<BaseRunner> {
            return std::make_unique<PassThroughRunner>(model, mode);
        }};
    }

private:
    std::string mode_;
};

class HelloTool : public Tool {
public:
    HelloTool() : Tool("test-hello") {}
    std::string description() const override { return "Says hello (a tool added by a test module)."; }

protected:
    std::vector<OptionSpec> tool_options() const override { return {Option({"--who"}).help("Whom to greet")}; }
    int run_impl(const ParsedArgs& args) override {
        logger().info("Hello, " + args.value("who").value_or("world") + "!");
        return 0;
    }
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_good", "1.2.3");
    registrar.add_run_arg_group<GoodRunnerArgs>();
    registrar.add_tool<HelloTool>();
}
