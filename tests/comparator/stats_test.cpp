// Statistics against numpy 1.24: every expected number is what the numpy expression next to it printed.
// Large arrays (> 65536 elements) take the radix-selection path with OpenMP; small ones the nth_element path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
Tensor tensor_of(DataType dtype, const std::vector<T>& values) {
    return Tensor::from_bytes(dtype, {static_cast<int64_t>(values.size())}, values.data(), values.size() * sizeof(T));
}

// A(n) = ((np.arange(n, dtype=np.int64) * 7919) % 100003 / 1000.0 - 50).astype(np.float32)
std::vector<float> sequence_a(int64_t n) {
    std::vector<float> values;
    for (int64_t i = 0; i < n; ++i) values.push_back(static_cast<float>(((i * 7919) % 100003) / 1000.0 - 50.0));
    return values;
}

struct Expected {
    double mean, std_dev, var, median, min, max, avg_magnitude, p90, p95, p99, q25;
    int64_t argmin, argmax;
};

// Exact equality, NaN equal to NaN: the figures must be numpy's, bit for bit.
void expect_same(double actual, double expected, const char* what) {
    if (std::isnan(expected))
        EXPECT_TRUE(std::isnan(actual)) << what << ": " << actual;
    else
        EXPECT_EQ(actual, expected) << what;
}

void expect_stats(const ArrayStats& s, const Expected& e, double var_tolerance = 0) {
    expect_same(s.mean, e.mean, "mean");
    if (var_tolerance > 0) {  // float64 variance: numpy's pairwise sum and ours differ in the last bits
        EXPECT_NEAR(s.var, e.var, std::fabs(e.var) * var_tolerance);
        EXPECT_NEAR(s.std_dev, e.std_dev, std::fabs(e.std_dev) * var_tolerance);
    } else {
        expect_same(s.var, e.var, "var");
        expect_same(s.std_dev, e.std_dev, "std");
    }
    expect_same(s.median, e.median, "median");
    expect_same(s.min, e.min, "min");
    expect_same(s.max, e.max, "max");
    expect_same(s.avg_magnitude, e.avg_magnitude, "avg-magnitude");
    expect_same(s.p90, e.p90, "p90");
    expect_same(s.p95, e.p95, "p95");
    expect_same(s.p99, e.p99, "p99");
    ASSERT_EQ(s.quantiles.size(), 1u);
    expect_same(s.quantiles[0], e.q25, "q25");
    EXPECT_EQ(s.argmin, e.argmin);
    EXPECT_EQ(s.argmax, e.argmax);
}

// The large cases run with one and with two threads: the parallel merges must not change a bit.
class StatsThreads : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override { detail::set_threads_override(GetParam()); }
    void TearDown() override { detail::set_threads_override(0); }
};
INSTANTIATE_TEST_SUITE_P(Threads, StatsThreads, ::testing::Values(1, 2));

// For each: np.mean(a, dtype=np.float32), np.std(a), np.var(a), np.median(a), a.min(), a.max(),
// np.mean(np.abs(a), dtype=np.float32), np.quantile(a, [0.9, 0.95, 0.99, 0.25]), np.argmin(a), np.argmax(a).

TEST_P(StatsThreads, LargeFloat32MatchesNumpy) {
    const Tensor a = tensor_of(DataType::kFloat32, sequence_a(200003));  // a = A(200003)
    expect_stats(compute_stats(a, {0.25}),
                 {0.00048752874135971069, 28.868282318115234, 833.37774658203125, 0, -50, 50.001998901367188,
                  25.000614166259766, 40.001799011230489, 45.001998901367188, 49.001998901367188, -25, 0, 52685});
}

TEST_P(StatsThreads, LargeFloat32WithEvenCountAndDuplicatesMatchesNumpy) {
    std::vector<float> values = sequence_a(200003);
    for (int i = 0; i < 5; ++i) values.push_back(values[static_cast<std::size_t>(i)]);
    // a = np.concatenate([A(200003), A(200003)[:5]])
    expect_stats(compute_stats(tensor_of(DataType::kFloat32, values), {0.25}),
                 {-0.00036649894900619984, 28.868480682373047, 833.38922119140625, -0.0010000000474974513, -50,
                  50.001998901367188, 25.000844955444336, 40.001299285888692, 45.001998901367188, 49.001998901367188,
                  -25.00124979019165, 0, 52685});
}

TEST_P(StatsThreads, LargeFloat32WithFewDistinctValuesMatchesNumpy) {
    std::vector<float> values;
    for (int64_t i = 0; i < 300000; ++i) values.push_back(static_cast<float>((i % 7) * 0.5));
    // a = ((np.arange(300000) % 7) * 0.5).astype(np.float32): whole buckets of equal keys
    expect_stats(compute_stats(tensor_of(DataType::kFloat32, values), {0.25}),
                 {1.4999949932098389, 1.0000020265579224, 1.0000041723251343, 1.5, 0, 3, 1.4999949932098389, 3, 3, 3,
                  0.5, 0, 6});
}

