// `debug diff` as a library call (job/diff_job.h): for each kind of second graph, a planted fault (one
// weight scaled by 1.02) is named by the blame table as the top layer, with its counterpart in A.
#include "polygraphy/job/diff_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "diff_models.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

// Saves both graphs and runs the diff of B against A.
DiffResult diff(const TempDir& dir, const onnx::ModelProto& a, const onnx::ModelProto& b, DiffJob job = {}) {
    save_onnx(a, dir.file("a.onnx"));
    save_onnx(b, dir.file("b.onnx"));
    job.a = ModelJob{dir.file("a.onnx")};
    job.b = ModelJob{dir.file("b.onnx")};
    return run_diff_job(job);
}

const PairDiff& top(const DiffResult& result) {
    return result.pairs.at(result.blame.at(0));
}

const PairDiff& pair_of_b(const DiffResult& result, const std::string& b) {
    for (const PairDiff& pair : result.pairs)
        if (pair.pair.b == b) return pair;
    throw InternalError("no pair for " + b);
}

// The faulty layer leads the table by a margin: its local error is at least `ratio` times the next one's.
void expect_blamed(const DiffResult& result, const std::string& b_tensor, double ratio) {
    ASSERT_GE(result.blame.size(), 2u);
    EXPECT_EQ(top(result).pair.b, b_tensor) << format_blame_table(result, 5);
    const PairDiff& second = result.pairs.at(result.blame.at(1));
    ASSERT_TRUE(top(result).local && second.local);
    EXPECT_GT(top(result).local->relative_rms, ratio * second.local->relative_rms) << format_blame_table(result, 5);
}

TEST(DiffJob, AnIdenticalCopyHasNoErrorAnywhere) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    const DiffResult result = diff(dir, a, a);
    EXPECT_TRUE(result.passed);
    EXPECT_EQ(result.pairs.size(), 9u);
    for (const PairDiff& pair : result.pairs) {
        EXPECT_EQ(pair.total.max_abs, 0) << pair.pair.b;
        ASSERT_TRUE(pair.local) << pair.local_error;
        EXPECT_EQ(pair.local->max_abs, 0) << pair.pair.b;
        EXPECT_TRUE(std::isinf(pair.total.sqnr_db));
        EXPECT_EQ(pair.total.cosine, 1);
    }
    EXPECT_FALSE(result.first_divergence);
}

TEST(DiffJob, AFaultInARenamedAndReorderedCopyIsBlamedOnItsLayer) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    onnx::ModelProto faulty = a;
    testing::scale_weight(faulty, "w2a", 1.02f);
    const onnx::ModelProto b = testing::renamed_reordered_version(faulty);
    const DiffResult result = diff(dir, a, b);
    const PairDiff& blamed = top(result);
    EXPECT_EQ(blamed.pair.a, "branch_a_out");
    EXPECT_THAT(blamed.a_node_names, ElementsAre("/branch_a/Conv"));
    EXPECT_EQ(blamed.pair.how, MatchKind::kStructure);
    // Every other layer computes exactly what A does from A's inputs: its local error is 0.
    EXPECT_NEAR(blamed.local->relative_rms, 0.02, 0.002);
    EXPECT_EQ(result.pairs.at(result.blame.at(1)).local->relative_rms, 0);
    // Downstream layers inherit the error: total, not local.
    const PairDiff& add = pair_of_b(result, b.graph().node(4).output(0));
    EXPECT_EQ(add.pair.a, "add_out");
    EXPECT_GT(add.total.relative_rms, 0);
    EXPECT_EQ(add.local->relative_rms, 0);
    ASSERT_TRUE(result.first_divergence);
    EXPECT_EQ(result.pairs[*result.first_divergence].pair.a, "branch_a_out");
    EXPECT_FALSE(result.passed);
}

TEST(DiffJob, AFaultInTheFp16VersionIsBlamedOnItsLayer) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    onnx::ModelProto b = testing::fp16_version(a);
    testing::scale_weight(b, "w2b", 1.02f);
    const DiffResult result = diff(dir, a, b);
    expect_blamed(result, "branch_b_out", 3);
    EXPECT_THAT(top(result).a_node_names, ElementsAre("/branch_b/Conv"));
    // Without the fault, fp16 alone: every layer's local error is about fp16's precision.
    const DiffResult clean = diff(dir, a, testing::fp16_version(a));
    // B's graph output is the Cast that ends the conversion: its pair counts as a graph output, and
    // fp16 misses the default tolerances of 1e-5 there.
    const PairDiff& output = pair_of_b(clean, clean.pairs.back().pair.b);
    EXPECT_TRUE(output.pair.b_graph_output);
    EXPECT_EQ(output.pair.a, "y");
    EXPECT_FALSE(output.total.passed);
    EXPECT_FALSE(clean.passed);
    for (const PairDiff& pair : clean.pairs) {
        ASSERT_TRUE(pair.local) << pair.local_error;
        EXPECT_LT(pair.local->relative_rms, 2e-3) << pair.pair.b;
        EXPECT_GT(pair.total.sqnr_db, 40) << pair.pair.b;
    }
}

