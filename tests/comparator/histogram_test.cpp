#include "polygraphy/comparator/histogram.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
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

TEST(LogHistogram, QuarterOctavesMergedIntoEqualBinsAndZerosApart) {
    // 1 .. 8 is 13 quarter-octaves (0 to 12); 4 bins take 4 quarters (one octave) each: [1, 16).
    const Tensor errors = floats({0, 0, 1, 2, 4, 8, 8, kNan, kInf, -1});
    const Histogram histogram = log_histogram(errors, 4);
    EXPECT_TRUE(histogram.log_scale);
    EXPECT_EQ(histogram.low, 1.0);
    EXPECT_EQ(histogram.high, 16.0);
    EXPECT_THAT(histogram.counts, ElementsAre(1, 1, 1, 2));
    EXPECT_EQ(histogram.non_positive, 3);
    EXPECT_EQ(histogram.nan, 1);
    EXPECT_EQ(histogram.infinite, 1);
    EXPECT_EQ(histogram.total(), 10);
}

TEST(LogHistogram, QuarterOctaveBoundsAreExact) {
    // The double nearest 2^0.25 starts the second quarter of an octave; the one below it does not.
    const double quarter = std::bit_cast<double>(uint64_t{0x3ff306fe0a31b715});
    EXPECT_NEAR(quarter, std::pow(2.0, 0.25), 1e-15);
    const Tensor values = Tensor::from_doubles(DataType::kFloat64, {3}, {1.0, std::nextafter(quarter, 0.0), quarter});
    const Histogram histogram = log_histogram(values, 8);
    EXPECT_THAT(histogram.counts, ElementsAre(2, 1));
    EXPECT_EQ(histogram.low, 1.0);
    EXPECT_DOUBLE_EQ(histogram.high, std::sqrt(2.0));
}

TEST(LogHistogram, ManyDecadesFitInTheBins) {
    const Tensor errors = floats({1e-30, 1e-20, 1e-10, 1});
    const Histogram histogram = log_histogram(errors, 32);
    ASSERT_LE(histogram.counts.size(), 32u);
    EXPECT_LE(histogram.low, 1e-30);
    EXPECT_GT(histogram.high, 1.0);
    EXPECT_EQ(histogram.total(), 4);
    EXPECT_EQ(histogram.counts.front(), 1);
    EXPECT_EQ(histogram.counts.back(), 1);
}

TEST(LogHistogram, NoPositiveValueMeansNoBins) {
    const Histogram histogram = log_histogram(floats({0, 0, -3}), 10);
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

namespace polygraphy {
namespace {

TEST(DecadeHistogram, FixedDecadeBinsThatAddUp) {
    const Tensor errors =
        Tensor::from_doubles(DataType::kFloat64, {9}, {0, -1, 1e-15, 1e-12, 9.99e-12, 1e-3, 0.5, 1e9, std::nan("")});
    const Histogram histogram = decade_histogram(errors);
    ASSERT_EQ(histogram.counts.size(), static_cast<std::size_t>(kDecadeHistogramBins));
    EXPECT_DOUBLE_EQ(histogram.low, 1e-12);
    EXPECT_DOUBLE_EQ(histogram.high, 1e4);
    EXPECT_EQ(histogram.counts[0], 3);   // 1e-15 (below the first edge), 1e-12, 9.99e-12
    EXPECT_EQ(histogram.counts[9], 1);   // 1e-3 is exactly an edge: [1e-3, 1e-2)
    EXPECT_EQ(histogram.counts[11], 1);  // 0.5
    EXPECT_EQ(histogram.counts[15], 1);  // 1e9, above the last edge
    EXPECT_EQ(histogram.non_positive, 2);
    EXPECT_EQ(histogram.nan, 1);
    Histogram total;
    add_histogram(total, histogram);
    add_histogram(total, histogram);
    EXPECT_EQ(total.counts[0], 6);
    EXPECT_EQ(total.total(), 2 * errors.numel());
    const Histogram other = log_histogram(errors, 4);
    EXPECT_THROW(add_histogram(total, other), FormatError);
}

}  // namespace
}  // namespace polygraphy
