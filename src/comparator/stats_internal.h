// Internal: the typed statistics kernels behind polygraphy/comparator/stats.h.
//
// compute_typed<S>() takes the data already in its "stat type" S (Polygraphy's cast_up: float16 -> float32,
// small ints -> int32, uint32 -> int64) and does two passes at most over memory for everything:
//   pass 1 (blocked, OpenMP): sum, |x| sum, Chan-merged variance, min/max with first index, NaN count,
//           and a 65536-bucket histogram of the top 16 bits of the order-preserving key of each element;
//   pass 2 (OpenMP): for the few buckets holding the requested ranks, either a histogram of the next 16
//           bits (32-bit keys are then exact) or, for small buckets, a gather and nth_element.
// 64-bit keys may need more levels; they are the cold path (float64/int64 outputs).
#pragma once

#include <cstdint>
#include <vector>

#include "polygraphy/comparator/stats.h"
#include "polygraphy/common/datatype.h"

namespace polygraphy::stats::detail {

/// Arithmetic numpy uses for `b - a` in quantile interpolation: the raw (not cast-up) dtype.
using DiffFn = double (*)(double a, double b);
DiffFn diff_fn_for(DataType raw_dtype);

/// Stats of `n` elements of stat type S (float, double, int32_t, int64_t, uint64_t).
/// `raw_dtype` is the dtype the values came from (for quantile interpolation arithmetic).
template <typename S>
ArrayStats compute_typed(const S* data, int64_t n, DataType raw_dtype, const std::vector<double>& extra_quantiles);

/// Stats of a bool array (bytes 0/1): no quantiles, float64 variance and median.
ArrayStats compute_bool(const uint8_t* data, int64_t n);

/// Number of OpenMP threads worth using for `n` elements (1 for small arrays).
int threads_for(int64_t n);

}  // namespace polygraphy::stats::detail
