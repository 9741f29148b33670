// Array statistics with numpy's semantics, computed in two passes (see stats_internal.h); the exact
// rank selection of pass 2 is in rank_selection.h.
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "comparator/rank_selection.h"
#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::stats {
namespace detail {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- numpy's float32 summation ----
// np.add.reduce(x, dtype=float32) adds the pairwise sums of consecutive 8192-element chunks (the ufunc
// buffer size) in order, each chunk summed by pairwise_sum (numpy/core/src/umath/loops_utils.h.src).
// np.mean(x, dtype=float32) is float32(sum / n). Reproducing it exactly keeps the report identical.
template <typename Load>
float pairwise_sum(const Load& load, int64_t begin, int64_t n) {
    if (n < 8) {
        float result = 0.f;
        for (int64_t i = 0; i < n; ++i) result += load(begin + i);
        return result;
    }
    if (n <= 128) {
        float r[8];
        for (int j = 0; j < 8; ++j) r[j] = load(begin + j);
        int64_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += load(begin + i + j);
        float result = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) result += load(begin + i);
        return result;
    }
    int64_t half = n / 2;
    half -= half % 8;
    return pairwise_sum(load, begin, half) + pairwise_sum(load, begin + half, n - half);
}

// Sum of per-chunk sums in chunk order (the part numpy does serially).
float fold_chunks(const std::vector<float>& chunk_sums) {
    float total = 0.f;
    for (float value : chunk_sums) total += value;
    return total;
}

// ---- pass 1: per chunk, float32 sums, float64 moments, extremes, NaNs, top-16-bit histogram ----
template <typename S>
struct Partial {
    int64_t count = 0;
    double mean = 0, m2 = 0;  // float64 moments (Chan et al.), used for non-float32 data
    S min{}, max{};
    int64_t argmin = -1, argmax = -1;
    int64_t nan_count = 0, first_nan = -1;

    void merge_moments(int64_t other_count, double other_mean, double other_m2) {
        if (other_count == 0) return;
        if (count == 0) {
            mean = other_mean;
            m2 = other_m2;
        } else {
            const double total = static_cast<double>(count + other_count);
            const double delta = other_mean - mean;
            mean += delta * (static_cast<double>(other_count) / total);
            m2 += other_m2 + delta * delta * (static_cast<double>(count) * static_cast<double>(other_count) / total);
        }
        count += other_count;
    }

    // Extremes compare as (value, index): the first occurrence wins whatever order chunks came in.
    void take_min(S value, int64_t index) {
        if (argmin < 0 || value < min || (value == min && index < argmin)) {
            min = value;
            argmin = index;
        }
    }
    void take_max(S value, int64_t index) {
        if (argmax < 0 || value > max || (value == max && index < argmax)) {
            max = value;
            argmax = index;
        }
    }
    void take_nan(int64_t index, int64_t count) {
        if (first_nan < 0 || index < first_nan) first_nan = index;
        nan_count += count;
    }

    void merge(const Partial& other) {
        merge_moments(other.count, other.mean, other.m2);
        if (other.argmin >= 0) take_min(other.min, other.argmin);
        if (other.argmax >= 0) take_max(other.max, other.argmax);
        if (other.nan_count) take_nan(other.first_nan, other.nan_count);
    }
};

// Min and max of a NaN-free block, in independent lanes so that the compiler emits packed min/max.
template <typename S>
void block_extremes(const S* p, int64_t len, S& out_min, S& out_max) {
    constexpr int kLanes = 16;
    S lane_min[kLanes], lane_max[kLanes];
    for (int j = 0; j < kLanes; ++j) lane_min[j] = lane_max[j] = p[0];
    int64_t i = 0;
    for (; i + kLanes <= len; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
            const S v = p[i + j];
            lane_min[j] = v < lane_min[j] ? v : lane_min[j];
            lane_max[j] = v > lane_max[j] ? v : lane_max[j];
        }
    for (; i < len; ++i) {
        lane_min[0] = p[i] < lane_min[0] ? p[i] : lane_min[0];
        lane_max[0] = p[i] > lane_max[0] ? p[i] : lane_max[0];
    }
    out_min = lane_min[0];
    out_max = lane_max[0];
    for (int j = 1; j < kLanes; ++j) {
        out_min = lane_min[j] < out_min ? lane_min[j] : out_min;
        out_max = lane_max[j] > out_max ? lane_max[j] : out_max;
    }
}