TEST(DiffJob, AFaultInTheQdqVersionIsBlamedOnItsLayer) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    onnx::ModelProto b = testing::qdq_version(a);
    testing::scale_weight(b, "w1", 1.02f);
    const DiffResult by_error = diff(dir, a, b);
    expect_blamed(by_error, "conv1_out", 2.0);
    // Ranked by the systematic part of the error, the fault leads by far: noise leaves the gain near 0.
    DiffJob job;
    job.blame_by = BlameFigure::kGain;
    const DiffResult result = diff(dir, a, b, job);
    EXPECT_EQ(top(result).pair.b, "conv1_out") << format_blame_table(result, 5);
    EXPECT_NEAR(top(result).local->gain_error, 0.02, 0.005);
    const PairDiff& second = result.pairs.at(result.blame.at(1));
    EXPECT_GT(std::abs(top(result).local->gain_error), 5 * std::abs(second.local->gain_error))
        << format_blame_table(result, 5);
    EXPECT_THAT(top(result).b_op_types, HasSubstr("DequantizeLinear+Conv"));
    EXPECT_THAT(top(result).a_node_names, ElementsAre("/conv1/Conv"));
}

TEST(DiffJob, AFaultInTheFusedVersionIsBlamedOnTheFusedNodeAgainstTheNodesItReplaced) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    onnx::ModelProto b = testing::fused_version(a);
    testing::scale_weight(b, "w1", 1.02f);
    const DiffResult result = diff(dir, a, b);
    EXPECT_EQ(top(result).pair.b, "relu1_out");
    EXPECT_EQ(top(result).b_op_types, "FusedConv");
    EXPECT_THAT(top(result).a_node_names, ElementsAre("/conv1/Conv", "/relu1/Relu"));
    EXPECT_GT(top(result).local->relative_rms, 0.01);
    EXPECT_EQ(result.pairs.at(result.blame.at(1)).local->relative_rms, 0);
}

TEST(DiffJob, AFaultInADecomposedLayerNormalizationIsBlamedOnTheGroup) {
    TempDir dir;
    const onnx::ModelProto a = testing::layer_norm_model();
    onnx::ModelProto b = testing::decomposed_layer_norm_model();
    testing::scale_weight(b, "ln_scale", 1.02f);
    const DiffResult result = diff(dir, a, b);
    expect_blamed(result, "ln_out", 100);
    EXPECT_EQ(top(result).b_node_names.size(), 9u);
    EXPECT_THAT(top(result).a_node_names, ElementsAre("/ln/LayerNormalization"));
    EXPECT_EQ(top(result).b_op_types, "ReduceMean+Sub+Pow+ReduceMean+Add+Sqrt+Div+Mul+Add");
}

TEST(DiffJob, TheReportHoldsPairsUnmatchedTensorsAndBlame) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    onnx::ModelProto b = testing::fused_version(a);
    testing::scale_weight(b, "w3", 1.02f);
    DiffJob job;
    job.report_path = dir.file("out/report.json");
    job.save_matches = dir.file("out/matches.json");
    const DiffResult result = diff(dir, a, b, job);
    const std::string report = read_file(*job.report_path);
    for (const char* key : {"\"pairs\"", "\"unmatched_a\"", "\"unmatched_b\"", "\"blame\"", "\"local\"",
                            "\"cosine_similarity\"", "\"sqnr_db\"", "\"first_divergence\"", "\"how\": \"name\""})
        EXPECT_THAT(report, HasSubstr(key));
    EXPECT_THAT(report, HasSubstr("\"unmatched_a\": [\n        \"conv1_out\"\n    ]"));
    EXPECT_THAT(report, HasSubstr("\"b_node\": \"/fc/Gemm\""));
    EXPECT_EQ(read_match_file(*job.save_matches).size(), 1 + result.pairs.size());
    const std::string table = format_blame_table(result, 3);
    EXPECT_THAT(table, HasSubstr("/fc/Gemm (Gemm)"));
    EXPECT_THAT(table, HasSubstr("First divergence: B's '/fc/Gemm'"));
}

TEST(DiffJob, FiguresAreSummedOverEverySample) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    const onnx::ModelProto b = testing::fp16_version(a);
    const DiffResult one = diff(dir, a, b);
    DiffJob job;
    job.data_loader.generator.iterations = 3;
    const DiffResult three = diff(dir, a, b, job);
    EXPECT_EQ(three.iterations, 3u);
    EXPECT_EQ(three.pairs.front().total.size, 3 * one.pairs.front().total.size);
    EXPECT_EQ(three.pairs.front().local->size, 3 * one.pairs.front().local->size);
    EXPECT_THAT(format_blame_table(three, 3), HasSubstr("over 3 sample(s)"));
    // Other samples, other values: the largest error over three samples is at least the first's.
    for (std::size_t i = 0; i < one.pairs.size(); ++i)
        EXPECT_GE(three.pairs[i].total.max_abs, one.pairs[i].total.max_abs) << one.pairs[i].pair.b;
}

