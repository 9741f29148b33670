// Argument groups of `polygraphy run`, parsed in-process.
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/backend/ref/runner.h"
#include "tools/args/backend/runner_select.h"
#include "tools/args/comparator/comparator.h"
#include "tools/args/comparator/compare.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/comparator/postprocess.h"
#include "tools/args/logger/logger.h"
#include "tools/args/model.h"
#include "tools/args/parser.h"
#include "tools/registry.h"
#include "tools/run/run.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

class RunGroups : public ::testing::Test {
protected:
    void SetUp() override {
        logger().reset();
        tool_.setup("polygraphy run");
    }
    void TearDown() override { logger().reset(); }

    // Parses `args` (argparse + every group). Throws what the groups throw.
    void parse(const std::vector<std::string>& args) {
        ParseResult result = tool_.parser().parse_known_args(args);
        ASSERT_TRUE(result.unknown.empty()) << result.unknown.front();
        tool_.parse(result.args);
    }

    // The PolygraphyException message of parsing `args`.
    std::string error_of(const std::vector<std::string>& args) {
        try {
            parse(args);
        } catch (const PolygraphyException& e) {
            return e.what();
        }
        return "<no error>";
    }

    template <typename G>
    G& group() {
        G* found = tool_.groups().get<G>();
        if (!found) throw std::runtime_error("missing group");
        return *found;
    }

    RunTool tool_;
};

TEST_F(RunGroups, HelpListsEveryGroupByTitle) {
    const std::string help = tool_.parser().format_help(100);
    for (const char* title :
         {"\nLogging:\n", "\nRunners:\n", "\nModel:\n", "\nONNX Model Loading:\n", "\nONNX Model Saving:\n",
          "\nReference Runtime Inference:\n", "\nTensorRT Builder Configuration:\n", "\nTensorFlow Inference:\n",
          "\nData Loader:\n", "\nComparator Inference:\n", "\nComparator Comparisons:\n",
          "\nComparison Function: `simple`:\n"})
        EXPECT_THAT(help, HasSubstr(title));
    EXPECT_THAT(help, HasSubstr("--ref "));
    EXPECT_THAT(help, HasSubstr("Run inference using the built-in reference runtime (CPU)."));
    EXPECT_LT(help.find("\nLogging:\n"), help.find("\nRunners:\n"));
    EXPECT_EQ(tool_.summary(), "Run inference and compare results across backends.");
}

TEST_F(RunGroups, RunnersKeepOrderAndRepetition) {
    parse({"m.onnx", "--ref", "--ref"});
    const auto& selected = group<RunnerSelectArgs>().selected();
    ASSERT_EQ(selected.size(), 2u);
    EXPECT_EQ(selected[0]->runner_flag(), "--ref");
    EXPECT_EQ(build_runners(tool_.job()).size(), 2u);
}

TEST_F(RunGroups, OnnxRuntimeRunnerIsListed) {
    EXPECT_THAT(tool_.parser().format_help(100), HasSubstr("--onnxrt "));
    // Selecting it works where ONNX-Runtime is built in, and fails while parsing, naming the flag, elsewhere.
    const std::string error = error_of({"m.onnx", "--ref", "--onnxrt"});
    if (error == "<no error>") {
        ASSERT_EQ(group<RunnerSelectArgs>().selected().size(), 2u);
        EXPECT_EQ(group<RunnerSelectArgs>().selected()[1]->runner_flag(), "--onnxrt");
    } else {
        EXPECT_THAT(error, HasSubstr("ONNX-Runtime"));
        EXPECT_THAT(error, HasSubstr("(option: --onnxrt)"));
    }
}

