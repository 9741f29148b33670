// RunJob: the description of a `run`, its executor (run_job) and its printer (job_program), used
// directly, without the command line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/job/script.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::TempDir;

std::size_t count(const std::string& text, const std::string& part) {
    return testing::count_occurrences(text, part);
}

class RunJobTest : public ::testing::Test {
protected:
    void SetUp() override {
        logger().reset();
        logger().set_severity(Severity::kInfo);
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{2, 3});
        builder.node("Relu", {"x"}, {"a"}, "relu");
        builder.node("Neg", {"a"}, {"y"}, "neg");
        builder.output("y", DataType::kFloat32, Shape{2, 3});
        model_ = dir_.file("model.onnx");
        builder.save(model_);
    }
    void TearDown() override { logger().reset(); }

    // Runs `job` and returns what it logged.
    std::string run(const RunJob& job, RunJobResult& result) {
        return testing::captured_stdout([&] { result = run_job(job); });
    }

    TempDir dir_;
    std::string model_;
};

TEST_F(RunJobTest, ComparesRunnersAndLoadsTheSharedModelOnce) {
    RunJob job;
    job.model = ModelJob{
        model_, std::nullopt, false, {ModifyOutputsStep{kMarkAll, {}}, SaveOnnxStep{dir_.file("saved.onnx"), {}}}};
    job.runners = {RefRunnerStep{}, RefRunnerStep{{1, false}}};
    job.save_outputs_path = dir_.file("out.json");
    RunJobResult result;
    const std::string log = run(job, result);
    EXPECT_TRUE(result.passed) << log;
    ASSERT_TRUE(result.accuracy.has_value());
    EXPECT_FALSE(result.divergence.has_value());
    ASSERT_EQ(result.results.size(), 2u);
    EXPECT_EQ(result.results.lst[0].second[0].outputs.keys(), (std::vector<std::string>{"a", "y"}));
    EXPECT_EQ(count(log, "Loading model: "), 1u) << log;
    EXPECT_EQ(count(log, "Saving ONNX model to: "), 1u) << log;
    EXPECT_EQ(RunResults::load(dir_.file("out.json")).size(), 2u);
}

TEST_F(RunJobTest, OneRunnerLoadsTheModelForItselfAndNothingIsCompared) {
    RunJob job;
    job.model = ModelJob{model_};
    job.runners = {RefRunnerStep{}};
    RunJobResult result;
    const std::string log = run(job, result);
    EXPECT_TRUE(result.passed);
    EXPECT_FALSE(result.accuracy.has_value());
    EXPECT_EQ(count(log, "Loading model: "), 1u) << log;
}

TEST_F(RunJobTest, FailedComparisonFindsTheDivergenceInTheLoadedModel) {
    RunJob golden;
    golden.model = ModelJob{model_, std::nullopt, false, {ModifyOutputsStep{kMarkAll, {}}}};
    golden.runners = {RefRunnerStep{}};
    golden.save_outputs_path = dir_.file("golden.json");
    RunJobResult result;
    run(golden, result);
    RunResults saved = RunResults::load(dir_.file("golden.json"));
    Tensor& y = saved.lst[0].second[0].outputs.at("y");
    y = y.clone();
    y.data_as<float>()[0] += 1.0f;
    saved.save(dir_.file("perturbed.json"));

    RunJob job = golden;
    job.save_outputs_path.reset();
    job.load_outputs_paths = {dir_.file("perturbed.json")};
    job.compare.report_path = dir_.file("report.json");
    const std::string log = run(job, result);
    EXPECT_FALSE(result.passed);
    ASSERT_TRUE(result.divergence.has_value()) << log;
    EXPECT_EQ(result.divergence->node_name, "neg");
    EXPECT_EQ(count(log, "Loading model: "), 1u) << log;
    EXPECT_THAT(log, HasSubstr("Saving accuracy report to " + dir_.file("report.json")));
}

// A runner of an extension module that records the graph name it was given, then changes it.
class RenamingRunner : public BaseRunner {
public:
    RenamingRunner(OnnxLoader model, std::vector<std::string>* seen)
        : BaseRunner("renaming-runner"), model_(std::move(model)), seen_(seen) {}

protected:
    void activate_impl() override {
        OnnxModel model = model_();
        seen_->push_back(model->graph().name());
        model->mutable_graph()->set_name("changed by a runner");
        metadata_ = get_onnx_input_metadata(model->graph());
        outputs_ = model->graph().output(0).name();
    }
    TensorMetadata get_input_metadata_impl() override { return metadata_; }
    TensorMap infer_impl(const TensorMap& feed) override {
        TensorMap outputs;
        outputs.set(outputs_, feed[0].second.clone());
        return outputs;
    }

private:
    OnnxLoader model_;
    std::vector<std::string>* seen_;
    TensorMetadata metadata_;
    std::string outputs_;
};