TEST(DiffJob, UnderASmallMemoryBudgetBRunsInSlicesWithTheSameFigures) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    onnx::ModelProto b = testing::qdq_version(a);
    testing::scale_weight(b, "w1", 1.02f);
    DiffJob job;
    job.data_loader.generator.iterations = 2;
    const DiffResult whole = diff(dir, a, b, job);
    EXPECT_EQ(whole.b_slices, 1u);
    job.memory_budget = 16384;
    const DiffResult sliced = diff(dir, a, b, job);
    EXPECT_GT(sliced.b_slices, 2u);
    expect_blamed(sliced, "conv1_out", 2.0);
    ASSERT_EQ(sliced.pairs.size(), whole.pairs.size());
    // Each slice is a session of its own, which may block its layers otherwise: figures agree to
    // rounding (a quantization step may flip on an element), not bit for bit.
    for (std::size_t i = 0; i < whole.pairs.size(); ++i) {
        const PairDiff& slice_pair = sliced.pairs[i];
        const PairDiff& whole_pair = whole.pairs[i];
        ASSERT_EQ(slice_pair.pair.b, whole_pair.pair.b);
        ASSERT_TRUE(slice_pair.total.error.empty()) << slice_pair.pair.b << ": " << slice_pair.total.error;
        ASSERT_TRUE(slice_pair.local && whole_pair.local) << slice_pair.pair.b << ": " << slice_pair.local_error;
        EXPECT_EQ(slice_pair.total.size, whole_pair.total.size) << slice_pair.pair.b;
        EXPECT_NEAR(slice_pair.total.relative_rms, whole_pair.total.relative_rms,
                    1e-2 * whole_pair.total.relative_rms + 1e-7)
            << slice_pair.pair.b;
        EXPECT_NEAR(slice_pair.local->relative_rms, whole_pair.local->relative_rms,
                    1e-2 * whole_pair.local->relative_rms + 1e-7)
            << slice_pair.pair.b;
    }
}

TEST(DiffJob, AMemoryBudgetBelowOneLayerIsAUsageError) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    DiffJob job;
    job.memory_budget = 512;
    EXPECT_THAT(testing::error_message<UsageError>([&] { diff(dir, a, testing::fp16_version(a), job); }),
                HasSubstr("The compare memory budget of 0.5 KiB is too small for one layer"));
}

TEST(DiffJob, InputsThatCannotBePairedAreOneLine) {
    TempDir dir;
    testing::ModelBuilder a_builder, b_builder;
    a_builder.input("x", DataType::kFloat32, Shape{1, 4});
    a_builder.node("Relu", {"x"}, {"y"});
    a_builder.output("y", DataType::kFloat32, Shape{1, 4});
    b_builder.input("x", DataType::kInt64, Shape{1, 4});
    b_builder.node("Neg", {"x"}, {"y"});
    b_builder.output("y", DataType::kInt64, Shape{1, 4});
    EXPECT_THAT(testing::error_message<UsageError>([&] { diff(dir, a_builder.proto(), b_builder.proto()); }),
                HasSubstr("Graph input 'x' of A (float32) cannot feed graph input 'x' of B (int64)"));

    testing::ModelBuilder c_builder;
    c_builder.input("x", DataType::kFloat32, Shape{1, 5});
    c_builder.node("Relu", {"x"}, {"y"});
    c_builder.output("y", DataType::kFloat32, Shape{1, 5});
    EXPECT_THAT(
        testing::error_message<UsageError>([&] { diff(dir, a_builder.proto(), c_builder.proto()); }),
        HasSubstr("Graph input 'x' of A has shape (1, 4), which graph input 'x' of B (shape (1, 5)) cannot take"));
}

TEST(DiffJob, NothingPairedBeyondTheGraphOutputsIsAnError) {
    TempDir dir;
    testing::ModelBuilder a_builder, b_builder;
    a_builder.input("x", DataType::kFloat32, Shape{1, 4});
    a_builder.node("Relu", {"x"}, {"r"});
    a_builder.node("Neg", {"r"}, {"y"});
    a_builder.output("y", DataType::kFloat32, Shape{1, 4});
    b_builder.input("x", DataType::kFloat32, Shape{1, 4});
    b_builder.node("Sigmoid", {"x"}, {"s"});
    b_builder.node("Abs", {"s"}, {"y"});
    b_builder.output("y", DataType::kFloat32, Shape{1, 4});
    EXPECT_THAT(testing::error_message<UsageError>([&] { diff(dir, a_builder.proto(), b_builder.proto()); }),
                HasSubstr("Nothing of B was paired with A beyond the graph outputs"));
}

}  // namespace
}  // namespace polygraphy
