// A test module whose runner misbehaves on demand (`--test-misbehave --test-misbehave-how crash`):
// what `run --use-subprocess` must survive. Without a misbehaviour it copies inputs to outputs.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "pass_through_runner.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/extension.h"

namespace {

using namespace polygraphy;
using namespace polygraphy::tools;

class MisbehavingRunner : public testing::PassThroughRunner {
public:
    MisbehavingRunner(OnnxLoader loader, std::string how)
        : PassThroughRunner(std::move(loader), "test-misbehaving-runner"), how_(std::move(how)) {}

protected:
    void before_infer() override {
        logger().info("test-misbehaving-runner is about to " + how_);
        std::fflush(stdout);
        if (how_ == "crash") std::raise(SIGSEGV);
        if (how_ == "exit") std::_Exit(3);
        if (how_ == "hang")
            for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }

private:
    std::string how_;
};

class MisbehavingRunnerArgs : public RunnerArgGroup {
public:
    std::string title() const override { return "Misbehaving Test Module"; }
    std::string description() const override { return "Options of the misbehaving test module."; }
    std::vector<OptionSpec> options() const override {
        return {Option({"--test-misbehave-how"})
                    .help("What the runner does when it infers")
                    .choices({"behave", "crash", "exit", "hang"})};
    }
    void parse(const ParsedArgs& args) override { how_ = args.value("test_misbehave_how").value_or("behave"); }
    std::string runner_display_name() const override { return "Misbehaving"; }
    std::string runner_flag() const override { return "--test-misbehave"; }
    RunnerStep runner_step() const override {
        return CustomRunnerStep{[how = how_](const OnnxLoader& model) -> std::unique_ptr<BaseRunner> {
            return std::make_unique<MisbehavingRunner>(model, how);
        }};
    }

private:
    std::string how_;
};

}  // namespace

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_misbehaving", "0.1");
    registrar.add_run_arg_group<MisbehavingRunnerArgs>();
}