TEST_P(StatsThreads, LargeFloat64MatchesNumpy) {
    std::vector<double> values;
    for (float v : sequence_a(200003)) values.push_back(static_cast<double>(v) * 1e-3);
    // a = A(200003).astype(np.float64) * 1e-3
    expect_stats(compute_stats(tensor_of(DataType::kFloat64, values), {0.25}),
                 {4.8753912551546819e-07, 0.028868281898723591, 0.00083337769978417207, 0, -0.050000000000000003,
                  0.050001998901367188, 0.025000613182783127, 0.040001799011230486, 0.045001998901367191,
                  0.049001998901367187, -0.025000000000000001, 0, 52685},
                 1e-12);
}

TEST_P(StatsThreads, LargeFloat64WithCloseValuesNeedsDeepSelection) {
    std::vector<double> values;
    for (int64_t i = 0; i < 300000; ++i)
        values.push_back(static_cast<double>(i % 3) + 1e-12 * static_cast<double>(i % 5));
    // a = (np.arange(300000) % 3).astype(np.float64) + 1e-12 * (np.arange(300000) % 5)
    expect_stats(compute_stats(tensor_of(DataType::kFloat64, values), {0.25}),
                 {1, 0.81649658092772603, 0.66666666666666674, 1.000000000002, 0, 2.0000000000039999, 1,
                  2.0000000000029998, 2.0000000000039999, 2.0000000000039999, 3.0000000000000001e-12, 0, 14},
                 1e-12);
}

TEST_P(StatsThreads, LargeIntegersMatchNumpy) {
    std::vector<int64_t> values;
    for (int64_t i = 0; i < 200003; ++i) values.push_back((i * 7919) % 1009 - 500);
    // a = (np.arange(200003, dtype=np.int64) * 7919) % 1009 - 500
    expect_stats(compute_stats(tensor_of(DataType::kInt64, values), {0.25}),
                 {4.0017948150634766, 291.27408524083813, 84840.592732887031, 4, -500, 508, 252.26679992675781, 408,
                  458, 498, -248, 0, 765},
                 1e-12);

    std::vector<int32_t> small;
    for (int32_t i = 0; i < 100000; ++i) small.push_back((i * 37) % 1000 - 500);
    // a = ((np.arange(100000, dtype=np.int64) * 37) % 1000 - 500).astype(np.int32)
    expect_stats(compute_stats(tensor_of(DataType::kInt32, small), {0.25}),
                 {-0.5, 288.67499025720952, 83333.25, -0.5, -500, 499, 250, 399.10000000000582, 449.04999999998836,
                  489.00999999999476, -250.25, 0, 27},
                 1e-12);
}

TEST_P(StatsThreads, LargeFloat16IsCastUpButInterpolatesInHalf) {
    std::vector<uint16_t> values;
    for (float v : sequence_a(100000)) values.push_back(float_to_half(v));
    // a = A(100000).astype(np.float16); std/var/median on a.astype(np.float32) as Polygraphy's cast_up does
    expect_stats(compute_stats(tensor_of(DataType::kFloat16, values), {0.25}),
                 {-2.4999999368446879e-05, 28.868185043334961, 833.3720703125, -0.00050020217895507812, -50, 50,
                  25.000476837158203, 40, 45, 49, -25, 0, 5367});
}

TEST(Stats, SmallArraysMatchNumpy) {
    // a = np.array([-100, 100], dtype=np.int8): numpy's interpolation subtracts in int8 and wraps
    ArrayStats s = compute_stats(Tensor::from_doubles(DataType::kInt8, {2}, {-100, 100}), {0.25});
    EXPECT_EQ(s.mean, 0.0);
    EXPECT_EQ(s.std_dev, 100.0);
    EXPECT_EQ(s.median, 0.0);
    EXPECT_DOUBLE_EQ(s.p90, 105.6);     // np.quantile(a, 0.9)
    EXPECT_EQ(s.quantiles[0], -114.0);  // np.quantile(a, 0.25)

    // a = np.array([2, 1], dtype=np.uint8)
    s = compute_stats(Tensor::from_doubles(DataType::kUInt8, {2}, {2, 1}), {0.25});
    EXPECT_EQ(s.mean, 1.5);
    EXPECT_EQ(s.std_dev, 0.5);
    EXPECT_EQ(s.var, 0.25);
    EXPECT_EQ(s.min, 1.0);
    EXPECT_EQ(s.argmin, 1);
    EXPECT_DOUBLE_EQ(s.p90, 1.9);
    EXPECT_EQ(s.quantiles[0], 1.25);

    // a = np.array([7.5], dtype=np.float32): every statistic is the element
    s = compute_stats(Tensor::from_doubles(DataType::kFloat32, {}, {7.5}));
    EXPECT_EQ(format_stats(s, {}),
              "mean=7.5, std-dev=0, var=0, median=7.5, min=7.5 at (), max=7.5 at (), avg-magnitude=7.5, p90=7.5, "
              "p95=7.5, p99=7.5");
}

