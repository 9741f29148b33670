// `surgeon prune/weight-strip/weight-reconstruct`, `inspect sparsity`, the DDS options, and model
// outputs into missing folders, end to end: written models are read back, bad input is one line.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "parity_models.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/sparsity.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/onnx/weight_strip.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using testing::run_polygraphy;
using testing::TempDir;
namespace fs = std::filesystem;

// Exactly one `[!]` line, and it says `what`.
void expect_one_error(const testing::CommandResult& result, const std::string& what) {
    EXPECT_NE(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] " + what));
    std::size_t count = 0;
    for (std::size_t at = result.output.find("[!]"); at != std::string::npos; at = result.output.find("[!]", at + 1))
        ++count;
    EXPECT_EQ(count, 1u) << result.output;
}

OnnxModel load_quietly(const std::string& path) {
    logger().set_severity(Severity::kSilent);
    OnnxModel model = onnx_from_path(path);
    logger().set_severity(Severity::kInfo);
    return model;
}

class WeightToolsCli : public ::testing::Test {
protected:
    void SetUp() override {
        testing::sparsity_model().save(sparsity_ = dir_.file("sparsity.onnx"));
        testing::strip_model().save(strip_ = dir_.file("strip.onnx"));
        testing::dds_model().save(dds_ = dir_.file("dds.onnx"));
    }
    TempDir dir_;
    std::string sparsity_, strip_, dds_;
};

TEST_F(WeightToolsCli, PrunedModelsRunAndAreSparse) {
    auto result = run_polygraphy({"surgeon", "prune", sparsity_, "-o", dir_.file("pruned.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const OnnxModel pruned = load_quietly(dir_.file("pruned.onnx"));
    logger().set_severity(Severity::kSilent);
    EXPECT_EQ(check_sparsity(*pruned).size(), 6u);
    logger().set_severity(Severity::kInfo);
    result = run_polygraphy({"inspect", "sparsity", dir_.file("pruned.onnx")});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("[I] Found sparse tensor: w_matmul"));
    EXPECT_THAT(result.output, ::testing::Not(HasSubstr("non-sparse")));
    // The pruned model still runs (same graph, new weights).
    result = run_polygraphy({"run", dir_.file("pruned.onnx"), "--ref"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST_F(WeightToolsCli, StripAndReconstructGiveARunnableModel) {
    auto result = run_polygraphy({"surgeon", "weight-strip", strip_, "-o", dir_.file("stripped.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Finished stripping 9 weights"));
    EXPECT_LT(fs::file_size(dir_.file("stripped.onnx")), fs::file_size(strip_) / 4);
    result =
        run_polygraphy({"surgeon", "weight-reconstruct", dir_.file("stripped.onnx"), "-o", dir_.file("full.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const OnnxModel full = load_quietly(dir_.file("full.onnx"));
    for (const auto& initializer : full->graph().initializer())
        EXPECT_NO_THROW(tensor_from_proto(initializer)) << initializer.name();
}

TEST_F(WeightToolsCli, BadInputIsOneLineAndWritesNothing) {
    const std::string out = dir_.file("out.onnx");
    auto result = run_polygraphy({"surgeon", "prune", sparsity_});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("the following arguments are required: -o/--output"));
    expect_one_error(run_polygraphy({"surgeon", "prune", dir_.file("missing.onnx"), "-o", out}),
                     "Model file does not exist");
    std::ofstream(dir_.file("corrupt.onnx")) << "not a model";
    expect_one_error(run_polygraphy({"inspect", "sparsity", dir_.file("corrupt.onnx")}),
                     "'" + dir_.file("corrupt.onnx") + "' is not a valid ONNX model");
    expect_one_error(
        run_polygraphy({"surgeon", "weight-strip", strip_, "-o", out, "--exclude-list", dir_.file("nope.txt")}),
        "Could not read " + dir_.file("nope.txt") + ": No such file or directory");
    // A stripped model whose marker was edited by hand.
    OnnxModel stripped = testing::strip_model().build();
    logger().set_severity(Severity::kSilent);
    strip_weights(*stripped);
    logger().set_severity(Severity::kInfo);
    stripped->mutable_graph()->mutable_initializer(0)->set_doc_string("TRT_WEIGHTLESS/SPARSE");
    save_onnx(*stripped, dir_.file("edited.onnx"));
    expect_one_error(run_polygraphy({"surgeon", "weight-reconstruct", dir_.file("edited.onnx"), "-o", out}),
                     "Initializer 'conv_w' has the doc_string 'TRT_WEIGHTLESS/SPARSE'");
    expect_one_error(run_polygraphy({"surgeon", "sanitize", dds_, "-o", out, "--set-unbounded-dds-upper-bound", "big"}),
                     "Invalid value in --set-unbounded-dds-upper-bound");
    expect_one_error(
        run_polygraphy({"surgeon", "sanitize", dds_, "-o", out, "--set-unbounded-dds-upper-bound", "nope:4"}),
        "Cannot set an upper bound for tensor 'nope': it is not in the model");
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(WeightToolsCli, UpperBoundsMakeTheListEmpty) {
    auto result = run_polygraphy({"inspect", "model", dds_, "--list-unbounded-dds"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_THAT(result.output,
                HasSubstr("Found tensors with unbounded DDS: [Variable (limit): (shape=[], dtype=int64)"));
    result = run_polygraphy(
        {"surgeon", "sanitize", dds_, "--set-unbounded-dds-upper-bound", "100", "-o", dir_.file("bounded.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    result = run_polygraphy({"inspect", "model", dir_.file("bounded.onnx"), "--list-unbounded-dds"});
    EXPECT_THAT(result.output, HasSubstr("Found tensors with unbounded DDS: []"));
    result = run_polygraphy({"check", "lint", dir_.file("bounded.onnx")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

// Model outputs go into folders that do not exist yet, as Polygraphy writes them.
TEST_F(WeightToolsCli, ModelOutputsCreateMissingFolders) {
    auto result = run_polygraphy({"convert", sparsity_, "-o", dir_.file("a/b/converted.onnx")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    result = run_polygraphy({"run", sparsity_, "--ref", "--save-onnx", dir_.file("c/saved.onnx")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    result = run_polygraphy({"surgeon", "prune", sparsity_, "-o", dir_.file("d/pruned.onnx"), "--save-external-data",
                             "weights.bin", "--external-data-size-threshold", "0"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    for (const char* path : {"a/b/converted.onnx", "c/saved.onnx", "d/pruned.onnx", "d/weights.bin"})
        EXPECT_TRUE(fs::exists(dir_.file(path))) << path;
    EXPECT_EQ(load_quietly(dir_.file("d/pruned.onnx"))->graph().initializer_size(), 11);
}

}  // namespace
}  // namespace polygraphy::tools
