// Internal to comparator/compare_func.cpp: the element-wise difference sweep of a comparison.
//
// The two outputs are cast up and promoted as numpy does in Polygraphy's comparison, then one pass
// over them writes the absolute and relative differences, counts the second output's zeros and the
// elementwise mismatches, and, for float32, gathers pass 1 of the statistics of all four arrays.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy::comparison {

using stats::ArrayStats;

/// Added to zeros of the second output (np.finfo(float64).eps).
constexpr double kEpsilon = 2.220446049250313e-16;

// Difference buffers are large and short-lived (one output at a time); a comparer keeps the last two for
// the next output, so each comparison does not pay for fresh pages from the kernel again.
class ScratchPool {
public:
    ~ScratchPool() {
        for (const auto& entry : state_->free) std::free(entry.second);
        state_->free.clear();
        state_->alive = false;
    }

    // A tensor whose buffer is not zero-filled first (it is about to be overwritten).
    Tensor uninitialized_tensor(DataType dtype, const Shape& shape) {
        const std::size_t bytes = static_cast<std::size_t>(shape_volume(shape)) * dtype_size(dtype);
        const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
        void* memory = nullptr;
        std::size_t capacity = rounded;
        {
            std::lock_guard<std::mutex> lock(state_->mutex);
            auto& free = state_->free;
            for (auto it = free.begin(); it != free.end(); ++it)
                if (it->first >= rounded) {
                    capacity = it->first;
                    memory = it->second;
                    free.erase(it);
                    break;
                }
        }
        if (!memory) memory = std::aligned_alloc(64, rounded);
        if (!memory)
            throw PolygraphyException("Could not allocate " + std::to_string(bytes) + " bytes for a difference buffer");
        std::shared_ptr<State> state = state_;
        std::shared_ptr<void> owner(memory, [state, capacity](void* p) {
            std::lock_guard<std::mutex> lock(state->mutex);
            if (state->alive && state->free.size() < kKept) {
                state->free.emplace_back(capacity, p);
                return;
            }
            std::free(p);
        });
        return Tensor::wrap(dtype, shape, owner, memory);
    }

private:
    static constexpr std::size_t kKept = 2;
    struct State {
        std::mutex mutex;
        bool alive = true;
        std::vector<std::pair<std::size_t, void*>> free;  // (capacity, buffer)
    };
    std::shared_ptr<State> state_ = std::make_shared<State>();
};

// ---- numpy dtype rules used by Polygraphy's comparison ----

/// comparator/util.py cast_up: float16 -> float32, small ints -> int32, uint32 -> int64.
DataType cast_up(DataType dtype);

/// np.promote_types over the cast-up dtypes {bool, int32, int64, uint64, float32, float64}.
DataType promote(DataType a, DataType b);

template <typename T>
void fill_from(const Tensor& source, T* out) {
    const int64_t n = source.numel();
    switch (source.dtype()) {
        case DataType::kFloat32: {
            const float* p = source.data_as<float>();
            for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(p[i]);
            return;
        }
        case DataType::kInt64: {
            const int64_t* p = source.data_as<int64_t>();
            for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(p[i]);
            return;
        }
        case DataType::kUInt64: {
            const uint64_t* p = source.data_as<uint64_t>();
            for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(p[i]);
            return;
        }
        default:
            for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(source.value_as_double(i));
    }
}

// The values of `tensor` as a contiguous T array: the tensor's own buffer when it already holds T.
template <typename T>
const T* as_type(const Tensor& tensor, DataType type, std::unique_ptr<T[]>& storage) {
    if (tensor.dtype() == type) return tensor.data_as<T>();
    storage.reset(new T[static_cast<std::size_t>(std::max<int64_t>(tensor.numel(), 1))]);
    fill_from(tensor, storage.get());
    return storage.get();
}

struct Differences {
    Tensor absdiff, reldiff;
    bool second_has_zero = false;
    bool mismatched = false;  // elemwise check
    // Statistics computed during the difference sweep (float32 path); the others are computed later.
    std::optional<ArrayStats> abs_stats, rel_stats, stats0, stats1;
};

