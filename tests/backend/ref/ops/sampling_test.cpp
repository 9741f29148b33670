// GridSample and AffineGrid on hand-checked points.
#include "kernel_harness.h"

namespace polygraphy::testing {
namespace {

Tensor sample(const std::string& mode, const std::string& padding, const std::vector<double>& grid, int64_t opset = 16) {
    KernelHarness h("GridSample", opset);
    set_attr(h.node(), "mode", mode);
    set_attr(h.node(), "padding_mode", padding);
    h.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).input(f32({1, 1, static_cast<int64_t>(grid.size() / 2), 2}, grid));
    return h.run()[0];
}

TEST(GridSampleOp, BilinearWithZerosAndBorderPadding) {
    // align_corners=0: normalized -1 is pixel -0.5, 0 is pixel 0.5 (between the four pixels).
    expect_close(sample("bilinear", "zeros", {0, 0, -1, -1}), {1, 1, 1, 2}, {2.5, 0.25});
    expect_close(sample("bilinear", "border", {0, 0, -1, -1}), {1, 1, 1, 2}, {2.5, 1});
    expect_close(sample("linear", "reflection", {-1, -1}, 20), {1, 1, 1, 1}, {1});
}

TEST(GridSampleOp, NearestRoundsHalfToEven) {
    // Normalized 1 is pixel 1.5, which rounds to 2: outside (zeros) or clamped to 1 (border).
    expect_close(sample("nearest", "zeros", {1, 1, 0.2, -0.9}), {1, 1, 1, 2}, {0, 2});
    expect_close(sample("nearest", "border", {1, 1}), {1, 1, 1, 1}, {4});
}

TEST(GridSampleOp, BicubicUsesKeysWeightsWithAMinus075) {
    // A ramp 0..15 along x sampled at x = 8.25: taps 7..10 with Keys weights (A = -0.75) for t = 0.25
    // (python: sum(w[i] * (7 + i)) = 8.296875; A = -0.75 does not reproduce ramps exactly).
    KernelHarness h("GridSample", 16);
    set_attr(h.node(), "mode", std::string("bicubic"));
    set_attr(h.node(), "align_corners", int64_t{1});
    h.input(f32({1, 1, 1, 16}, arange(16))).input(f32({1, 1, 1, 2}, {0.1, 0}));
    // x = (0.1 + 1) / 2 * 15 = 8.25
    expect_close(h.run()[0], {1, 1, 1, 1}, {8.296875}, 1e-5, 1e-5);
}

TEST(GridSampleOp, RejectsBadModesAndShapes) {
    KernelHarness mode("GridSample", 16);
    set_attr(mode.node(), "mode", std::string("cubic"));
    expect_error([&] { mode.create(); }, "attribute 'mode' must be bilinear, nearest or bicubic, but it is 'cubic'");
    KernelHarness padding("GridSample", 20);
    set_attr(padding.node(), "padding_mode", std::string("wrap"));
    expect_error([&] { padding.create(); }, "attribute 'padding_mode' must be zeros, border or reflection");
    KernelHarness grid("GridSample", 16);
    grid.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).input(f32({1, 2, 3}, arange(6)));
    expect_error([&] { grid.run(); }, "grid must have shape (N, ..., 2) with rank 4 and N = 1, but it has shape (1, 2, 3)");
    KernelHarness rank("GridSample", 16);
    rank.input(f32({1, 1, 2, 2, 2}, arange(8))).input(f32({1, 1, 1, 1, 3}, {0, 0, 0}));
    expect_error([&] { rank.run(); }, "input X must have rank 4, but it has shape (1, 1, 2, 2, 2)");
}

TEST(AffineGridOp, IdentityThetaGivesPixelCenters) {
    KernelHarness h("AffineGrid", 20);
    h.input(f32({1, 2, 3}, {1, 0, 0, 0, 1, 0})).input(Tensor::from_doubles(DataType::kInt64, {4}, {1, 1, 2, 2}));
    expect_close(h.run()[0], {1, 2, 2, 2}, {-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5});
    KernelHarness corners("AffineGrid", 20);
    set_attr(corners.node(), "align_corners", int64_t{1});
    // x' = 2x + 1 (row 0), y' = y (row 1)
    corners.input(f32({1, 2, 3}, {2, 0, 1, 0, 1, 0})).input(Tensor::from_doubles(DataType::kInt64, {4}, {1, 1, 1, 2}));
    expect_close(corners.run()[0], {1, 1, 2, 2}, {-1, -1, 3, -1});
}

TEST(AffineGridOp, RejectsAThetaThatDoesNotMatchTheSize) {
    KernelHarness h("AffineGrid", 20);
    h.input(f32({1, 3, 4}, arange(12))).input(Tensor::from_doubles(DataType::kInt64, {4}, {1, 1, 2, 2}));
    expect_error([&] { h.run(); }, "theta must have shape (1, 2, 3), but it has shape (1, 3, 4)");
}

}  // namespace
}  // namespace polygraphy::testing
