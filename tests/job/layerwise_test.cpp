// Layer-wise runs in bounded memory (run_job's slices): the plan, and results identical to a run that
// holds every output at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <regex>
#include <sstream>

#include "job/job_internal.h"
#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/job/saved_data.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::TempDir;

using job_detail::plan_model_slices;

TEST(PlanModelSlices, ABudgetTooSmallForOneLayerIsAOneLineErrorNamingIt) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 4});
    builder.node("Relu", {"x"}, {"small"}, "small");
    builder.node("Neg", {"small"}, {"big"}, "big");
    builder.output("small", DataType::kFloat32, Shape{1, 4});
    builder.output("big", DataType::kFloat32, Shape{1, 4});
    const OnnxModel model = builder.build();
    // 3 copies within 12 MiB: both fit at once. Within 9 MiB: 3 MiB of `big` would fit alone, but not
    // beside the byte of `small`, which it reads.
    const std::unordered_map<std::string, std::size_t> bytes{{"small", 1}, {"big", std::size_t{3} << 20}};
    EXPECT_EQ(plan_model_slices(model->graph(), bytes, 3, std::size_t{12} << 20, true).size(), 1u);
    try {
        plan_model_slices(model->graph(), bytes, 3, std::size_t{9} << 20, true);
        FAIL() << "expected a UsageError";
    } catch (const UsageError& error) {
        const std::string message = error.what();
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        EXPECT_THAT(message, HasSubstr("The compare memory budget of 9.0 MiB is too small for one layer: node "
                                       "'big' (Neg) needs 3.0 MiB per runner and iteration with the tensors "
                                       "kept for later layers, 9.0 MiB for the 3 copies a comparison holds "
                                       "(--compare-memory-budget)"));
    }
}

TEST(PlanModelSlices, TheDefaultBudgetGrowsToWhatTheLargestLayerNeeds) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 4});
    builder.node("Relu", {"x"}, {"a"}, "a");
    builder.node("Neg", {"a"}, {"b"}, "b");
    builder.node("Sigmoid", {"b"}, {"c"}, "c");
    for (const char* name : {"a", "b", "c"}) builder.output(name, DataType::kFloat32, Shape{1, 4});
    const OnnxModel model = builder.build();
    // 150 bytes per copy hold a, but b needs 200 beside a, which it reads: with 200, a and b fit
    // together, then c beside b.
    const std::unordered_map<std::string, std::size_t> bytes{{"a", 100}, {"b", 100}, {"c", 100}};
    logger().reset();
    const std::string log = testing::captured_stdout([&] {
        const auto slices = plan_model_slices(model->graph(), bytes, 2, 300, false);
        ASSERT_EQ(slices.size(), 2u);
        EXPECT_EQ(slices[0].nodes.size(), 2u);
        EXPECT_EQ(slices[0].bytes, 200u);
        EXPECT_EQ(slices[1].bytes, 200u);
    });
    EXPECT_THAT(
        log,
        HasSubstr("The default compare memory budget of 0.3 KiB is raised to 0.4 KiB: node 'b' (Neg) needs that much"));
    logger().reset();
}

TEST(EstimateUnknownSizes, AnOutputTakesItsLargestInputsSizeWeightsAside) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 256});
    builder.input("shape", DataType::kInt64, Shape{2});
    builder.initializer("table", testing::random_tensor({64, 256}, 3));
    builder.initializer("index", Tensor::from_doubles(DataType::kInt64, {1}, {5}));
    builder.node("Reshape", {"x", "shape"}, {"r"}, "r");
    builder.node("Relu", {"r"}, {"y"}, "y");
    builder.node("Gather", {"table", "index"}, {"row"}, "row");
    builder.node("Add", {"row", "y"}, {"sum"}, "sum");
    const OnnxModel model = builder.build();
    TensorMap feed;
    feed.set("x", Tensor(DataType::kFloat32, {1, 256}));
    feed.set("shape", Tensor::from_doubles(DataType::kInt64, {2}, {16, 16}));
    std::unordered_map<std::string, std::size_t> bytes{{"sum", 2048}};
    EXPECT_EQ(job_detail::estimate_unknown_sizes(model->graph(), feed, bytes), 2u);
    EXPECT_EQ(bytes, (std::unordered_map<std::string, std::size_t>{{"r", 1024}, {"y", 1024}, {"sum", 2048}}));
}