template <typename S>
void accumulate_chunk(const S* data, int64_t b, int64_t len, Partial<S>& part, float& sum32, float& abs32,
                      uint32_t* hist) {
    using Traits = KeyTraits<S>;
    constexpr int kShift = static_cast<int>(sizeof(typename Traits::Key) * 8) - kTopBits;
    const S* p = data + b;
    sum32 = pairwise_sum([p](int64_t i) { return static_cast<float>(p[i]); }, 0, len);
    if constexpr (std::is_same_v<S, float>)
        abs32 = pairwise_sum([p](int64_t i) { return std::fabs(p[i]); }, 0, len);
    else
        abs32 =
            pairwise_sum([p](int64_t i) { return static_cast<float>(std::fabs(static_cast<double>(p[i]))); }, 0, len);

    // The sum of magnitudes is NaN exactly when a NaN is present (no inf - inf there): count only then.
    int64_t nans = 0;
    if constexpr (kIsFloat<S>) {
        if (abs32 != abs32)
            for (int64_t i = 0; i < len; ++i) nans += (p[i] != p[i]) ? 1 : 0;
    }
    if constexpr (!std::is_same_v<S, float>) {
        // float64 variance for everything numpy does not compute in float32.
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < len; ++i) s += static_cast<double>(p[i]);
        const double block_mean = s / static_cast<double>(len);
        double q = 0;
#pragma omp simd reduction(+ : q)
        for (int64_t i = 0; i < len; ++i) {
            const double d = static_cast<double>(p[i]) - block_mean;
            q += d * d;
        }
        part.merge_moments(len, block_mean, q);
    } else {
        part.count += len;
    }

    if (nans) {
        // The overall min/max are NaN then; only the first NaN's index matters.
        for (int64_t i = 0; i < len; ++i)
            if (is_nan(p[i])) {
                part.take_nan(b + i, nans);
                break;
            }
    } else {
        S block_min, block_max;
        block_extremes(p, len, block_min, block_max);
        if (part.argmin < 0 || !(part.min < block_min))  // the block may hold a new (or an earlier) minimum
            for (int64_t i = 0; i < len; ++i)
                if (p[i] == block_min) {
                    part.take_min(p[i], b + i);
                    break;
                }
        if (part.argmax < 0 || !(part.max > block_max))
            for (int64_t i = 0; i < len; ++i)
                if (p[i] == block_max) {
                    part.take_max(p[i], b + i);
                    break;
                }
    }
    if (hist)
        for (int64_t i = 0; i < len; ++i) ++hist[Traits::key(p[i]) >> kShift];
}

// One chunk's share of np.var of a float32 array: pairwise float32 sum of (x - mean32)^2.
float variance_chunk_sum(const float* data, int64_t n, int64_t chunk, float mean) {
    const float* p = data + chunk * kChunk;
    return pairwise_sum(
        [p, mean](int64_t i) {
            const float d = p[i] - mean;
            return d * d;
        },
        0, std::min(kChunk, n - chunk * kChunk));
}

// numpy's virtual index for method "linear" and the neighbouring ranks (_get_indexes).
struct QuantilePosition {
    int64_t previous, next;
    double gamma;
};

QuantilePosition quantile_position(int64_t n, double q) {
    const double virtual_index = static_cast<double>(n - 1) * q;
    if (virtual_index >= static_cast<double>(n - 1)) return {n - 1, n - 1, virtual_index + 1.0};  // index -1 in numpy
    const double floor_index = std::floor(virtual_index);
    const auto previous = static_cast<int64_t>(floor_index);
    return {previous, previous + 1, virtual_index - floor_index};
}

using DiffFn = double (*)(double a, double b);

