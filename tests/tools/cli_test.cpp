// The `polygraphy` command: top-level options, dispatch and exit statuses (child processes).
#include <filesystem>

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

// Tools with subtools take the logging options before the subtool too, as Polygraphy's parsers do.
TEST(Cli, LoggingOptionsMayComeBeforeTheSubtool) {
    testing::TempDir dir;
    testing::ModelBuilder builder(13, "net");
    builder.input("x", DataType::kFloat32, DynShape{Dim::fixed(2)});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, DynShape{Dim::fixed(2)});
    builder.save(dir.file("m.onnx"));

    auto result = run_polygraphy({"surgeon", "-v", "sanitize", dir.file("m.onnx"), "-o", dir.file("out.onnx")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[V] "));  // -v took effect
    EXPECT_THAT(run_polygraphy({"surgeon", "sanitize", dir.file("m.onnx"), "-o", dir.file("out.onnx")}).output,
                Not(HasSubstr("[V] ")));
    // Values and several options; the subtool's own options still apply after.
    result = run_polygraphy(
        {"inspect", "--verbosity=warning", "--log-file", dir.file("log.txt"), "-q", "model", dir.file("m.onnx")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("==== ONNX Model")));  // INFO is below WARNING
    EXPECT_TRUE(std::filesystem::exists(dir.file("log.txt")));
    result = run_polygraphy({"inspect", "-q", "model", dir.file("m.onnx"), "-v"});
    EXPECT_THAT(result.output, HasSubstr("==== ONNX Model"));
    // Anything else before the subtool is still an error.
    result = run_polygraphy({"surgeon", "--bogus", "sanitize", dir.file("m.onnx")});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("error: the following arguments are required: subtool"));
}

TEST(Cli, LogFormatTimestampAndLineInfo) {
    const auto result = run_polygraphy({"run", "--log-format", "timestamp", "no-colors"});
    // Polygraphy's time.strftime('%X'), after the severity letter.
    EXPECT_THAT(result.output, ::testing::ContainsRegex("\\[I\\] \\([0-9][0-9]:[0-9][0-9]:[0-9][0-9]\\) RUNNING \\| "));
    const auto plain = run_polygraphy({"run"});
    EXPECT_THAT(plain.output, Not(::testing::ContainsRegex("\\[I\\] \\([0-9][0-9]:")));
    EXPECT_THAT(run_polygraphy({"run", "--log-format", "line-info"}).output,
                HasSubstr("[W] --log-format line-info is not supported in this build and is ignored"));
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
