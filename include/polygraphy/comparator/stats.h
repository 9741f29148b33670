// Output statistics and numpy-style printing, as Polygraphy's comparator reports them.
//
// Every figure follows what Polygraphy 0.49 computes with numpy 1.24 (comparator/util.py), including its
// quirks, so that reports read the same: mean and average magnitude are float32 (`np.mean(dtype=float32)`,
// summed in numpy's exact order: pairwise within 8192-element chunks), std-dev/var are float32 for
// float32/float16 data (same summation) and float64 otherwise (accumulated in double), the median of float32
// data is the float32 mean of the middle elements, quantiles use numpy's "linear" method with its
// interpolation arithmetic, and any NaN makes the median and quantiles NaN. Fast: two passes over memory
// (OpenMP); the order statistics come from a radix selection on order-preserving keys, not from sorting.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "polygraphy/common/tensor.h"

namespace polygraphy::stats {

/// Figures of one array, as in `mean=..., std-dev=..., ..., p99=...`.
struct ArrayStats {
    int64_t size = 0;  ///< number of elements
    /// The figures Polygraphy prints: `mean=`, `std-dev=`, `var=`, `median=`, `min=`, `max=`, `avg-magnitude=`.
    /// @{
    double mean = 0, std_dev = 0, var = 0, median = 0, min = 0, max = 0, avg_magnitude = 0;
    /// @}
    /// Flat indices of min and max (first occurrence; first NaN when there is one).
    /// @{
    int64_t argmin = 0, argmax = 0;
    /// @}
    bool has_quantiles = true;  ///< false for bool arrays (numpy cannot take their quantiles)
    /// The 90th, 95th and 99th percentiles (`p90=`...).
    /// @{
    double p90 = 0, p95 = 0, p99 = 0;
    /// @}
    std::vector<double> quantiles;  ///< values of the extra quantiles requested, in request order
    int64_t nan_count = 0;          ///< number of NaN elements
};

/// Statistics of `tensor` (any numeric or bool dtype; strings throw UnsupportedError).
/// `extra_quantiles` (each in [0, 1], else UsageError) are computed in the same passes.
/// Empty tensors give Polygraphy's figures: mean nan, min/max/median 0, quantiles inf.
ArrayStats compute_stats(const Tensor& tensor, const std::vector<double>& extra_quantiles = {});

/// Same for a plain float array (used by the comparator on its difference buffers).
ArrayStats compute_stats(const float* data, int64_t size, const std::vector<double>& extra_quantiles = {});
ArrayStats compute_stats(const double* data, int64_t size, const std::vector<double>& extra_quantiles = {});

/// numpy `np.quantile(tensor, q)` (method "linear"); inf for an empty tensor as Polygraphy returns.
double quantile(const Tensor& tensor, double q);
/// numpy `np.median(tensor)` with Polygraphy's float32 cast of float16 data.
double median(const Tensor& tensor);

/// The part after `Stats: `: `mean=2.5, std-dev=1.7078, ..., p99=4.95` for data of `shape`
/// (used to print the argmin/argmax indices as Python tuples).
std::string format_stats(const ArrayStats& stats, const Shape& shape);

/// Polygraphy's `---- Histogram ----` block (10 bins, numpy's binning), without a trailing newline.
/// `range` is numpy's `range=` argument; without it the data's min and max are used.
/// Returns "" for bool data or when numpy would refuse (non-finite range; the reason is logged at
/// verbose), and "None" for an empty tensor, exactly as Polygraphy logs them.
std::string histogram_string(const Tensor& tensor, std::optional<std::pair<double, double>> range = std::nullopt);

/// Python `format(value, '.<precision>g')` (never `-nan`).
std::string format_g(double value, int precision);
/// Python `str(tuple_of_int)` of the index `flat` unravelled in `shape`: `(0, 1)`, `(3,)`, `()`.
std::string index_tuple_string(int64_t flat, const Shape& shape);

}  // namespace polygraphy::stats
