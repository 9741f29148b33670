// `run --use-subprocess` (job/runner_processes.h): each runner in its own process; a runner whose
// process crashes, exits or hangs fails alone and the other runners are still compared. The
// misbehaving runner comes from tests/plugins/misbehaving_module.cpp.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/run_results.h"
#include "../plugin_test_util.h"
#include "test_helpers.h"

namespace polygraphy::tools {
namespace {

using testing::CommandResult;
using testing::save_identity_model;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

class RunSubprocess : public ::testing::Test {
protected:
    void SetUp() override {
        model_ = dir_.file("identity.onnx");
        save_identity_model(model_, Shape{2, 3});
    }

    CommandResult run(std::vector<std::string> args) {
        args.insert(args.begin(), {"run", model_});
        return testing::run_with_plugins(std::string(POLYGRAPHY_TEST_PLUGIN_DIR) + "/misbehaving", args);
    }

    TempDir dir_;
    std::string model_;
};

TEST_F(RunSubprocess, RunnersInProcessesGiveTheSameResults) {
    const std::string in_process = dir_.file("in_process.json"), isolated = dir_.file("isolated.json");
    const CommandResult plain = run({"--ref", "--test-misbehave", "--save-outputs", in_process});
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    const CommandResult result = run({"--ref", "--test-misbehave", "--use-subprocess", "--save-outputs", isolated,
                                      "--save-inputs", dir_.file("inputs.json"), "--log-file", dir_.file("log.txt")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(testing::count_occurrences(result.output, "[I] RUNNING | Command:"), 1u) << result.output;
    EXPECT_THAT(result.output, HasSubstr("test-misbehaving-runner is about to behave"));
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));

    const RunResults a = RunResults::load(in_process), b = RunResults::load(isolated);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b.lst[0].first.rfind("ref-runner-N0-", 0), 0u);
    EXPECT_EQ(b.lst[1].first.rfind("test-misbehaving-runner-N0-", 0), 0u);
    for (std::size_t r = 0; r < 2; ++r)  // the same generated inputs in every process
        EXPECT_TRUE(a.lst[r].second[0].outputs.at("y").equals(b.lst[r].second[0].outputs.at("y")));
    EXPECT_EQ(load_inputs(dir_.file("inputs.json")).size(), 1u);
    // The runner processes append to the log file; they do not start it afresh.
    const std::string log = read_file(dir_.file("log.txt"));
    EXPECT_THAT(log, HasSubstr("RUNNING | Command:"));
    EXPECT_THAT(log, HasSubstr("test-misbehaving-runner is about to behave"));
    EXPECT_THAT(log, HasSubstr("PASSED | Runtime:"));
}

TEST_F(RunSubprocess, ACrashingRunnerFailsAndTheOthersAreCompared) {
    const CommandResult result = run({"--ref", "--test-misbehave", "--test-misbehave-how", "crash", "--ref",
                                      "--use-subprocess", "--save-outputs", dir_.file("out.json")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[E] Runner 2 of 3 failed in its own process: its process ended with killed "
                                         "by signal 11 (Segmentation fault). The other runners' results are compared\n"
                                         "    Note: the last lines it printed were:\n"));
    // Its output comes once, as the end of the error.
    EXPECT_EQ(testing::count_occurrences(result.output, "test-misbehaving-runner is about to crash"), 1u);
    EXPECT_THAT(result.output, HasSubstr("\n    [I] test-misbehaving-runner is about to crash\n"));
    // The two built-in runners were compared, and agreed.
    EXPECT_THAT(result.output, ::testing::ContainsRegex("Comparing Output: 'y' .* with 'y'"));
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime:"));
    const RunResults saved = RunResults::load(dir_.file("out.json"));
    ASSERT_EQ(saved.size(), 2u);
    EXPECT_EQ(saved.lst[1].first.rfind("ref-runner-N1-", 0), 0u);
}

TEST_F(RunSubprocess, ExitStatusesAndHangsAreReported) {
    CommandResult result = run({"--test-misbehave", "--test-misbehave-how", "exit", "--ref", "--use-subprocess"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output,
                HasSubstr("Runner 1 of 2 failed in its own process: its process ended with exit status 3"));

    result = run(
        {"--ref", "--test-misbehave", "--test-misbehave-how", "hang", "--use-subprocess", "--subprocess-timeout", "2"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("Runner 2 of 2 failed in its own process: its process ended with timed out "
                                         "after 2 s"));
    EXPECT_THAT(result.output, HasSubstr("test-misbehaving-runner is about to hang"));
}

TEST_F(RunSubprocess, BadOptionsAreOneLineErrors) {
    CommandResult result = run({"--ref", "--subprocess-timeout", "2"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --subprocess-timeout needs --use-subprocess"));
    result = run({"--ref", "--use-subprocess", "--subprocess-timeout", "0"});
    EXPECT_THAT(result.output, HasSubstr("[!] Invalid value for --subprocess-timeout: '0'. Expected a positive number "
                                         "of seconds"));
    result = run({"--ref", "--use-subprocess", "--gen-script", dir_.file("x.cpp")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --gen-script cannot write --use-subprocess"));
    EXPECT_FALSE(std::filesystem::exists(dir_.file("x.cpp")));
}

}  // namespace
}  // namespace polygraphy::tools
