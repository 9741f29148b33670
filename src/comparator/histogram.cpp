#include "polygraphy/comparator/histogram.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

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
            if (std::isnan(v)) return bins;
            if (std::isinf(v)) return bins + 1;
            if (v < low || v > high) return -1;
            return std::min<int64_t>(static_cast<int64_t>((v - low) * scale), bins - 1);
        });
    });
    histogram.nan = counts[static_cast<std::size_t>(bins)];
    histogram.infinite = counts[static_cast<std::size_t>(bins) + 1];
    counts.resize(static_cast<std::size_t>(bins));
    histogram.counts = std::move(counts);
    return histogram;
}

Histogram log_histogram(const Tensor& tensor, const ValueRange& range, int bins) {
    check_bins(bins);
    Histogram histogram;
    histogram.log_scale = true;
    const bool any_positive = range.min_positive && range.max && *range.max > 0;
    double log_low = 0, log_high = 0;
    if (any_positive) {
        log_low = std::log10(*range.min_positive);
        log_high = std::log10(*range.max);
        // One value (or one repeated value): a bin one decade wide around it.
        if (log_high - log_low < 1e-12) log_low -= 0.5, log_high += 0.5;
        histogram.low = std::pow(10.0, log_low);
        histogram.high = std::pow(10.0, log_high);
    }
    const int used_bins = any_positive ? bins : 0;
    // Slots: the bins, then non-positive, NaN, infinities.
    std::vector<int64_t> counts(static_cast<std::size_t>(used_bins) + 3, 0);
    const double scale = any_positive ? used_bins / (log_high - log_low) : 0.0;
    figure::visit_numbers(tensor, [&](const auto* data, int64_t n) {
        count_bins(n, counts, [&](int64_t i) -> int64_t {
            const double v = static_cast<double>(data[i]);
            if (std::isnan(v)) return used_bins + 1;
            if (std::isinf(v)) return used_bins + 2;
            if (v <= 0) return used_bins;
            const double position = (std::log10(v) - log_low) * scale;
            return std::clamp<int64_t>(static_cast<int64_t>(position), 0, used_bins - 1);
        });
    });
    const auto slot = [&](int offset) { return counts[static_cast<std::size_t>(used_bins + offset)]; };
    histogram.non_positive = slot(0);
    histogram.nan = slot(1);
    histogram.infinite = slot(2);
    counts.resize(static_cast<std::size_t>(used_bins));
    histogram.counts = std::move(counts);
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

}  // namespace polygraphy