TEST_F(RunGroups, TensorRtAndTensorFlowAreRefused) {
    EXPECT_EQ(error_of({"m.onnx", "--trt"}), "TensorRT is not available in this build (option: --trt)");
    EXPECT_EQ(error_of({"m.onnx", "--ref", "--fp16"}), "TensorRT is not available in this build (option: --fp16)");
    EXPECT_EQ(error_of({"m.onnx", "--ref", "--save-engine", "x.engine"}),
              "TensorRT is not available in this build (option: --save-engine)");
    EXPECT_EQ(error_of({"m.onnx", "--ref", "--trt-min-shapes", "x:[1]"}),
              "TensorRT is not available in this build (option: --trt-min-shapes)");
    EXPECT_EQ(error_of({"m.onnx", "--tf"}), "TensorFlow is not available in this build (option: --tf)");
    EXPECT_EQ(error_of({"m.onnx", "--ref", "--tf-outputs", "y"}),
              "TensorFlow is not available in this build (option: --tf-outputs)");
}

// Every TensorRT option Polygraphy 0.49.27's `run` takes (TrtConfigArgs, TrtLoadPluginsArgs,
// TrtOnnxFlagArgs, TrtLoadNetworkArgs, engine saving/loading, TrtRunnerArgs) parses and is refused by name.
TEST_F(RunGroups, EveryTensorRtOptionIsRefusedByName) {
    const std::vector<std::vector<std::string>> options = {
        {"--trt-opt-shapes", "x:[1]"},
        {"--trt-max-shapes", "x:[1]"},
        {"--tf32"},
        {"--bf16"},
        {"--fp8"},
        {"--int8"},
        {"--precision-constraints", "obey"},
        {"--sparse-weights"},
        {"--version-compatible"},
        {"--exclude-lean-runtime"},
        {"--calibration-cache", "c"},
        {"--calib-base-cls", "IInt8MinMaxCalibrator"},
        {"--calibration-base-class", "IInt8MinMaxCalibrator"},
        {"--quantile", "0.5"},
        {"--regression-cutoff", "0.5"},
        {"--load-timing-cache", "t"},
        {"--error-on-timing-cache-miss"},
        {"--disable-compilation-cache"},
        {"--save-tactics", "t"},
        {"--load-tactic-replay", "t"},
        {"--tactic-sources"},
        {"--trt-config-script", "s.py"},
        {"--trt-config-func-name", "f"},
        {"--trt-config-postprocess-script", "s.py"},
        {"--trt-cpps", "s.py"},
        {"--trt-safety-restricted"},
        {"--refittable"},
        {"--strip-plan"},
        {"--use-dla"},
        {"--allow-gpu-fallback"},
        {"--pool-limit", "workspace:1M"},
        {"--preview-features"},
        {"--builder-optimization-level", "3"},
        {"--hardware-compatibility-level", "ampere_plus"},
        {"--max-aux-streams", "2"},
        {"--quantization-flags"},
        {"--profiling-verbosity", "detailed"},
        {"--weight-streaming"},
        {"--runtime-platform", "same_as_build"},
        {"--tiling-optimization-level", "fast"},
        {"--plugins", "p.so"},
        {"--onnx-flags", "native_instancenorm"},
        {"--plugin-instancenorm"},
        {"--trt-outputs", "y"},
        {"--trt-exclude-outputs", "y"},
        {"--layer-precisions", "l:fp16"},
        {"--tensor-dtypes", "x:fp16"},
        {"--tensor-datatypes", "x:fp16"},
        {"--trt-network-func-name", "f"},
        {"--trt-npps", "s.py"},
        {"--strongly-typed"},
        {"--mark-debug", "y"},
        {"--mark-unfused-tensors-as-debug-tensors"},
        {"--save-timing-cache", "t"},
        {"--load-runtime", "r"},
        {"--optimization-profile", "0"},
        {"--allocation-strategy", "static"},
        {"--weight-streaming-budget", "1G"},
    };
    for (const auto& option : options) {
        std::vector<std::string> args = {"m.onnx", "--ref"};
        args.insert(args.end(), option.begin(), option.end());
        EXPECT_EQ(error_of(args), "TensorRT is not available in this build (option: " + option[0] + ")");
    }
    // --weight-streaming (above) is its own flag, not an abbreviation of --weight-streaming-budget, so
    // their common prefix is ambiguous, as in argparse.
    EXPECT_THAT(error_of({"m.onnx", "--ref", "--weight-stream"}),
                HasSubstr("ambiguous option: --weight-stream could match --weight-streaming"));
    EXPECT_EQ(error_of({"m.onnx", "--ref", "--use-tftrt"}),
              "TensorFlow is not available in this build (option: --use-tftrt)");
    // As in Polygraphy, `run` has no engine-capability or tensor-format options (`convert` has).
    for (const char* convert_only : {"--engine-capability", "--direct-io", "--tensor-formats"})
        EXPECT_FALSE(tool_.parser().parse_known_args({"m.onnx", convert_only, "x"}).unknown.empty()) << convert_only;
}

