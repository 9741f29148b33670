#include "polygraphy/comparator/histogram.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "comparator/figure.h"
#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

// Adds per-thread bin counts into `counts` (bins + the extra slots the caller uses).
template <typename Bin>
void count_bins(int64_t n, std::vector<int64_t>& counts, const Bin& bin_of) {
    const std::size_t slots = counts.size();
    const int threads = stats::detail::threads_for(n);
#pragma omp parallel num_threads(threads)
    {
        std::vector<int64_t> local(slots, 0);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; ++i) {
            const int64_t slot = bin_of(i);
            if (slot >= 0) ++local[static_cast<std::size_t>(slot)];
        }
#pragma omp critical
        for (std::size_t s = 0; s < slots; ++s) counts[s] += local[s];
    }
}

// Log-scale counting: a positive double falls in quarter-octave q = 4 * (biased exponent) + t, where
// t = 0..3 says which of [1, 2^0.25), [2^0.25, 2^0.5), [2^0.5, 2^0.75), [2^0.75, 2) holds its mantissa
// (compared as the 52 mantissa bits of those bounds). No logarithm is taken.
constexpr int kQuarterOctaves = 2047 * 4;  // biased exponents 0..2046 (2047 is inf/NaN)
constexpr uint64_t kMantissaQuarter[3] = {0x306fe0a31b715ull, 0x6a09e667f3bcdull, 0xae89f995ad3adull};
constexpr int kExponentBias = 1023;

inline int quarter_octave(double positive) {
    const uint64_t bits = std::bit_cast<uint64_t>(positive);
    const uint64_t mantissa = bits & 0x000fffffffffffffull;
    const int quarter =
        (mantissa >= kMantissaQuarter[0]) + (mantissa >= kMantissaQuarter[1]) + (mantissa >= kMantissaQuarter[2]);
    return static_cast<int>(bits >> 52) * 4 + quarter;
}

void check_bins(int bins) {
    if (bins < 1) throw UsageError("A histogram needs at least one bin.\nNote: given: " + std::to_string(bins));
}

}  // namespace

int64_t Histogram::total() const {
    int64_t sum = non_positive + nan + infinite;
    for (int64_t count : counts) sum += count;
    return sum;
}

ValueRange value_range(const Tensor& tensor) {
    ValueRange range;
    range.count = tensor.numel();
    figure::visit_numbers(tensor, [&](const auto* data, int64_t n) {
        double min = std::numeric_limits<double>::infinity(), max = -min, min_positive = min;
        double magnitude = 0;
        int64_t nan = 0, infinite = 0;
        const int threads = stats::detail::threads_for(n);
#pragma omp parallel for num_threads(threads) reduction(min : min, min_positive) reduction(max : max) \
    reduction(+ : magnitude, nan, infinite)
        for (int64_t i = 0; i < n; ++i) {
            const double v = static_cast<double>(data[i]);
            if (std::isnan(v)) {
                ++nan;
            } else if (std::isinf(v)) {
                ++infinite;
            } else {
                min = std::min(min, v);
                max = std::max(max, v);
                if (v > 0) min_positive = std::min(min_positive, v);
                magnitude += std::fabs(v);
            }
        }
        range.nan = nan;
        range.infinite = infinite;
        const int64_t finite = n - nan - infinite;
        if (finite > 0) {
            range.min = min;
            range.max = max;
            range.mean_magnitude = magnitude / static_cast<double>(finite);
        }
        if (std::isfinite(min_positive)) range.min_positive = min_positive;
    });
    return range;
}

Histogram linear_histogram(const Tensor& tensor, double low, double high, int bins) {
    check_bins(bins);
    if (!std::isfinite(low) || !std::isfinite(high) || low > high)
        throw UsageError("A histogram range must be finite with low <= high.\nNote: given: [" + std::to_string(low) +
                         ", " + std::to_string(high) + "]");
    if (low == high) low -= 0.5, high += 0.5;
    Histogram histogram;
    histogram.low = low;
    histogram.high = high;
    // Slots: the bins, then NaN, then infinities.
    std::vector<int64_t> counts(static_cast<std::size_t>(bins) + 2, 0);
    const double scale = bins / (high - low);
    figure::visit_numbers(tensor, [&](const auto* data, int64_t n) {
        count_bins(n, counts, [&](int64_t i) -> int64_t {
            const double v = static_cast<double>(data[i]);
            const double position = (v - low) * scale;
            if (position >= 0 && position < bins) return static_cast<int64_t>(position);  // false for NaN
            if (v == high) return bins - 1;
            if (std::isnan(v)) return bins;
            if (std::isinf(v)) return bins + 1;
            return -1;
        });
    });
    histogram.nan = counts[static_cast<std::size_t>(bins)];
    histogram.infinite = counts[static_cast<std::size_t>(bins) + 1];
    counts.resize(static_cast<std::size_t>(bins));
    histogram.counts = std::move(counts);
    return histogram;
}

