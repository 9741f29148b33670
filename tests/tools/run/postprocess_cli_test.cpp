// `polygraphy run --postprocess top-K` and `--compare indices --index-tolerance`, end to end.
#include <algorithm>
#include <numeric>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy::tools {
namespace {

using testing::CommandResult;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

class RunPostprocess : public ::testing::Test {
protected:
    void SetUp() override {
        // y = Neg(x), z = Relu(x): two float outputs of shape [2, 6].
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{2, 6});
        builder.node("Neg", {"x"}, {"y"}, "neg");
        builder.node("Relu", {"x"}, {"z"}, "relu");
        builder.output("y", DataType::kFloat32, Shape{2, 6});
        builder.output("z", DataType::kFloat32, Shape{2, 6});
        model_ = dir_.file("model.onnx");
        builder.save(model_);
    }

    CommandResult run(std::vector<std::string> args) {
        args.insert(args.begin(), "run");
        return run_polygraphy(args);
    }

    // Saves one `--ref` run (inputs and outputs), then a copy of the outputs where, in row 0 of y,
    // the value at the position of the largest value is swapped with the one at the position of the
    // `rank`-th largest (rank 1 = second largest). Returns the modified file.
    std::string save_swapped(std::size_t rank) {
        const CommandResult saved = run({model_, "--ref", "--save-inputs", inputs_, "--save-outputs", outputs_});
        EXPECT_EQ(saved.exit_code, 0) << saved.output;
        RunResults results = RunResults::load(outputs_);
        Tensor& y = results.lst.at(0).second.at(0).outputs.at("y");
        float* row = y.data_as<float>();
        std::vector<std::size_t> order(6);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return row[a] > row[b]; });
        std::swap(row[order[0]], row[order[rank]]);
        const std::string path = dir_.file("swapped.json");
        results.save(path);
        return path;
    }

    TempDir dir_;
    std::string model_;
    std::string inputs_ = dir_.file("inputs.json");
    std::string outputs_ = dir_.file("outputs.json");
};