// A runner on the built-in runtime whose model computes one node differently (a Sigmoid as a
// HardSigmoid, a Relu as an Elu): a disagreement that starts at a known layer and flows to the layers
// after it, as a runtime's own would, whether the node runs in a whole run or in a slice.
class PerturbingRunner : public BaseRunner {
public:
    PerturbingRunner(const OnnxLoader& model, const std::string& node)
        : BaseRunner("perturbing-runner"), inner_(ref::SessionFromOnnx(perturbed(model, node))) {}

protected:
    void activate_impl() override { inner_.activate(); }
    void deactivate_impl() override { inner_.deactivate(); }
    TensorMetadata get_input_metadata_impl() override { return inner_.get_input_metadata(); }
    TensorMap infer_impl(const TensorMap& feed) override { return inner_.infer(feed); }

private:
    static OnnxLoader perturbed(const OnnxLoader& model, const std::string& node_name) {
        return [model, node_name]() -> OnnxModel {
            auto copy = std::make_shared<onnx::ModelProto>(*model());
            for (auto& node : *copy->mutable_graph()->mutable_node())
                if (node.name() == node_name) node.set_op_type(node.op_type() == "Sigmoid" ? "HardSigmoid" : "Elu");
            return copy;
        };
    }
    ref::RefRunner inner_;
};

class LayerwiseRun : public ::testing::Test {
protected:
    void SetUp() override {
        logger().reset();
        logger().set_severity(Severity::kInfo);
        // Five layers of 1 x 4 x 8 x 8 floats (1 KiB each) after a convolution.
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{1, 4, 8, 8});
        builder.initializer("w", testing::random_tensor({4, 4, 3, 3}, 7));
        auto& conv = builder.node("Conv", {"x", "w"}, {"conv"}, "conv");
        testing::set_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
        builder.node("Relu", {"conv"}, {"relu"}, "relu");
        builder.node("Sigmoid", {"relu"}, {"sigmoid"}, "sigmoid");
        builder.node("Mul", {"sigmoid", "relu"}, {"mul"}, "mul");
        builder.node("Neg", {"mul"}, {"y"}, "neg");
        builder.output("y", DataType::kFloat32, Shape{1, 4, 8, 8});
        model_ = dir_.file("model.onnx");
        builder.save(model_);
    }
    void TearDown() override { logger().reset(); }

    RunJob mark_all_job(const std::string& perturbed = "") const {
        RunJob job;
        job.model = ModelJob{model_, std::nullopt, false, {ModifyOutputsStep{kMarkAll, {}}}};
        CustomRunnerStep perturbing;
        perturbing.build = [perturbed](const OnnxLoader& model) -> std::unique_ptr<BaseRunner> {
            return std::make_unique<PerturbingRunner>(model, perturbed);
        };
        job.runners = {RefRunnerStep{}, perturbing};
        return job;
    }

    std::string run(const RunJob& job, RunJobResult& result) const {
        return testing::captured_stdout([&] { result = run_job(job); });
    }

    TempDir dir_;
    std::string model_;
};

// The comparison's lines of a log: verdicts, tolerances and figures, with runner names left out.
std::vector<std::string> comparison_lines(const std::string& log) {
    static const std::regex runner_name(R"((ref|perturbing)-runner-N\d+-\S+)");
    std::vector<std::string> lines;
    std::istringstream stream(log);
    bool in_comparison = false;
    for (std::string line; std::getline(stream, line);) {
        if (line.find("Accuracy Comparison |") != std::string::npos) in_comparison = true;
        if (line.find("Activating and starting inference") != std::string::npos) in_comparison = false;
        if (!in_comparison || line.find("Accuracy Comparison |") != std::string::npos ||
            line.find("Saving accuracy report") != std::string::npos)
            continue;
        lines.push_back(std::regex_replace(line, runner_name, "<runner>"));
    }
    return lines;
}

void expect_same_accuracy(const AccuracyResult& sliced, const AccuracyResult& whole) {
    ASSERT_EQ(sliced.pairs.size(), whole.pairs.size());
    for (std::size_t p = 0; p < whole.pairs.size(); ++p) {
        ASSERT_EQ(sliced.pairs[p].iterations.size(), whole.pairs[p].iterations.size());
        for (std::size_t i = 0; i < whole.pairs[p].iterations.size(); ++i) {
            const IterationCompareResult& a = sliced.pairs[p].iterations[i];
            const IterationCompareResult& b = whole.pairs[p].iterations[i];
            ASSERT_EQ(a.keys(), b.keys());
            for (const auto& [name, expected] : b) {
                const OutputCompareResult& actual = a.at(name);
                EXPECT_EQ(actual.passed, expected.passed) << name;
                EXPECT_EQ(actual.max_absdiff, expected.max_absdiff) << name;
                EXPECT_EQ(actual.mean_reldiff, expected.mean_reldiff) << name;
                EXPECT_EQ(actual.required_atol, expected.required_atol) << name;
                EXPECT_EQ(actual.atol, expected.atol) << name;
                EXPECT_EQ(actual.rtol, expected.rtol) << name;
            }
        }
    }
}

