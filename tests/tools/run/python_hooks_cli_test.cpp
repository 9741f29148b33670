// `run --data-loader-script`, `--compare-func-script` and `--data-loader-backend-module torch`: the
// CLI's Python hooks (polygraphy/tools/python_hooks.h), in child processes. Skipped when the Python
// bridge is not built (the CLI then says, on one line, that the hooks are not available).
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/run_results.h"
#include "test_helpers.h"

namespace polygraphy::tools {
namespace {

using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

class RunPythonHooks : public ::testing::Test {
protected:
    void SetUp() override {
        model_ = dir_.file("identity.onnx");
        testing::save_identity_model(model_, Shape{2, 3});
        const CommandResult probe = run({"--ref", "--data-loader-script", dir_.file("absent.py")});
        if (probe.output.find("not available in this build") != std::string::npos) {
            EXPECT_EQ(testing::count_occurrences(probe.output, "[!]"), 1u) << probe.output;
            GTEST_SKIP() << "the Python bridge is not built";
        }
    }

    CommandResult run(std::vector<std::string> args) {
        args.insert(args.begin(), {"run", model_});
        return run_polygraphy(args);
    }

    std::string script(const std::string& name, const std::string& text) {
        const std::string path = dir_.file(name);
        std::ofstream(path) << text;
        return path;
    }

    // A failure reported as Polygraphy does: one `[!]` line naming `message`, no Python traceback.
    static void expect_one_line_error(const CommandResult& result, const std::string& message) {
        EXPECT_NE(result.exit_code, 0) << result.output;
        EXPECT_EQ(testing::count_occurrences(result.output, "[!]"), 1u) << result.output;
        EXPECT_THAT(result.output, HasSubstr(message));
        EXPECT_THAT(result.output, Not(HasSubstr("Traceback"))) << result.output;
        const auto line = result.output.find("[!]");
        EXPECT_THAT(result.output.substr(line, result.output.find('\n', line) - line), HasSubstr(message));
    }

    TempDir dir_;
    std::string model_;
};

constexpr const char* kTwoFeeds = R"(import numpy as np

def load_data():
    for i in range(2):
        yield {"x": np.full((2, 3), i + 0.5, dtype=np.float32)}

def other_loader():
    return [{"x": np.full((2, 3), 7.0, dtype=np.float32)}]
)";

TEST_F(RunPythonHooks, DataLoaderScriptFeedsEveryIteration) {
    const std::string loader = script("loader.py", kTwoFeeds), inputs = dir_.file("inputs.json");
    const CommandResult result = run({"--ref", "--data-loader-script", loader, "--save-inputs", inputs});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const InputList feeds = load_inputs(inputs);
    ASSERT_EQ(feeds.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i)
        EXPECT_THAT(testing::elements_of<float>(feeds[i].at("x")), ::testing::Each(i + 0.5f));
}

// A generator shards as any dataset does: every shard reads it to its end (one pass of the
// generator) and runs its own samples; the merged summary holds all of them.
TEST_F(RunPythonHooks, ADataLoaderScriptIsShardedAndItsSummariesMerge) {
    const std::string loader = script("five.py", R"(import numpy as np

def load_data():
    for i in range(5):
        yield {"x": np.full((2, 3), i + 0.25, dtype=np.float32)}
)");
    for (const char* shard : {"0/2", "1/2"}) {
        const std::string inputs = dir_.file(std::string("inputs") + shard[0] + ".json");
        const CommandResult result =
            run({"--ref", "--onnxrt", "--data-loader-script", loader, "--shard", shard, "--save-inputs", inputs,
                 "--save-summary", dir_.file(std::string("part") + shard[0] + ".json")});
        ASSERT_EQ(result.exit_code, 0) << result.output;
        const InputList feeds = load_inputs(inputs);
        ASSERT_EQ(feeds.size(), shard[0] == '0' ? 3u : 2u);
        // Shard 1 of 2 holds samples 1 and 3.
        if (shard[0] == '1') EXPECT_THAT(testing::elements_of<float>(feeds[1].at("x")), ::testing::Each(3.25f));
    }
    const CommandResult merged = run_polygraphy(
        {"data", "merge", dir_.file("part0.json"), dir_.file("part1.json"), "-o", dir_.file("merged.json")});
    ASSERT_EQ(merged.exit_code, 0) << merged.output;
    EXPECT_THAT(merged.output, HasSubstr("shards 2 of 2, 5 sample(s)"));
}

// The embedded interpreter is never finalised: a script's prints must still reach a pipe, in order
// with the log, without PYTHONUNBUFFERED (which a developer's shell may set).
TEST_F(RunPythonHooks, AScriptsPrintsReachAPipeInOrderWithTheLog) {
    const std::string loader = script("loader.py", std::string(kTwoFeeds) + "print('script loaded')\n");
    const std::string command =
        "env -u PYTHONUNBUFFERED " + testing::shell_quote(testing::built_program("polygraphy")) + " run " +
        testing::shell_quote(model_) + " --ref --data-loader-script " + testing::shell_quote(loader) + " 2>&1 | cat";
    const CommandResult result = testing::run_command(command);
    ASSERT_THAT(result.output, HasSubstr("script loaded")) << result.output;
    EXPECT_LT(result.output.find("script loaded"), result.output.find("PASSED | Runtime")) << result.output;
}

TEST_F(RunPythonHooks, FunctionNameAfterAColonOrInTheDeprecatedFlag) {
    const std::string loader = script("loader.py", kTwoFeeds);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"--data-loader-script", loader + ":other_loader"},
             {"--data-loader-script", loader, "--data-loader-func-name", "other_loader"}}) {
        std::vector<std::string> command = {"--ref", "--save-inputs", dir_.file("inputs.json")};
        command.insert(command.end(), args.begin(), args.end());
        const CommandResult result = run(command);
        ASSERT_EQ(result.exit_code, 0) << result.output;
        const InputList feeds = load_inputs(dir_.file("inputs.json"));
        ASSERT_EQ(feeds.size(), 1u);
        EXPECT_THAT(testing::elements_of<float>(feeds[0].at("x")), ::testing::Each(7.0f));
        EXPECT_EQ(result.output.find("--data-loader-func-name is deprecated") != std::string::npos, args.size() == 4)
            << result.output;
    }
}

