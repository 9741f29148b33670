// Histograms of tensors' values and of comparison errors: what an HTML report keeps of a tensor
// (a few hundred bytes, never the tensor itself).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "polygraphy/common/tensor.h"

namespace polygraphy {

/// Counts of values in equal-width bins. Linear bins split [low, high]; logarithmic bins
/// (`log_scale`) split [log10(low), log10(high)] and count only positive values, so that errors
/// spanning many decades stay readable. The last bin includes `high`.
struct Histogram {
    bool log_scale = false;       ///< bins of equal width in log10(value)
    double low = 0;               ///< start of the range covered by the bins (> 0 when log_scale)
    double high = 0;              ///< end of the range covered by the bins
    std::vector<int64_t> counts;  ///< one count per bin
    int64_t non_positive = 0;     ///< log_scale only: values <= 0 (for an error: exact matches)
    int64_t nan = 0;              ///< NaN values (in no bin)
    int64_t infinite = 0;         ///< +-inf values (in no bin)

    /// Every value counted: the bins plus non_positive, nan and infinite.
    int64_t total() const;
};

/// One pass over a tensor: what is needed to choose histogram ranges.
struct ValueRange {
    int64_t count = 0;                   ///< elements
    std::optional<double> min;           ///< smallest finite value (nullopt when there is none)
    std::optional<double> max;           ///< largest finite value (nullopt when there is none)
    std::optional<double> min_positive;  ///< smallest finite value > 0
    double mean_magnitude = 0;           ///< mean |value| over the finite values (0 when none)
    int64_t nan = 0;                     ///< NaN values
    int64_t infinite = 0;                ///< +-inf values
};

/// Number of bins the comparator uses for the histograms of a report.
constexpr int kReportHistogramBins = 32;

/// Scans a numeric or bool tensor (strings and complex numbers throw UnsupportedError).
ValueRange value_range(const Tensor& tensor);

/// Linear histogram of `tensor` over [low, high] with `bins` bins (>= 1, else UsageError). Values
/// outside the range are not binned (they count in neither the bins nor nan/infinite). When low ==
/// high the range is widened by 0.5 on each side, as numpy does.
Histogram linear_histogram(const Tensor& tensor, double low, double high, int bins);

/// Logarithmic histogram of the positive finite values of `tensor`: values are counted per quarter of
/// a power of two (from their bits; no logarithm is taken), then neighbouring quarters are merged
/// into at most `bins` bins of equal width (in log scale) from the smallest positive value's quarter
/// to the largest's. Zeros
/// and negatives count in non_positive. With no positive value the histogram has no bins.
Histogram log_histogram(const Tensor& tensor, int bins);

/// Fixed bins for error histograms that add up across samples, shards and runs: one bin per decade
/// from 1e-12 to 1e4 ([1e-12, 1e-11), ..., [1e3, 1e4]); positive errors below 1e-12 count in the first
/// bin and finite ones above 1e4 in the last, so that every finite error has a bin.
/// @{
inline constexpr int kDecadeHistogramFirstExponent = -12;
inline constexpr int kDecadeHistogramBins = 16;
/// @}

/// Histogram of the positive finite values of `tensor` on the fixed decade bins above (zeros and
/// negatives in non_positive, NaN and infinities counted apart). Two such histograms add exactly
/// (add_histogram), whatever data they came from.
Histogram decade_histogram(const Tensor& tensor);

/// Adds `part` into `total`: every count, bin by bin. An empty `total` (no bins, nothing counted)
/// takes `part`'s bins. Histograms on different bins are a FormatError (they cannot be added).
void add_histogram(Histogram& total, const Histogram& part);

/// The decade histograms of one comparison's errors (SimpleCompareOptions::collect_error_histograms).
struct ErrorHistograms {
    Histogram absolute;  ///< |b - a| of every element
    Histogram relative;  ///< |b - a| / |a| of every element
};

/// Histograms of two tensors over one range (the union of their finite ranges), so that both sides
/// of a comparison can be drawn on the same axis.
std::pair<Histogram, Histogram> shared_linear_histograms(const Tensor& first, const ValueRange& first_range,
                                                         const Tensor& second, const ValueRange& second_range,
                                                         int bins);

/// What a report shows of one compared output besides its error figures (filled by the compare
/// function when SimpleCompareOptions::collect_distributions is set).
struct OutputDistributions {
    /// Element types and shapes of both outputs (as compared, after any shape matching).
    /// @{
    DataType first_dtype = DataType::kUndefined, second_dtype = DataType::kUndefined;
    Shape first_shape, second_shape;
    /// @}
    Histogram first_values;            ///< values of the first output...
    Histogram second_values;           ///< ...and of the second, on the same bins
    Histogram absdiff;                 ///< log-scale histogram of the absolute differences
    Histogram reldiff;                 ///< log-scale histogram of the relative differences
    double second_mean_magnitude = 0;  ///< mean |value| of the second output's finite values
};

}  // namespace polygraphy
