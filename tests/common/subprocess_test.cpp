#include "common/subprocess.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "polygraphy/common/exception.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using testing::error_message;

TEST(RunProcess, CapturesBothStreamsAndTheExitStatus) {
    const auto result = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
    EXPECT_EQ(result.returncode, 3);
    EXPECT_FALSE(result.timed_out);
    EXPECT_FALSE(result.killed_by_signal());
    EXPECT_EQ(result.stdout_text, "out\n");
    EXPECT_EQ(result.stderr_text, "err\n");
    EXPECT_EQ(result.describe(), "exit status 3");
}

TEST(RunProcess, EnvironmentOverridesReplaceOrAddVariables) {
    setenv("POLYGRAPHY_TEST_KEPT", "kept", 1);
    setenv("POLYGRAPHY_TEST_REPLACED", "old", 1);
    const auto result =
        run_process({"sh", "-c", "echo $POLYGRAPHY_TEST_KEPT $POLYGRAPHY_TEST_REPLACED $POLYGRAPHY_TEST_NEW"},
                    std::nullopt, 1024, {"POLYGRAPHY_TEST_REPLACED=new", "POLYGRAPHY_TEST_NEW=added"});
    EXPECT_EQ(result.stdout_text, "kept new added\n");
    EXPECT_STREQ(std::getenv("POLYGRAPHY_TEST_REPLACED"), "old");  // this process's own is untouched
    unsetenv("POLYGRAPHY_TEST_KEPT");
    unsetenv("POLYGRAPHY_TEST_REPLACED");
}

TEST(RunProcess, ACrashIsAResultWithTheNegativeSignal) {
    const auto result = run_process({"sh", "-c", "echo before; kill -SEGV $$"});
    EXPECT_EQ(result.returncode, -11);
    EXPECT_TRUE(result.killed_by_signal());
    EXPECT_EQ(result.stdout_text, "before\n");
    EXPECT_THAT(result.describe(), HasSubstr("killed by signal 11"));
}

TEST(RunProcess, TimeoutKillsTheCommandAndWhatItStarted) {
    // The background sleep holds the output pipe: only killing the whole group ends the wait.
    const auto result = run_process({"sh", "-c", "echo started; sleep 30 & wait"}, 0.3);
    EXPECT_TRUE(result.timed_out);
    EXPECT_EQ(result.stdout_text, "started\n");
    EXPECT_THAT(result.describe(), HasSubstr("timed out after 0.3 s"));
}

TEST(RunProcess, TimeoutAppliesAfterTheCommandClosesItsStreams) {
    const auto result = run_process({"sh", "-c", "exec >&- 2>&-; sleep 30"}, 0.3);
    EXPECT_TRUE(result.timed_out);
}

TEST(RunProcess, CaptureIsBounded) {
    const auto result = run_process({"head", "-c", "100000", "/dev/zero"}, std::nullopt, 1000);
    EXPECT_EQ(result.returncode, 0);
    EXPECT_EQ(result.stdout_text.size(), 1000u);
    EXPECT_TRUE(result.truncated);
}

TEST(RunProcess, StdinIsEmpty) {
    const auto result = run_process({"cat"});
    EXPECT_EQ(result.returncode, 0);
    EXPECT_EQ(result.stdout_text, "");
}

TEST(RunProcess, CommandThatCannotStartIsAnError) {
    EXPECT_THAT(error_message<PolygraphyException>([] { run_process({"/nonexistent/polygraphy-check"}); }),
                HasSubstr("Could not start check command '/nonexistent/polygraphy-check': /nonexistent/polygraphy-check: "
                          "No such file or directory"));
    EXPECT_THAT(error_message<PolygraphyException>([] { run_process({"no-such-polygraphy-check-program", "x"}); }),
                HasSubstr("No such file or directory"));
    EXPECT_THAT(error_message<PolygraphyException>([] { run_process({"/dev/null"}); }),
                HasSubstr("Permission denied"));
    EXPECT_THAT(error_message<PolygraphyException>([] { run_process({}); }), HasSubstr("the command is empty"));
}

TEST(RunProcess, BadTimeoutIsAnError) {
    EXPECT_THAT(error_message<PolygraphyException>([] { run_process({"true"}, 0.0); }),
                HasSubstr("must be a positive number of seconds"));
    EXPECT_THAT(error_message<PolygraphyException>([] { run_process({"true"}, -1.0); }),
                HasSubstr("must be a positive number of seconds"));
}

}  // namespace
}  // namespace polygraphy