TEST_F(RunGroups, ModelTypes) {
    EXPECT_EQ(error_of({"m.engine"}), "TensorRT is not available in this build (model type: engine)");
    EXPECT_EQ(error_of({"m.graphdef"}), "TensorFlow is not available in this build (model type: frozen)");
    EXPECT_EQ(error_of({"m.txt"}),
              "Could not automatically determine model type for: m.txt\n"
              "Please explicitly specify the type with the --model-type option");
    parse({"m.txt", "--model-type", "onnx"});
    EXPECT_EQ(group<ModelArgs>().model_type(), "onnx");
    EXPECT_EQ(group<ModelArgs>().path(), "m.txt");
    parse({});
    EXPECT_FALSE(group<ModelArgs>().path().has_value());
}

TEST_F(RunGroups, InputShapes) {
    parse({"m.onnx", "--inputs", "x:[1,3]", "y:['batch',2]"});
    const auto& shapes = group<ModelArgs>().input_shapes();
    ASSERT_EQ(shapes.size(), 2u);
    EXPECT_EQ(shapes.at("y").shape->at(0), Dim::named("batch"));
    // The data loader generates with them.
    EXPECT_EQ(group<DataLoaderArgs>().generator_options().input_metadata.size(), 2u);
    EXPECT_EQ(error_of({"m.onnx", "--input-shapes", "x:[1,-3]"}),
              "Invalid shape in --input-shapes: '[1,-3]'. Dimension -3 is negative (use -1 for a dynamic dimension)");
}

TEST_F(RunGroups, LoggerSeverity) {
    parse({"-vv"});
    EXPECT_EQ(logger().severity(), Severity::kExtraVerbose);
    parse({"-q"});
    EXPECT_EQ(logger().severity(), Severity::kStart);
    parse({"-qqqqq"});
    EXPECT_EQ(logger().severity(), Severity::kCritical);
    parse({"-vvvvv"});
    EXPECT_EQ(logger().severity(), Severity::kUltraVerbose);
    parse({"--verbosity", "warning"});
    EXPECT_EQ(logger().severity(), Severity::kWarning);
    parse({"--verbosity", "warning", "-v"});  // -v/-q override the default verbosity, as in Polygraphy
    EXPECT_EQ(logger().severity(), Severity::kVerbose);
    parse({"--verbosity", "warning", "comparator:verbose"});  // a path's level leaves the default alone
    EXPECT_EQ(logger().severity(), Severity::kWarning);
    EXPECT_TRUE(logger().enabled(Severity::kVerbose));
    parse({"--verbosity", "comparator:verbose", "--silent"});
    EXPECT_FALSE(logger().enabled(Severity::kError));
    parse({"--silent", "-vvv"});
    EXPECT_EQ(logger().severity(), Severity::kCritical);
    parse({});
    EXPECT_EQ(logger().severity(), Severity::kInfo);
    EXPECT_THAT(error_of({"--verbosity", "loud"}), HasSubstr("Invalid value in --verbosity: 'loud'"));
    logger().set_severity(Severity::kSilent);
}

