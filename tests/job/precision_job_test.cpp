// `debug precision` as a library call (job/precision_job.h): planted fp16 faults are found exactly,
// the answer is 1-minimal and holds on fresh samples, a QDQ model's bad activation is found, and
// each bad input is refused before searching.
#include "polygraphy/job/precision_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diff_models.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "precision_models.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

PrecisionJob trouble_job(const TempDir& dir) {
    save_onnx(testing::fp16_trouble_model(), dir.file("model.onnx"));
    PrecisionJob job;
    job.model = ModelJob{dir.file("model.onnx")};
    job.data_loader.custom = data_loader_from_list(testing::fp16_trouble_samples(4, 1));
    job.check.tolerances = {1e-2, 1e-2};
    return job;
}

// Whether `candidate` passes `tolerances` against `reference` on every output of every sample.
bool passes(const onnx::ModelProto& reference, const onnx::ModelProto& candidate, const InputList& samples,
            DiffTolerances tolerances) {
    const ref::Session expected(reference), actual(candidate);
    for (const TensorMap& feed : samples) {
        const TensorMap want = expected.run(feed), got = actual.run(feed);
        for (const auto& [name, value] : want)
            if (!compute_error_figures(value, got.at(name), tolerances).passed) return false;
    }
    return true;
}

TEST(PrecisionJob, FindsExactlyThePlantedFp16Faults) {
    TempDir dir;
    PrecisionJob job = trouble_job(dir);
    job.output_path = dir.file("mixed.onnx");
    job.block_list_path = dir.file("block_list.json");
    const PrecisionResult result = run_precision_job(job);
    EXPECT_THAT(result.kept, ElementsAre("/scale/Mul", "/delta/Sub"));
    EXPECT_EQ(result.candidates, 7u);
    EXPECT_EQ(result.samples, 4u);
    EXPECT_GT(result.evaluations, 2u);
    EXPECT_EQ(result.evaluations, result.history.size());
    EXPECT_TRUE(result.one_minimal);
    // The two planted nodes lead the ranking of the diff replay.
    ASSERT_GE(result.ranking.size(), 2u);
    EXPECT_THAT((std::vector<std::string>{result.ranking[0], result.ranking[1]}),
                ::testing::UnorderedElementsAre("/scale/Mul", "/delta/Sub"));
    // The mixed model passes on samples the search never saw; the all-fp16 model does not.
    const onnx::ModelProto model = testing::fp16_trouble_model();
    const InputList fresh = testing::fp16_trouble_samples(6, 7);
    EXPECT_TRUE(passes(model, result.mixed, fresh, job.check.tolerances));
    EXPECT_FALSE(passes(model, testing::fp16_version(model), fresh, job.check.tolerances));
    // The saved files: the mixed model, and block lists that convert the model into it again.
    EXPECT_TRUE(passes(model, *onnx_from_path(dir.file("mixed.onnx")), fresh, job.check.tolerances));
    const Fp16BlockLists lists = read_fp16_block_lists(dir.file("block_list.json"));
    EXPECT_THAT(lists.node_block_list, ElementsAre("/scale/Mul", "/delta/Sub"));
    EXPECT_EQ(lists.op_block_list, kFp16DefaultBlockList);
    onnx::ModelProto converted = model;
    convert_to_fp16(converted,
                    Fp16Options{.op_block_list = lists.op_block_list, .node_block_list = lists.node_block_list});
    EXPECT_TRUE(passes(model, converted, fresh, job.check.tolerances));
    EXPECT_THAT(format_precision_result(result, LowPrecision::kFp16),
                HasSubstr("Keep 2 of 7 node(s) in float32: /scale/Mul, /delta/Sub"));
}

TEST(PrecisionJob, TheAnswerIsOneMinimal) {
    TempDir dir;
    const PrecisionJob job = trouble_job(dir);
    const PrecisionResult result = run_precision_job(job);
    ASSERT_EQ(result.kept.size(), 2u);
    onnx::ModelProto model = testing::fp16_trouble_model();
    const std::vector<PrecisionCandidate> candidates = precision_candidates(model, LowPrecision::kFp16);
    const InputList samples = testing::fp16_trouble_samples(4, 1);
    EXPECT_TRUE(passes(model, mixed_precision_model(model, LowPrecision::kFp16, candidates, result.kept), samples,
                       job.check.tolerances));
    // Each kept node given back to fp16 alone makes the check fail.
    for (std::size_t i = 0; i < result.kept.size(); ++i) {
        std::vector<std::string> without = result.kept;
        without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
        EXPECT_FALSE(passes(model, mixed_precision_model(model, LowPrecision::kFp16, candidates, without), samples,
                            job.check.tolerances))
            << result.kept[i];
    }
}

