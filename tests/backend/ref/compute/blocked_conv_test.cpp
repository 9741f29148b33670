// The runtime's own channel-blocked convolution (src/backend/ref/compute/blocked_conv.h), called directly
// on every shape class it handles, against a direct definition of Conv in double. The Conv kernel
// uses it only where blocked_conv::measured_faster() says; fusion_test.cpp runs it inside a graph.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/compute/blocked_conv.h"
#include "model_builder.h"

namespace polygraphy::ref {
namespace {

using blocked_conv::Epilogue;
using blocked_conv::Problem;
using polygraphy::testing::random_tensor;

// Float32 sums of up to a few hundred products of values below 1 against double ones: the same
// tolerance as the blocked-layout tests of fusion_test.cpp (kBlockedLayoutTolerance).
constexpr double kTolerance = 1e-4;
constexpr int64_t kBlock = 8;

/// A problem from the NCHW sizes; the output size follows from symmetric pads.
Problem make_problem(int64_t batch, int64_t c, int64_t m, int64_t h, int64_t w, int64_t k, int64_t stride,
                     int64_t pad) {
    Problem p;
    p.batch = batch;
    p.in_channels = c;
    p.out_channels = m;
    p.in_h = h;
    p.in_w = w;
    p.k_h = k;
    p.k_w = k;
    p.stride_h = stride;
    p.stride_w = stride;
    p.pad_top = pad;
    p.pad_left = pad;
    p.out_h = (h + 2 * pad - k) / stride + 1;
    p.out_w = (w + 2 * pad - k) / stride + 1;
    return p;
}

std::string describe(const Problem& p) {
    std::ostringstream text;
    text << "N" << p.batch << " C" << p.in_channels << " M" << p.out_channels << " " << p.in_h << "x" << p.in_w << " k"
         << p.k_h << " s" << p.stride_h << " pad" << p.pad_top;
    return text.str();
}

/// NCHW values -> [N, C/8, H, W, 8].
std::vector<float> to_blocked(const std::vector<float>& nchw, int64_t n, int64_t c, int64_t hw) {
    std::vector<float> blocked(nchw.size());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t s = 0; s < hw; ++s)
                blocked[static_cast<std::size_t>(((i * (c / kBlock) + ch / kBlock) * hw + s) * kBlock + ch % kBlock)] =
                    nchw[static_cast<std::size_t>((i * c + ch) * hw + s)];
    return blocked;
}

std::vector<float> values(int64_t count, uint32_t seed) {
    const Tensor t = random_tensor({count}, seed);
    return std::vector<float>(t.data_as<float>(), t.data_as<float>() + count);
}

/// Conv as ONNX defines it, in double, then the epilogue; NCHW in, blocked out.
std::vector<double> reference(const Problem& p, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& bias, const std::vector<float>& residual_nchw,
                              const Epilogue& e) {
    const int64_t out_hw = p.out_h * p.out_w;
    std::vector<double> y(static_cast<std::size_t>(p.batch * p.out_channels * out_hw));
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t m = 0; m < p.out_channels; ++m)
            for (int64_t oh = 0; oh < p.out_h; ++oh)
                for (int64_t ow = 0; ow < p.out_w; ++ow) {
                    double sum = e.bias != nullptr ? bias[static_cast<std::size_t>(m)] : 0.0;
                    for (int64_t c = 0; c < p.in_channels; ++c)
                        for (int64_t kh = 0; kh < p.k_h; ++kh)
                            for (int64_t kw = 0; kw < p.k_w; ++kw) {
                                const int64_t ih = oh * p.stride_h - p.pad_top + kh;
                                const int64_t iw = ow * p.stride_w - p.pad_left + kw;
                                if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
                                sum += static_cast<double>(x[static_cast<std::size_t>(
                                           ((n * p.in_channels + c) * p.in_h + ih) * p.in_w + iw)]) *
                                       w[static_cast<std::size_t>(((m * p.in_channels + c) * p.k_h + kh) * p.k_w + kw)];
                            }
                    const std::size_t at =
                        static_cast<std::size_t>((n * p.out_channels + m) * out_hw + oh * p.out_w + ow);
                    if (e.residual != nullptr) sum += residual_nchw[at];
                    if (e.clip) sum = std::isnan(sum) ? e.lo : std::min<double>(std::max<double>(sum, e.lo), e.hi);
                    y[at] = sum;
                }
    std::vector<double> blocked(y.size());
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t m = 0; m < p.out_channels; ++m)
            for (int64_t s = 0; s < out_hw; ++s)
                blocked[static_cast<std::size_t>(((n * (p.out_channels / kBlock) + m / kBlock) * out_hw + s) * kBlock +
                                                 m % kBlock)] =
                    y[static_cast<std::size_t>((n * p.out_channels + m) * out_hw + s)];
    return blocked;
}

/// One problem with its data, run through the kernel.
struct Case {
    Problem p;
    std::vector<float> x, w, bias, residual;  // x, w and residual NCHW
    std::vector<float> x_blocked, residual_blocked;
    std::shared_ptr<const float> packed;