TEST_F(RunGroups, LoggerLevels) {
    EXPECT_EQ(LoggerArgs::severity_from_level(0), std::nullopt);
    EXPECT_EQ(LoggerArgs::severity_from_level(3), Severity::kSuperVerbose);
    EXPECT_EQ(LoggerArgs::severity_from_level(-2), Severity::kFinish);
    EXPECT_EQ(LoggerArgs::severity_from_level(-3), Severity::kWarning);
    EXPECT_EQ(LoggerArgs::severity_from_level(-4), Severity::kError);
}

TEST_F(RunGroups, DataLoaderOptions) {
    parse({"m.onnx", "--seed", "7", "--iters", "3", "--val-range", "[0,5]", "x:[-1,1]"});
    const auto& options = group<DataLoaderArgs>().generator_options();
    EXPECT_EQ(options.seed, 7);
    EXPECT_EQ(options.iterations, 3);
    EXPECT_DOUBLE_EQ(options.val_range.at("").max, 5.0);
    EXPECT_DOUBLE_EQ(options.val_range.at("x").min, -1.0);
    EXPECT_TRUE(group<DataLoaderArgs>().is_using_random_data());
}

TEST_F(RunGroups, DataLoaderErrors) {
    EXPECT_EQ(error_of({"m.onnx", "--seed", "-1"}),
              "Invalid value for --seed: '-1'. The seed must be between 0 and 4294967295");
    EXPECT_EQ(error_of({"m.onnx", "--iterations", "0"}),
              "Invalid value for --iterations: '0'. The number of iterations must be at least 1");
    EXPECT_EQ(error_of({"m.onnx", "--seed", "4294967295", "--iterations", "2"}),
              "--seed 4294967295 with --iterations 2 needs seeds above 4294967295 (iteration i uses seed + i)");
    EXPECT_THAT(error_of({"m.onnx", "--val-range", "x:[1,2,3]"}),
                HasSubstr("In --val-range, for input: x, expected to receive exactly 2 values, but received 3."));
    // Without the Python bridge the hook is not available; with it, the missing script is reported
    // (tests/tools/run/python_hooks_cli_test.cpp covers the hooks).
    EXPECT_THAT(error_of({"m.onnx", "--data-loader-script", "absent_load.py"}),
                ::testing::AnyOf(HasSubstr("--data-loader-script is not available in this build"),
                                 HasSubstr("--data-loader-script absent_load.py: no such file")));
    EXPECT_EQ(error_of({"m.onnx", "--int-min", "5", "--int-max", "1"}), "--int-min (5) is greater than --int-max (1)");
}

TEST_F(RunGroups, DeprecatedRangesWarn) {
    ::testing::internal::CaptureStdout();
    parse({"m.onnx", "--int-min", "2", "--float-max", "3"});
    const std::string output = ::testing::internal::GetCapturedStdout();
    EXPECT_THAT(output, HasSubstr("[W] --int-min/--int-max and --float-min/--float-max is deprecated"));
}

TEST_F(RunGroups, GeneratorOptionsWithLoadInputsWarn) {
    ::testing::internal::CaptureStdout();
    parse({"m.onnx", "--load-inputs", "in.json", "--seed", "3"});
    const std::string output = ::testing::internal::GetCapturedStdout();
    EXPECT_THAT(output, HasSubstr("[W] Argument: '--seed' will be ignored since a custom data loader was provided."));
    EXPECT_FALSE(group<DataLoaderArgs>().is_using_random_data());
}

