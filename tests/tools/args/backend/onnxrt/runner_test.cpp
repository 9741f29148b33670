// OnnxrtRunnerArgs: option declarations, parsing, and the runners of its step (build_runner).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../../../backend/onnxrt/onnxrt_test_util.h"
#include "model_builder.h"
#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/common/exception.h"
#include "tools/args/backend/onnxrt/runner.h"

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
    EXPECT_EQ(usage_error_of([&] {
                  group.parse(parsed({{"onnxrt_intra_op_threads", {"-1"}}}));
              }),
              "Invalid value for --onnxrt-intra-op-threads: '-1'.\nNote: expected a whole number >= 0 (0: "
              "ONNX-Runtime's default)");
    EXPECT_THAT(usage_error_of([&] {
                    group.parse(parsed({{"onnxrt_inter_op_threads", {"2x"}}}));
                }),
                StartsWith("Invalid value for --onnxrt-inter-op-threads: '2x'."));
    EXPECT_THAT(usage_error_of([&] {
                    group.parse(parsed({{"onnxrt_inter_op_threads", {"99999999999"}}}));
                }),
                StartsWith("Invalid value for --onnxrt-inter-op-threads: '99999999999'."));
    EXPECT_THAT(usage_error_of([&] {
                    group.parse(parsed({{"onnxrt_graph_optimization_level", {"max"}}}));
                }),
                StartsWith("Invalid value for --onnxrt-graph-optimization-level: 'max'."));
    EXPECT_THAT(usage_error_of([&] {
                    group.parse(parsed({{"onnxrt_execution_mode", {"serial"}}}));
                }),
                StartsWith("Invalid value for --onnxrt-execution-mode: 'serial'."));
    EXPECT_EQ(usage_error_of([&] {
                  group.parse(parsed({{"providers", {"cpu", ""}}}));
              }),
              "--providers: an execution provider name cannot be empty");
}

// The model every runner of these tests is built over (what a job's model loader yields).
OnnxModel relu_model() {
    polygraphy::testing::ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{3});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{3});
    return builder.build();
}

TEST(OnnxrtRunnerArgs, WithoutAModelNoRunnerIsBuilt) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();  // without the library, build_runner() reports that first
    OnnxrtRunnerArgs group;
    group.parse(ParsedArgs{});
    EXPECT_THROW(build_runner(group.runner_step(), nullptr), InternalError);
}

TEST(OnnxrtRunnerArgs, MakesRunnersOverTheModelLoader) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    int loads = 0;
    const OnnxLoader model = [&loads]() -> OnnxModel {
        ++loads;
        return relu_model();
    };
    auto group = std::make_unique<OnnxrtRunnerArgs>();
    group->parse(parsed({{"providers", {"cpu"}}, {"onnxrt_intra_op_threads", {"1"}}}));
    auto first = build_runner(group->runner_step(), model);
    auto second = build_runner(group->runner_step(), model);
    EXPECT_EQ(loads, 0);  // loaders are lazy: the model is loaded when a runner is activated
    EXPECT_THAT(first->name(), StartsWith("onnxrt-runner-N"));
    EXPECT_NE(first->name(), second->name());
    EXPECT_NE(dynamic_cast<onnxrt::OnnxrtRunner*>(first.get()), nullptr);
    RunnerActivation active(*first);
    EXPECT_EQ(loads, 1);
    const TensorMap outputs = first->infer({{"x", Tensor::from_doubles(DataType::kFloat32, {3}, {-1, 0, 2})}});
    EXPECT_TRUE(outputs.at("y").equals(Tensor::from_doubles(DataType::kFloat32, {3}, {0, 0, 2})));
}

TEST(OnnxrtRunnerArgs, UnknownProviderFailsWhenTheRunnerActivates) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    OnnxrtRunnerArgs group;
    group.parse(parsed({{"providers", {"nosuch"}}}));
    auto runner = build_runner(group.runner_step(), loader_from_value(relu_model()));
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
    OnnxrtRunnerArgs group;
    group.parse(ParsedArgs{});
    try {
        build_runner(group.runner_step(), []() -> OnnxModel { throw InternalError("never loaded"); });
        FAIL() << "expected an exception";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), HasSubstr("/nonexistent: cannot open shared object file"));
        EXPECT_THAT(error.what(), HasSubstr("scripts/setup_onnxruntime.sh"));
    }
}

}  // namespace
}  // namespace polygraphy::tools
