// The `polygraphy` command: top-level options, dispatch and exit statuses (child processes).
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/tools/cli.h"

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

    // line-info: the library source file (relative to src/, as Polygraphy's are to its package) and line.
    const auto with_lines = run_polygraphy({"run", "--log-format", "timestamp", "line-info"});
    std::smatch where;
    ASSERT_TRUE(std::regex_search(with_lines.output, where,
                                  std::regex(R"(\[I\] \(\d\d:\d\d:\d\d\) \[([a-z_/]+\.cpp):(\d+)\] RUNNING \| )")))
        << with_lines.output;
    std::ifstream source(std::string(POLYGRAPHY_SOURCE_DIR) + "/src/" + where[1].str());
    ASSERT_TRUE(source) << where[1];
    std::string line;
    for (int number = 1; number <= std::stoi(where[2].str()); ++number) std::getline(source, line);
    EXPECT_THAT(line, HasSubstr("RUNNING"));  // the line that logs it, or the start of its statement
    EXPECT_THAT(with_lines.output, Not(HasSubstr("not supported")));
}

// --verbosity path:LEVEL: files under `path` (relative to src/) use LEVEL; the longest path wins.
TEST(Cli, PerPathVerbosity) {
    testing::TempDir dir;
    testing::ModelBuilder builder(13, "net");
    builder.input("x", DataType::kFloat32, DynShape{Dim::fixed(2)});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, DynShape{Dim::fixed(2)});
    builder.save(dir.file("m.onnx"));
    auto run = [&](std::vector<std::string> verbosity) {
        std::vector<std::string> args = {"run", dir.file("m.onnx"), "--ref", "--verbosity"};
        args.insert(args.end(), verbosity.begin(), verbosity.end());
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 0) << result.output;
        return result.output;
    };
    const std::string from_data_loader = "[V] Generating data using numpy seed: 1";  // comparator/data_loader.cpp
    const std::string from_comparator = "[V] Loading inputs from data loader";       // comparator/comparator.cpp

    auto output = run({"comparator/data_loader.cpp:VERBOSE"});
    EXPECT_THAT(output, HasSubstr(from_data_loader));
    EXPECT_THAT(output, Not(HasSubstr(from_comparator)));
    EXPECT_THAT(output, HasSubstr("[I] RUNNING | "));  // the default stays INFO
    // Polygraphy's file names end in .py; a name matches whatever its extension.
    EXPECT_THAT(run({"comparator/data_loader.py:verbose"}), HasSubstr(from_data_loader));
    output = run({"warning", "comparator:VERBOSE"});
    EXPECT_THAT(output, HasSubstr(from_data_loader));
    EXPECT_THAT(output, HasSubstr(from_comparator));
    EXPECT_THAT(output, Not(HasSubstr("[I] RUNNING")));  // tools/ uses the default, WARNING
    output = run({"comparator/comparator.cpp:INFO", "comparator:VERBOSE"});
    EXPECT_THAT(output, HasSubstr(from_data_loader));
    EXPECT_THAT(output, Not(HasSubstr(from_comparator)));
    // Only whole path components match.
    EXPECT_THAT(run({"comparator/data:VERBOSE", "compar:VERBOSE"}), Not(HasSubstr("[V] ")));
    // --silent silences every path.
    EXPECT_THAT(run({"comparator:VERBOSE", "--silent"}), Not(HasSubstr("[V] ")));

    for (const char* bad : {"foo:BAD", "comparator:", "loud"}) {
        const auto result = run_polygraphy({"run", dir.file("m.onnx"), "--ref", "--verbosity", bad});
        EXPECT_NE(result.exit_code, 0) << bad;
        EXPECT_THAT(result.output, HasSubstr(std::string("Invalid value in --verbosity: '") + bad + "'")) << bad;
        EXPECT_THAT(result.output, Not(HasSubstr("RUNNING"))) << bad;
    }
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