TEST(PrecisionJob, GreedySearchAndMetricChecksFindTheSameNodes) {
    TempDir dir;
    PrecisionJob job = trouble_job(dir);
    job.search = PrecisionSearch::kGreedy;
    EXPECT_THAT(run_precision_job(job).kept, ElementsAre("/scale/Mul", "/delta/Sub"));
    // The mean error bounded instead of every element; then an SQNR floor alone (tolerances that pass anything).
    job.search = PrecisionSearch::kBisect;
    job.check.error_stat = PrecisionCheck::ErrorStat::kMean;
    EXPECT_THAT(run_precision_job(job).kept, ElementsAre("/scale/Mul", "/delta/Sub"));
    job.check.error_stat = PrecisionCheck::ErrorStat::kElementwise;
    job.check.tolerances = {1e30, 1e30};
    job.check.min_sqnr_db = 30;
    EXPECT_THAT(run_precision_job(job).kept, ElementsAre("/scale/Mul", "/delta/Sub"));
}

// onnxconverter-common's search, for comparison: segments in graph order; it finds the two faults too,
// but nothing checks that its answer is 1-minimal.
TEST(PrecisionJob, TheNodeOrderSearchFindsThePlantedFaultsWithoutRanking) {
    TempDir dir;
    PrecisionJob job = trouble_job(dir);
    job.search = PrecisionSearch::kNodeOrder;
    const PrecisionResult result = run_precision_job(job);
    EXPECT_THAT(result.kept, ElementsAre("/scale/Mul", "/delta/Sub"));
    EXPECT_TRUE(result.ranking.empty());
    EXPECT_FALSE(result.one_minimal);
    EXPECT_THAT(format_precision_result(result, LowPrecision::kFp16), HasSubstr("Not verified 1-minimal"));
}

TEST(PrecisionJob, ACosineFloorAloneFindsTheFaults) {
    TempDir dir;
    PrecisionJob job = trouble_job(dir);
    job.check.tolerances = {1e30, 1e30};
    job.check.min_cosine = 0.9999;
    EXPECT_THAT(run_precision_job(job).kept, ElementsAre("/scale/Mul", "/delta/Sub"));
}

TEST(PrecisionJob, AnExternalCheckDecides) {
    TempDir dir;
    PrecisionJob job = trouble_job(dir);
    // A check that passes when /delta/Sub computes in float32, whatever else does.
    job.check.external = [](const onnx::ModelProto& candidate) {
        for (const auto& node : candidate.graph().node())
            if (node.name() == "/delta/Sub")
                for (const auto& input : node.input())
                    if (input != "u" && input != "v") return false;
        return true;
    };
    EXPECT_THAT(run_precision_job(job).kept, ElementsAre("/delta/Sub"));
}

TEST(PrecisionJob, FindsTheBadlyQuantizedActivationOfAQdqModel) {
    TempDir dir;
    onnx::ModelProto qdq = testing::qdq_version(testing::diff_cnn());
    testing::scale_weight(qdq, "relu1_out", 40.0f);  // relu1_out's scale 40 times too coarse
    save_onnx(qdq, dir.file("qdq.onnx"));
    PrecisionJob job;
    job.model = ModelJob{dir.file("qdq.onnx")};
    job.precision = LowPrecision::kInt8;
    job.data_loader.generator.iterations = 4;
    job.check.tolerances = {1e30, 1e30};
    job.check.min_sqnr_db = 25;
    const PrecisionResult result = run_precision_job(job);
    EXPECT_THAT(result.kept_tensors, ElementsAre("relu1_out"));
    EXPECT_THAT(result.kept, ElementsAre("relu1_out_QuantizeLinear", "relu1_out_DequantizeLinear"));
    EXPECT_TRUE(result.one_minimal);
    EXPECT_GT(result.candidates, 1u);
    // The mixed model reads relu1_out itself, and quantizes the other activations still.
    bool reads_float = false, other_quantizers = false;
    for (const auto& node : result.mixed.graph().node()) {
        EXPECT_NE(node.name(), "relu1_out_QuantizeLinear");
        if (node.op_type() == "QuantizeLinear") other_quantizers = true;
        for (const auto& input : node.input()) reads_float = reads_float || input == "relu1_out";
    }
    EXPECT_TRUE(reads_float);
    EXPECT_TRUE(other_quantizers);
    // The block list names the nodes that read the kept tensor, as ONNX Runtime's quantizer excludes them.
    EXPECT_THAT(result.block_lists.node_block_list, ElementsAre("/branch_a/Conv", "/branch_b/Conv"));
}

