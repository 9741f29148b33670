// OnnxrtRunnerArgs: option declarations, parsing, and runners built through the model-loader hook.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../../backend/onnxrt/onnxrt_test_util.h"
#include "model_builder.h"
#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/tools/args/backend/onnxrt_args.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A ParsedArgs as the parser would build it: `dest -> values` per occurrence.
ParsedArgs parsed(const std::vector<std::pair<std::string, std::vector<std::string>>>& occurrences) {
    ParsedArgs args;
    std::size_t position = 1;
    for (const auto& [dest, values] : occurrences) {
        ParsedArgs::Occurrence occurrence;
        occurrence.position = position++;
        occurrence.values = values;
        args.add(dest, occurrence);
    }
    return args;
}

const OptionSpec* find_option(const std::vector<OptionSpec>& specs, const std::string& flag) {
    for (const auto& spec : specs)
        for (const auto& candidate : spec.flags)
            if (candidate == flag) return &spec;
    return nullptr;
}

template <typename F>
std::string usage_error_of(F&& statement) {
    try {
        statement();
    } catch (const UsageError& error) {
        return error.what();
    }
    ADD_FAILURE() << "no UsageError thrown";
    return "";
}

TEST(OnnxrtRunnerArgs, DeclaresPolygraphyFlags) {
    const auto group = make_onnxrt_runner_args();
    EXPECT_EQ(group->runner_flag(), "--onnxrt");
    EXPECT_EQ(group->runner_display_name(), "ONNX-Runtime");
    const auto specs = group->options();
    const OptionSpec* providers = find_option(specs, "--providers");
    ASSERT_NE(providers, nullptr);
    EXPECT_EQ(providers->flags, (std::vector<std::string>{"--providers", "--execution-providers"}));
    EXPECT_EQ(providers->kind, OptionKind::kValues);
    EXPECT_EQ(providers->dest, "providers");
    ASSERT_NE(find_option(specs, "--onnxrt-intra-op-threads"), nullptr);
    ASSERT_NE(find_option(specs, "--onnxrt-inter-op-threads"), nullptr);
    const OptionSpec* level = find_option(specs, "--onnxrt-graph-optimization-level");
    ASSERT_NE(level, nullptr);
    EXPECT_EQ(level->choices, (std::vector<std::string>{"disable", "basic", "extended", "all"}));
    ASSERT_NE(find_option(specs, "--onnxrt-execution-mode"), nullptr);
    // The selection flag belongs to the runner-selection group, not to this one.
    EXPECT_EQ(find_option(specs, "--onnxrt"), nullptr);
}

TEST(OnnxrtRunnerArgs, DefaultsWhenNothingIsGiven) {
    OnnxrtRunnerArgs group;
    group.parse(ParsedArgs{});
    EXPECT_EQ(group.session_options().providers, std::vector<std::string>{"cpu"});
    EXPECT_EQ(group.session_options().intra_op_num_threads, 0);
    EXPECT_EQ(group.session_options().graph_optimization_level, onnxrt::GraphOptimizationLevel::kAll);
    EXPECT_EQ(group.session_options().execution_mode, onnxrt::ExecutionMode::kSequential);
}

TEST(OnnxrtRunnerArgs, ParsesEveryOption) {
    OnnxrtRunnerArgs group;
    group.parse(parsed({{"providers", {"cuda", "cpu"}},
                        {"onnxrt_intra_op_threads", {"3"}},
                        {"onnxrt_inter_op_threads", {"2"}},
                        {"onnxrt_graph_optimization_level", {"basic"}},
                        {"onnxrt_execution_mode", {"parallel"}}}));
    const auto& options = group.session_options();
    EXPECT_EQ(options.providers, (std::vector<std::string>{"cuda", "cpu"}));
    EXPECT_EQ(options.intra_op_num_threads, 3);
    EXPECT_EQ(options.inter_op_num_threads, 2);
    EXPECT_EQ(options.graph_optimization_level, onnxrt::GraphOptimizationLevel::kBasic);
    EXPECT_EQ(options.execution_mode, onnxrt::ExecutionMode::kParallel);
}