TEST_F(RunGroups, CompareFuncSimpleOptions) {
    parse({"--load-outputs", "a.json", "--atol", "1e-3", "out0:0.5", "--rtol", "0", "--check-error-stat", "median",
           "out0:max", "--error-quantile", "0.9", "--no-shape-check", "--infinities-compare-equal", "--fail-fast"});
    const auto& options = group<CompareFuncSimpleArgs>().compare_options();
    EXPECT_DOUBLE_EQ(options.atol.at(""), 1e-3);
    EXPECT_DOUBLE_EQ(options.atol.at("out0"), 0.5);
    EXPECT_DOUBLE_EQ(options.rtol.at(""), 0.0);
    EXPECT_EQ(options.check_error_stat.at(""), ErrorStat::kMedian);
    EXPECT_EQ(options.check_error_stat.at("out0"), ErrorStat::kMax);
    EXPECT_DOUBLE_EQ(options.error_quantile.at(""), 0.9);
    EXPECT_FALSE(options.check_shapes);
    EXPECT_TRUE(options.infinities_compare_equal);
    EXPECT_TRUE(group<ComparatorCompareArgs>().fail_fast());
    EXPECT_EQ(group<ComparatorCompareArgs>().load_outputs_paths(), std::vector<std::string>{"a.json"});
    EXPECT_FALSE(options.save_heatmaps.has_value());
    EXPECT_FALSE(options.show_error_metrics_plot);
}

TEST_F(RunGroups, HeatmapAndErrorPlotOptions) {
    parse({"--load-outputs", "a.json", "--save-heatmaps", "maps", "--show-heatmaps", "--save-error-metrics-plot",
           "plots", "--show-error-metrics-plot"});
    const auto& options = group<CompareFuncSimpleArgs>().compare_options();
    EXPECT_EQ(options.save_heatmaps, "maps");
    EXPECT_TRUE(options.show_heatmaps);
    EXPECT_EQ(options.save_error_metrics_plot, "plots");
    EXPECT_TRUE(options.show_error_metrics_plot);
}

TEST_F(RunGroups, CompareErrors) {
    EXPECT_EQ(error_of({"--check-error-stat", "out0:mode"}),
              "Invalid choice for check_error_stat: mode.\n"
              "Note: Valid choices are: ['max', 'mean', 'median', 'elemwise', 'quantile']");
    EXPECT_EQ(error_of({"--atol", "abc"}),
              "Invalid value in --atol: 'abc'. Expected [<name>:]<number>, but 'abc' is not a number");
    EXPECT_EQ(error_of({"--rtol", "-1"}), "Invalid value in --rtol: '-1'. The value must be at least 0");
    EXPECT_EQ(error_of({"--error-quantile", "2"}),
              "Invalid value in --error-quantile: '2'. The value must be between 0 and 1");
    EXPECT_EQ(error_of({"--postprocess", "out0:bottom-5"}),
              "Invalid value in --postprocess: 'out0:bottom-5'. Expected [<out_name>:]top-<K>[,axis=<axis>], but "
              "'bottom-5' is not a post-processing function (valid choices are: ['top-<K>'])");
    EXPECT_EQ(error_of({"--subprocess-timeout", "5"}), "--subprocess-timeout needs --use-subprocess");
    parse({"--use-subprocess", "--subprocess-timeout", "2.5"});
    EXPECT_TRUE(group<ComparatorRunArgs>().use_subprocess());
    EXPECT_EQ(group<ComparatorRunArgs>().subprocess_timeout(), 2.5);
    EXPECT_THAT(error_of({"--compare-func-script", "absent_compare.py"}),
                ::testing::AnyOf(HasSubstr("--compare-func-script is not available in this build"),
                                 HasSubstr("--compare-func-script absent_compare.py: no such file")));
    EXPECT_EQ(error_of({"--warm-up", "-1"}),
              "Invalid value for --warm-up: '-1'. Expected a number of runs between 0 and 1000000");
    EXPECT_EQ(
        error_of({"--ref-threads", "-2"}),
        "Invalid value for --ref-threads: '-2'. Expected a number of threads between 0 (the cores available) and 4096");
    EXPECT_THAT(error_of({"--save-external-data", "--external-data-size-threshold", "12Q"}),
                HasSubstr("--external-data-size-threshold"));
}