template <typename T>
T absolute_difference(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        return std::fabs(a - b);
    } else if constexpr (std::is_unsigned_v<T>) {
        return static_cast<T>(a - b);  // np.abs of a wrapped uint64 difference is itself
    } else {
        using U = std::make_unsigned_t<T>;
        const T difference = static_cast<T>(static_cast<U>(a) - static_cast<U>(b));  // wraps like numpy
        return difference < 0 ? static_cast<T>(U(0) - static_cast<U>(difference)) : difference;
    }
}

// Tolerances as numpy compares them: a float32 array against a Python float in float32, others in float64.
template <typename T, typename R>
struct Thresholds {
    using Compare = std::conditional_t<std::is_same_v<T, float>, float, double>;
    Compare abs;
    R rel;
    T eps;
};

// Elements [begin, end): absdiff (type T), reldiff (type R), zeros of `b`, and elemwise mismatches.
// The options are template parameters so that the loop has no branches and vectorizes.
// kAddEpsilon: numpy's cast-up second output is floating, so its zeros get the epsilon.
template <typename T, typename R, bool kInfinitiesEqual, bool kAddEpsilon>
void difference_range(const T* a, const T* b, T* absdiff, R* reldiff, int64_t begin, int64_t end,
                      const Thresholds<T, R>& limits, int64_t& zeros_out, int64_t& mismatches_out) {
    using Compare = typename Thresholds<T, R>::Compare;
    int64_t zeros = 0, mismatches = 0;
#pragma omp simd reduction(+ : zeros, mismatches)
    for (int64_t i = begin; i < end; ++i) {
        const T x = a[i], y = b[i];
        T d = absolute_difference(x, y);
        if constexpr (kInfinitiesEqual) d = (std::fabs(x) == std::numeric_limits<T>::infinity() && x == y) ? T(0) : d;
        const bool zero = y == T(0);
        zeros += zero ? 1 : 0;
        R denominator;
        if constexpr (std::is_floating_point_v<T>) {
            const T with_eps = kAddEpsilon ? (zero ? limits.eps : y) : y;
            denominator = static_cast<R>(std::fabs(with_eps));
        } else if constexpr (std::is_signed_v<T>) {
            denominator = y < T(0) ? -static_cast<R>(y) : static_cast<R>(y);
        } else {
            denominator = static_cast<R>(y);
        }
        const R r = static_cast<R>(d) / denominator;
        absdiff[i] = d;
        reldiff[i] = r;
        const Compare dc = static_cast<Compare>(d);
        const bool abs_bad = dc > limits.abs || dc != dc;
        const bool rel_bad = r > limits.rel || r != r;
        mismatches += (abs_bad && rel_bad) ? 1 : 0;
    }
    zeros_out += zeros;
    mismatches_out += mismatches;
}

template <typename T, typename R>
using RangeFn = void (*)(const T*, const T*, T*, R*, int64_t, int64_t, const Thresholds<T, R>&, int64_t&, int64_t&);

template <typename T, typename R>
RangeFn<T, R> pick_range_fn(bool infinities_equal, bool epsilon) {
    if constexpr (std::is_floating_point_v<T>) {
        if (infinities_equal) return epsilon ? difference_range<T, R, true, true> : difference_range<T, R, true, false>;
        return epsilon ? difference_range<T, R, false, true> : difference_range<T, R, false, false>;
    } else {
        return difference_range<T, R, false, false>;
    }
}

// What the sweep also needs to know: tolerances and which statistics to gather on the way.
struct SweepOptions {
    bool b_float = false;       // numpy's cast-up second output is floating
    double epsilon = kEpsilon;  // in that dtype
    bool infinities_equal = false;
    double atol = 0, rtol = 0;
    std::vector<double> extra_quantiles;  // for the difference statistics
    // Raw dtypes of the outputs whose statistics come out of the float32 sweep (nullopt: not wanted here).
    std::optional<DataType> stats0_dtype, stats1_dtype;
    ScratchPool* pool = nullptr;
};