TEST(Cli, OpenmpSettingsPassiveWaitingWithAShortSpinUnlessTheChosenThreadsExceedTheIdleCores) {
    const auto environment = [](std::map<std::string, std::string> values) {
        return [values = std::move(values)](const char* name) -> const char* {
            const auto found = values.find(name);
            return found == values.end() ? nullptr : found->second.c_str();
        };
    };
    // The idle cores as the command starts, read only for a count of 2 or more.
    const auto cores = [](int idle) { return [idle] { return idle; }; };
    const auto unread = [] {
        ADD_FAILURE() << "the load was read where the answer cannot matter";
        return 1;
    };
    using Settings = std::vector<std::pair<std::string, std::string>>;
    const Settings both = {{"OMP_WAIT_POLICY", "passive"}, {"GOMP_SPINCOUNT", "300000"}};
    const Settings passive_only = {{"OMP_WAIT_POLICY", "passive"}};
    // The default thread count spins on a busy machine too (it then runs 1 thread).
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "m.onnx", "--ref"}, environment({}), unread), both);
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "m.onnx", "--ref", "--ref-threads", "0"}, environment({}), unread),
              both);
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "m.onnx", "--ref-threads=0"}, environment({}), unread), both);
    // A chosen count spins where the idle cores hold it, and sleeps at once where they do not.
    EXPECT_EQ(
        openmp_settings({"polygraphy", "run", "m.onnx", "--ref", "--ref-threads", "2"}, environment({}), cores(2)),
        both);
    EXPECT_EQ(
        openmp_settings({"polygraphy", "run", "m.onnx", "--ref", "--ref-threads", "2"}, environment({}), cores(1)),
        passive_only);
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "m.onnx", "--ref-threads=3"}, environment({}), cores(2)),
              passive_only);
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "m.onnx", "--ref-threads=1"}, environment({}), unread), both);
    // The last --ref-threads counts, as in the argument parser.
    EXPECT_EQ(
        openmp_settings({"polygraphy", "run", "--ref-threads", "1", "--ref-threads=4"}, environment({}), cores(2)),
        passive_only);
    EXPECT_EQ(
        openmp_settings({"polygraphy", "run", "--ref-threads=4", "--ref-threads", "2"}, environment({}), cores(2)),
        both);
    // A value the parser will refuse gets no spin.
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "--ref-threads", "two"}, environment({}), cores(2)), passive_only);
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "--ref-threads=-1"}, environment({}), cores(2)), passive_only);
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "--ref-threads", "99999999999"}, environment({}), cores(2)),
              passive_only);
    // Settings the environment gives are kept.
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "m.onnx"}, environment({{"GOMP_SPINCOUNT", "0"}}), cores(2)),
              passive_only);
    EXPECT_EQ(openmp_settings({"polygraphy", "run", "m.onnx"}, environment({{"OMP_WAIT_POLICY", "active"}}), cores(2)),
              Settings{});
    // argv[0] is the program, never an option.
    EXPECT_EQ(openmp_settings({"--ref-threads=3", "run"}, environment({}), unread), both);
    // Commands that do not run the built-in runtime's threads start once: nothing to set.
    for (const std::vector<std::string>& argv :
         std::vector<std::vector<std::string>>{{"polygraphy"},
                                               {"polygraphy", "-h"},
                                               {"polygraphy", "-v"},
                                               {"polygraphy", "--version"},
                                               {"polygraphy", "run", "-h"},
                                               {"polygraphy", "inspect", "model", "m.onnx"},
                                               {"polygraphy", "inspect", "data", "d.json"},
                                               {"polygraphy", "check", "lint", "m.onnx"}})
        EXPECT_EQ(openmp_settings(argv, environment({}), unread), Settings{}) << argv.back();
    EXPECT_EQ(openmp_settings({"polygraphy", "inspect", "capability", "m.onnx"}, environment({}), unread), both);
    EXPECT_EQ(openmp_settings({"polygraphy", "debug", "diff", "a.onnx", "b.onnx"}, environment({}), unread), both);
}

TEST(Cli, IdleCoresNowIsAtLeastOneAndAtMostTheMachinesCores) {
    const int idle = idle_cores_now();
    EXPECT_GE(idle, 1);
    EXPECT_LE(idle, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace polygraphy::tools