TEST_F(LayerwiseRun, SlicesGiveTheVerdictsFiguresAndDivergenceOfOneWholeRun) {
    RunJob whole = mark_all_job("sigmoid");
    whole.compare.report_path = dir_.file("whole.json");
    RunJobResult whole_result;
    const std::string whole_log = run(whole, whole_result);
    ASSERT_THAT(whole_log, Not(HasSubstr("Layer-wise comparison in"))) << whole_log;

    RunJob sliced = mark_all_job("sigmoid");
    sliced.compare.report_path = dir_.file("sliced.json");
    // 3 copies (2 runners, 1 iteration, 1 being made) of 3 KiB: conv to sigmoid; mul beside relu and
    // sigmoid, which it reads; y beside mul.
    sliced.compare.memory_budget = 9 * 1024;
    RunJobResult sliced_result;
    const std::string sliced_log = run(sliced, sliced_result);
    EXPECT_THAT(sliced_log, HasSubstr("Layer-wise comparison in 3 slices: 5 outputs take about 5.0 KiB per runner and "
                                      "iteration, over the compare memory budget of 9.0 KiB"));
    EXPECT_EQ(testing::count_occurrences(sliced_log, "Activating and starting inference"), 6u) << sliced_log;

    EXPECT_FALSE(whole_result.passed);
    EXPECT_FALSE(sliced_result.passed);
    EXPECT_TRUE(sliced_result.results.lst.empty());
    ASSERT_TRUE(whole_result.accuracy && sliced_result.accuracy);
    expect_same_accuracy(*sliced_result.accuracy, *whole_result.accuracy);
    ASSERT_TRUE(whole_result.divergence && sliced_result.divergence);
    EXPECT_EQ(sliced_result.divergence->node_name, "sigmoid");
    EXPECT_EQ(sliced_result.divergence->node_name, whole_result.divergence->node_name);

    const std::vector<std::string> whole_lines = comparison_lines(whole_log);
    const std::vector<std::string> sliced_lines = comparison_lines(sliced_log);
    const auto [differs, _] =
        std::mismatch(sliced_lines.begin(), sliced_lines.end(), whole_lines.begin(), whole_lines.end());
    EXPECT_EQ(differs, sliced_lines.end()) << "first different line: " << *differs;
    EXPECT_EQ(sliced_lines.size(), whole_lines.size());
    // Each runner's later slices were fed its own sigmoid: the error flows on as in the whole run.
    EXPECT_THAT(whole_log, HasSubstr("FAILED | Output: 'sigmoid'"));
    EXPECT_THAT(whole_log, HasSubstr("FAILED | Mismatched outputs: ['sigmoid', 'mul', 'y']"));
    EXPECT_EQ(testing::count_occurrences(sliced_log, "FAILED | Mismatched outputs: ['sigmoid', 'mul', 'y']"), 1u);

    const std::regex runner_name(R"((ref|perturbing)-runner-N\d+-[^"]+)");
    EXPECT_EQ(std::regex_replace(read_file(dir_.file("sliced.json")), runner_name, "<runner>"),
              std::regex_replace(read_file(dir_.file("whole.json")), runner_name, "<runner>"));
}