TEST(PrecisionJob, AModelThatPassesInLowPrecisionKeepsNothingAfterOneEvaluation) {
    TempDir dir;
    save_onnx(testing::diff_cnn(), dir.file("cnn.onnx"));
    PrecisionJob job;
    job.model = ModelJob{dir.file("cnn.onnx")};
    job.check.tolerances = {1e-1, 1e-1};
    const PrecisionResult result = run_precision_job(job);
    EXPECT_TRUE(result.kept.empty());
    EXPECT_EQ(result.evaluations, 1u);
    EXPECT_THAT(format_precision_result(result, LowPrecision::kFp16),
                HasSubstr("Keep nothing in higher precision: the fp16 model passes as it is"));
}

TEST(PrecisionJob, BadInputsAreRefusedBeforeSearching) {
    TempDir dir;
    // A model that is not finite at full precision: Sqrt of negative values.
    testing::ModelBuilder nan_model(17);
    nan_model.input("x", DataType::kFloat32, Shape{4}).output("y", DataType::kFloat32, Shape{4});
    nan_model.node("Neg", {"x"}, {"negative"}, "/neg/Neg");
    nan_model.node("Sqrt", {"negative"}, {"y"}, "/sqrt/Sqrt");
    nan_model.save(dir.file("nan.onnx"));
    PrecisionJob job;
    job.model = ModelJob{dir.file("nan.onnx")};
    EXPECT_THAT(testing::error_message<UsageError>([&] { run_precision_job(job); }),
                HasSubstr("already fails at full precision: its output 'y' is not finite on sample 0"));

    // A check that fails whatever is kept (only the reference itself passes it).
    job = trouble_job(dir);
    int calls = 0;
    job.check.external = [&calls](const onnx::ModelProto&) { return calls++ == 0; };
    EXPECT_THAT(testing::error_message<UsageError>([&] { run_precision_job(job); }),
                HasSubstr("fails even with every candidate kept"));
    // An external check that fails on the model itself.
    job.check.external = [](const onnx::ModelProto&) { return false; };
    EXPECT_THAT(testing::error_message<UsageError>([&] { run_precision_job(job); }),
                HasSubstr("already fails the check at full precision"));

    // An op block list naming no op of the model; a QDQ search of a model without Q/DQ pairs.
    job = trouble_job(dir);
    job.op_block_list = {"Conv"};
    EXPECT_THAT(testing::error_message<UsageError>([&] { run_precision_job(job); }),
                HasSubstr("The op block list names 'Conv', which no node of the model is"));
    job = trouble_job(dir);
    job.precision = LowPrecision::kInt8;
    EXPECT_THAT(testing::error_message<UsageError>([&] { run_precision_job(job); }),
                HasSubstr("no activation quantized by a QuantizeLinear -> DequantizeLinear pair"));
}

TEST(PrecisionJob, APrecisionThatAnOpCannotTakeIsNamed) {
    TempDir dir;
    // Relu takes bfloat16 from opset 13 only.
    testing::ModelBuilder builder(12);
    builder.input("x", DataType::kFloat32, Shape{4}).output("y", DataType::kFloat32, Shape{4});
    builder.node("Relu", {"x"}, {"y"}, "/relu/Relu");
    builder.save(dir.file("relu13.onnx"));
    PrecisionJob job;
    job.model = ModelJob{dir.file("relu13.onnx")};
    job.precision = LowPrecision::kBf16;
    EXPECT_THAT(testing::error_message<UsageError>([&] { run_precision_job(job); }),
                HasSubstr("Node '/relu/Relu' (Relu, opset 12) cannot compute in bfloat16"));
    job.precision = LowPrecision::kFp16;
    EXPECT_NO_THROW(run_precision_job(job));
}

}  // namespace
}  // namespace polygraphy