// numpy's _lerp: `a + diff * t`, or `b - diff * (1 - t)` when t >= 0.5, diff computed in the raw dtype.
double lerp(double a, double b, double t, DiffFn diff_fn) {
    const double diff = diff_fn(a, b);
    return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

template <typename T>
double wrapping_diff(double a, double b) {
    // Integer subtraction wraps in the dtype, as numpy's does.
    using U = std::make_unsigned_t<T>;
    const U difference = static_cast<U>(static_cast<U>(static_cast<T>(b)) - static_cast<U>(static_cast<T>(a)));
    return static_cast<double>(static_cast<T>(difference));
}

double float_diff(double a, double b) {
    return static_cast<double>(static_cast<float>(b) - static_cast<float>(a));
}
double double_diff(double a, double b) {
    return b - a;
}
double half_diff(double a, double b) {
    return half_to_float(float_to_half(static_cast<float>(b) - static_cast<float>(a)));
}
double bfloat16_diff(double a, double b) {
    return bfloat16_to_float(float_to_bfloat16(static_cast<float>(b) - static_cast<float>(a)));
}
double uint64_diff(double a, double b) {
    return static_cast<double>(static_cast<uint64_t>(b) - static_cast<uint64_t>(a));
}

// Arithmetic numpy uses for `b - a` in quantile interpolation: the raw (not cast-up) dtype.
DiffFn diff_fn_for(DataType raw_dtype) {
    switch (raw_dtype) {
        case DataType::kFloat32:
            return float_diff;
        case DataType::kFloat16:
            return half_diff;
        case DataType::kBFloat16:
            return bfloat16_diff;
        case DataType::kInt8:
            return wrapping_diff<int8_t>;
        case DataType::kInt16:
            return wrapping_diff<int16_t>;
        case DataType::kInt32:
            return wrapping_diff<int32_t>;
        case DataType::kInt64:
            return wrapping_diff<int64_t>;
        case DataType::kUInt8:
            return wrapping_diff<uint8_t>;
        case DataType::kUInt16:
            return wrapping_diff<uint16_t>;
        case DataType::kUInt32:
            return wrapping_diff<uint32_t>;
        case DataType::kUInt64:
            return uint64_diff;
        default:
            return double_diff;
    }
}

}  // namespace

namespace {
std::atomic<int> threads_override{0};
}  // namespace

void set_threads_override(int threads) {
    threads_override.store(std::max(0, threads));
}

int threads_for(int64_t n) {
    if (n < (int64_t{1} << 16)) return 1;
    if (const int forced = threads_override.load(); forced > 0)
        return static_cast<int>(std::min<int64_t>(forced, n >> 15));
    int available = std::max(1, omp_get_max_threads());
    // On a machine already running twice as many tasks as it has processors, extra threads mostly wait
    // for each other at OpenMP barriers (measured: slower than one thread). Like OMP_DYNAMIC, but with a
    // margin so that our own recent work in the 1-minute load average does not count against us.
    double load = 0;
    if (available > 1 && getloadavg(&load, 1) == 1 && load >= 2.0 * omp_get_num_procs()) available = 1;
    return static_cast<int>(std::min<int64_t>(available, n >> 15));
}

template <typename S>
struct StatsAccumulator<S>::Impl {
    const S* data;
    int64_t n;
    DataType raw_dtype;
    int nthreads;
    bool use_radix;
    std::vector<float> sums, abs_sums;  // per chunk
    std::vector<Partial<S>> partials;   // per thread
    std::vector<std::vector<uint32_t>> hists;
    // Between begin_finish() and end_finish():
    ArrayStats stats;
    Partial<S> total;
    std::vector<QuantilePosition> positions;
    std::vector<int64_t> inner;  // ranks to select (not the first or last)
    std::vector<float> variance_sums;
    std::unique_ptr<RadixSelector<S>> selector;
    bool refine = false, sweep = false;
};

template <typename S>
StatsAccumulator<S>::StatsAccumulator(const S* data, int64_t n, DataType raw_dtype, int nthreads)
    : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.data = data;
    m.n = n;
    m.raw_dtype = raw_dtype;
    m.nthreads = std::max(1, nthreads);
    m.use_radix = n >= kRadixMin;
    m.sums.assign(static_cast<std::size_t>(chunk_count(n)), 0.f);
    m.abs_sums.assign(static_cast<std::size_t>(chunk_count(n)), 0.f);
    m.partials.resize(static_cast<std::size_t>(m.nthreads));
    m.hists.resize(m.use_radix ? static_cast<std::size_t>(m.nthreads) : 0);
}

template <typename S>
StatsAccumulator<S>::~StatsAccumulator() = default;