/// Bool outputs: XOR as the absolute difference, float64 quotient as the relative one.
Differences compute_bool_differences(const Tensor& a, const Tensor& b, bool elemwise, double atol, double rtol,
                                     ScratchPool& pool);

template <typename T, typename R>
Differences compute_differences(const T* a, const T* b, const Shape& shape, DataType t_dtype, DataType r_dtype,
                                const SweepOptions& options) {
    Differences result;
    const int64_t n = shape_volume(shape);
    result.absdiff = options.pool->uninitialized_tensor(t_dtype, shape);
    result.reldiff = options.pool->uninitialized_tensor(r_dtype, shape);
    T* absdiff = result.absdiff.data_as<T>();
    R* reldiff = result.reldiff.data_as<R>();
    const Thresholds<T, R> limits{static_cast<typename Thresholds<T, R>::Compare>(options.atol),
                                  static_cast<R>(options.rtol), static_cast<T>(options.epsilon)};
    const RangeFn<T, R> range_fn = pick_range_fn<T, R>(options.infinities_equal, options.b_float);
    const int nthreads = stats::detail::threads_for(n);
    const int64_t chunks = stats::detail::chunk_count(n);

    // float32: pass 1 of the statistics of all four arrays rides along, chunk by chunk, while the chunk
    // is still in cache; other types get their statistics afterwards.
    using Accumulator = stats::detail::StatsAccumulator<float>;
    std::unique_ptr<Accumulator> acc_abs, acc_rel, acc0, acc1;
    if constexpr (std::is_same_v<T, float> && std::is_same_v<R, float>) {
        acc_abs = std::make_unique<Accumulator>(absdiff, n, DataType::kFloat32, nthreads);
        acc_rel = std::make_unique<Accumulator>(reldiff, n, DataType::kFloat32, nthreads);
        if (options.stats0_dtype) acc0 = std::make_unique<Accumulator>(a, n, *options.stats0_dtype, nthreads);
        if (options.stats1_dtype) acc1 = std::make_unique<Accumulator>(b, n, *options.stats1_dtype, nthreads);
    }

    int64_t zeros = 0, mismatches = 0;
#pragma omp parallel num_threads(nthreads) reduction(+ : zeros, mismatches)
    {
        const int tid = omp_get_thread_num();
        // Dynamic: when the machine is oversubscribed, a preempted thread does not hold half the work.
#pragma omp for schedule(dynamic, 2)
        for (int64_t c = 0; c < chunks; ++c) {
            const int64_t begin = c * stats::detail::kChunk;
            const int64_t end = std::min(n, begin + stats::detail::kChunk);
            range_fn(a, b, absdiff, reldiff, begin, end, limits, zeros, mismatches);
            if (acc_abs) {
                acc_abs->accumulate(tid, c);
                acc_rel->accumulate(tid, c);
                if (acc0) acc0->accumulate(tid, c);
                if (acc1) acc1->accumulate(tid, c);
            }
        }
    }
    result.second_has_zero = zeros > 0;
    result.mismatched = mismatches > 0;
    if (acc_abs) {
        std::vector<Accumulator*> accumulators = {acc_abs.get(), acc_rel.get()};
        std::vector<std::vector<double>> quantiles = {options.extra_quantiles, options.extra_quantiles};
        for (Accumulator* extra : {acc0.get(), acc1.get()})
            if (extra) {
                accumulators.push_back(extra);
                quantiles.emplace_back();
            }
        const std::vector<ArrayStats> all = stats::detail::finish_together<float>(accumulators, quantiles);
        result.abs_stats = all[0];
        result.rel_stats = all[1];
        std::size_t next = 2;
        if (acc0) result.stats0 = all[next++];
        if (acc1) result.stats1 = all[next++];
    }
    return result;
}

}  // namespace polygraphy::comparison
