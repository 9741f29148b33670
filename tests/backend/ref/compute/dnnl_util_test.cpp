#include "backend/ref/compute/dnnl_util.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace polygraphy::ref::onednn {
namespace {

std::vector<float> sweep(int64_t count, float lo, float hi) {
    std::vector<float> values;
    for (int64_t i = 0; i < count; ++i)
        values.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(count - 1));
    return values;
}

void expect_matches(const std::vector<float>& actual, const std::vector<float>& x, double (*reference)(double),
                    double rtol, double atol) {
    ASSERT_EQ(actual.size(), x.size());
    int failures = 0;
    for (std::size_t i = 0; i < x.size() && failures < 5; ++i) {
        const double expected = reference(static_cast<double>(x[i]));
        if (std::abs(actual[i] - expected) > atol + rtol * std::abs(expected)) {
            ++failures;
            ADD_FAILURE() << "f(" << x[i] << ") = " << actual[i] << ", expected " << expected;
        }
    }
}

TEST(EltwiseTest, MatchesLibmWithinFloatPrecision) {
    const std::vector<float> x = sweep(100003, -30.0f, 30.0f);  // odd count: exercises the vector tail
    std::vector<float> y(x.size());
    ASSERT_TRUE(Eltwise(dnnl::algorithm::eltwise_logistic).run(x.data(), y.data(), static_cast<int64_t>(x.size()), 2));
    expect_matches(
        y, x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 2e-6, 1e-30);
    ASSERT_TRUE(Eltwise(dnnl::algorithm::eltwise_tanh).run(x.data(), y.data(), static_cast<int64_t>(x.size()), 1));
    expect_matches(
        y, x, [](double v) { return std::tanh(v); }, 2e-6, 1e-7);
    ASSERT_TRUE(Eltwise(dnnl::algorithm::eltwise_gelu_erf).run(x.data(), y.data(), static_cast<int64_t>(x.size()), 2));
    // oneDNN's erf is accurate to ~1e-7 absolute: relative error grows where gelu(x) is tiny (x < -4).
    expect_matches(
        y, x, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }, 2e-6, 3e-7);
    const std::vector<float> e = sweep(1001, -80.0f, 80.0f);
    std::vector<float> ey(e.size());
    ASSERT_TRUE(Eltwise(dnnl::algorithm::eltwise_exp).run(e.data(), ey.data(), static_cast<int64_t>(e.size()), 2));
    expect_matches(
        ey, e, [](double v) { return std::exp(v); }, 2e-6, 1e-37);
}

TEST(EltwiseTest, InPlaceReusesThePrimitive) {
    const Eltwise logistic(dnnl::algorithm::eltwise_logistic);
    std::vector<float> v = {0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
    for (int round = 0; round < 2; ++round)
        ASSERT_TRUE(logistic.run(v.data(), v.data(), static_cast<int64_t>(v.size()), 1));
    EXPECT_NEAR(v[0], 1.0 / (1.0 + std::exp(-0.5)), 1e-6);  // logistic(logistic(0)) = logistic(0.5)
    EXPECT_TRUE(std::isnan(v[1]));                          // NaN stays NaN
    EXPECT_TRUE(logistic.run(nullptr, nullptr, 0, 1));      // nothing to do
}

TEST(EltwiseTest, ReluMapsNaNToZero) {
    // Documented oneDNN behaviour that FusedActivation inherits (see kActivationAttr).
    std::vector<float> v = {-1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
    ASSERT_TRUE(Eltwise(dnnl::algorithm::eltwise_relu).run(v.data(), v.data(), 3, 1));
    EXPECT_EQ(v, (std::vector<float>{0.0f, 0.0f, 2.0f}));
}

TEST(LaneFoldTest, SumsEveryElementInDouble) {
    // 1 + 2 + ... + 1001 = 501501, with a remainder after the 8-lane blocks; 1e8 + 1 needs double.
    std::vector<float> x;
    for (int i = 1; i <= 1001; ++i) x.push_back(static_cast<float>(i));
    EXPECT_EQ(lane_sum(x.data(), static_cast<int64_t>(x.size())), 501501.0);
    const float big[] = {1e8f, 1.0f, -1e8f};
    EXPECT_EQ(lane_sum(big, 3), 1.0);
    EXPECT_EQ(lane_sum(big, 0), 0.0);
}

TEST(ParallelForTest, CoversTheRangeExactlyOnce) {
    std::vector<int> hits(100000, 0);
    parallel_for(static_cast<int64_t>(hits.size()), 2, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
    });
    for (int h : hits) ASSERT_EQ(h, 1);
}

}  // namespace
}  // namespace polygraphy::ref::onednn