TEST(Stats, NaNAndInfinityFollowNumpy) {
    // a = np.array([1, np.nan, 3], dtype=np.float32): NaN everywhere, at the first NaN's index
    ArrayStats s = compute_stats(Tensor::from_doubles(DataType::kFloat32, {3}, {1, kNaN, 3}));
    EXPECT_EQ(format_stats(s, {3}),
              "mean=nan, std-dev=nan, var=nan, median=nan, min=nan at (1,), max=nan at (1,), avg-magnitude=nan, "
              "p90=nan, p95=nan, p99=nan");
    EXPECT_EQ(s.nan_count, 1);

    // a = np.array([1, np.inf, 3], dtype=np.float32): median 3.0; quantiles touching inf are nan (inf - inf)
    s = compute_stats(Tensor::from_doubles(DataType::kFloat32, {3}, {1, kInf, 3}), {0.5, 0.25});
    EXPECT_EQ(s.mean, kInf);
    EXPECT_TRUE(std::isnan(s.var));
    EXPECT_EQ(s.median, 3.0);
    EXPECT_EQ(s.max, kInf);
    EXPECT_EQ(s.argmax, 1);
    EXPECT_TRUE(std::isnan(s.p90));
    EXPECT_TRUE(std::isnan(s.quantiles[0]));  // np.quantile(a, 0.5) -> nan (3 + inf * 0)
    EXPECT_EQ(s.quantiles[1], 2.0);           // np.quantile(a, 0.25)

    // a = np.array([-np.inf, np.inf])
    s = compute_stats(Tensor::from_doubles(DataType::kFloat64, {2}, {-kInf, kInf}));
    EXPECT_TRUE(std::isnan(s.mean));
    EXPECT_TRUE(std::isnan(s.median));
    EXPECT_EQ(s.min, -kInf);
    EXPECT_EQ(s.argmax, 1);
}

TEST(Stats, BoolHasNoQuantiles) {
    // a = np.array([[True, False], [False, True]])
    const ArrayStats s = compute_stats(Tensor::from_doubles(DataType::kBool, {2, 2}, {1, 0, 0, 1}));
    EXPECT_FALSE(s.has_quantiles);
    EXPECT_EQ(format_stats(s, {2, 2}),
              "mean=0.5, std-dev=0.5, var=0.25, median=0.5, min=0 at (0, 1), max=1 at (0, 0), avg-magnitude=0.5");
    // a = np.array([True, True, True])
    const ArrayStats all = compute_stats(Tensor::from_doubles(DataType::kBool, {3}, {1, 1, 1}));
    EXPECT_EQ(all.min, 1.0);
    EXPECT_EQ(all.argmin, 0);
    EXPECT_EQ(all.median, 1.0);
    EXPECT_EQ(all.var, 0.0);
    EXPECT_THROW((void)quantile(Tensor::from_doubles(DataType::kBool, {1}, {1}), 0.5), UnsupportedError);
}

TEST(Stats, EmptyTensorGivesPolygraphyFigures) {
    // Polygraphy: zero_on_empty for most, np.mean of [] is nan, its quantile helper returns inf.
    const ArrayStats s = compute_stats(Tensor(DataType::kFloat32, {0, 3}));
    EXPECT_EQ(format_stats(s, {0, 3}),
              "mean=nan, std-dev=0, var=0, median=0, min=0 at 0, max=0 at 0, avg-magnitude=nan, p90=inf, p95=inf, "
              "p99=inf");
    EXPECT_EQ(quantile(Tensor(DataType::kInt64, {0}), 0.5), kInf);
}

TEST(Stats, MedianAndQuantileHelpers) {
    const Tensor t = Tensor::from_doubles(DataType::kFloat32, {4}, {4, 1, 3, 2});
    EXPECT_EQ(median(t), 2.5);                // np.median([4, 1, 3, 2])
    EXPECT_EQ(quantile(t, 0.0), 1.0);         // np.quantile(a, 0)
    EXPECT_EQ(quantile(t, 1.0), 4.0);         // np.quantile(a, 1)
    EXPECT_DOUBLE_EQ(quantile(t, 0.9), 3.7);  // np.quantile(a, 0.9)
    // float32 data: the raw float64 helpers agree with the tensor path
    const std::vector<float> raw = {4, 1, 3, 2};
    EXPECT_EQ(compute_stats(raw.data(), 4).median, 2.5);
}

TEST(Stats, RejectsBadQuantilesAndStrings) {
    const Tensor t = Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2});
    try {
        (void)compute_stats(t, {1.5});
        FAIL() << "expected UsageError";
    } catch (const UsageError& error) {
        EXPECT_STREQ(error.what(), "Quantile must be in the range [0, 1].\nNote: given: 1.5");
    }
    EXPECT_THROW((void)compute_stats(t, {kNaN}), UsageError);
    Tensor strings(DataType::kString, {1});
    try {
        (void)compute_stats(strings);
        FAIL() << "expected UnsupportedError";
    } catch (const UnsupportedError& error) {
        EXPECT_STREQ(error.what(), "Cannot compute statistics of a tensor of type string");
    }
}

}  // namespace
}  // namespace polygraphy::stats