    Case(const Problem& problem, uint32_t seed) : p(problem) {
        x = values(p.batch * p.in_channels * p.in_h * p.in_w, seed);
        w = values(p.out_channels * p.in_channels * p.k_h * p.k_w, seed + 1);
        bias = values(p.out_channels, seed + 2);
        residual = values(p.batch * p.out_channels * p.out_h * p.out_w, seed + 3);
        reblock();
    }
    void reblock() {
        x_blocked = to_blocked(x, p.batch, p.in_channels, p.in_h * p.in_w);
        residual_blocked = to_blocked(residual, p.batch, p.out_channels, p.out_h * p.out_w);
        packed = blocked_conv::pack_weights(p, w.data());
    }
    Epilogue epilogue(bool with_bias, bool with_residual) const {
        Epilogue e;
        e.bias = with_bias ? bias.data() : nullptr;
        e.residual = with_residual ? residual_blocked.data() : nullptr;
        return e;
    }
    std::vector<float> run(const Epilogue& e, int threads) const {
        std::vector<float> y(residual.size(), std::numeric_limits<float>::quiet_NaN());  // every value is written
        blocked_conv::run(p, x_blocked.data(), packed.get(), e, y.data(), threads);
        return y;
    }
    void expect_matches_reference(const Epilogue& e, const std::string& what) const {
        const std::vector<double> expected = reference(p, x, w, bias, residual, e);
        const std::vector<float> got = run(e, 1);
        for (std::size_t i = 0; i < got.size(); ++i) {
            if (std::isnan(expected[i])) {
                ASSERT_TRUE(std::isnan(got[i])) << what << " " << describe(p) << " y[" << i << "] = " << got[i];
            } else if (std::isinf(expected[i])) {
                ASSERT_EQ(got[i], expected[i]) << what << " " << describe(p) << " y[" << i << "]";
            } else {
                ASSERT_NEAR(got[i], expected[i], kTolerance) << what << " " << describe(p) << " y[" << i << "]";
            }
        }
    }
};

class BlockedConv : public ::testing::Test {
protected:
    void SetUp() override {
        if (!blocked_conv::cpu_supported()) GTEST_SKIP() << "no AVX2/FMA: the Conv kernel keeps oneDNN";
    }
};

// 3x3 at stride 1 and 2 with pads 0 and 1, 1x1, a 5x5; widths and heights that are not multiples
// of the tile (3 pixels) or of a band, images smaller than the kernel's reach; 8 to 128 channels in
// and 8 to 96 out (each width of the last block of 32: 8, 16, 24, 32), batch 2.
const std::vector<Problem>& problems() {
    static const std::vector<Problem> all = {
        make_problem(1, 8, 8, 5, 7, 3, 1, 1),    make_problem(2, 16, 24, 9, 11, 3, 2, 1),
        make_problem(1, 24, 16, 6, 5, 3, 1, 0),  make_problem(1, 64, 64, 13, 13, 3, 1, 1),
        make_problem(2, 8, 40, 7, 9, 1, 1, 0),   make_problem(1, 16, 8, 8, 8, 1, 2, 0),
        make_problem(1, 24, 64, 10, 3, 3, 2, 0), make_problem(1, 16, 32, 12, 10, 5, 1, 2),
        make_problem(2, 64, 96, 7, 7, 3, 1, 1),  make_problem(1, 8, 16, 2, 2, 3, 1, 1),
        make_problem(1, 8, 24, 1, 1, 3, 1, 2),   make_problem(1, 32, 56, 23, 17, 3, 2, 1),
        make_problem(1, 8, 16, 1, 2, 3, 1, 3),  // outputs whose windows lie wholly in the padding: the bias
    };
    return all;
}

TEST_F(BlockedConv, MatchesTheDefinitionWithAndWithoutBiasResidualAndClip) {
    uint32_t seed = 10;
    for (const Problem& p : problems()) {
        const Case c(p, seed += 10);
        for (bool with_bias : {false, true})
            for (bool with_residual : {false, true})
                for (int clip = 0; clip < 3; ++clip) {
                    Epilogue e = c.epilogue(with_bias, with_residual);
                    e.clip = clip > 0;  // 1: Relu, 2: Clip(-0.5, 0.5)
                    e.lo = clip == 1 ? 0.0f : -0.5f;
                    e.hi = clip == 1 ? std::numeric_limits<float>::infinity() : 0.5f;
                    std::ostringstream what;
                    what << "bias " << with_bias << " residual " << with_residual << " clip " << clip;
                    c.expect_matches_reference(e, what.str());
                }
    }
}