TEST_F(RunGroups, PostprocessTopK) {
    parse({});
    EXPECT_FALSE(group<ComparatorPostprocessArgs>().enabled());
    EXPECT_FALSE(group<ComparatorPostprocessArgs>().postprocess_func());
    // Keys split on the last ':'; a later entry for the same key wins (as in a Python dict).
    parse({"--postprocess", "top-5", "Input:0:top-2,axis=0", "out1:top-3", "out1:top-4,axis=-2"});
    const auto& postprocess = group<ComparatorPostprocessArgs>();
    ASSERT_TRUE(postprocess.enabled());
    const PerOutput<TopK>& top_k = postprocess.top_k();
    EXPECT_EQ(top_k.keys(), (std::vector<std::string>{"", "Input:0", "out1"}));
    EXPECT_EQ(top_k.at("").k, 5);
    EXPECT_EQ(top_k.at("").axis, -1);
    EXPECT_EQ(top_k.at("Input:0").k, 2);
    EXPECT_EQ(top_k.at("Input:0").axis, 0);
    EXPECT_EQ(top_k.at("out1").k, 4);
    EXPECT_EQ(top_k.at("out1").axis, -2);

    // The function does what postprocess_func::top_k does.
    IterationResult iteration;
    iteration.outputs.set("Input:0", Tensor::from_doubles(DataType::kFloat32, {3, 1}, {1, 3, 2}));
    iteration.outputs.set("other", Tensor::from_doubles(DataType::kFloat32, {1, 3}, {1, 3, 2}));
    postprocess.postprocess_func()(iteration);
    EXPECT_TRUE(iteration.outputs.at("Input:0").equals(Tensor::from_doubles(DataType::kInt64, {2, 1}, {1, 2})));
    EXPECT_TRUE(iteration.outputs.at("other").equals(Tensor::from_doubles(DataType::kInt64, {1, 3}, {1, 2, 0})));
}

TEST_F(RunGroups, CompareIndicesUsesTheIndexTolerances) {
    parse({"--compare", "indices", "--index-tolerance", "1", "out0:0"});
    EXPECT_EQ(group<ComparatorCompareArgs>().compare_func_name(), "indices");
    const auto& tolerance = group<CompareFuncIndicesArgs>().index_tolerance();
    EXPECT_EQ(tolerance.at(""), 1);
    EXPECT_EQ(tolerance.at("out0"), 0);
    // [0, 1] against [1, 0]: within tolerance 1 for "idx", not within 0 for "out0".
    IterationResult first, second;
    first.runner_name = "a";
    second.runner_name = "b";
    for (const char* name : {"idx", "out0"}) {
        first.outputs.set(name, Tensor::from_doubles(DataType::kInt64, {2}, {0, 1}));
        second.outputs.set(name, Tensor::from_doubles(DataType::kInt64, {2}, {1, 0}));
    }
    ::testing::internal::CaptureStdout();
    const IterationCompareResult result = group<ComparatorCompareArgs>().compare_func()(first, second);
    const std::string output = ::testing::internal::GetCapturedStdout();
    EXPECT_TRUE(result.at("idx").passed);
    EXPECT_FALSE(result.at("out0").passed);
    EXPECT_THAT(output, HasSubstr("PASSED | Difference is within index tolerance (1)"));
    EXPECT_THAT(output, HasSubstr("FAILED | Difference exceeds index tolerance (0)"));
}

TEST_F(RunGroups, OptionsOfTheUnselectedCompareFuncWarn) {
    ::testing::internal::CaptureStdout();
    parse({"--index-tolerance", "2"});
    const std::string output = ::testing::internal::GetCapturedStdout();
    EXPECT_THAT(output, HasSubstr("[W] Option: --index-tolerance is only valid for comparison function: 'indices'. The "
                                  "selected comparison function is: 'simple', so this option will be ignored."));
}