template <typename S>
void StatsAccumulator<S>::accumulate(int tid, int64_t chunk) {
    Impl& m = *impl_;
    uint32_t* hist = nullptr;
    if (m.use_radix) {
        std::vector<uint32_t>& mine = m.hists[static_cast<std::size_t>(tid)];
        if (mine.empty()) mine.assign(kTopBuckets, 0);
        hist = mine.data();
    }
    const int64_t begin = chunk * kChunk;
    accumulate_chunk(m.data, begin, std::min(kChunk, m.n - begin), m.partials[static_cast<std::size_t>(tid)],
                     m.sums[static_cast<std::size_t>(chunk)], m.abs_sums[static_cast<std::size_t>(chunk)], hist);
}

template <typename S>
void StatsAccumulator<S>::begin_finish(const std::vector<double>& extra_quantiles, int team_threads) {
    for (double q : extra_quantiles)
        if (!(q >= 0.0 && q <= 1.0))
            throw UsageError("Quantile must be in the range [0, 1].\nNote: given: " + python_float_repr(q));
    Impl& m = *impl_;
    const int64_t n = m.n;
    ArrayStats& stats = m.stats;
    stats = ArrayStats{};
    stats.size = n;
    m.sweep = false;
    if (n == 0) {
        // Polygraphy's zero_on_empty: 0 for everything but np.mean (nan) and its quantile (inf).
        stats.mean = kNaN;
        stats.avg_magnitude = kNaN;
        stats.p90 = stats.p95 = stats.p99 = kInf;
        stats.quantiles.assign(extra_quantiles.size(), kInf);
        return;
    }

    Partial<S>& total = m.total;
    total = m.partials[0];
    for (std::size_t t = 1; t < m.partials.size(); ++t) total.merge(m.partials[t]);
    std::vector<uint32_t> top_hist;
    if (m.use_radix) {
        top_hist.assign(kTopBuckets, 0);
        for (const auto& hist : m.hists)
            if (!hist.empty())
                for (std::size_t b = 0; b < kTopBuckets; ++b) top_hist[b] += hist[b];
    }

    const double count = static_cast<double>(n);
    // np.mean(x, dtype=float32) and np.mean(np.abs(x), dtype=float32).
    stats.mean = static_cast<float>(static_cast<double>(fold_chunks(m.sums)) / count);
    stats.avg_magnitude = static_cast<float>(static_cast<double>(fold_chunks(m.abs_sums)) / count);
    stats.nan_count = total.nan_count;
    if (total.nan_count > 0) {
        stats.min = stats.max = kNaN;
        stats.argmin = stats.argmax = total.first_nan;
    } else {
        stats.min = static_cast<double>(total.min);
        stats.max = static_cast<double>(total.max);
        stats.argmin = total.argmin;
        stats.argmax = total.argmax;
    }

    // Every rank needed by the median and the quantiles; the extreme ones are already known.
    std::vector<double> qs = {0.9, 0.95, 0.99};
    qs.insert(qs.end(), extra_quantiles.begin(), extra_quantiles.end());
    m.positions.clear();
    for (double q : qs) m.positions.push_back(quantile_position(n, q));
    const int64_t middle = n / 2;
    std::vector<int64_t> ranks;
    if (n % 2 == 0) ranks.push_back(middle - 1);
    ranks.push_back(middle);
    for (const auto& position : m.positions) {
        ranks.push_back(position.previous);
        ranks.push_back(position.next);
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    m.inner.clear();
    if (total.nan_count == 0 && total.min != total.max)
        for (int64_t rank : ranks)
            if (rank != 0 && rank != n - 1) m.inner.push_back(rank);

    // The sweep: float32 variance (it needs the mean) and the first refinement of the ranks.
    if constexpr (std::is_same_v<S, float>) m.variance_sums.assign(static_cast<std::size_t>(chunk_count(n)), 0.f);
    m.selector.reset();
    if (!m.inner.empty() && m.use_radix) m.selector = std::make_unique<RadixSelector<S>>(m.data, top_hist, m.inner);
    m.refine = m.selector && m.selector->prepare(std::max(team_threads, m.nthreads));
    m.sweep = std::is_same_v<S, float> || m.refine;
}

template <typename S>
int StatsAccumulator<S>::threads() const {
    return impl_->nthreads;
}

template <typename S>
void StatsAccumulator<S>::sweep(int tid) {
    Impl& m = *impl_;
    if (!m.sweep) return;
    const int64_t chunks = chunk_count(m.n);
    const float mean32 = static_cast<float>(m.stats.mean);
#pragma omp for schedule(dynamic, 2) nowait
    for (int64_t c = 0; c < chunks; ++c) {
        if constexpr (std::is_same_v<S, float>)
            m.variance_sums[static_cast<std::size_t>(c)] = variance_chunk_sum(m.data, m.n, c, mean32);
        if (m.refine) m.selector->scan(tid, c * kChunk, std::min(m.n, (c + 1) * kChunk));
    }
}

template <typename S>
ArrayStats StatsAccumulator<S>::end_finish() {
    Impl& m = *impl_;
    const int64_t n = m.n;
    ArrayStats& stats = m.stats;
    if (n == 0) return stats;
    const Partial<S>& total = m.total;
    const double count = static_cast<double>(n);
    if (m.refine) m.selector->complete();
    if constexpr (std::is_same_v<S, float>) {
        const float var32 = static_cast<float>(static_cast<double>(fold_chunks(m.variance_sums)) / count);
        stats.var = var32;
        stats.std_dev = std::sqrt(var32);
    } else {
        stats.var = total.m2 / count;
        stats.std_dev = std::sqrt(stats.var);
    }
    if (total.nan_count > 0) {
        stats.median = stats.p90 = stats.p95 = stats.p99 = kNaN;
        stats.quantiles.assign(m.positions.size() - 3, kNaN);
        return stats;
    }

    // Deeper levels (64-bit keys in crowded buckets) each take one more sweep.
    RadixSelector<S>* selector = m.selector.get();
    while (selector && selector->prepare(m.nthreads)) {
        const int nthreads = m.nthreads;
#pragma omp parallel num_threads(nthreads)
        {
            const int tid = omp_get_thread_num();
            selector->scan(tid, n * tid / nthreads, n * (tid + 1) / nthreads);
        }
        selector->complete();
    }
    const std::vector<int64_t>& inner = m.inner;
    std::vector<S> inner_values;
    if (!inner.empty()) {
        if (selector)
            inner_values = selector->values();
        else
            inner_values = select_small(m.data, n, inner);
    }
    auto value_at = [&](int64_t rank) -> S {
        if (rank == 0) return total.min;
        if (rank == n - 1) return total.max;
        if (total.min == total.max) return total.min;
        const auto it = std::lower_bound(inner.begin(), inner.end(), rank);
        return inner_values[static_cast<std::size_t>(it - inner.begin())];
    };

    // np.median: the mean of the middle element(s) in the (cast-up) dtype's arithmetic.
    const int64_t middle = n / 2;
    if (n % 2 == 1) {
        stats.median = static_cast<double>(value_at(middle));
    } else if constexpr (std::is_same_v<S, float>) {
        stats.median = (value_at(middle - 1) + value_at(middle)) / 2.0f;
    } else {
        stats.median = (static_cast<double>(value_at(middle - 1)) + static_cast<double>(value_at(middle))) / 2.0;
    }

    const DiffFn diff_fn = diff_fn_for(m.raw_dtype);
    std::vector<double> results;
    for (const auto& position : m.positions)
        results.push_back(lerp(static_cast<double>(value_at(position.previous)),
                               static_cast<double>(value_at(position.next)), position.gamma, diff_fn));
    stats.p90 = results[0];
    stats.p95 = results[1];
    stats.p99 = results[2];
    stats.quantiles.assign(results.begin() + 3, results.end());
    m.selector.reset();
    return stats;
}

template <typename S>
ArrayStats StatsAccumulator<S>::finish(const std::vector<double>& extra_quantiles) {
    StatsAccumulator<S>* self = this;
    return finish_together(std::span<StatsAccumulator<S>* const>(&self, 1),
                           std::span<const std::vector<double>>(&extra_quantiles, 1))[0];
}

template <typename S>
std::vector<ArrayStats> finish_together(std::span<StatsAccumulator<S>* const> accumulators,
                                        std::span<const std::vector<double>> extra_quantiles) {
    int nthreads = 1;
    for (StatsAccumulator<S>* accumulator : accumulators) nthreads = std::max(nthreads, accumulator->threads());
    for (std::size_t i = 0; i < accumulators.size(); ++i) accumulators[i]->begin_finish(extra_quantiles[i], nthreads);
#pragma omp parallel num_threads(nthreads)
    {
        const int tid = omp_get_thread_num();
        for (StatsAccumulator<S>* accumulator : accumulators) accumulator->sweep(tid);
    }
    std::vector<ArrayStats> results;
    for (StatsAccumulator<S>* accumulator : accumulators) results.push_back(accumulator->end_finish());
    return results;
}

template <typename S>
ArrayStats compute_typed(const S* data, int64_t n, DataType raw_dtype, const std::vector<double>& extra_quantiles) {
    const int nthreads = threads_for(n);
    StatsAccumulator<S> accumulator(data, n, raw_dtype, nthreads);
    const int64_t chunks = chunk_count(n);
#pragma omp parallel num_threads(nthreads)
    {
        const int tid = omp_get_thread_num();
#pragma omp for schedule(dynamic, 2)
        for (int64_t c = 0; c < chunks; ++c) accumulator.accumulate(tid, c);
    }
    return accumulator.finish(extra_quantiles);
}

template class StatsAccumulator<float>;
template class StatsAccumulator<double>;
template class StatsAccumulator<int32_t>;
template class StatsAccumulator<int64_t>;
template class StatsAccumulator<uint64_t>;
template std::vector<ArrayStats> finish_together<float>(std::span<StatsAccumulator<float>* const>,
                                                        std::span<const std::vector<double>>);
template ArrayStats compute_typed<float>(const float*, int64_t, DataType, const std::vector<double>&);
template ArrayStats compute_typed<double>(const double*, int64_t, DataType, const std::vector<double>&);
template ArrayStats compute_typed<int32_t>(const int32_t*, int64_t, DataType, const std::vector<double>&);
template ArrayStats compute_typed<int64_t>(const int64_t*, int64_t, DataType, const std::vector<double>&);
template ArrayStats compute_typed<uint64_t>(const uint64_t*, int64_t, DataType, const std::vector<double>&);

ArrayStats compute_bool(const uint8_t* data, int64_t n) {
    ArrayStats stats;
    stats.size = n;
    stats.has_quantiles = false;
    if (n == 0) {
        stats.mean = stats.avg_magnitude = kNaN;
        return stats;
    }
    int64_t trues = 0, first_true = -1, first_false = -1;
    for (int64_t i = 0; i < n; ++i) {
        const bool value = data[i] != 0;
        trues += value;
        if (value && first_true < 0) first_true = i;
        if (!value && first_false < 0) first_false = i;
    }
    const double count = static_cast<double>(n);
    const double mean = static_cast<double>(trues) / count;
    // np.mean(dtype=float32): chunk counts are exact, their running float32 sum may round.
    float sum32 = 0.f;
    for (int64_t begin = 0; begin < n; begin += kChunk) {
        int64_t chunk_trues = 0;
        for (int64_t i = begin; i < std::min(n, begin + kChunk); ++i) chunk_trues += data[i] != 0;
        sum32 += static_cast<float>(chunk_trues);
    }
    stats.mean = static_cast<float>(static_cast<double>(sum32) / count);
    stats.avg_magnitude = stats.mean;
    // np.var of bools: float64 mean of squared deviations.
    stats.var =
        (static_cast<double>(trues) * (1.0 - mean) * (1.0 - mean) + static_cast<double>(n - trues) * mean * mean) /
        count;
    stats.std_dev = std::sqrt(stats.var);
    stats.min = first_false >= 0 ? 0.0 : 1.0;
    stats.argmin = first_false >= 0 ? first_false : 0;
    stats.max = first_true >= 0 ? 1.0 : 0.0;
    stats.argmax = first_true >= 0 ? first_true : 0;
    // Sorted: the falses, then the trues.
    auto value_at = [&](int64_t rank) { return rank >= n - trues ? 1.0 : 0.0; };
    const int64_t middle = n / 2;
    stats.median = n % 2 ? value_at(middle) : (value_at(middle - 1) + value_at(middle)) / 2.0;
    return stats;
}

}  // namespace detail

