// `polygraphy run` end to end, in child processes, on models built in the tests.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy::tools {
namespace {

using testing::CommandResult;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

namespace fs = std::filesystem;

class RunTool : public ::testing::Test {
protected:
    void SetUp() override {
        // y = Relu(x) + bias: two inputs would complicate --load-inputs; one is enough.
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{1, 4});
        builder.initializer("bias", Tensor::from_doubles(DataType::kFloat32, {1, 4}, {0.5, -0.5, 1.0, 0.0}));
        builder.node("Relu", {"x"}, {"r"}, "relu");
        builder.node("Add", {"r", "bias"}, {"y"}, "add");
        builder.output("y", DataType::kFloat32, Shape{1, 4});
        model_ = dir_.file("model.onnx");
        builder.save(model_);
    }

    CommandResult run(std::vector<std::string> args) {
        args.insert(args.begin(), "run");
        return run_polygraphy(args);
    }

    TempDir dir_;
    std::string model_;
};

TEST_F(RunTool, SingleRunnerPassesWithoutComparison) {
    auto result = run({model_, "--ref"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] RUNNING | Command: "));
    EXPECT_THAT(result.output, HasSubstr(" run " + model_ + " --ref\n"));
    EXPECT_THAT(result.output, HasSubstr("ref-runner"));
    EXPECT_THAT(result.output, Not(HasSubstr("Accuracy Comparison")));
    EXPECT_THAT(result.output,
                ::testing::ContainsRegex("\\[I\\] PASSED \\| Runtime: [0-9]+\\.[0-9]{3}s \\| Command: "));
    // RUNNING comes first and PASSED last.
    EXPECT_EQ(result.output.find("[I] RUNNING"), 0u) << result.output;
    EXPECT_EQ(result.output.find("[I] PASSED | Runtime:"), result.output.rfind("[I] "));
}

TEST_F(RunTool, RefNoFusionRunsEveryNodeAsWritten) {
    // Conv -> Relu: folded into one step by default, two steps with --ref-no-fusion (the session
    // reports its step count at extra-verbose), and the same values either way.
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 2, 4, 4});
    builder.initializer("w", testing::random_tensor({3, 2, 3, 3}, 1));
    testing::set_attr(builder.node("Conv", {"x", "w"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"c"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{1, 3, 4, 4});
    const std::string model = dir_.file("conv_relu.onnx");
    builder.save(model);

    const CommandResult folded = run({model, "--ref", "-vv", "--save-outputs", dir_.file("folded.json")});
    ASSERT_EQ(folded.exit_code, 0) << folded.output;
    EXPECT_THAT(folded.output, HasSubstr("Prepared reference session: 1 nodes to run"));
    const CommandResult written =
        run({model, "--ref", "--ref-no-fusion", "-vv", "--save-outputs", dir_.file("written.json")});
    ASSERT_EQ(written.exit_code, 0) << written.output;
    EXPECT_THAT(written.output, HasSubstr("Prepared reference session: 2 nodes to run"));

    const RunResults a = RunResults::load(dir_.file("folded.json")), b = RunResults::load(dir_.file("written.json"));
    EXPECT_TRUE(a.lst.at(0).second.at(0).outputs.at("y").equals(b.lst.at(0).second.at(0).outputs.at("y")));
}

TEST_F(RunTool, RefPrecisionFloat64GivesTheNoiseFloorOfAFloat32Backend) {
    // y = (x + 1) - 1 with x = 1e-6: float32 keeps 1 ulp of 1 (about 1.19e-7 steps), float64 keeps x.
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.initializer("one", Tensor::from_doubles(DataType::kFloat32, {}, {1.0}));
    builder.node("Add", {"x", "one"}, {"shifted"}, "add");
    builder.node("Sub", {"shifted", "one"}, {"y"}, "sub");
    builder.output("y", DataType::kFloat32, Shape{1});
    const std::string model = dir_.file("cancel.onnx");
    builder.save(model);
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {1}, {1e-6}));
    save_inputs({feed}, dir_.file("x.json"));
    const CommandResult result =
        run({model, "--ref", "--ref-precision", "float64", "--onnxrt", "--load-inputs", dir_.file("x.json"), "--atol",
             "0", "--rtol", "1e-3", "--save-outputs", dir_.file("out.json")});
    EXPECT_EQ(result.exit_code, 1) << result.output;  // ONNX Runtime's float32 is about 5% off the truth here
    const RunResults outputs = RunResults::load(dir_.file("out.json"));
    EXPECT_FLOAT_EQ(outputs.lst.at(0).second.at(0).outputs.at("y").data_as<float>()[0], 1e-6f);
    EXPECT_NE(outputs.lst.at(1).second.at(0).outputs.at("y").data_as<float>()[0], 1e-6f);
}

