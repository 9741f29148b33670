// GridSample and AffineGrid on hand-checked points.
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

Tensor sample(const std::string& mode, const std::string& padding, const std::vector<double>& grid,
              int64_t opset = 16) {
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

TEST(GridSampleOp, NonFiniteAndFarAwayGridPoints) {
    // NaN samples NaN; 1e30 is far outside (zeros: 0; reflection folds it back in; border: the edge).
    const double nan = std::nan("");
    const Tensor zeros = sample("bilinear", "zeros", {nan, 0, 1e30, 1e30});
    EXPECT_TRUE(std::isnan(zeros.value_as_double(0)));
    EXPECT_EQ(zeros.value_as_double(1), 0.0);
    const Tensor border = sample("bicubic", "border", {-1e30, -1e30});
    EXPECT_TRUE(std::isfinite(border.value_as_double(0)));
    const Tensor reflection = sample("nearest", "reflection", {1e30, -1e30});
    const double folded = reflection.value_as_double(0);
    EXPECT_TRUE(folded == 1 || folded == 2 || folded == 3 || folded == 4) << folded;
}

TEST(GridSampleOp, RejectsBadModesAndShapes) {
    KernelHarness mode("GridSample", 16);
    set_attr(mode.node(), "mode", std::string("area"));
    expect_error([&] { mode.create(); }, "attribute 'mode' must be bilinear, nearest or bicubic, but it is 'area'");
    KernelHarness padding("GridSample", 20);
    set_attr(padding.node(), "padding_mode", std::string("wrap"));
    expect_error([&] { padding.create(); }, "attribute 'padding_mode' must be zeros, border or reflection");
    KernelHarness grid("GridSample", 16);
    grid.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).input(f32({1, 2, 3}, arange(6)));
    expect_error([&] { grid.run(); },
                 "grid must have shape (N, ..., 2) with rank 4 and N = 1, but it has shape (1, 2, 3)");
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

namespace polygraphy::testing {
namespace {

TEST(RandomOps, ShapesDtypesRangesAndSeeds) {
    KernelHarness u("RandomUniform", 22);
    set_attr(u.node(), "shape", std::vector<int64_t>{50, 4});
    set_attr(u.node(), "low", -2.0f);
    set_attr(u.node(), "high", -1.0f);
    set_attr(u.node(), "seed", 3.0f);
    const Tensor a = u.run()[0], b = u.run()[0];
    EXPECT_EQ(a.dtype(), DataType::kFloat32);
    EXPECT_EQ(a.shape(), (Shape{50, 4}));
    for (double v : values_of(a)) {
        EXPECT_GE(v, -2.0);
        EXPECT_LE(v, -1.0);
    }
    EXPECT_TRUE(a.equals(b));  // a seed repeats the values

    KernelHarness n("RandomNormalLike", 22);
    set_attr(n.node(), "mean", 10.0f);
    set_attr(n.node(), "scale", 0.5f);
    n.input(Tensor(DataType::kFloat64, {1000}));
    const Tensor normal = n.run()[0];
    EXPECT_EQ(normal.dtype(), DataType::kFloat64);
    double mean = 0;
    for (double v : values_of(normal)) mean += v / 1000.0;
    EXPECT_NEAR(mean, 10.0, 0.2);  // 0.5 / sqrt(1000) = 0.016 standard error

    KernelHarness bern("Bernoulli", 15);
    set_attr(bern.node(), "dtype", int64_t{7});  // INT64
    bern.input(f32({4}, {0, 1, 1, 0}));
    EXPECT_EQ(values_of(bern.run()[0]), (std::vector<double>{0, 1, 1, 0}));

    // What the ONNX suite's Bernoulli cases can check of random draws (issue 40): the dtype, the shape,
    // values in {0, 1}, and the mean over a large sample (p = 0.3, 20000 draws: standard error 0.0032).
    KernelHarness draws("Bernoulli", 15);
    set_attr(draws.node(), "seed", 3.0f);
    draws.input(Tensor::from_doubles(DataType::kFloat32, {20000}, std::vector<double>(20000, 0.3)));
    const Tensor drawn = draws.run()[0];
    EXPECT_EQ(drawn.dtype(), DataType::kFloat32);
    EXPECT_EQ(drawn.shape(), (Shape{20000}));
    double ones = 0;
    for (double v : values_of(drawn)) {
        ASSERT_TRUE(v == 0 || v == 1) << v;
        ones += v;
    }
    EXPECT_NEAR(ones / 20000.0, 0.3, 0.02);

    KernelHarness multi("Multinomial", 7);
    set_attr(multi.node(), "sample_size", int64_t{5});
    multi.input(f32({2, 3}, {0, -1e9, -1e9, -1e9, -1e9, 0}));  // all mass on class 0, then class 2
    const Tensor picks = multi.run()[0];
    EXPECT_EQ(picks.dtype(), DataType::kInt32);
    EXPECT_EQ(values_of(picks), (std::vector<double>{0, 0, 0, 0, 0, 2, 2, 2, 2, 2}));
}

TEST(RandomOps, RejectBadAttributesAndInputs) {
    KernelHarness shape("RandomNormal", 22);
    expect_error([&] { shape.create(); }, "attribute 'shape' is required");
    KernelHarness range("RandomUniform", 22);
    set_attr(range.node(), "shape", std::vector<int64_t>{2});
    set_attr(range.node(), "low", 2.0f);
    set_attr(range.node(), "high", 1.0f);
    expect_error([&] { range.create(); }, "attribute 'low' (2) must not exceed 'high' (1)");
    KernelHarness p("Bernoulli", 15);
    p.input(f32({2}, {0.5, 1.5}));
    expect_error([&] { p.run(); }, "input probabilities must be in [0, 1], but one is 1.5");
    KernelHarness m("Multinomial", 7);
    m.input(f32({3}, {0, 1, 2}));
    expect_error([&] { m.run(); }, "input must have shape [batch, classes], but it has shape (3,)");
}

}  // namespace
}  // namespace polygraphy::testing