TEST_F(BlockedConv, NaNAndInfinityPropagateAndClipMapsNaNToItsLowerBound) {
    for (const Problem& p : {make_problem(1, 16, 32, 9, 10, 3, 1, 1), make_problem(1, 8, 8, 7, 7, 3, 2, 1)}) {
        Case c(p, 3);
        const float inf = std::numeric_limits<float>::infinity();
        c.x[static_cast<std::size_t>((0 * p.in_h + 0) * p.in_w + 0)] =
            std::numeric_limits<float>::quiet_NaN();                                  // a corner
        c.x[static_cast<std::size_t>((1 * p.in_h + 4) * p.in_w + 4)] = inf;           // the middle
        c.x[static_cast<std::size_t>((2 * p.in_h + 6) * p.in_w + 6)] = -inf;          // overlaps the +inf's windows
        c.x[static_cast<std::size_t>((3 * p.in_h + 2) * p.in_w + p.in_w - 1)] = inf;  // the right edge
        c.reblock();
        c.expect_matches_reference(c.epilogue(true, true), "no clip");
        Epilogue relu = c.epilogue(true, false);
        relu.clip = true;
        relu.hi = inf;
        c.expect_matches_reference(relu, "relu");
        const std::vector<float> y = c.run(c.epilogue(false, false), 1);
        EXPECT_TRUE(std::isnan(y[0])) << "the NaN reaches the output next to it";
    }
}

TEST_F(BlockedConv, ResultsAreBitIdenticalOnReRunsAndAtOneOrTwoThreads) {
    for (const Problem& p : {make_problem(2, 64, 64, 14, 14, 3, 1, 1), make_problem(1, 128, 40, 15, 9, 3, 2, 1)}) {
        const Case c(p, 7);
        const Epilogue e = c.epilogue(true, true);
        const std::vector<float> one = c.run(e, 1), again = c.run(e, 1), two = c.run(e, 2), two_again = c.run(e, 2);
        ASSERT_EQ(std::memcmp(one.data(), again.data(), one.size() * sizeof(float)), 0) << describe(p);
        ASSERT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0) << describe(p);
        ASSERT_EQ(std::memcmp(two.data(), two_again.data(), two.size() * sizeof(float)), 0) << describe(p);
    }
}

// Where the graph holds X or Y as NCHW, the Conv kernel converts it around run(); the residual and
// clip are then applied as the NCHW values are written, with the kernel's arithmetic.
TEST_F(BlockedConv, ChannelBlockingRoundTripsAndUnblockingAppliesTheResidualAndClip) {
    const int64_t batch = 2, channels = 24, spatial = 5;
    const std::vector<float> x = values(batch * channels * spatial, 1), r = values(batch * channels * spatial, 2);
    std::vector<float> blocked(x.size());
    blocked_conv::block_channels(x.data(), batch, channels, spatial, blocked.data());
    EXPECT_EQ(blocked, to_blocked(x, batch, channels, spatial));
    std::vector<float> y(x.size());
    blocked_conv::unblock_channels(blocked.data(), Epilogue{}, batch, channels, spatial, y.data());
    EXPECT_EQ(y, x);
    Epilogue e;
    e.residual = r.data();
    e.clip = true;
    e.lo = -0.25f;
    e.hi = 0.5f;
    blocked[3] = std::numeric_limits<float>::quiet_NaN();  // n 0, channel 3, s 0
    blocked_conv::unblock_channels(blocked.data(), e, batch, channels, spatial, y.data());
    for (std::size_t i = 0; i < y.size(); ++i) {
        const float sum = i == 3 * spatial ? std::numeric_limits<float>::quiet_NaN() : x[i] + r[i];
        const float expected = std::isnan(sum) ? e.lo : std::min(std::max(sum, e.lo), e.hi);
        EXPECT_EQ(y[i], expected) << "y[" << i << "]";
    }
}

TEST_F(BlockedConv, RunsWhereMeasuredFasterOnly) {
    // ResNet's 3x3 convolutions onto 14x14 and 7x7 (stride 1 or 2): ours; onto 56x56 and 28x28
    // (stride 2 too), over few channels (squeezenet1_1) and 1x1: oneDNN's.
    EXPECT_TRUE(blocked_conv::measured_faster(make_problem(1, 256, 256, 14, 14, 3, 1, 1)));
    EXPECT_TRUE(blocked_conv::measured_faster(make_problem(1, 512, 512, 7, 7, 3, 1, 1)));
    EXPECT_TRUE(blocked_conv::measured_faster(make_problem(1, 256, 256, 14, 14, 3, 2, 1)));
    EXPECT_FALSE(blocked_conv::measured_faster(make_problem(1, 128, 128, 56, 56, 3, 2, 1)));
    EXPECT_FALSE(blocked_conv::measured_faster(make_problem(1, 64, 64, 56, 56, 3, 1, 1)));
    EXPECT_FALSE(blocked_conv::measured_faster(make_problem(1, 128, 128, 28, 28, 3, 1, 1)));
    EXPECT_FALSE(blocked_conv::measured_faster(make_problem(1, 64, 256, 13, 13, 3, 1, 1)));
    EXPECT_FALSE(blocked_conv::measured_faster(make_problem(1, 1024, 256, 14, 14, 1, 1, 0)));
}

}  // namespace
}  // namespace polygraphy::ref