TEST_F(RunGroups, RefRunnerOptions) {
    parse({"m.onnx", "--ref"});
    EXPECT_EQ(group<RefRunnerArgs>().threads(), 0);
    EXPECT_TRUE(group<RefRunnerArgs>().fuse_activations());
    EXPECT_FALSE(group<RefRunnerArgs>().profile());
    parse({"m.onnx", "--ref", "--ref-threads", "3", "--ref-no-fusion", "--ref-profile"});
    EXPECT_EQ(group<RefRunnerArgs>().threads(), 3);
    EXPECT_FALSE(group<RefRunnerArgs>().fuse_activations());
    EXPECT_TRUE(group<RefRunnerArgs>().profile());
}

TEST_F(RunGroups, ComparatorRunOptions) {
    parse({"m.onnx", "--ref", "--warm-up", "2", "--save-input-data", "i.json", "--save-results", "o.json"});
    const auto options = group<ComparatorRunArgs>().run_options();
    EXPECT_EQ(options.warm_up, 2);
    EXPECT_EQ(options.save_inputs_path, "i.json");
    EXPECT_EQ(group<ComparatorRunArgs>().save_outputs_path(), "o.json");
}

TEST_F(RunGroups, OnnxLoaderChain) {
    TempDir dir;
    testing::ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 2});
    builder.node("Relu", {"x"}, {"r"});
    builder.node("Neg", {"r"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1, 2});
    builder.save(dir.file("m.onnx"));

    parse({dir.file("m.onnx"), "--ref", "--onnx-outputs", "mark", "all", "--save-onnx", dir.file("saved.onnx")});
    EXPECT_EQ(group<OnnxLoadArgs>().outputs(), kMarkAll);
    OnnxModel model = group<OnnxLoadArgs>().onnx_loader()();
    ASSERT_EQ(model->graph().output_size(), 2);
    EXPECT_EQ(model->graph().output(0).name(), "r");
    EXPECT_EQ(onnx_from_path(dir.file("saved.onnx"))->graph().output_size(), 2);

    parse({dir.file("m.onnx"), "--ref", "--onnx-exclude-outputs", "y", "--onnx-outputs", "r", "y"});
    model = group<OnnxLoadArgs>().onnx_loader()();
    ASSERT_EQ(model->graph().output_size(), 1);
    EXPECT_EQ(model->graph().output(0).name(), "r");

    parse({"--ref"});
    EXPECT_THROW(group<OnnxLoadArgs>().onnx_loader(), UsageError);
}

// ---- tool set-up checks --------------------------------------------------------------------------

class GroupWithSeed : public ArgGroup {
public:
    std::string title() const override { return "Seeds"; }
    std::string description() const override { return ""; }
    std::vector<OptionSpec> options() const override { return {Option({"--seed"})}; }
    void parse(const ParsedArgs&) override {}
};

