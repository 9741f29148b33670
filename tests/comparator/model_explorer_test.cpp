#include "polygraphy/comparator/model_explorer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

OutputCompareResult result(double max_absdiff, bool passed, double atol = 1e-3) {
    OutputCompareResult r;
    r.max_absdiff = max_absdiff;
    r.passed = passed;
    r.atol = atol;
    return r;
}

TEST(ModelExplorerNodeData, IsOneGraphsResultsKeyedByOutputTensor) {
    TempDir dir;
    IterationCompareResult iteration;
    iteration.set("conv_out", result(2e-6, true));
    iteration.set("relu_out", result(0.5, false));
    iteration.set("logits", result(std::numeric_limits<double>::quiet_NaN(), false));
    OutputCompareResult broken;
    broken.error = "Will not compare outputs of different shapes.";
    iteration.set("shape_mismatch", broken);
    AccuracyResult accuracy;
    accuracy.pairs.push_back({"ref", "onnxrt", {iteration}});
    save_model_explorer_node_data(accuracy, dir.file("nodes.json"));
    EXPECT_EQ(read_file(dir.file("nodes.json")),
              "{\n"
              "  \"name\": \"max abs diff: ref vs onnxrt (iteration 0)\",\n"
              "  \"results\": {\n"
              "    \"conv_out\": {\n"
              "      \"value\": 2e-06,\n"
              "      \"bgColor\": \"#1a9850\"\n"
              "    },\n"
              "    \"relu_out\": {\n"
              "      \"value\": 0.5,\n"
              "      \"bgColor\": \"#f46d43\"\n"
              "    },\n"
              "    \"logits\": {\n"
              "      \"value\": \"NaN\",\n"
              "      \"bgColor\": \"#a50026\"\n"
              "    }\n"
              "  }\n"
              "}");
}

TEST(ModelExplorerNodeData, ColoursByTheRatioToTheTolerance) {
    EXPECT_EQ(error_colour(result(1e-5, true)), "#1a9850");
    EXPECT_EQ(error_colour(result(5e-4, true)), "#91cf60");
    EXPECT_EQ(error_colour(result(5e-3, false)), "#fee08b");
    EXPECT_EQ(error_colour(result(5e-2, false)), "#fdae61");
    EXPECT_EQ(error_colour(result(0.5, false)), "#f46d43");
    EXPECT_EQ(error_colour(result(5, false)), "#a50026");
    EXPECT_EQ(error_colour(result(std::numeric_limits<double>::infinity(), false)), "#a50026");
    EXPECT_EQ(error_colour(result(1e-9, false, 0.0)), "#a50026");  // any error beyond a zero tolerance
}

TEST(ModelExplorerNodeData, NoComparisonGivesAnEmptyFileThatSaysSo) {
    TempDir dir;
    save_model_explorer_node_data(AccuracyResult{}, dir.file("nodes.json"));
    const std::string text = read_file(dir.file("nodes.json"));
    EXPECT_THAT(text, HasSubstr("\"name\": \"polygraphy: no comparison\""));
    EXPECT_THAT(text, HasSubstr("\"results\": {}"));
}

TEST(ModelExplorerNodeData, AMissingComparisonIsAnError) {
    TempDir dir;
    AccuracyResult accuracy;
    accuracy.pairs.push_back({"a", "b", {IterationCompareResult{}}});
    EXPECT_THROW(save_model_explorer_node_data(accuracy, dir.file("n.json"), 0, 3), PolygraphyException);
    EXPECT_THROW(save_model_explorer_node_data(accuracy, dir.file("n.json"), 1, 0), PolygraphyException);
}

}  // namespace
}  // namespace polygraphy