TEST_F(RunTool, RefProfilePrintsWhereTheTimeWentWhenTheRunnerFinishes) {
    const CommandResult profiled = run({model_, "--ref", "--ref-profile", "--iterations", "3"});
    ASSERT_EQ(profiled.exit_code, 0) << profiled.output;
    EXPECT_THAT(profiled.output, HasSubstr("Profile of 2 run(s)"));
    EXPECT_THAT(profiled.output, HasSubstr("By op type:"));
    EXPECT_THAT(profiled.output, HasSubstr("Slowest nodes"));
    const CommandResult plain = run({model_, "--ref", "--iterations", "3"});
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    EXPECT_THAT(plain.output, Not(HasSubstr("Profile of")));
}

TEST_F(RunTool, TwoRunnersAreCompared) {
    auto result = run({model_, "--ref", "--ref", "--validate"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Accuracy Comparison"));
    EXPECT_THAT(result.output, HasSubstr("Output Validation"));
    EXPECT_THAT(result.output, HasSubstr("[I] PASSED | Runtime:"));
}

TEST_F(RunTool, SaveThenLoadInputsAndOutputs) {
    const std::string inputs = dir_.file("inputs.json"), outputs = dir_.file("outputs.json");
    auto saved =
        run({model_, "--ref", "--seed", "3", "--iterations", "2", "--save-inputs", inputs, "--save-outputs", outputs});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    EXPECT_THAT(saved.output, HasSubstr("Saving inference input data to " + inputs));
    EXPECT_THAT(saved.output, HasSubstr("Saving inference results to " + outputs));
    ASSERT_TRUE(fs::exists(inputs));
    ASSERT_TRUE(fs::exists(outputs));
    const RunResults results = RunResults::load(outputs);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results.lst[0].second.size(), 2u);

    auto loaded = run({model_, "--ref", "--load-inputs", inputs, "--load-outputs", outputs});
    EXPECT_EQ(loaded.exit_code, 0) << loaded.output;
    EXPECT_THAT(loaded.output, HasSubstr("Loading inference results from " + outputs));
    EXPECT_THAT(loaded.output, HasSubstr("Accuracy Comparison"));
    EXPECT_THAT(loaded.output, HasSubstr("[I] PASSED | Runtime:"));
}

TEST_F(RunTool, PerturbedSavedResultFails) {
    const std::string inputs = dir_.file("inputs.json"), outputs = dir_.file("outputs.json");
    ASSERT_EQ(run({model_, "--ref", "--save-inputs", inputs, "--save-outputs", outputs}).exit_code, 0);
    RunResults results = RunResults::load(outputs);
    Tensor& y = results.lst.at(0).second.at(0).outputs.at("y");
    y.data_as<float>()[2] += 1.0f;
    const std::string perturbed = dir_.file("perturbed.json");
    results.save(perturbed);

    auto result = run({model_, "--ref", "--load-inputs", inputs, "--load-outputs", perturbed});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("FAILED | Output: 'y'"));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));
    EXPECT_THAT(result.output, Not(HasSubstr("[I] PASSED | Runtime:")));
    // A loose enough tolerance passes.
    result = run({model_, "--ref", "--load-inputs", inputs, "--load-outputs", perturbed, "--atol", "2"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST_F(RunTool, LoadedResultsWithoutModelOrRunners) {
    const std::string a = dir_.file("a.json"), b = dir_.file("b.json");
    ASSERT_EQ(run({model_, "--ref", "--save-outputs", a}).exit_code, 0);
    fs::copy_file(a, b);
    auto result = run({"--load-outputs", a, b});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[W] No runners have been selected. Inference will not be run!"));
    // Comparator.run is still called, as in Polygraphy's script, and says so.
    EXPECT_THAT(result.output, HasSubstr("[W] No runners were provided to Comparator.run(). Inference will not be "
                                         "run, and run results will be empty.\n"));
    EXPECT_THAT(result.output, HasSubstr("Accuracy Comparison"));
    EXPECT_THAT(result.output, HasSubstr("[I] PASSED | Runtime:"));
}

TEST_F(RunTool, NothingToDoStillPasses) {
    auto result = run({});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[W] No runners have been selected. Inference will not be run!"));
}

TEST_F(RunTool, RunnerWithoutModelIsAnError) {
    auto result = run({"--ref"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output,
                HasSubstr("[!] One or more runners was specified, but no model file was provided. Make sure you've "
                          "specified the model path, and also that it's not being consumed as an argument for another "
                          "parameter"));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));
}

TEST_F(RunTool, UnknownOptionExitsWithOne) {
    auto result = run({model_, "--ref", "--no-such-option", "7"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[E] Unrecognized Options: ['--no-such-option', '7']"));
    EXPECT_THAT(result.output, Not(HasSubstr("RUNNING")));
}

TEST_F(RunTool, BadChoiceExitsWithTwo) {
    auto result = run({model_, "--ref", "--compare", "fancy"});
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_THAT(result.output, HasSubstr("usage: polygraphy run [-h]"));
    EXPECT_THAT(result.output, HasSubstr("polygraphy run: error: argument --compare/--compare-func: invalid choice: "
                                         "'fancy' (choose from 'simple', 'indices')"));
    result = run({model_, "--ref", "--seed", "abc"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("polygraphy run: error: argument --seed: invalid int value: 'abc'"));
    result = run({model_, "--ref", "--atol"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output,
                HasSubstr("polygraphy run: error: argument --atol/--abs-tol: expected at least one argument"));
}

TEST_F(RunTool, MalformedValuesAreOneLineErrors) {
    struct Case {
        std::vector<std::string> args;
        std::string message;
    };
    const std::vector<Case> cases = {
        {{"--atol", "abc"},
         "[!] Invalid value in --atol: 'abc'. Expected [<name>:]<number>, but 'abc' is not a number"},
        {{"--rtol", "y:-1"}, "[!] Invalid value in --rtol: 'y:-1'. The value must be at least 0"},
        {{"--input-shapes", "x:1,4"}, "[!] Invalid shape in --input-shapes: '1,4'."},
        {{"--input-shapes", "[1,4]"}, "[!] Invalid value in --input-shapes: '[1,4]'. Expected <name>:<shape>"},
        {{"--val-range", "x:[0,1,2]"}, "[!] In --val-range, for input: x, expected to receive exactly 2 values"},
        {{"--val-range", "x:[a,1]"}, "[!] In --val-range, for input: x, one or more elements of the range"},
        {{"--check-error-stat", "avg"}, "[!] Invalid choice for check_error_stat: avg."},
    };
    for (const auto& c : cases) {
        std::vector<std::string> args = {model_, "--ref"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        auto result = run(args);
        EXPECT_EQ(result.exit_code, 1) << result.output;
        EXPECT_THAT(result.output, HasSubstr(c.message));
        // Errors found while reading options come before RUNNING, as in Polygraphy.
        EXPECT_THAT(result.output, Not(HasSubstr("RUNNING")));
    }
}

TEST_F(RunTool, UnknownInputNameSuggestsTheClosest) {
    auto result = run({model_, "--ref", "--input-shapes", "xx:[1,4]"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] Input tensor: xx | "));
    EXPECT_THAT(result.output, HasSubstr("Did you mean: x?"));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));
    result = run({model_, "--ref", "--val-range", "xx:[0,1]"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Did you mean: x?"));
}

TEST_F(RunTool, InputShapesAndRangesApply) {
    const std::string inputs = dir_.file("inputs.json");
    auto result =
        run({model_, "--ref", "--input-shapes", "x:[1,4]", "--val-range", "x:[2,3]", "--save-inputs", inputs});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const InputList feeds = load_inputs(inputs);
    ASSERT_EQ(feeds.size(), 1u);
    const Tensor& x = feeds[0].at("x");
    for (int64_t i = 0; i < x.numel(); ++i) {
        EXPECT_GE(x.value_as_double(i), 2.0);
        EXPECT_LE(x.value_as_double(i), 3.0);
    }
}

TEST_F(RunTool, DeprecatedFloatRangeApplies) {
    const std::string inputs = dir_.file("inputs.json");
    auto result = run({model_, "--ref", "--float-min", "5", "--float-max", "6", "--save-inputs", inputs});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[W] --int-min/--int-max and --float-min/--float-max is deprecated"));
    const InputList feeds = load_inputs(inputs);
    const Tensor& x = feeds.at(0).at("x");
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_GE(x.value_as_double(i), 5.0);
}

TEST_F(RunTool, NonexistentModel) {
    const std::string missing = dir_.file("missing.onnx");
    auto result = run({missing, "--ref"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[W] Model path does not exist: " + missing));
    EXPECT_THAT(result.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr("missing.onnx"));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));
}

TEST_F(RunTool, NonOnnxFiles) {
    const std::string text = dir_.file("notes.txt");
    std::ofstream(text) << "not a model";
    auto result = run({text, "--ref"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] Could not automatically determine model type for: " + text));
    EXPECT_THAT(result.output, HasSubstr("Please explicitly specify the type with the --model-type option"));

    const std::string garbage = dir_.file("garbage.onnx");
    std::ofstream(garbage) << "\x01\x02 definitely not protobuf \xff\xff\xff";
    result = run({garbage, "--ref"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));
    EXPECT_THAT(result.output, Not(HasSubstr("terminate called")));
}

TEST_F(RunTool, TensorRtIsRefused) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {model_, "--trt"}, {model_, "--ref", "--fp16"}, {model_, "--ref", "--int8", "--tf32"}}) {
        auto result = run(args);
        EXPECT_EQ(result.exit_code, 1) << result.output;
        EXPECT_THAT(result.output, HasSubstr("[!] TensorRT is not available in this build"));
    }
    const std::string engine = dir_.file("model.engine");
    std::ofstream(engine) << "engine";
    auto result = run({engine, "--ref"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] TensorRT is not available in this build (model type: engine)"));
}

TEST_F(RunTool, LogFileGetsTheLog) {
    const std::string log = dir_.file("logs/run.log");
    auto result = run({model_, "--ref", "--log-file", log});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::ifstream file(log);
    ASSERT_TRUE(file.good());
    const std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_THAT(contents, HasSubstr("[I] RUNNING | Command: "));
    EXPECT_THAT(contents, HasSubstr("[I] PASSED | Runtime: "));
    EXPECT_THAT(contents, Not(HasSubstr("\033[")));

    // Each run starts the file afresh, as Polygraphy does.
    ASSERT_EQ(run({model_, "--ref", "--log-file", log}).exit_code, 0);
    std::ifstream again(log);
    const std::string second((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
    EXPECT_EQ(second.find("RUNNING"), second.rfind("RUNNING"));
}

TEST_F(RunTool, QuietAndVerbose) {
    auto quiet = run({model_, "--ref", "-qq"});
    EXPECT_EQ(quiet.exit_code, 0);
    EXPECT_THAT(quiet.output, Not(HasSubstr("RUNNING")));
    EXPECT_THAT(quiet.output, HasSubstr("[I] PASSED | Runtime:"));
    EXPECT_THAT(quiet.output, Not(HasSubstr("Activating and starting inference")));  // [I], hidden by -qq

    auto silent = run({model_, "--ref", "--silent"});
    EXPECT_EQ(silent.exit_code, 0);
    EXPECT_EQ(silent.output, "");

    auto verbose = run({model_, "--ref", "-v"});
    EXPECT_EQ(verbose.exit_code, 0);
    EXPECT_THAT(verbose.output, HasSubstr("[V] Loaded Module: polygraphy | Version: "));
    auto normal = run({model_, "--ref"});
    EXPECT_THAT(normal.output, Not(HasSubstr("[V] ")));

    // --silent still shows critical errors.
    auto failing = run({"--ref", "--silent"});
    EXPECT_EQ(failing.exit_code, 1);
    EXPECT_THAT(failing.output, HasSubstr("[!] One or more runners was specified"));
}

TEST_F(RunTool, NothingHalfWrittenOnFailure) {
    const std::string missing = dir_.file("missing.onnx");
    const std::string outputs = dir_.file("out.json"), inputs = dir_.file("in.json");
    auto result = run({missing, "--ref", "--save-outputs", outputs, "--save-inputs", inputs});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_FALSE(fs::exists(outputs));
    EXPECT_FALSE(fs::exists(inputs));
    // Results are saved before --load-outputs files are read (as in Polygraphy): a missing file fails
    // the run after this invocation's complete results were written.
    const std::string a = dir_.file("a.json");
    ASSERT_EQ(run({model_, "--ref", "--save-outputs", a}).exit_code, 0);
    EXPECT_EQ(run({model_, "--ref", "--load-outputs", dir_.file("nope.json"), "--save-outputs", outputs}).exit_code, 1);
    // Nothing else is left behind in the folder (no temporary files).
    for (const auto& entry : fs::directory_iterator(dir_.path())) {
        const std::string name = entry.path().filename().string();
        EXPECT_TRUE(name == "model.onnx" || name == "a.json" || name == "out.json") << name;
    }
}

TEST_F(RunTool, OnnxOutputsMarkAll) {
    const std::string outputs = dir_.file("outputs.json");
    auto result = run({model_, "--ref", "--onnx-outputs", "mark", "all", "--save-outputs", outputs});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const RunResults results = RunResults::load(outputs);
    const auto& iteration = results.lst.at(0).second.at(0);
    EXPECT_TRUE(iteration.outputs.contains("r"));
    EXPECT_TRUE(iteration.outputs.contains("y"));
}

TEST_F(RunTool, PerOutputOptionForAnUnknownOutputWarns) {
    auto result = run({model_, "--ref", "--ref", "--atol", "yy:0.1"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[W]     Extra items in the atol dictionary: {'yy'}."));
}

}  // namespace
}  // namespace polygraphy::tools
