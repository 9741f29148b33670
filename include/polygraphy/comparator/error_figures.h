// The error figures of one pair of tensors in `debug diff`: a reference (graph A) against another
// value of the same tensor (graph B), of any numeric dtypes (fp16 and int8 against fp32), summed over
// every sample.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "polygraphy/common/tensor.h"

namespace polygraphy {

/// Elementwise tolerance: |b - a| <= atol + rtol * |a|, a being the reference (numpy's isclose).
struct DiffTolerances {
    double atol = 1e-5;  ///< absolute tolerance
    double rtol = 1e-5;  ///< relative tolerance
};

/// Figures over every element of every sample added.
struct ErrorFigures {
    int64_t size = 0;  ///< elements compared
    /// |b - a|: the largest and the mean.
    /// @{
    double max_abs = 0, mean_abs = 0;
    /// @}
    /// |b - a| / |a| (infinite where a is 0 and b is not): the largest and the mean.
    /// @{
    double max_rel = 0, mean_rel = 0;
    /// @}
    double cosine = 1;  ///< cosine similarity of the flattened values (1 when both are all zeros)
    /// Signal to quantization noise ratio, 10 log10(sum a^2 / sum (b - a)^2), in dB; infinite when equal.
    double sqnr_db = std::numeric_limits<double>::infinity();
    /// sqrt(sum (b - a)^2 / sum a^2), the ranking figure of the blame table (0 when equal, infinite
    /// when a is all zeros and b is not).
    double relative_rms = 0;
    /// The systematic part of the error: the gain <b - a, a> / <a, a> by which b is off a, as a
    /// fraction (0.02 for b = 1.02 a). Noise, such as rounding to fp16 or int8, leaves it near 0.
    double gain_error = 0;
    int64_t failing = 0;  ///< elements outside the tolerance (a NaN or an infinity that differs counts)
    bool passed = true;   ///< no element failed and nothing was wrong
    std::string error;    ///< why the values could not be compared ("" when they were)
};

/// Sums the figures of pairs of tensors, sample by sample.
class ErrorAccumulator {
public:
    /// An accumulator that checks elements against `tolerances`.
    explicit ErrorAccumulator(DiffTolerances tolerances = {}) : tolerances_(tolerances) {}

    /// Adds one sample: `reference` and `other` must have the same number of elements (else the
    /// figures get an error, and fail); strings and bools get an error too.
    void add(const Tensor& reference, const Tensor& other);
    /// Marks the figures as not computed, with the reason.
    void set_error(const std::string& error);
    /// The figures of everything added so far.
    ErrorFigures figures() const;

private:
    /// Adds `count` pairs of elements, read as doubles.
    void add_block(const double* x, const double* y, int64_t count);

    DiffTolerances tolerances_;
    int64_t size_ = 0, failing_ = 0, nonfinite_failing_ = 0, finite_ = 0;
    double max_abs_ = 0, sum_abs_ = 0, max_rel_ = 0, sum_rel_ = 0;
    double sum_aa_ = 0, sum_bb_ = 0, sum_ab_ = 0, sum_ee_ = 0;
    std::string error_;
};

/// The figures of one sample.
ErrorFigures compute_error_figures(const Tensor& reference, const Tensor& other, DiffTolerances tolerances = {});

}  // namespace polygraphy