class TestTool : public Tool {
public:
    explicit TestTool(std::function<std::vector<std::unique_ptr<ArgGroup>>()> groups)
        : Tool("test"), groups_(std::move(groups)) {}
    std::string description() const override { return "A test tool.\n\nMore text."; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override { return groups_(); }
    int run_impl(const ParsedArgs&) override { return 0; }

private:
    std::function<std::vector<std::unique_ptr<ArgGroup>>()> groups_;
};

TEST(ToolSetup, DuplicateFlagsAcrossGroupsAreInternalErrors) {
    TestTool tool([] {
        std::vector<std::unique_ptr<ArgGroup>> groups;
        groups.push_back(std::make_unique<DataLoaderArgs>());
        groups.push_back(std::make_unique<GroupWithSeed>());
        return groups;
    });
    try {
        tool.setup("polygraphy test");
        FAIL() << "expected an InternalError";
    } catch (const InternalError& e) {
        EXPECT_THAT(e.what(), HasSubstr("option '--seed' is declared twice (second time by group 'Seeds')"));
    }
}

TEST(ToolSetup, UnmetDependenciesAreInternalErrors) {
    TestTool tool([] {
        std::vector<std::unique_ptr<ArgGroup>> groups;
        groups.push_back(std::make_unique<RefRunnerArgs>());
        return groups;
    });
    try {
        tool.setup("polygraphy test");
        FAIL() << "expected an InternalError";
    } catch (const InternalError& e) {
        EXPECT_THAT(e.what(),
                    HasSubstr("argument group 'Reference Runtime Inference' of tool 'test' depends on a group"));
    }
}

TEST(ToolSetup, SummaryIsTheFirstParagraph) {
    TestTool tool([] { return std::vector<std::unique_ptr<ArgGroup>>{}; });
    EXPECT_EQ(tool.summary(), "A test tool.");
    tool.setup("polygraphy test");
    EXPECT_NE(tool.groups().get<LoggerArgs>(), nullptr) << "the logger group is always subscribed";
    EXPECT_EQ(tool.groups().all().front().get(), tool.groups().get<LoggerArgs>());
}

TEST(ToolRegistry, ToolsAndRunnerGroups) {
    auto tools = make_tools();
    ASSERT_FALSE(tools.empty());
    EXPECT_EQ(tools.front()->name(), "run");
    auto runners = builtin_runner_arg_groups();
    bool has_ref = false;
    for (const auto& group : runners)
        if (auto* runner = dynamic_cast<RunnerArgGroup*>(group.get()))
            has_ref = has_ref || runner->runner_flag() == "--ref";
    EXPECT_TRUE(has_ref);
    EXPECT_THAT(version_info(), ::testing::StartsWith("Polygraphy | Version: "));
    EXPECT_THAT(version_info(), HasSubstr(" | Path: ['"));
}

// ---- extension modules ---------------------------------------------------------------------------

class EchoRunner : public BaseRunner {
public:
    EchoRunner() : BaseRunner("echo-runner") {}

protected:
    TensorMetadata get_input_metadata_impl() override {
        return TensorMetadata().add("x", DataType::kFloat32, DynShape{});
    }
    TensorMap infer_impl(const TensorMap& feed) override { return feed; }
};

class EchoRunnerArgs : public RunnerArgGroup {
public:
    std::string title() const override { return "Echo Runner"; }
    std::string description() const override { return "Options related to the echo runner."; }
    std::vector<OptionSpec> options() const override { return {Option({"--echo-prefix"}).help("Unused")}; }
    void parse(const ParsedArgs&) override {}
    std::string runner_display_name() const override { return "Echo"; }
    std::string runner_flag() const override { return "--test-echo"; }
    RunnerStep runner_step() const override {
        return CustomRunnerStep{
            [](const OnnxLoader&) -> std::unique_ptr<BaseRunner> { return std::make_unique<EchoRunner>(); }};
    }
};

TEST(ExtensionModules, AddRunnersToRun) {
    static bool registered = false;  // registration is process-wide; keep --gtest_repeat working
    if (!registered) {
        register_extension_module({"polygraphy-test-echo", "1.0", [] {
                                       std::vector<std::unique_ptr<ArgGroup>> groups;
                                       groups.push_back(std::make_unique<EchoRunnerArgs>());
                                       return groups;
                                   }});
        registered = true;
    }
    EXPECT_THROW(register_extension_module(
                     {"polygraphy-test-echo", "1.0", [] { return std::vector<std::unique_ptr<ArgGroup>>{}; }}),
                 InternalError);

    RunTool tool;
    tool.setup("polygraphy run");
    EXPECT_THAT(tool.parser().format_help(100), HasSubstr("Run inference using Echo."));
    ParseResult result = tool.parser().parse_known_args({"m.onnx", "--test-echo", "--ref", "--test-echo"});
    ASSERT_TRUE(result.unknown.empty());
    tool.parse(result.args);
    auto runners = build_runners(tool.job());
    ASSERT_EQ(runners.size(), 3u);
    EXPECT_EQ(runners[0]->name().rfind("echo-runner", 0), 0u);
    EXPECT_EQ(runners[1]->name().rfind("ref-runner", 0), 0u);
    EXPECT_EQ(runners[2]->name().rfind("echo-runner", 0), 0u);
    logger().reset();
}

}  // namespace
}  // namespace polygraphy::tools
