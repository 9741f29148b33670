// The `polygraphy` command: top-level options, dispatch and exit statuses (child processes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;

TEST(Cli, HelpListsTools) {
    auto result = run_polygraphy({"-h"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("usage: polygraphy [-h] [-v] {run"));
    EXPECT_THAT(result.output, HasSubstr("Polygraphy: A Deep Learning Debugging Toolkit"));
    EXPECT_THAT(result.output, HasSubstr("\nTools:\n"));
    EXPECT_THAT(result.output, HasSubstr("    run "));
    EXPECT_THAT(result.output, HasSubstr("Run inference and compare results across backends."));
    EXPECT_EQ(run_polygraphy({"--help"}).output, result.output);
}

TEST(Cli, Version) {
    auto result = run_polygraphy({"-v"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_THAT(result.output, ::testing::StartsWith("Polygraphy | Version: "));
    EXPECT_THAT(result.output, HasSubstr(" | Path: ['/"));
    EXPECT_EQ(run_polygraphy({"--version"}).output, result.output);
    EXPECT_EQ(run_polygraphy({"--vers"}).output, result.output);
}

TEST(Cli, MissingOrUnknownTool) {
    auto result = run_polygraphy({});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("polygraphy: error: the following arguments are required: tools"));
    result = run_polygraphy({"bogus"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output,
                HasSubstr("polygraphy: error: argument tools: invalid choice: 'bogus' (choose from 'run'"));
}

TEST(Cli, UnknownTopLevelOption) {
    auto result = run_polygraphy({"--bogus", "run"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[E] Unrecognized Options: ['--bogus']"));
}

TEST(Cli, ToolHelpIsGroupedByGroupTitles) {
    auto result = run_polygraphy({"run", "-h"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, ::testing::StartsWith("usage: polygraphy run [-h]"));
    for (const char* title :
         {"\noptions:\n", "\nLogging:\n", "\nRunners:\n", "\nModel:\n", "\nData Loader:\n", "\nComparator Inference:\n",
          "\nComparator Comparisons:\n", "\nComparison Function: `simple`:\n"})
        EXPECT_THAT(result.output, HasSubstr(title));
    EXPECT_THAT(result.output, HasSubstr("  Options related to logging and debug output\n"));
    EXPECT_THAT(result.output, Not(HasSubstr("[I] RUNNING")));
}

}  // namespace
}  // namespace polygraphy::tools
