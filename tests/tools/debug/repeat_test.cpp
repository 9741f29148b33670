// `polygraphy debug repeat` and the check-command options shared by the debug subtools.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "model_builder.h"
#include "build_paths.h"

namespace polygraphy::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

std::size_t count_files(const std::string& folder) {
    if (!fs::exists(folder)) return 0;
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

TEST(DebugRepeat, SortsArtifactsAndCountsVerdicts) {
    TempDir dir;
    // Odd runs pass, even runs fail; each run writes an artifact.
    const std::string script = "n=$(cat " + dir.file("count") + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " +
                               dir.file("count") + "; echo run$n > " + dir.file("art.txt") + "; test $((n % 2)) -eq 1";
    const auto result = run_polygraphy({"debug", "repeat", "--until", "3", "--artifacts", dir.file("art.txt"),
                                        "--art-dir", dir.file("arts"), "--check", "sh", "-c", script});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] RUNNING | Command: "));
    EXPECT_THAT(result.output, HasSubstr("RUNNING | Iteration 3"));
    // Counted from 1, as Polygraphy and the RUNNING lines count.
    EXPECT_THAT(result.output, HasSubstr("PASSED | Iteration 1 | Duration "));
    EXPECT_THAT(result.output, HasSubstr("[E]     FAILED | Iteration 2 | Duration "));
    EXPECT_THAT(result.output, HasSubstr("PASSED | Iteration 3 | Duration "));
    EXPECT_THAT(result.output, HasSubstr("Finished 3 iteration(s) | Passed: 2/3 | Pass Rate: 66.66666666666667%"));
    EXPECT_EQ(count_files(dir.file("arts/good")), 2u);
    EXPECT_EQ(count_files(dir.file("arts/bad")), 1u);
    EXPECT_FALSE(fs::exists(dir.file("art.txt")));
    for (const auto& entry : fs::directory_iterator(dir.file("arts/bad"))) {
        EXPECT_THAT(entry.path().filename().string(), ::testing::MatchesRegex("art_.*_N1\\.txt"));
        EXPECT_EQ(testing::run_command("cat " + entry.path().string()).output, "run2\n");
    }
}