namespace {

// Polygraphy's cast_up, into a buffer of the stat type.
template <typename S, typename Convert>
std::vector<S> converted(const Tensor& tensor, Convert convert) {
    std::vector<S> values(static_cast<std::size_t>(tensor.numel()));
    for (int64_t i = 0; i < tensor.numel(); ++i) values[static_cast<std::size_t>(i)] = convert(i);
    return values;
}

template <typename S, typename Raw>
std::vector<S> widened(const Tensor& tensor) {
    const Raw* raw = tensor.data_as<Raw>();
    return converted<S>(tensor, [raw](int64_t i) { return static_cast<S>(raw[i]); });
}

}  // namespace

ArrayStats compute_stats(const Tensor& tensor, const std::vector<double>& extra_quantiles) {
    const DataType dtype = tensor.dtype();
    const int64_t n = tensor.numel();
    using detail::compute_typed;
    switch (dtype) {
        case DataType::kFloat32:
            return compute_typed(tensor.data_as<float>(), n, dtype, extra_quantiles);
        case DataType::kFloat64:
            return compute_typed(tensor.data_as<double>(), n, dtype, extra_quantiles);
        case DataType::kInt32:
            return compute_typed(tensor.data_as<int32_t>(), n, dtype, extra_quantiles);
        case DataType::kInt64:
            return compute_typed(tensor.data_as<int64_t>(), n, dtype, extra_quantiles);
        case DataType::kUInt64:
            return compute_typed(tensor.data_as<uint64_t>(), n, dtype, extra_quantiles);
        case DataType::kBool:
            return detail::compute_bool(tensor.data_as<uint8_t>(), n);
        case DataType::kInt8: {
            const auto values = widened<int32_t, int8_t>(tensor);
            return compute_typed(values.data(), n, dtype, extra_quantiles);
        }
        case DataType::kInt16: {
            const auto values = widened<int32_t, int16_t>(tensor);
            return compute_typed(values.data(), n, dtype, extra_quantiles);
        }
        case DataType::kUInt8: {
            const auto values = widened<int32_t, uint8_t>(tensor);
            return compute_typed(values.data(), n, dtype, extra_quantiles);
        }
        case DataType::kUInt16: {
            const auto values = widened<int32_t, uint16_t>(tensor);
            return compute_typed(values.data(), n, dtype, extra_quantiles);
        }
        case DataType::kUInt32: {
            const auto values = widened<int64_t, uint32_t>(tensor);
            return compute_typed(values.data(), n, dtype, extra_quantiles);
        }
        case DataType::kInt4:
        case DataType::kUInt4: {
            const auto values =
                converted<int32_t>(tensor, [&](int64_t i) { return static_cast<int32_t>(tensor.value_as_double(i)); });
            return compute_typed(values.data(), n, dtype, extra_quantiles);
        }
        case DataType::kFloat16:
        case DataType::kBFloat16:
        case DataType::kFloat8E4M3FN:
        case DataType::kFloat8E4M3FNUZ:
        case DataType::kFloat8E5M2:
        case DataType::kFloat8E5M2FNUZ: {
            const auto values =
                converted<float>(tensor, [&](int64_t i) { return static_cast<float>(tensor.value_as_double(i)); });
            return compute_typed(values.data(), n, dtype, extra_quantiles);
        }
        default:
            break;
    }
    throw UnsupportedError("Cannot compute statistics of a tensor of type " + std::string(dtype_name(dtype)));
}

ArrayStats compute_stats(const float* data, int64_t size, const std::vector<double>& extra_quantiles) {
    return detail::compute_typed(data, size, DataType::kFloat32, extra_quantiles);
}

ArrayStats compute_stats(const double* data, int64_t size, const std::vector<double>& extra_quantiles) {
    return detail::compute_typed(data, size, DataType::kFloat64, extra_quantiles);
}

double quantile(const Tensor& tensor, double q) {
    if (tensor.dtype() == DataType::kBool)
        throw UnsupportedError("Cannot compute quantiles of a bool tensor (numpy does not either)");
    if (tensor.numel() == 0) return std::numeric_limits<double>::infinity();
    return compute_stats(tensor, {q}).quantiles.at(0);
}

double median(const Tensor& tensor) {
    return compute_stats(tensor).median;
}

}  // namespace polygraphy::stats
