#include "comparator/plots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "comparator/figure.h"
#include "model_builder.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST(HeatmapGrid, FollowsPolygraphysLayout) {
    // 2-D: one image; rows and columns shrink to the number of images.
    plots::HeatmapGrid grid = plots::heatmap_grid({4, 5});
    EXPECT_EQ(grid.images, 1);
    EXPECT_EQ(grid.rows, 1);
    EXPECT_EQ(grid.cols, 1);
    EXPECT_EQ(grid.figures, 1);
    // 200 images of 7x7: 14 rows by 7 columns per figure.
    grid = plots::heatmap_grid({2, 100, 7, 7});
    EXPECT_EQ(grid.images, 200);
    EXPECT_EQ(grid.rows, 14);
    EXPECT_EQ(grid.cols, 7);
    EXPECT_EQ(grid.figures, 3);
    // 10 images: 7 columns, 2 rows.
    grid = plots::heatmap_grid({10, 3, 3});
    EXPECT_EQ(grid.cols, 7);
    EXPECT_EQ(grid.rows, 2);
    // Taller than 1080 pixels: Polygraphy would divide by zero; one row here.
    grid = plots::heatmap_grid({2, 2000, 8});
    EXPECT_EQ(grid.rows, 1);
    EXPECT_EQ(grid.figures, 1);
    EXPECT_EQ(plots::heatmap_grid({0, 4}).images, 0);
}

TEST(Heatmaps, OneSvgPerFigureNamedAsPolygraphyNamesThem) {
    TempDir dir;
    const Tensor diff = Tensor::from_doubles(DataType::kFloat32, {2, 2, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    const auto paths = plots::save_heatmaps(diff, "Absolute Error | out/0", dir.path(), false);
    ASSERT_EQ(paths.size(), 1u);
    EXPECT_THAT(names_in(dir.path()), ElementsAre("Absolute Error | out_0: (0,0:2,0:3) to (1,0:2,0:3).svg"));
    const std::string svg = read_file(paths[0]);
    EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 3, true);
    EXPECT_THAT(svg, HasSubstr("data:image/png;base64,iVBORw0KGgo"));  // embedded PNG images
    EXPECT_THAT(svg, HasSubstr(">(1,0:2,0:3)</text>"));
}

TEST(Heatmaps, RelativeErrorsUseALogScale) {
    TempDir dir;
    const Tensor diff = Tensor::from_doubles(DataType::kFloat32, {2, 2}, {0, 1e-6, 1e-3, 1});
    const auto paths = plots::save_heatmaps(diff, "Relative Error | y", dir.path(), true);
    ASSERT_EQ(paths.size(), 1u);
    EXPECT_THAT(names_in(dir.path()), ElementsAre("Relative Error | y (Log Scale): (0,0:2,0:2) to (0,0:2,0:2).svg"));
    EXPECT_THAT(read_file(paths[0]), HasSubstr(">0.001</text>"));  // a decade tick of the colour bar
}

TEST(Heatmaps, NamesAreEscapedInsideTheSvg) {
    TempDir dir;
    const auto paths = plots::save_heatmaps(Tensor::from_doubles(DataType::kFloat32, {1}, {1}),
                                            "Absolute Error | <a&b>", dir.path(), false);
    ASSERT_EQ(paths.size(), 1u);
    EXPECT_THAT(read_file(paths[0]), HasSubstr("Absolute Error | &lt;a&amp;b&gt;: (0,0:1,0:1)"));
}

TEST(ErrorMetricsPlot, WritesOneSvgPerOutput) {
    TempDir dir;
    const Tensor reference = Tensor::from_doubles(DataType::kFloat32, {4}, {1, -2, 3, 0});
    const Tensor absdiff = Tensor::from_doubles(DataType::kFloat32, {4}, {0.1, 0.2, 0.0, 0.05});
    const Tensor reldiff = Tensor::from_doubles(DataType::kFloat32, {4}, {0.1, 0.1, 0.0, 2e14});
    const std::string path =
        plots::save_error_metrics_plot(absdiff, reldiff, reference, "ref", "onnxrt", "a/b", "a/b", dir.file("plots"));
    EXPECT_EQ(path, dir.file("plots") + "/error_metrics_a_b.svg");
    const std::string svg = read_file(path);
    EXPECT_THAT(svg, HasSubstr("Error metrics between output0 and output1"));
    EXPECT_THAT(svg, HasSubstr("output0: ref                                 | a/b"));
    EXPECT_THAT(svg, HasSubstr("Relative error (log scale)"));
    EXPECT_THAT(svg, HasSubstr("output1 magnitude"));
}

TEST(Figure, PngsHaveTheRightSignatureAndSize) {
    const std::string png = figure::encode_png(3, 2, {0, 1, 2, 2, 1, 0}, {{0, 0, 0}, {255, 0, 0}, {0, 0, 255}});
    ASSERT_GT(png.size(), 33u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(png.substr(12, 4), "IHDR");
    EXPECT_EQ(static_cast<unsigned char>(png[19]), 3u);  // width
    EXPECT_EQ(static_cast<unsigned char>(png[23]), 2u);  // height
    EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND");
}

TEST(Figure, TicksAreRoundNumbers) {
    const auto ticks = figure::linear_ticks(0, 1, 5);
    ASSERT_EQ(ticks.size(), 6u);
    for (std::size_t i = 0; i < ticks.size(); ++i) EXPECT_NEAR(ticks[i], 0.2 * static_cast<double>(i), 1e-12);
    EXPECT_THAT(figure::linear_ticks(-3, 17, 4), ElementsAre(0, 5, 10, 15));
    EXPECT_EQ(figure::tick_label(0.00012345), "0.000123");
    EXPECT_EQ(figure::tick_label(0), "0");
}

}  // namespace
}  // namespace polygraphy
