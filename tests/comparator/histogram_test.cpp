#include "polygraphy/comparator/histogram.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "polygraphy/common/exception.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;

using testing::kInf;
constexpr double kNan = testing::kNaN;

Tensor floats(const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(values.size())}, values);
}

TEST(ValueRange, FiniteExtremesSmallestPositiveAndMeanMagnitude) {
    const ValueRange range = value_range(floats({-2, 0, 0.5, 4, kNan, kInf, -kInf}));
    EXPECT_EQ(range.count, 7);
    EXPECT_EQ(range.min, -2.0);
    EXPECT_EQ(range.max, 4.0);
    EXPECT_EQ(range.min_positive, 0.5);
    EXPECT_DOUBLE_EQ(range.mean_magnitude, (2 + 0 + 0.5 + 4) / 4.0);
    EXPECT_EQ(range.nan, 1);
    EXPECT_EQ(range.infinite, 2);
}

TEST(ValueRange, NothingFiniteGivesNoExtremes) {
    const ValueRange range = value_range(floats({kNan, kInf}));
    EXPECT_FALSE(range.min.has_value());
    EXPECT_FALSE(range.min_positive.has_value());
    EXPECT_EQ(range.mean_magnitude, 0);
}

TEST(LinearHistogram, EqualBinsWithTheMaximumInTheLastBin) {
    // numpy.histogram([0, 1, 2, 3, 4, 4], bins=4, range=(0, 4)) -> [1, 1, 1, 3]
    const Histogram histogram = linear_histogram(floats({0, 1, 2, 3, 4, 4}), 0, 4, 4);
    EXPECT_THAT(histogram.counts, ElementsAre(1, 1, 1, 3));
    EXPECT_EQ(histogram.total(), 6);
    EXPECT_FALSE(histogram.log_scale);
}

TEST(LinearHistogram, CountsNonFiniteValuesApartAndSkipsValuesOutsideTheRange) {
    const Histogram histogram = linear_histogram(floats({-5, 0.5, kNan, kInf, 9}), 0, 1, 2);
    EXPECT_THAT(histogram.counts, ElementsAre(0, 1));
    EXPECT_EQ(histogram.nan, 1);
    EXPECT_EQ(histogram.infinite, 1);
}

TEST(LinearHistogram, OneValueWidensTheRangeAsNumpyDoes) {
    const Histogram histogram = linear_histogram(floats({3, 3, 3}), 3, 3, 3);
    EXPECT_EQ(histogram.low, 2.5);
    EXPECT_EQ(histogram.high, 3.5);
    EXPECT_THAT(histogram.counts, ElementsAre(0, 3, 0));
}

TEST(LinearHistogram, WorksOnIntegersBoolsAndHalves) {
    EXPECT_THAT(linear_histogram(Tensor::from_doubles(DataType::kInt64, {3}, {0, 1, 1}), 0, 1, 2).counts,
                ElementsAre(1, 2));
    EXPECT_THAT(linear_histogram(Tensor::from_doubles(DataType::kBool, {3}, {0, 1, 0}), 0, 1, 2).counts,
                ElementsAre(2, 1));
    EXPECT_THAT(linear_histogram(Tensor::from_doubles(DataType::kFloat16, {2}, {0.25, 0.75}), 0, 1, 2).counts,
                ElementsAre(1, 1));
}

TEST(LinearHistogram, RejectsBadArguments) {
    EXPECT_THROW(linear_histogram(floats({1}), 0, 1, 0), UsageError);
    EXPECT_THROW(linear_histogram(floats({1}), 1, 0, 2), UsageError);
    EXPECT_THROW(linear_histogram(floats({1}), 0, kInf, 2), UsageError);
    Tensor strings(DataType::kString, {1});
    EXPECT_THROW(value_range(strings), UnsupportedError);
}

TEST(LogHistogram, DecadesOfPositiveValuesAndZerosApart) {
    // 1e-6 .. 1e-2 over 4 bins: one decade per bin.
    const Tensor errors = floats({0, 0, 1e-6, 2e-5, 3e-4, 5e-3, 1e-2, kNan});
    const Histogram histogram = log_histogram(errors, value_range(errors), 4);
    EXPECT_TRUE(histogram.log_scale);
    EXPECT_NEAR(histogram.low, 1e-6, 1e-12);
    EXPECT_NEAR(histogram.high, 1e-2, 1e-8);
    EXPECT_THAT(histogram.counts, ElementsAre(1, 1, 1, 2));
    EXPECT_EQ(histogram.non_positive, 2);
    EXPECT_EQ(histogram.nan, 1);
    EXPECT_EQ(histogram.total(), 8);
}

TEST(LogHistogram, NoPositiveValueMeansNoBins) {
    const Tensor exact = floats({0, 0, 0});
    const Histogram histogram = log_histogram(exact, value_range(exact), 10);
    EXPECT_TRUE(histogram.counts.empty());
    EXPECT_EQ(histogram.non_positive, 3);
}

TEST(SharedHistograms, BothSidesUseTheUnionOfTheirRanges) {
    const Tensor a = floats({0, 1}), b = floats({2, 3, kNan});
    const auto [first, second] = shared_linear_histograms(a, value_range(a), b, value_range(b), 3);
    EXPECT_EQ(first.low, 0);
    EXPECT_EQ(second.low, 0);
    EXPECT_EQ(first.high, 3);
    EXPECT_THAT(first.counts, ElementsAre(1, 1, 0));
    EXPECT_THAT(second.counts, ElementsAre(0, 0, 2));
    EXPECT_EQ(second.nan, 1);
}

}  // namespace
}  // namespace polygraphy