TEST_F(LayerwiseRun, SlicesStreamTheirOutputsIntoAnNpzAsOneWholeRunSavesThem) {
    RunJob whole = mark_all_job("sigmoid");
    whole.data_loader.generator.iterations = 2;
    whole.save_outputs_path = dir_.file("whole.npz");
    RunJobResult whole_result;
    ASSERT_THAT(run(whole, whole_result), Not(HasSubstr("Layer-wise comparison in")));

    RunJob sliced = mark_all_job("sigmoid");
    sliced.data_loader.generator.iterations = 2;
    sliced.save_outputs_path = dir_.file("sliced.npz");
    sliced.compare.memory_budget = 15 * 1024;  // 5 copies (2 runners, 2 iterations, 1 being made) of 3 KiB
    RunJobResult sliced_result;
    const std::string log = run(sliced, sliced_result);
    EXPECT_THAT(log, HasSubstr("Layer-wise comparison in 3 slices"));
    EXPECT_THAT(log, HasSubstr("Saving inference results to " + dir_.file("sliced.npz")));

    const RunResults expected = load_saved_results(dir_.file("whole.npz"));
    const RunResults saved = load_saved_results(dir_.file("sliced.npz"));
    ASSERT_EQ(saved.lst.size(), 2u);
    ASSERT_EQ(expected.lst.size(), 2u);
    for (std::size_t r = 0; r < 2; ++r) {
        const auto& [name, iterations] = saved.lst[r];
        EXPECT_EQ(name.rfind(r == 0 ? "ref-runner" : "perturbing-runner", 0), 0u) << name;
        ASSERT_EQ(iterations.size(), 2u);
        for (std::size_t i = 0; i < 2; ++i) {
            const IterationResult& got = iterations[i];
            const IterationResult& want = expected.lst[r].second[i];
            EXPECT_EQ(got.outputs.keys(), (std::vector<std::string>{"conv", "relu", "sigmoid", "mul", "y"}));
            ASSERT_EQ(got.outputs.keys(), want.outputs.keys());
            for (const auto& [output, tensor] : want.outputs) {
                const Tensor& actual = got.outputs.at(output);
                ASSERT_EQ(actual.shape(), tensor.shape()) << output;
                EXPECT_EQ(std::memcmp(actual.data(), tensor.data(), tensor.nbytes()), 0) << output;
            }
            ASSERT_TRUE(got.runtime);
            EXPECT_GT(*got.runtime, 0.0);
        }
    }
}

TEST_F(LayerwiseRun, SavingJsonRunsTheWholeModelAtOnce) {
    RunJob job = mark_all_job();
    job.save_outputs_path = dir_.file("r.json");
    job.compare.memory_budget = 9 * 1024;
    RunJobResult result;
    const std::string log = run(job, result);
    EXPECT_THAT(log, Not(HasSubstr("Layer-wise comparison in")));
    EXPECT_EQ(load_saved_results(dir_.file("r.json")).lst.size(), 2u);
}

TEST_F(LayerwiseRun, PassingSlicesWithSeveralIterationsAndValidation) {
    RunJob sliced = mark_all_job();
    sliced.data_loader.generator.iterations = 2;
    sliced.validate = true;
    sliced.compare.memory_budget = 15 * 1024;  // 5 copies (2 runners, 2 iterations, 1 being made) of 3 KiB
    RunJobResult result;
    const std::string log = run(sliced, result);
    EXPECT_TRUE(result.passed) << log;
    EXPECT_THAT(log, HasSubstr("Layer-wise comparison in 3 slices"));
    ASSERT_TRUE(result.accuracy);
    ASSERT_EQ(result.accuracy->pairs.size(), 1u);
    ASSERT_EQ(result.accuracy->pairs[0].iterations.size(), 2u);
    for (const auto& iteration : result.accuracy->pairs[0].iterations)
        EXPECT_EQ(iteration.keys(), (std::vector<std::string>{"conv", "relu", "sigmoid", "mul", "y"}));
    EXPECT_EQ(testing::count_occurrences(log,
                                         "PASSED | All outputs matched | Outputs: ['conv', 'relu', 'sigmoid', "
                                         "'mul', 'y']"),
              2u)
        << log;
    EXPECT_EQ(testing::count_occurrences(log, "Accuracy Summary |"), 1u);
    EXPECT_THAT(log, HasSubstr("Passed: 2/2 iterations"));
    EXPECT_EQ(testing::count_occurrences(log, "| Validating output: "), 20u);  // 5 layers, 2 runners, 2 iterations
    // Logs are not a terminal: no progress line.
    EXPECT_THAT(log, Not(HasSubstr("slice 1 of")));
}