TEST(DebugRepeat, UntilGoodAndBad) {
    TempDir dir;
    const std::string counter = "n=$(cat " + dir.file("count") + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " +
                                dir.file("count") + "; ";
    auto result = run_polygraphy({"debug", "repeat", "--until", "good", "--check", "sh", "-c", counter + "test $n -ge 3"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Finished 3 iteration(s) | Passed: 1/3 | Pass Rate: 33.333333333333336%"));
    fs::remove(dir.file("count"));
    result = run_polygraphy({"debug", "repeat", "--until", "bad", "--check", "sh", "-c", counter + "test $n -lt 2"});
    EXPECT_THAT(result.output, HasSubstr("Finished 2 iteration(s) | Passed: 1/2 | Pass Rate: 50.0%"));
    EXPECT_THAT(result.output, HasSubstr("`--artifacts` was not specified; No artifacts will be stored during this run!"));
}

TEST(DebugRepeat, CrashOfTheCheckIsAFailureVerdict) {
    const auto result = run_polygraphy({"debug", "repeat", "--until", "1", "--check", "sh", "-c", "echo dying; kill -SEGV $$"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Check command was killed by signal 11"));
    EXPECT_THAT(result.output, HasSubstr("dying"));
    EXPECT_THAT(result.output, HasSubstr("Passed: 0/1"));
}

TEST(DebugRepeat, TimeoutOfTheCheckIsAFailureVerdict) {
    const auto result =
        run_polygraphy({"debug", "repeat", "--until", "1", "--check-timeout", "0.3", "--check", "sleep", "30"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Check command timed out after 0.3 s; it was killed and counts as a failure"));
    EXPECT_THAT(result.output, HasSubstr("Passed: 0/1"));
}

TEST(DebugRepeat, FailRegexDecides) {
    auto result = run_polygraphy(
        {"debug", "repeat", "--until", "1", "--fail-regex", "Op: Mul", "--check", "sh", "-c", "echo other error; exit 1"});
    EXPECT_THAT(result.output, HasSubstr("Passed: 1/1"));
    result = run_polygraphy(
        {"debug", "repeat", "--until", "1", "--fail-regex", "xyz", "Op: M.l", "--check", "sh", "-c", "echo '[Op: Mul]' >&2"});
    EXPECT_THAT(result.output, HasSubstr("Passed: 0/1"));
    EXPECT_THAT(result.output, HasSubstr("========== CAPTURED STDERR =========="));
}

TEST(DebugRepeat, FailCodesDecide) {
    auto passed = [](const std::vector<std::string>& options, const std::string& script) {
        std::vector<std::string> args = {"debug", "repeat", "--until", "1"};
        args.insert(args.end(), options.begin(), options.end());
        for (const auto& arg : {"--check", "sh", "-c"}) args.push_back(arg);
        args.push_back(script);
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 0) << result.output;
        return result.output.find("Passed: 1/1") != std::string::npos;
    };
    EXPECT_TRUE(passed({"--ignore-fail-code", "3"}, "exit 3"));
    EXPECT_FALSE(passed({"--ignore-fail-code", "3"}, "exit 4"));
    EXPECT_TRUE(passed({"--fail-code", "4"}, "exit 3"));
    EXPECT_FALSE(passed({"--fail-code", "4", "5"}, "exit 5"));
    EXPECT_FALSE(passed({"--fail-code", "-11"}, "kill -SEGV $$"));
    EXPECT_TRUE(passed({"--ignore-fail-code", "-11"}, "kill -SEGV $$"));
    // --fail-code with --fail-regex: both must hold.
    EXPECT_TRUE(passed({"--fail-code", "2", "--fail-regex", "boom"}, "echo fine; exit 2"));
    EXPECT_FALSE(passed({"--fail-code", "2", "--fail-regex", "boom"}, "echo boom; exit 2"));
}

TEST(DebugRepeat, ShowOutputAndHideFailOutput) {
    auto result = run_polygraphy({"debug", "repeat", "--until", "1", "--check", "echo", "visible-text"});
    EXPECT_THAT(result.output, Not(HasSubstr("CAPTURED STDOUT")));
    result = run_polygraphy({"debug", "repeat", "--until", "1", "--show-output", "--check", "echo", "visible-text"});
    EXPECT_THAT(result.output, HasSubstr("CAPTURED STDOUT ==========\n        visible-text"));
    result = run_polygraphy({"debug", "repeat", "--until", "1", "--hide-fail-output", "--check", "sh", "-c", "echo secret; exit 1"});
    EXPECT_THAT(result.output, Not(HasSubstr("CAPTURED STDOUT")));
    EXPECT_THAT(result.output, HasSubstr("Passed: 0/1"));
}

TEST(DebugRepeat, IterationInfoIsWrittenForTheCheck) {
    TempDir dir;
    const auto result = run_polygraphy({"debug", "repeat", "--until", "2", "--show-output", "--iter-info",
                                        dir.file("info.json"), "--check", "cat", dir.file("info.json")});
    EXPECT_THAT(result.output, HasSubstr("\"iteration\": 1"));
    EXPECT_THAT(result.output, HasSubstr("Passed: 2/2"));
    EXPECT_FALSE(fs::exists(dir.file("info.json")));
}

TEST(DebugRepeat, InterruptingTheToolEndsTheCheckCommand) {
    // The check runs in its own process group; a SIGTERM to the tool must still end it.
    TempDir dir;
    const std::string pidfile = dir.file("pid");
    const std::string script =
        std::string(POLYGRAPHY_CLI_PATH) + " debug repeat --until 1 --check sh -c 'echo $$ > " + pidfile +
        "; exec sleep 30' & TOOL=$!; for i in $(seq 200); do test -s " + pidfile +
        " && break; sleep 0.05; done; kill -TERM $TOOL; wait $TOOL; echo tool=$?; if kill -0 $(cat " + pidfile +
        ") 2>/dev/null; then echo CHECK-ALIVE; kill $(cat " + pidfile + "); else echo CHECK-GONE; fi";
    const auto result = testing::run_command(script);
    EXPECT_THAT(result.output, HasSubstr("tool=143"));
    EXPECT_THAT(result.output, HasSubstr("CHECK-GONE"));
}

TEST(DebugRepeat, MissingArtifactIsReportedAndSkipped) {
    TempDir dir;
    const auto result = run_polygraphy({"debug", "repeat", "--until", "1", "--artifacts", dir.file("none.txt"),
                                        "--art-dir", dir.file("arts"), "--check", "true"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("[E]     Artifact: " + dir.file("none.txt") + " does not exist, skipping."));
}

TEST(DebugRepeat, CheckThatCannotStartIsAnError) {
    const auto result = run_polygraphy({"debug", "repeat", "--until", "2", "--check", "/nonexistent/checker", "x"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output,
                HasSubstr("[!] Could not start check command '/nonexistent/checker x': /nonexistent/checker: No such file"));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));
}

TEST(DebugRepeat, BadOptions) {
    auto result = run_polygraphy({"debug", "repeat", "--check", "true"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("the following arguments are required: --until"));

    result = run_polygraphy({"debug", "repeat", "--until", "often", "--check", "true"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --until value must be a positive integer, 'good', or 'bad', but was: often"));

    result = run_polygraphy({"debug", "repeat", "--until", "0", "--check", "true"});
    EXPECT_EQ(result.exit_code, 1);

    result = run_polygraphy({"debug", "repeat", "--until", "1", "--check"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --check was given without a command."));

    result = run_polygraphy({"debug", "repeat", "--until", "1", "--fail-regex", "(", "--check", "true"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Invalid regular expression for --fail-regex: '('"));

    result = run_polygraphy({"debug", "repeat", "--until", "1", "--check-timeout", "0", "--check", "true"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Invalid value for --check-timeout: '0'"));

    result = run_polygraphy({"debug", "repeat", "--until", "1", "--fail-code", "1", "--ignore-fail-code", "2", "--check", "true"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("not allowed with argument"));
}

TEST(DebugRepeat, WithoutCheckAsksOnStdin) {
    const auto result = testing::run_command("printf 'x\\nf\\np\\n' | " + std::string(POLYGRAPHY_CLI_PATH) +
                                             " debug repeat --until 2");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Starting interactive debugging session since no `--check` command was provided"));
    EXPECT_THAT(result.output, HasSubstr("Please choose either: 'p' or 'f'"));
    EXPECT_THAT(result.output, HasSubstr("Passed: 1/2"));
    const auto closed = testing::run_command(std::string(POLYGRAPHY_CLI_PATH) + " debug repeat --until 2 < /dev/null");
    EXPECT_EQ(closed.exit_code, 1);
    EXPECT_THAT(closed.output, HasSubstr("standard input ended before a verdict was entered"));
}

TEST(Debug, SubtoolDispatch) {
    auto result = run_polygraphy({"debug"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("polygraphy debug: error: the following arguments are required: subtool"));
    result = run_polygraphy({"debug", "build"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("argument subtool: invalid choice: 'build' (choose from 'diff', 'precision', "
                                         "'reduce', 'repeat')"));
    result = run_polygraphy({"debug", "-h"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("usage: polygraphy debug [-h] {diff,precision,reduce,repeat} ..."));
    EXPECT_THAT(result.output, HasSubstr("Debug Subtools:"));
    result = run_polygraphy({"debug", "repeat", "-h"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("usage: polygraphy debug repeat"));
    EXPECT_THAT(result.output, HasSubstr("--check-timeout SECONDS"));
    result = run_polygraphy({"-h"});
    EXPECT_THAT(result.output, HasSubstr("debug"));
}

}  // namespace
}  // namespace polygraphy::tools
