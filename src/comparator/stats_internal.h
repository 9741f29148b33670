// Internal: the typed statistics engine behind polygraphy/comparator/stats.h.
//
// Data of "stat type" S (Polygraphy's cast_up already applied: float16 -> float32, small ints -> int32,
// uint32 -> int64) goes through two passes over memory at most:
//   pass 1, per 8192-element chunk (numpy's reduction buffer): float32 pairwise sums of x and |x| (numpy's
//           exact summation order, so mean/avg-magnitude print like numpy), float64 moments for non-float32
//           data, min/max with first index, NaNs, and a 65536-bucket histogram of the top 16 bits of each
//           element's order-preserving key;
//   pass 2: float32 variance (needs the mean) and, for the few top buckets holding the requested ranks
//           (median, p90/p95/p99, extra quantiles), a histogram of the next 16 bits or, for small buckets,
//           a gather and nth_element. 32-bit keys are exact after that; 64-bit keys may need more levels.
// Pass 1 is driven chunk by chunk so that callers can fuse it with the loop producing the data
// (the comparator computes differences and the pass-1 statistics of four arrays in one sweep).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "polygraphy/common/datatype.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy::stats::detail {

/// numpy's reduction buffer size: float32 sums add the pairwise sums of consecutive chunks this long.
constexpr int64_t kChunk = 8192;

inline int64_t chunk_count(int64_t n) {
    return (n + kChunk - 1) / kChunk;
}

/// Number of OpenMP threads worth using for `n` elements: 1 for small arrays, and 1 when the machine is
/// heavily oversubscribed (load average >= twice the processors), else up to omp_get_max_threads().
int threads_for(int64_t n);

/// For tests: a fixed thread count (still 1 for small arrays) instead of the load-dependent one; 0 resets.
void set_threads_override(int threads);

/// Statistics of `n` elements of type S (float, double, int32_t, int64_t, uint64_t) at `data`.
/// `raw_dtype` is the dtype the values came from: numpy interpolates quantiles in it.
template <typename S>
class StatsAccumulator {
public:
    StatsAccumulator(const S* data, int64_t n, DataType raw_dtype, int nthreads);
    ~StatsAccumulator();
    StatsAccumulator(const StatsAccumulator&) = delete;
    StatsAccumulator& operator=(const StatsAccumulator&) = delete;

    /// Pass 1 over chunk `chunk` by thread `tid` (< the nthreads given); the chunk's data must be final.
    /// Chunks may be taken by any thread in any order (dynamic scheduling copes with a preempted thread):
    /// per-chunk sums are kept per chunk, and extremes compare as (value, index).
    void accumulate(int tid, int64_t chunk);
    /// Pass 2 and the figures; call once, outside any parallel region, after every chunk was accumulated.
    /// Throws UsageError for a quantile outside [0, 1].
    ArrayStats finish(const std::vector<double>& extra_quantiles);

    /// finish() in three steps, so that several accumulators share one parallel sweep (finish_together):
    /// begin_finish() (serial; `team_threads` >= threads() is the size of the coming parallel region),
    /// sweep(tid) by every thread of that region (an `omp for nowait` worksharing loop), end_finish()
    /// (serial, may run more sweeps for 64-bit keys).
    void begin_finish(const std::vector<double>& extra_quantiles, int team_threads);
    void sweep(int tid);
    ArrayStats end_finish();
    int threads() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Finishes several accumulators with one parallel region for all their pass-2 sweeps (fewer OpenMP
/// barriers: they are expensive when the machine is oversubscribed).
template <typename S>
std::vector<ArrayStats> finish_together(std::span<StatsAccumulator<S>* const> accumulators,
                                        std::span<const std::vector<double>> extra_quantiles);

/// All of it in one call.
template <typename S>
ArrayStats compute_typed(const S* data, int64_t n, DataType raw_dtype, const std::vector<double>& extra_quantiles);

/// Stats of a bool array (bytes 0/1): no quantiles, float64 variance and median.
ArrayStats compute_bool(const uint8_t* data, int64_t n);

}  // namespace polygraphy::stats::detail