// A batch dimension that differs between iterations: the cut inputs are declared with that dim
// unknown, and each iteration is fed its own cut tensors.
TEST_F(LayerwiseRun, IterationsOfDifferentShapesRunInSlices) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, DynShape{Dim::named("N"), Dim::fixed(256)});
    builder.node("Relu", {"x"}, {"relu"}, "relu");
    builder.node("Sigmoid", {"relu"}, {"sigmoid"}, "sigmoid");
    builder.node("Mul", {"sigmoid", "x"}, {"y"}, "mul");
    builder.output("y", DataType::kFloat32, DynShape{Dim::named("N"), Dim::fixed(256)});
    const std::string model = dir_.file("dynamic.onnx");
    builder.save(model);
    const std::string inputs = dir_.file("inputs.json");
    InputList feeds(2);
    feeds[0].set("x", testing::random_tensor({1, 256}, 1));
    feeds[1].set("x", testing::random_tensor({3, 256}, 2));
    save_inputs(feeds, inputs);

    const auto job = [&](std::optional<std::size_t> budget) {
        RunJob run = mark_all_job("sigmoid");
        run.model->path = model;
        run.data_loader.load_inputs_paths = {inputs};
        run.compare.memory_budget = budget;
        return run;
    };
    RunJobResult whole, sliced;
    const std::string whole_log = testing::captured_stdout([&] { whole = run_job(job(std::nullopt)); });
    // The first feed's shapes size the slices: 1 KiB per output, 5 copies (2 runners, 2 iterations).
    const std::string sliced_log = testing::captured_stdout([&] { sliced = run_job(job(10 * 1024)); });
    EXPECT_THAT(whole_log, Not(HasSubstr("Layer-wise comparison in")));
    EXPECT_THAT(sliced_log, HasSubstr("Layer-wise comparison in 2 slices")) << sliced_log;
    ASSERT_TRUE(whole.accuracy && sliced.accuracy);
    ASSERT_EQ(sliced.accuracy->pairs.at(0).iterations.size(), 2u);
    EXPECT_EQ(sliced.accuracy->pairs[0].iterations[1].keys(), (std::vector<std::string>{"relu", "sigmoid", "y"}));
    EXPECT_FALSE(sliced.accuracy->pairs[0].iterations[1].at("y").passed);
    expect_same_accuracy(*sliced.accuracy, *whole.accuracy);
}

TEST_F(LayerwiseRun, FailFastStopsAtTheFirstFailingSlice) {
    RunJob sliced = mark_all_job("relu");
    sliced.compare.fail_fast = true;
    sliced.compare.memory_budget = 9 * 1024;  // the first slice: conv, relu, sigmoid
    RunJobResult result;
    const std::string log = run(sliced, result);
    EXPECT_FALSE(result.passed);
    EXPECT_EQ(testing::count_occurrences(log, "Activating and starting inference"), 2u) << log;
    ASSERT_TRUE(result.accuracy);
    EXPECT_EQ(result.accuracy->pairs[0].iterations[0].keys(), (std::vector<std::string>{"conv", "relu"}));
}

TEST_F(LayerwiseRun, ABudgetTooSmallForOneLayerFailsBeforeAnyRunner) {
    RunJob job = mark_all_job();
    job.compare.memory_budget = 1024;
    RunJobResult result;
    std::string log;
    EXPECT_THROW(log = run(job, result), UsageError);
}

TEST_F(LayerwiseRun, OutputsThatFitTheBudgetRunOnceAsBefore) {
    RunJob job = mark_all_job();
    RunJobResult result;
    const std::string log = run(job, result);
    EXPECT_TRUE(result.passed) << log;
    EXPECT_THAT(log, Not(HasSubstr("Layer-wise comparison in")));
    EXPECT_EQ(testing::count_occurrences(log, "Activating and starting inference"), 2u);
    EXPECT_EQ(result.results.size(), 2u);
}

TEST_F(LayerwiseRun, CommandLineBudgetProgressOnATerminalAndQuietLogs) {
    auto result = testing::run_polygraphy({"run", model_, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all",
                                           "--compare-memory-budget", "9K", "--report", dir_.file("r.html")});
    if (result.output.find("ONNX-Runtime is not available") != std::string::npos) GTEST_SKIP() << result.output;
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Layer-wise comparison in 3 slices"));
    EXPECT_THAT(result.output, Not(HasSubstr("slice 1 of 3")));
    const std::string page = read_file(dir_.file("r.html"));
    for (const char* layer : {"conv", "relu", "sigmoid", "mul"})
        EXPECT_THAT(page, HasSubstr(std::string("\"") + layer + "\"")) << layer;

    // On a terminal (script(1) gives the command one), a status line says how far the run is.
    const std::string command = testing::shell_quote(testing::built_program("polygraphy")) + " run " +
                                testing::shell_quote(model_) +
                                " --ref --onnxrt --onnx-outputs mark all --compare-memory-budget 9K";
    const auto terminal = testing::run_command("script -qec " + testing::shell_quote(command) + " /dev/null");
    EXPECT_THAT(terminal.output, HasSubstr("Layer-wise comparison | slice 2 of 3 | 3 of 5 layers compared"))
        << terminal.output;

    result = testing::run_polygraphy(
        {"run", model_, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--compare-memory-budget", "2K"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] The compare memory budget of 2.0 KiB is too small for one layer: "
                                         "node 'mul' (Mul) needs 3.0 KiB per runner and iteration"));
    result = testing::run_polygraphy({"run", model_, "--ref", "--onnxrt", "--compare-memory-budget", "lots"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Could not convert 'lots' in --compare-memory-budget"));
}

}  // namespace
}  // namespace polygraphy