Histogram log_histogram(const Tensor& tensor, int bins) {
    check_bins(bins);
    Histogram histogram;
    histogram.log_scale = true;
    // Two passes: the range of quarter-octaves present (and the values outside any bin), then the
    // counts of that range only, so that a small tensor costs no large counter array.
    int first = kQuarterOctaves, last = -1;
    std::vector<int64_t> counts;
    figure::visit_numbers(tensor, [&](const auto* data, int64_t n) {
        int64_t non_positive = 0, nan = 0, infinite = 0;
        const int threads = stats::detail::threads_for(n);
#pragma omp parallel for num_threads(threads) reduction(min : first) reduction(max : last) \
    reduction(+ : non_positive, nan, infinite)
        for (int64_t i = 0; i < n; ++i) {
            const double v = static_cast<double>(data[i]);
            if (v > 0 && v <= std::numeric_limits<double>::max()) {
                const int q = quarter_octave(v);
                first = std::min(first, q);
                last = std::max(last, q);
            } else if (v <= 0) {
                ++non_positive;
            } else if (std::isnan(v)) {
                ++nan;
            } else {
                ++infinite;
            }
        }
        histogram.non_positive = non_positive;
        histogram.nan = nan;
        histogram.infinite = infinite;
        if (last < first) return;  // no positive value: no bins
        counts.assign(static_cast<std::size_t>(last - first + 1), 0);
        count_bins(n, counts, [&](int64_t i) -> int64_t {
            const double v = static_cast<double>(data[i]);
            if (v > 0 && v <= std::numeric_limits<double>::max()) return quarter_octave(v) - first;
            return -1;
        });
    });
    if (counts.empty()) return histogram;
    // Merge runs of `width` quarter-octaves into at most `bins` bins of equal width.
    const int span = last - first + 1;
    const int width = (span + bins - 1) / bins;
    const int used = (span + width - 1) / width;
    histogram.counts.assign(static_cast<std::size_t>(used), 0);
    for (int q = 0; q < span; ++q)
        histogram.counts[static_cast<std::size_t>(q / width)] += counts[static_cast<std::size_t>(q)];
    histogram.low = std::exp2((first - 4 * kExponentBias) / 4.0);
    histogram.high = std::exp2((first + used * width - 4 * kExponentBias) / 4.0);
    return histogram;
}

std::pair<Histogram, Histogram> shared_linear_histograms(const Tensor& first, const ValueRange& first_range,
                                                         const Tensor& second, const ValueRange& second_range,
                                                         int bins) {
    double low = 0, high = 0;
    if (first_range.min || second_range.min) {
        low = std::numeric_limits<double>::infinity();
        high = -low;
        for (const ValueRange* range : {&first_range, &second_range}) {
            if (!range->min) continue;
            low = std::min(low, *range->min);
            high = std::max(high, *range->max);
        }
    }
    return {linear_histogram(first, low, high, bins), linear_histogram(second, low, high, bins)};
}

Histogram decade_histogram(const Tensor& tensor) {
    Histogram histogram;
    histogram.log_scale = true;
    histogram.low = std::pow(10.0, kDecadeHistogramFirstExponent);
    histogram.high = std::pow(10.0, kDecadeHistogramFirstExponent + kDecadeHistogramBins);
    // The lower edge of each bin, exactly as the decimal literal rounds (1e-3 is not 10^-3 computed).
    std::array<double, kDecadeHistogramBins> edges{};
    for (int i = 0; i < kDecadeHistogramBins; ++i)
        edges[static_cast<std::size_t>(i)] = std::stod("1e" + std::to_string(kDecadeHistogramFirstExponent + i));
    constexpr int64_t kNonPositive = kDecadeHistogramBins, kNan = kDecadeHistogramBins + 1,
                      kInfinite = kDecadeHistogramBins + 2;
    std::vector<int64_t> counts(kDecadeHistogramBins + 3, 0);
    figure::visit_numbers(tensor, [&](const auto* data, int64_t n) {
        count_bins(n, counts, [&](int64_t i) -> int64_t {
            const double v = static_cast<double>(data[i]);
            if (std::isnan(v)) return kNan;
            if (std::isinf(v)) return kInfinite;
            if (v <= 0) return kNonPositive;
            // The last edge not above v: a binary search over 16 values, no logarithm.
            const auto above = std::upper_bound(edges.begin(), edges.end(), v);
            return above == edges.begin() ? 0 : static_cast<int64_t>(above - edges.begin()) - 1;
        });
    });
    histogram.non_positive = counts[kNonPositive];
    histogram.nan = counts[kNan];
    histogram.infinite = counts[kInfinite];
    counts.resize(kDecadeHistogramBins);
    histogram.counts = std::move(counts);
    return histogram;
}

void add_histogram(Histogram& total, const Histogram& part) {
    const bool total_empty = total.counts.empty() && total.total() == 0;
    if (total_empty) {
        total = part;
        return;
    }
    if (part.counts.empty() && part.total() == 0) return;
    if (total.log_scale != part.log_scale || total.low != part.low || total.high != part.high ||
        total.counts.size() != part.counts.size())
        throw FormatError("Histograms on different bins cannot be added");
    for (std::size_t i = 0; i < part.counts.size(); ++i) total.counts[i] += part.counts[i];
    total.non_positive += part.non_positive;
    total.nan += part.nan;
    total.infinite += part.infinite;
}

}  // namespace polygraphy
