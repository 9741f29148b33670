// A well-behaved test module: a runner (`--test-good`) with an option that has choices, and a subtool.
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/extension.h"
#include "pass_through_runner.h"

namespace {

using namespace polygraphy;
using namespace polygraphy::tools;

// The pass-through runner, logging its mode.
class GoodRunner : public testing::PassThroughRunner {
public:
    GoodRunner(OnnxLoader loader, std::string mode)
        : PassThroughRunner(std::move(loader), "test-good-runner"), mode_(std::move(mode)) {}

protected:
    void before_infer() override { logger().info("test-good-runner mode: " + mode_); }

private:
    std::string mode_;
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
            return std::make_unique<GoodRunner>(model, mode);
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
