// Private helpers for the compute-heavy kernels (conv, pool, matmul, nn, reduce): the oneDNN engine,
// thread control, plain memory descriptors, per-thread scratch buffers, a per-kernel primitive cache
// and an OpenMP parallel-for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::ref::onednn {

/// The process-wide CPU engine (created on first use; thread-safe).
const dnnl::engine& cpu_engine();

/// A positive thread count: `requested` when > 0, else the OpenMP default.
int resolve_threads(int requested);

/// Sets the OpenMP thread count of the calling thread for its lifetime (oneDNN's OpenMP runtime
/// sizes its parallel regions from it, both when creating and when executing primitives).
class ThreadScope {
public:
    explicit ThreadScope(int num_threads);
    ~ThreadScope();
    ThreadScope(const ThreadScope&) = delete;
    ThreadScope& operator=(const ThreadScope&) = delete;

private:
    int previous_;
};

/// Dims of a shape for oneDNN.
dnnl::memory::dims to_dims(const Shape& shape);

/// Dense row-major f32 descriptor of `dims` (nchw, ncdhw, ab, abc...).
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims);

/// Descriptor of float32 NCHW `dims` in the channel-blocked layout of `block` channels, nChw8c or
/// nChw16c (kBlockedInputAttr).
dnnl::memory::desc blocked_desc(const dnnl::memory::dims& dims, int64_t block);

/// [N, ceil(C / B), H, W, B]: how a tensor of NCHW `shape` is held in blocks of B (the last block
/// padded where B does not divide C, as oneDNN pads it).
Shape blocked_shape(const Shape& shape, int64_t block);

/// The NCHW shape of `tensor`, which a graph pass declared blocked in `block` channels: of
/// `channels` channels (the last block padded), or, when that is negative, of whole blocks. Fails
/// naming the node when it is not a float32 [N, ceil(C / B), H, W, B] tensor.
Shape unblocked_shape(const NodeInfo& node, const Tensor& tensor, int64_t block, int64_t channels = -1);

/// kBlockedInputAttr or kBlockedOutputAttr: 0 (or absent), kNarrowChannelBlock or kWideChannelBlock;
/// fails naming it otherwise.
int64_t channel_block(const NodeInfo& node, std::string_view name);

/// A memory object over caller-owned f32 data (not copied). The const_cast is safe: oneDNN only
/// reads from source arguments.
dnnl::memory wrap_memory(const dnnl::memory::desc& desc, const void* data);

/// Executes `prim` on a fresh stream and waits for it.
void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args);

/// Reorders `src` (laid out as `src_desc`) into a new buffer laid out as `dst_desc` and returns it.
std::shared_ptr<void> reorder_to_new_buffer(const dnnl::memory::desc& src_desc, const void* src,
                                            const dnnl::memory::desc& dst_desc);

/// A 64-byte aligned buffer of `bytes` bytes (allocate_aligned: huge pages for large ones).
std::shared_ptr<void> aligned_buffer(std::size_t bytes);

/// Per-thread reusable scratch buffer `slot` (0..3) of at least `bytes` bytes. Reused across calls
/// so that large temporaries do not page-fault on every inference. Valid until the same slot is
/// requested again on the same thread.
void* thread_scratch(int slot, std::size_t bytes);

/// Passes this thread's scratch buffer (slot 3) as the scratchpad of a primitive made with
/// dnnl::scratchpad_mode::user, when `scratchpad` (its primitive_desc's) is not empty. So every
/// thread that runs the primitive has its own: a library-owned scratchpad is one per primitive, and
/// two runs at once (one session run from several threads, or one plan on several threads) raced
/// on it (oneDNN's brgemm kernels on AVX-512 use one).
void add_thread_scratchpad(std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& scratchpad);

/// The numeric dtypes MatMul and the Reduce ops compute (float16/bfloat16 through float32), and
/// their list for error messages.
inline constexpr const char* kNumericTypes = "float32, float64, float16, bfloat16, int32, int64, uint32, uint64";
inline bool is_numeric_dtype(DataType dtype) {
    switch (dtype) {
        case DataType::kFloat32:
        case DataType::kFloat64:
        case DataType::kFloat16:
        case DataType::kBFloat16:
        case DataType::kInt32:
        case DataType::kInt64:
        case DataType::kUInt32:
        case DataType::kUInt64:
            return true;
        default:
            return false;
    }
}

/// Throws UnsupportedError: "Node '<name>' (<op>): <what> has unsupported data type <dtype>" with a
/// note listing `allowed`.
[[noreturn]] void fail_dtype(const NodeInfo& node, const std::string& what, DataType dtype, const std::string& allowed);

/// Translates a oneDNN error into UnsupportedError naming the node.
[[noreturn]] void rethrow_dnnl_error(const NodeInfo& node, const dnnl::error& error, const char* what);

/// The activation a fused operator applies to its output (kActivationAttr in fused_ops.h).
class Eltwise;

class FusedActivation {
public:
    enum class Kind { kNone, kRelu, kClip, kGelu, kSilu };

    FusedActivation() = default;
    /// Reads and validates kActivationAttr and kActivationParamsAttr; fails naming the attribute on a
    /// value it does not take.
    explicit FusedActivation(const NodeInfo& node);
    /// Whether `name` is an activation it takes (Relu, Clip, Gelu, Silu).
    static bool takes(std::string_view name);