TEST_F(RunJobTest, ExtensionRunnersGetACopyOfTheSharedModel) {
    std::vector<std::string> seen;
    CustomRunnerStep custom;
    custom.build = [&seen](const OnnxLoader& model) -> std::unique_ptr<BaseRunner> {
        return std::make_unique<RenamingRunner>(model, &seen);
    };
    RunJob job;
    job.model = ModelJob{model_};
    job.runners = {custom, custom, RefRunnerStep{}};
    job.compare.simple.atol.set("", 1e9);  // the runners differ; only the copies matter here
    job.compare.simple.rtol.set("", 1e9);
    RunJobResult result;
    run(job, result);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0], seen[1]);
    EXPECT_NE(seen[0], "changed by a runner");
    EXPECT_EQ(build_runners(job).size(), 3u);
}

TEST_F(RunJobTest, RunnersWithoutAModelFailWhenActivated) {
    RunJob job;
    job.runners = {RefRunnerStep{}};
    auto runners = build_runners(job);
    ASSERT_EQ(runners.size(), 1u);
    EXPECT_THROW(runners[0]->activate(), UsageError);
    EXPECT_THROW(job_program(job), UsageError);
}

TEST_F(RunJobTest, TheProgramPrintsEveryStepAndSharesTheModel) {
    RunJob job;
    job.model = ModelJob{model_,
                         std::nullopt,
                         false,
                         {InferShapesStep{}, ModifyOutputsStep{{"a"}, {}}, ConvertToFp16Step{},
                          SaveOnnxStep{dir_.file("saved.onnx"), ExternalDataOptions{"w.bin", 0}}}};
    job.runners = {RefRunnerStep{}, RefRunnerStep{}};
    job.data_loader.generator.seed = 5;
    job.data_loader.generator.input_metadata.add("x", DataType::kFloat32, DynShape{Dim::fixed(2), Dim::fixed(3)});
    job.postprocess.set("", TopK{2, -1});
    job.compare.function = CompareJob::Function::kIndices;
    job.validate = true;
    const std::string program = job_program(job, {"a header"});
    for (const std::string part : {
             "// a header\n",
             "auto shape_inferred_onnx = extend(load_onnx, ",
             "OnnxLoader(ModifyOutputs(shape_inferred_onnx, std::vector<std::string>{\"a\"}))",
             "auto fp16_onnx = extend(modified_onnx, ",
             "ExternalDataOptions{\"w.bin\", 0}",
             "saved_onnx = load_once(saved_onnx);",
             "data_loader_options.seed = 5;",
             "input_metadata.add(\"x\", dtype_from_name(\"float32\"), DynShape{",
             "top_k_settings.set(\"\", TopK{2, -1});",
             "compare_func::indices(index_tolerance)",
             "find_first_divergence(saved_onnx()->graph(), accuracy)",
             "success = Comparator::validate(results, true, true) && success;",
         })
        EXPECT_THAT(program, HasSubstr(part));
    EXPECT_EQ(count(program, "runners.push_back(std::make_unique<ref::RefRunner>(build_ref_session));"), 2u);

    // One user of the model: nothing to share.
    job.runners = {RefRunnerStep{}};
    EXPECT_THAT(job_program(job), Not(HasSubstr("load_once")));
}

TEST_F(RunJobTest, EverySessionOptionOfTheBuiltInRuntimeIsPrinted) {
    RunJob job;
    job.model = ModelJob{model_};
    ref::SessionOptions options;
    options.num_threads = 3;
    options.fuse_activations = false;
    options.profile = true;
    options.plan_buffers = false;
    options.max_channel_block = 8;
    job.runners = {RefRunnerStep{options}};
    EXPECT_THAT(job_program(job),
                HasSubstr("ref::SessionOptions{.num_threads = 3, .fuse_activations = false, .profile = true, "
                          ".plan_buffers = false, .max_channel_block = 8}"));
}

TEST_F(RunJobTest, ExtensionRunnersArePrintedByTheirOwnCode) {
    CustomRunnerStep custom;
    custom.build = [](const OnnxLoader&) -> std::unique_ptr<BaseRunner> { return nullptr; };
    RunJob job;
    job.model = ModelJob{model_};
    job.runners = {custom};
    EXPECT_THROW(job_program(job), UnsupportedError);
    EXPECT_THROW(build_runners(job), InternalError);  // a step that builds nothing is a bug of the module
    custom.print = [](Script& script, const std::string& model) {
        script.add_include("my_module/runner.h");
        return "std::make_unique<MyRunner>(" + model + ")";
    };
    job.runners = {custom};
    const std::string program = job_program(job);
    EXPECT_THAT(program, HasSubstr("#include \"my_module/runner.h\""));
    EXPECT_THAT(program, HasSubstr("runners.push_back(std::make_unique<MyRunner>(load_onnx));"));
}

}  // namespace
}  // namespace polygraphy