TEST_F(RunPostprocess, TopKIndicesOfTwoRunnersAgree) {
    const CommandResult result = run({model_, "--ref", "--ref", "--postprocess", "top-3", "--compare", "indices"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    // Both outputs became the int64 indices of their 3 largest values along the last axis.
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'y' (dtype=int64, shape=(2, 3)) with 'y' (dtype=int64, "
                                         "shape=(2, 3))"));
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'z' (dtype=int64, shape=(2, 3))"));
    EXPECT_THAT(result.output, HasSubstr("[I]         PASSED | Difference is within index tolerance (0)"));
    EXPECT_THAT(result.output, HasSubstr("[I] PASSED | Runtime:"));
    // Polygraphy's Comparator.postprocess lines, before the comparison.
    const auto applying = result.output.find(
        "[I] Applying post-processing to outputs: top_k_impl\n"
        "[I] Finished applying post-processing\n");
    ASSERT_NE(applying, std::string::npos) << result.output;
    EXPECT_LT(applying, result.output.find("Accuracy Comparison"));
}

TEST_F(RunPostprocess, RefAndOnnxRuntimeTopKIndicesAgree) {
    if (!onnxrt::is_available()) GTEST_SKIP() << "ONNX-Runtime is not available";
    const CommandResult result = run({model_, "--ref", "--onnxrt", "--postprocess-func", "top-3", "--compare-func",
                                      "indices", "--validate"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'y' (dtype=int64, shape=(2, 3))"));
    EXPECT_THAT(result.output, HasSubstr("PASSED | Difference is within index tolerance (0)"));
    EXPECT_THAT(result.output, HasSubstr("[I] PASSED | Runtime:"));
}

TEST_F(RunPostprocess, PerOutputSettingsAndAxis) {
    // y: top-1 along axis 0; z: not listed and no default, so unchanged (compared with `simple`).
    CommandResult result = run({model_, "--ref", "--ref", "--postprocess", "y:top-1,axis=0"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'y' (dtype=int64, shape=(1, 6))"));
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'z' (dtype=float32, shape=(2, 6))"));
    // A default for the rest, a key for y; the last ':' splits, and K is clamped to the axis length.
    result = run({model_, "--ref", "--ref", "--postprocess", "top-2", "y:top-100"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'y' (dtype=int64, shape=(2, 6))"));
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'z' (dtype=int64, shape=(2, 2))"));
}

TEST_F(RunPostprocess, UnknownOutputNameIsIgnoredAsInPolygraphy) {
    // Polygraphy's top_k only looks up the outputs it has: a name matching none changes nothing.
    const CommandResult result = run({model_, "--ref", "--ref", "--postprocess", "out9:top-2"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'y' (dtype=float32, shape=(2, 6))"));
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'z' (dtype=float32, shape=(2, 6))"));
    EXPECT_THAT(result.output, Not(HasSubstr("[W]")));
    EXPECT_THAT(result.output, Not(HasSubstr("[E]")));
}

TEST_F(RunPostprocess, SwappedIndicesFailThenPassWithAnIndexTolerance) {
    const std::string swapped = save_swapped(1);
    // Row 0 of y: the run gives [i1, i2, i3], the loaded file [i2, i1, i3].
    CommandResult result = run({model_, "--ref", "--load-inputs", inputs_, "--load-outputs", swapped, "--postprocess",
                                "top-3", "--compare", "indices"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[E]         FAILED | Difference exceeds index tolerance (0)"));
    EXPECT_THAT(result.output, HasSubstr("[E]     FAILED | Mismatched outputs: ['y']"));
    EXPECT_THAT(result.output, HasSubstr("Pass Rate: 0.0%"));
    EXPECT_THAT(result.output, HasSubstr("PASSED | Difference is within index tolerance (0)"));  // z
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));

    result = run({model_, "--ref", "--load-inputs", inputs_, "--load-outputs", swapped, "--postprocess", "top-3",
                  "--compare", "indices", "--index-tolerance", "1"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("PASSED | Difference is within index tolerance (1)"));
    EXPECT_THAT(result.output, Not(HasSubstr("FAILED | Difference")));

    // Per output: the default stays 0 for z, y gets 1.
    result = run({model_, "--ref", "--load-inputs", inputs_, "--load-outputs", swapped, "--postprocess", "top-3",
                  "--compare", "indices", "--index-tolerance", "y:1"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("PASSED | Difference is within index tolerance (1)"));
    EXPECT_THAT(result.output, HasSubstr("PASSED | Difference is within index tolerance (0)"));
}

TEST_F(RunPostprocess, MissingIndexFails) {
    // Row 0 of y: the run gives [i1, i2, i3, ...], the loaded file's top 3 are [i4, i2, i3].
    const std::string swapped = save_swapped(3);
    const CommandResult result = run({model_, "--ref", "--load-inputs", inputs_, "--load-outputs", swapped,
                                      "--postprocess", "top-3", "--compare", "indices", "--index-tolerance", "2"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, ::testing::ContainsRegex("\\[E\\]         FAILED \\| Value: [0-5] not found in output"));
}

TEST_F(RunPostprocess, TopOneSeesTheSwappedMaximum) {
    const std::string swapped = save_swapped(1);
    // Without post-processing, the float values differ.
    CommandResult result = run({model_, "--ref", "--load-inputs", inputs_, "--load-outputs", swapped});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("FAILED | Output: 'y'"));
    // Top-1 of row 0 differs (i1 against i2), and a tolerance cannot help a single index.
    result = run({model_, "--ref", "--load-inputs", inputs_, "--load-outputs", swapped, "--postprocess", "top-1",
                  "--compare", "indices"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, ::testing::ContainsRegex("FAILED \\| Value: [0-5] not found in output"));
    // Only z post-processed: y is compared as floats by the indices function, and still fails.
    result = run({model_, "--ref", "--load-inputs", inputs_, "--load-outputs", swapped, "--postprocess", "z:top-1",
                  "--compare", "indices"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'y' (dtype=float32, shape=(2, 6))"));
}

TEST_F(RunPostprocess, SavedOutputsAreTheRawOnesAndLoadedOnesArePostprocessed) {
    const std::string saved = dir_.file("saved.json");
    CommandResult result =
        run({model_, "--ref", "--postprocess", "top-2", "--save-outputs", saved, "--compare", "indices"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const RunResults results = RunResults::load(saved);
    EXPECT_EQ(results.lst.at(0).second.at(0).outputs.at("y").dtype(), DataType::kFloat32);
    EXPECT_EQ(results.lst.at(0).second.at(0).outputs.at("y").shape(), (Shape{2, 6}));
    // Loaded float results go through top-K too, so they compare with the run's indices (same default seed).
    result = run({model_, "--ref", "--load-outputs", saved, "--postprocess", "top-2", "--compare", "indices"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Comparing Output: 'y' (dtype=int64, shape=(2, 2)) with 'y' (dtype=int64, "
                                         "shape=(2, 2))"));
}

TEST_F(RunPostprocess, AxisOutOfRangeFailsWhenApplied) {
    const CommandResult result = run({model_, "--ref", "--ref", "--postprocess", "top-2,axis=2"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] Top-K axis 2 is out of range for output 'y' of shape"));
}

TEST_F(RunPostprocess, BadValuesAreOneLineErrors) {
    const std::string expected = "Expected [<out_name>:]top-<K>[,axis=<axis>], but ";
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--postprocess", "top-x"}, "[!] Invalid value in --postprocess: 'top-x'. " + expected + "K 'x' is not a positive integer"},
        {{"--postprocess", "top-0"}, "[!] Invalid value in --postprocess: 'top-0'. " + expected + "K '0' is not a positive integer"},
        {{"--postprocess", "y:top--2"},
         "[!] Invalid value in --postprocess: 'y:top--2'. " + expected + "K '-2' is not a positive integer"},
        {{"--postprocess", "top-"}, "[!] Invalid value in --postprocess: 'top-'. " + expected + "K '' is not a positive integer"},
        {{"--postprocess", "bottom-3"},
         "[!] Invalid value in --postprocess: 'bottom-3'. " + expected +
             "'bottom-3' is not a post-processing function (valid choices are: ['top-<K>'])"},
        {{"--postprocess-func", "y:softmax"},
         "[!] Invalid value in --postprocess: 'y:softmax'. " + expected +
             "'softmax' is not a post-processing function (valid choices are: ['top-<K>'])"},
        {{"--postprocess", "top-3,axis=q"},
         "[!] Invalid value in --postprocess: 'top-3,axis=q'. " + expected + "the axis 'q' is not an integer"},
        {{"--postprocess", "top-3,axis="},
         "[!] Invalid value in --postprocess: 'top-3,axis='. " + expected + "the axis '' is not an integer"},
        {{"--postprocess", "top-3,dim=1"},
         "[!] Invalid value in --postprocess: 'top-3,dim=1'. " + expected + "'dim=1' is not axis=<axis>"},
        {{"--index-tolerance", "-1", "--compare", "indices"},
         "[!] Invalid value in --index-tolerance: '-1'. The value must be at least 0"},
        {{"--index-tolerance", "y:1.5", "--compare", "indices"},
         "[!] Invalid value in --index-tolerance: 'y:1.5'. Expected [<name>:]<integer>, but '1.5' is not an integer"},
    };
    for (const auto& [extra, message] : cases) {
        std::vector<std::string> args = {model_, "--ref", "--ref"};
        args.insert(args.end(), extra.begin(), extra.end());
        const CommandResult result = run(args);
        EXPECT_EQ(result.exit_code, 1) << result.output;
        EXPECT_THAT(result.output, HasSubstr(message + "\n")) << result.output;
        // One line, before anything runs.
        EXPECT_THAT(result.output, Not(HasSubstr("RUNNING")));
        EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
    }
}

TEST_F(RunPostprocess, HelpNoLongerSaysNotAvailable) {
    const CommandResult result = run({"--help"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("--postprocess"));
    EXPECT_THAT(result.output, HasSubstr("top-<K>[,axis=<axis>]"));
    EXPECT_THAT(result.output, Not(HasSubstr("not available in this build yet")));
}

}  // namespace
}  // namespace polygraphy::tools