    bool active() const { return kind_ != Kind::kNone; }
    /// Which activation (kNone when nothing was folded).
    Kind kind() const { return kind_; }
    /// Clip's lower bound (meaningful for Kind::kClip only).
    float clip_min() const { return min_; }
    /// Clip's upper bound (meaningful for Kind::kClip only).
    float clip_max() const { return max_; }
    /// Appends the matching eltwise post-op.
    void append_to(dnnl::post_ops& ops) const;
    /// The activation of one value (reference paths).
    double apply(double x) const;
    /// Applies the activation to every element of a float32/float64 tensor in place (float32 through
    /// the same oneDNN function as the post-op, vectorized).
    void apply_in_place(Tensor& tensor, int num_threads) const;

private:
    Kind kind_ = Kind::kNone;
    float min_ = 0.0f;
    float max_ = 0.0f;
    std::shared_ptr<const Eltwise> eltwise_;  // float32 in-place path; shared, so copies stay cheap
};

/// Thread-safe map from a key (typically the input shapes and the thread count) to an immutable
/// prepared object (primitives for those shapes). Kernels are const during compute(), so the cache
/// is the only mutable per-kernel state.
template <typename Value>
class PrimitiveCache {
public:
    using Key = std::vector<int64_t>;

    /// Returns the entry for `key`, creating it with `make()` (outside the lock) when absent.
    std::shared_ptr<const Value> get(const Key& key, const std::function<std::shared_ptr<const Value>()>& make) const {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = entries_.find(key);
            if (it != entries_.end()) return it->second;
        }
        std::shared_ptr<const Value> created = make();
        std::lock_guard<std::mutex> lock(mutex_);
        if (entries_.size() >= kMaxEntries) entries_.clear();  // shapes keep changing: start over
        return entries_.emplace(key, std::move(created)).first->second;
    }

private:
    static constexpr std::size_t kMaxEntries = 64;
    mutable std::mutex mutex_;
    mutable std::map<Key, std::shared_ptr<const Value>> entries_;
};

/// A oneDNN elementwise function over contiguous float32 data, JIT-vectorized (logistic, exp, tanh,
/// gelu_erf, swish, ...): much faster than a scalar libm loop. Primitives are cached per element
/// count and thread count.
class Eltwise {
public:
    explicit Eltwise(dnnl::algorithm algorithm, float alpha = 0.0f, float beta = 0.0f)
        : algorithm_(algorithm), alpha_(alpha), beta_(beta) {}

    /// y[i] = f(x[i]) for i < count (x == y is allowed). Returns false, computing nothing, when
    /// oneDNN has no implementation for the function (callers then use their own loop).
    bool run(const float* x, float* y, int64_t count, int num_threads) const;

private:
    struct Plan {
        dnnl::eltwise_forward primitive;
        dnnl::memory::desc desc;
    };
    dnnl::algorithm algorithm_;
    float alpha_;
    float beta_;
    PrimitiveCache<Plan> cache_;
};

/// Weights reordered into a primitive's preferred layout, computed once per layout. Used for
/// constant weights (initializers): oneDNN chooses the layout when the primitive is created, which
/// needs the input shape, so the packing happens on the first compute() for a new layout.
class PackedWeights {
public:
    /// Packed copy of `plain_data` (laid out as `plain_desc`) in layout `packed_desc`; one per
    /// layout and source (parts of one weight tensor are packed apart).
    const void* get(const dnnl::memory::desc& plain_desc, const void* plain_data,
                    const dnnl::memory::desc& packed_desc) const;

private:
    struct Packed {
        dnnl::memory::desc desc;
        const void* source;
        std::shared_ptr<void> buffer;
    };
    mutable std::mutex mutex_;
    mutable std::vector<Packed> packed_;
};

/// Runs body(begin, end) on each of `threads` contiguous chunks of [0, count), one per OpenMP thread
/// (in dnnl_util.cpp, so that this header needs no OpenMP).
void parallel_chunks(int64_t count, int threads, const std::function<void(int64_t, int64_t)>& body);

/// Runs body(begin, end) over [0, count) split into contiguous chunks on up to `num_threads` OpenMP
/// threads; stays on the calling thread when `count * cost_per_item` is small. The body must not
/// throw (an exception cannot leave an OpenMP region).
template <typename Body>
void parallel_for(int64_t count, int num_threads, int64_t cost_per_item, Body&& body) {
    if (count <= 0) return;
    constexpr int64_t kMinWorkPerThread = 32768;
    const int64_t total_work = count * std::max<int64_t>(cost_per_item, 1);
    const int64_t threads = std::min<int64_t>({static_cast<int64_t>(resolve_threads(num_threads)), count,
                                               std::max<int64_t>(total_work / kMinWorkPerThread, 1)});
    if (threads <= 1) {
        body(int64_t{0}, count);
        return;
    }
    parallel_chunks(count, static_cast<int>(threads), std::ref(body));
}

/// Folds map(x[0..n)) with `combine` (associative and commutative) through 8 independent partial
/// results, so the loop vectorizes without -ffast-math (a single running sum cannot) and sums lose
/// less precision than a running sum.
template <typename A, typename T, typename Map, typename Combine>
A lane_fold(const T* x, int64_t n, A init, Map&& map, Combine&& combine) {
    constexpr int kLanes = 8;
    A lanes[kLanes];
    for (A& lane : lanes) lane = init;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) lanes[l] = combine(lanes[l], map(x[i + l]));
    }
    for (int l = 0; i < n; ++i, ++l) lanes[l] = combine(lanes[l], map(x[i]));
    A result = init;
    for (const A& lane : lanes) result = combine(result, lane);
    return result;
}

/// Sum of x[0..n) in double (see lane_fold).
template <typename T>
double lane_sum(const T* x, int64_t n) {
    return lane_fold<double>(
        x, n, 0.0, [](T v) { return static_cast<double>(v); }, [](double a, double b) { return a + b; });
}

}  // namespace polygraphy::ref::onednn