TEST(OnnxrtRunnerArgs, BadValuesAreUsageErrorsNamingTheOption) {
    OnnxrtRunnerArgs group;
    EXPECT_EQ(usage_error_of([&] { group.parse(parsed({{"onnxrt_intra_op_threads", {"-1"}}})); }),
              "Invalid value for --onnxrt-intra-op-threads: '-1'.\nNote: expected a whole number >= 0 (0: "
              "ONNX-Runtime's default)");
    EXPECT_THAT(usage_error_of([&] { group.parse(parsed({{"onnxrt_inter_op_threads", {"2x"}}})); }),
                StartsWith("Invalid value for --onnxrt-inter-op-threads: '2x'."));
    EXPECT_THAT(usage_error_of([&] { group.parse(parsed({{"onnxrt_inter_op_threads", {"99999999999"}}})); }),
                StartsWith("Invalid value for --onnxrt-inter-op-threads: '99999999999'."));
    EXPECT_THAT(usage_error_of([&] { group.parse(parsed({{"onnxrt_graph_optimization_level", {"max"}}})); }),
                StartsWith("Invalid value for --onnxrt-graph-optimization-level: 'max'."));
    EXPECT_THAT(usage_error_of([&] { group.parse(parsed({{"onnxrt_execution_mode", {"serial"}}})); }),
                StartsWith("Invalid value for --onnxrt-execution-mode: 'serial'."));
    EXPECT_EQ(usage_error_of([&] { group.parse(parsed({{"providers", {"cpu", ""}}})); }),
              "--providers: an execution provider name cannot be empty");
}

TEST(OnnxrtRunnerArgs, MakeRunnerWithoutHookIsAnInternalError) {
    OnnxrtRunnerArgs group;
    group.parse(ParsedArgs{});
    EXPECT_THROW(group.make_runner(), InternalError);
}

TEST(OnnxrtRunnerArgs, MakesRunnersFromTheHookedModelLoader) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    int hook_calls = 0;
    auto group = std::make_unique<OnnxrtRunnerArgs>();
    group->set_model_loader_hook([&hook_calls]() -> OnnxLoader {
        ++hook_calls;
        polygraphy::testing::ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{3});
        builder.node("Relu", {"x"}, {"y"});
        builder.output("y", DataType::kFloat32, Shape{3});
        return loader_from_value(builder.build());
    });
    group->parse(parsed({{"providers", {"cpu"}}, {"onnxrt_intra_op_threads", {"1"}}}));
    auto first = group->make_runner();
    auto second = group->make_runner();
    EXPECT_EQ(hook_calls, 2);
    EXPECT_THAT(first->name(), StartsWith("onnxrt-runner-N"));
    EXPECT_NE(first->name(), second->name());
    EXPECT_NE(dynamic_cast<onnxrt::OnnxrtRunner*>(first.get()), nullptr);
    RunnerActivation active(*first);
    const TensorMap outputs = first->infer({{"x", Tensor::from_doubles(DataType::kFloat32, {3}, {-1, 0, 2})}});
    EXPECT_TRUE(outputs.at("y").equals(Tensor::from_doubles(DataType::kFloat32, {3}, {0, 0, 2})));
}

TEST(OnnxrtRunnerArgs, UnknownProviderFailsWhenTheRunnerActivates) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    OnnxrtRunnerArgs group([] {
        polygraphy::testing::ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{3});
        builder.node("Relu", {"x"}, {"y"});
        builder.output("y", DataType::kFloat32, Shape{3});
        return loader_from_value(builder.build());
    });
    group.parse(parsed({{"providers", {"nosuch"}}}));
    auto runner = group.make_runner();
    try {
        runner->activate();
        FAIL() << "expected an exception";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), StartsWith("Could not find specified ONNX-Runtime execution provider.\nNote: "
                                             "Requested provider was: nosuch, but available providers are: ["));
    }
}

TEST(OnnxrtRunnerArgs, UnavailableOnlyWhenNotBuilt) {
    OnnxrtRunnerArgs group;
    if (onnxrt::built_with_onnxruntime()) {
        EXPECT_EQ(group.unavailable_reason(), std::nullopt);
    } else {
        ASSERT_TRUE(group.unavailable_reason().has_value());
        EXPECT_THAT(*group.unavailable_reason(), HasSubstr("scripts/setup_onnxruntime.sh"));
    }
}

TEST(OnnxrtRunnerArgs, MissingLibraryIsReportedWhenTheRunnerIsMade) {
    if (!onnxrt::built_with_onnxruntime()) GTEST_SKIP() << "built without ONNX-Runtime";
    onnxrt::testing::ScopedEnv env("POLYGRAPHY_ONNXRUNTIME_LIB", "/nonexistent");
    // ctest runs each test in its own process; in a whole-binary run another test may have loaded it.
    if (onnxrt::is_available()) GTEST_SKIP() << "ONNX-Runtime is already loaded in this process";
    OnnxrtRunnerArgs group([] { return OnnxLoader([]() -> OnnxModel { throw InternalError("never loaded"); }); });
    group.parse(ParsedArgs{});
    try {
        group.make_runner();
        FAIL() << "expected an exception";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), HasSubstr("/nonexistent: cannot open shared object file"));
        EXPECT_THAT(error.what(), HasSubstr("scripts/setup_onnxruntime.sh"));
    }
}

}  // namespace
}  // namespace polygraphy::tools