TEST_F(RunPythonHooks, GeneratorOptionsAreIgnoredWithAWarning) {
    const CommandResult result = run({"--ref", "--data-loader-script", script("loader.py", kTwoFeeds), "--seed", "3"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Argument: '--seed' will be ignored since a custom data loader was provided"));
}

TEST_F(RunPythonHooks, CompareFuncScriptDecidesTheVerdict) {
    const std::string saved = dir_.file("saved.json");
    ASSERT_EQ(run({"--ref", "--save-outputs", saved}).exit_code, 0);
    const std::string compare = script("compare.py", R"(
def compare_outputs(run0, run1):
    return {name: bool((run0[name] == run1[name]).all()) for name in run0.keys()}

def always_fails(run0, run1):
    return {name: False for name in run0.keys()}
)");
    const CommandResult passed = run({"--ref", "--load-outputs", saved, "--compare-func-script", compare});
    EXPECT_EQ(passed.exit_code, 0) << passed.output;
    const CommandResult failed =
        run({"--ref", "--load-outputs", saved, "--compare-func-script", compare + ":always_fails"});
    EXPECT_EQ(failed.exit_code, 1) << failed.output;
    EXPECT_THAT(failed.output, HasSubstr("FAILED"));
    const CommandResult deprecated = run(
        {"--ref", "--load-outputs", saved, "--compare-func-script", compare, "--compare-func-name", "always_fails"});
    EXPECT_EQ(deprecated.exit_code, 1) << deprecated.output;
    EXPECT_THAT(deprecated.output, HasSubstr("--compare-func-name is deprecated"));
}

TEST_F(RunPythonHooks, TorchTensorsFromTheScriptAreConverted) {
    const std::string loader = script("loader.py", R"(import torch

def load_data():
    yield {"x": torch.full((2, 3), 4.25, dtype=torch.float32)}
)");
    const CommandResult result = run({"--ref", "--data-loader-backend-module", "torch", "--data-loader-script", loader,
                                      "--save-inputs", dir_.file("inputs.json")});
    if (result.output.find("No module named 'torch'") != std::string::npos) GTEST_SKIP() << "PyTorch is not installed";
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const InputList feeds = load_inputs(dir_.file("inputs.json"));
    ASSERT_EQ(feeds.size(), 1u);
    EXPECT_THAT(testing::elements_of<float>(feeds[0].at("x")), ::testing::Each(4.25f));
}

TEST_F(RunPythonHooks, TorchBackendModuleKeepsTheGeneratedValues) {
    const CommandResult numpy = run({"--ref", "--save-inputs", dir_.file("numpy.json")});
    ASSERT_EQ(numpy.exit_code, 0) << numpy.output;
    const CommandResult torch =
        run({"--ref", "--data-loader-backend-module", "torch", "--save-inputs", dir_.file("torch.json")});
    if (torch.output.find("No module named 'torch'") != std::string::npos) GTEST_SKIP() << "PyTorch is not installed";
    ASSERT_EQ(torch.exit_code, 0) << torch.output;
    EXPECT_TRUE(
        load_inputs(dir_.file("numpy.json"))[0].at("x").equals(load_inputs(dir_.file("torch.json"))[0].at("x")));
}

TEST_F(RunPythonHooks, ScriptPathThatDoesNotExist) {
    expect_one_line_error(run({"--ref", "--data-loader-script", dir_.file("missing.py")}), "missing.py: no such file");
    expect_one_line_error(run({"--ref", "--load-outputs", "x.json", "--compare-func-script", dir_.file("gone.py")}),
                          "gone.py: no such file");
}

TEST_F(RunPythonHooks, MissingFunction) {
    expect_one_line_error(run({"--ref", "--data-loader-script", script("loader.py", kTwoFeeds) + ":nope"}),
                          "the script defines no function 'nope'");
    expect_one_line_error(run({"--ref", "--compare-func-script", script("compare.py", "x = 1\n")}),
                          "the script defines no function 'compare_outputs'");
}

TEST_F(RunPythonHooks, ScriptThatRaises) {
    expect_one_line_error(
        run({"--ref", "--data-loader-script", script("top.py", "raise ValueError('broken at import')\n")}),
        "ValueError: broken at import");
    const std::string midway = script("midway.py", R"(import numpy as np

def load_data():
    yield {"x": np.zeros((2, 3), dtype=np.float32)}
    raise RuntimeError("no more data today")
)");
    expect_one_line_error(run({"--ref", "--data-loader-script", midway}), "RuntimeError: no more data today");
}

TEST_F(RunPythonHooks, CompareFunctionReturningNeitherBoolNorDict) {
    const std::string saved = dir_.file("saved.json");
    ASSERT_EQ(run({"--ref", "--save-outputs", saved}).exit_code, 0);
    const std::string compare = script("compare.py", R"(
def compare_outputs(run0, run1):
    return 3

def not_bools(run0, run1):
    return {name: "yes" for name in run0.keys()}
)");
    expect_one_line_error(run({"--ref", "--load-outputs", saved, "--compare-func-script", compare}),
                          "must return a dict of output name -> bool, got int");
    expect_one_line_error(run({"--ref", "--load-outputs", saved, "--compare-func-script", compare + ":not_bools"}),
                          "returned a str for output 'y', expected a bool");
}

// As in Polygraphy's Comparator, a castable dtype is cast with a warning; one the library cannot
// hold is an error.
TEST_F(RunPythonHooks, LoaderYieldingAWrongDtype) {
    const std::string castable = script("float64.py", R"(import numpy as np

def load_data():
    yield {"x": np.full((2, 3), 2.0, dtype=np.float64)}
)");
    const CommandResult cast = run({"--ref", "--data-loader-script", castable});
    EXPECT_EQ(cast.exit_code, 0) << cast.output;
    EXPECT_THAT(cast.output, HasSubstr("Buffer dtype (float64) does not match expected input dtype (float32)"));
    const std::string unsupported = script("datetime.py", R"(import numpy as np

def load_data():
    yield {"x": np.zeros((2, 3), dtype="datetime64[s]")}
)");
    expect_one_line_error(run({"--ref", "--data-loader-script", unsupported}),
                          "Input 'x' has numpy dtype datetime64[s] (<M8[s]), which polygraphy does not support");
}

TEST_F(RunPythonHooks, GenScriptRefusesAHook) {
    expect_one_line_error(
        run({"--ref", "--data-loader-script", script("loader.py", kTwoFeeds), "--gen-script", dir_.file("run.cpp")}),
        "--gen-script cannot write a Python hook");
}

}  // namespace
}  // namespace polygraphy::tools
