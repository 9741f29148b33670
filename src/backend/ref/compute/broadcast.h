// Private helpers of the elementwise and tensor kernels: numpy broadcasting, strided loops over
// tensors (with dimension coalescing and OpenMP), strided copies for data-movement operators.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"
#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

/// Elements below which loops stay single-threaded (thread start-up costs more than it saves).
constexpr int64_t kParallelThreshold = 1 << 15;

/// body(i) for i in [0, count): split statically between `threads` OpenMP threads when `parallel`,
/// else a plain loop on this thread. Not an OpenMP `if` clause: a region whose clause is false still
/// costs libgomp a team and a futex call, which small nodes feel.
template <typename Body>
void for_each_index(int64_t count, bool parallel, int threads, Body&& body) {
    if (parallel && threads > 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < count; ++i) body(i);
    } else {
        for (int64_t i = 0; i < count; ++i) body(i);
    }
}

/// Row-major strides (in elements) of a contiguous tensor of `shape`.
inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (std::size_t i = shape.size(); i > 1; --i) strides[i - 2] = strides[i - 1] * shape[i - 1];
    return strides;
}

/// Numpy multidirectional broadcasting of `shapes`; fails naming every shape when they disagree.
inline Shape broadcast_shapes(const NodeInfo& node, const std::vector<Shape>& shapes) {
    std::size_t rank = 0;
    for (const Shape& shape : shapes) rank = std::max(rank, shape.size());
    Shape result(rank, 1);
    for (const Shape& shape : shapes) {
        const std::size_t offset = rank - shape.size();
        for (std::size_t i = 0; i < shape.size(); ++i) {
            int64_t& out = result[offset + i];
            if (shape[i] == out || shape[i] == 1) continue;
            if (out == 1) {
                out = shape[i];
                continue;
            }
            std::string list;
            for (const Shape& s : shapes) list += (list.empty() ? "" : " and ") + shape_to_string(s);
            node.fail(fmt::format("cannot broadcast shapes {} together (dimension {} differs: {} vs {})", list,
                                  offset + i, out, shape[i]));
        }
    }
    return result;
}

/// The values of `param` broadcast (numpy, unidirectionally) to `shape`, as float64; nullopt when
/// `param`'s shape does not broadcast to it.
inline std::optional<std::vector<double>> unidirectional_broadcast_values(const Tensor& param, const Shape& shape) {
    const Shape& ps = param.shape();
    bool ok = ps.size() <= shape.size();
    for (std::size_t i = 0; ok && i < ps.size(); ++i) {
        const int64_t dim = ps[ps.size() - 1 - i];
        ok = dim == 1 || dim == shape[shape.size() - 1 - i];
    }
    if (!ok) return std::nullopt;
    const Tensor values = param.cast(DataType::kFloat64);
    const int64_t count = shape_volume(shape);
    std::vector<double> out(static_cast<std::size_t>(count));
    const std::size_t offset = shape.size() - ps.size();
    for (int64_t i = 0; i < count; ++i) {
        int64_t rest = i;
        int64_t source = 0;
        int64_t stride = 1;
        for (std::size_t d = shape.size(); d-- > offset;) {
            const int64_t index = rest % shape[d];
            rest /= shape[d];
            const int64_t pdim = ps[d - offset];
            if (pdim != 1) source += index * stride;
            stride *= pdim;
        }
        out[static_cast<std::size_t>(i)] = values.data_as<double>()[source];
    }
    return out;
}

/// Strides of a contiguous tensor of `shape` read as if broadcast to `out` (0 on broadcast dims).
/// `shape` must be broadcastable to `out` (right-aligned).
inline std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
    std::vector<int64_t> strides(out.size(), 0);
    const std::vector<int64_t> own = contiguous_strides(shape);
    const std::size_t offset = out.size() - shape.size();
    for (std::size_t i = 0; i < shape.size(); ++i) strides[offset + i] = shape[i] == 1 ? 0 : own[i];
    return strides;
}

/// A loop over every element of an output shape, reading N operands through arbitrary element
/// strides. Dimensions of size 1 are dropped and adjacent dimensions that are contiguous for every
/// operand are merged, so the innermost loop is as long as possible.
template <std::size_t N>
class StridedLoop {
public:
    using Offsets = std::array<int64_t, N>;

    StridedLoop(const Shape& out, std::array<std::vector<int64_t>, N> strides) {
        numel_ = 1;
        for (int64_t dim : out) numel_ *= dim;
        for (std::size_t d = 0; d < out.size(); ++d) {
            if (out[d] == 1) continue;
            if (!dims_.empty()) {
                bool mergeable = true;
                for (std::size_t k = 0; k < N; ++k)
                    if (strides_[k].back() != strides[k][d] * out[d]) mergeable = false;
                if (mergeable) {
                    dims_.back() *= out[d];
                    for (std::size_t k = 0; k < N; ++k) strides_[k].back() = strides[k][d];
                    continue;
                }
            }
            dims_.push_back(out[d]);
            for (std::size_t k = 0; k < N; ++k) strides_[k].push_back(strides[k][d]);
        }
        if (dims_.empty()) {
            dims_.push_back(1);
            for (std::size_t k = 0; k < N; ++k) strides_[k].push_back(0);
        }
    }

    int64_t numel() const { return numel_; }
    int64_t inner() const { return dims_.back(); }

    /// Calls fn(offsets, out_offset, count, inner_strides) for each innermost row; out_offset is
    /// the row's first element in the contiguous output. Rows are split between `threads` threads
    /// when the loop is big enough; fn must then be safe to call concurrently on distinct rows.
    template <typename Fn>
    void for_each_row(Fn&& fn, int threads = 1) const {
        if (numel_ == 0) return;
        const int64_t count = dims_.back();
        const int64_t rows = numel_ / count;
        const bool parallel = threads > 1 && numel_ >= kParallelThreshold;
        Offsets inner_strides;
        for (std::size_t k = 0; k < N; ++k) inner_strides[k] = strides_[k].back();
        if (parallel && rows < threads) {
            // Few long rows (e.g. same-shape operands coalesce into one): split the rows themselves.
            const int64_t splits = (threads + rows - 1) / rows;
            const int64_t items = rows * splits;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
            for (int64_t item = 0; item < items; ++item) {
                const int64_t row = item / splits, part = item % splits;
                const int64_t begin = count * part / splits, end = count * (part + 1) / splits;
                if (begin >= end) continue;
                Offsets offsets{};
                int64_t rest = row;
                for (std::size_t d = dims_.size() - 1; d-- > 0;) {
                    const int64_t index = rest % dims_[d];
                    rest /= dims_[d];
                    for (std::size_t k = 0; k < N; ++k) offsets[k] += index * strides_[k][d];
                }
                for (std::size_t k = 0; k < N; ++k) offsets[k] += begin * inner_strides[k];
                fn(offsets, row * count + begin, end - begin, inner_strides);
            }
            return;
        }
        const int64_t chunks = parallel ? std::min<int64_t>(threads, rows) : 1;
        auto run_chunk = [&](int64_t chunk) {
            const int64_t begin = rows * chunk / chunks;
            const int64_t end = rows * (chunk + 1) / chunks;
            if (begin >= end) return;
            const std::size_t outer_rank = dims_.size() - 1;
            std::vector<int64_t> index(outer_rank, 0);
            Offsets offsets{};
            int64_t rest = begin;
            for (std::size_t d = outer_rank; d-- > 0;) {
                index[d] = rest % dims_[d];
                rest /= dims_[d];
                for (std::size_t k = 0; k < N; ++k) offsets[k] += index[d] * strides_[k][d];
            }
            for (int64_t row = begin; row < end; ++row) {
                fn(offsets, row * count, count, inner_strides);
                for (std::size_t d = outer_rank; d-- > 0;) {
                    for (std::size_t k = 0; k < N; ++k) offsets[k] += strides_[k][d];
                    if (++index[d] < dims_[d]) break;
                    for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides_[k][d] * dims_[d];
                    index[d] = 0;
                }
            }
        };
        if (chunks == 1) {
            run_chunk(0);
            return;
        }
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static, 1)
        for (int64_t chunk = 0; chunk < chunks; ++chunk) run_chunk(chunk);
    }

private:
    Shape dims_;
    std::array<std::vector<int64_t>, N> strides_;
    int64_t numel_ = 0;
};

/// How a broadcast operand of `shape` repeats over a full one of shape `out` as [outer, repeat,
/// inner]: out = [P..., Q..., K...] and shape = [P..., 1..., K...] (left-padded with 1s); nullopt
/// for another pattern. A per-channel scale of a channel-blocked tensor, [N, C/B, H, W, B] times
/// [N, C/B, 1, 1, B], is {N * C/B, H * W, B}.
struct RepeatedRows {
    int64_t outer = 1, repeat = 1, inner = 1;
};
inline std::optional<RepeatedRows> repeated_rows(const Shape& shape, const Shape& out) {
    if (shape.size() > out.size()) return std::nullopt;
    const std::size_t offset = out.size() - shape.size();
    auto dim = [&](std::size_t d) { return d < offset ? int64_t{1} : shape[d - offset]; };
    RepeatedRows rows;
    std::size_t d = out.size();
    for (; d > 0 && dim(d - 1) == out[d - 1]; --d) rows.inner *= out[d - 1];
    for (; d > 0 && dim(d - 1) == 1; --d) rows.repeat *= out[d - 1];
    for (; d > 0; --d) {
        if (dim(d - 1) != out[d - 1]) return std::nullopt;
        rows.outer *= out[d - 1];
    }
    return rows;
}

/// y[i] = fn(a[...], b[...]) over the broadcast of shapes `sa` and `sb` to `out` (y contiguous).
template <typename TA, typename TB, typename R, typename Fn>
void broadcast_binary(const Shape& out, const Shape& sa, const Shape& sb, const TA* a, const TB* b, R* y, Fn&& fn,
                      int threads) {
    // One full operand and rows of the other repeated over it, the rows too short for the general
    // loop's per-row work to pay (it left a blocked squeeze-excite Mul far behind ONNX Runtime's).
    // Rows of one element (a value per row of the full operand, RMSNorm's scale) are not: the general
    // loop runs each full row against the one value, where this one would divide per element.
    constexpr int64_t kShortRow = 64;
    const std::optional<RepeatedRows> b_rows = sa == out ? repeated_rows(sb, out) : std::nullopt;
    const std::optional<RepeatedRows> a_rows = !b_rows && sb == out ? repeated_rows(sa, out) : std::nullopt;
    if (const std::optional<RepeatedRows> rows = b_rows ? b_rows : a_rows;
        rows && rows->repeat > 1 && rows->inner > 1 && rows->inner < kShortRow) {
        const int64_t count = rows->outer * rows->repeat, repeat = rows->repeat;
        const bool parallel = threads > 1 && count * rows->inner >= kParallelThreshold;
        // A row length known at compile time (8: a channel block) lets the compiler unroll it.
        auto run = [&](auto inner_constant, bool b_repeats) {
            const int64_t inner = inner_constant > 0 ? int64_t{inner_constant} : rows->inner;
            for_each_index(count, parallel, threads, [&](int64_t row) {
                const int64_t full = row * inner, repeated = row / repeat * inner;
                if constexpr (inner_constant > 0) {
                    // Whole rows read before they are written: the compiler vectorizes the row
                    // without proving that y does not overlap a or b (it may be one of them).
                    R row_values[inner_constant];
                    for (int64_t k = 0; k < inner_constant; ++k)
                        row_values[k] = b_repeats ? fn(a[full + k], b[repeated + k]) : fn(a[repeated + k], b[full + k]);
                    for (int64_t k = 0; k < inner_constant; ++k) y[full + k] = row_values[k];
                } else if (b_repeats) {
                    for (int64_t k = 0; k < inner; ++k) y[full + k] = fn(a[full + k], b[repeated + k]);
                } else {
                    for (int64_t k = 0; k < inner; ++k) y[full + k] = fn(a[repeated + k], b[full + k]);
                }
            });
        };
        if (rows->inner == 8)
            run(std::integral_constant<int64_t, 8>{}, b_rows.has_value());
        else
            run(std::integral_constant<int64_t, 0>{}, b_rows.has_value());
        return;
    }
    StridedLoop<2> loop(out, {broadcast_strides(sa, out), broadcast_strides(sb, out)});
    loop.for_each_row(
        [&](const auto& offsets, int64_t out_offset, int64_t count, const auto& strides) {
            const TA* pa = a + offsets[0];
            const TB* pb = b + offsets[1];
            R* py = y + out_offset;
            if (strides[0] == 1 && strides[1] == 1) {
                for (int64_t i = 0; i < count; ++i) py[i] = fn(pa[i], pb[i]);
            } else if (strides[0] == 1 && strides[1] == 0) {
                const TB vb = *pb;
                for (int64_t i = 0; i < count; ++i) py[i] = fn(pa[i], vb);
            } else if (strides[0] == 0 && strides[1] == 1) {
                const TA va = *pa;
                for (int64_t i = 0; i < count; ++i) py[i] = fn(va, pb[i]);
            } else {
                for (int64_t i = 0; i < count; ++i) py[i] = fn(pa[i * strides[0]], pb[i * strides[1]]);
            }
        },
        threads);
}

/// y[i] = fn(y[i], b[...]): accumulates `b` (broadcast from `sb`) into the contiguous `y` of shape `out`.
template <typename TB, typename R, typename Fn>
void broadcast_accumulate(const Shape& out, const Shape& sb, const TB* b, R* y, Fn&& fn, int threads) {
    StridedLoop<1> loop(out, {broadcast_strides(sb, out)});
    loop.for_each_row(
        [&](const auto& offsets, int64_t out_offset, int64_t count, const auto& strides) {
            const TB* pb = b + offsets[0];
            R* py = y + out_offset;
            if (strides[0] == 1) {
                for (int64_t i = 0; i < count; ++i) py[i] = fn(py[i], pb[i]);
            } else {
                for (int64_t i = 0; i < count; ++i) py[i] = fn(py[i], pb[i * strides[0]]);
            }
        },
        threads);
}

/// Element-size-generic copies: `dst` (contiguous over `shape`, from `dst_offset`) receives the
/// elements of `src` at `src_offset + sum(index[d] * src_strides[d])`. Works for every dtype,
/// strings included. Strides may be zero (broadcast) or negative (reversed slices).
inline void strided_copy(const Tensor& src, int64_t src_offset, const Shape& shape,
                         const std::vector<int64_t>& src_strides, Tensor& dst, int64_t dst_offset = 0,
                         int threads = 1) {
    StridedLoop<1> loop(shape, {src_strides});
    if (src.dtype() == DataType::kString) {
        const auto& in = src.strings();
        auto& out = dst.strings();
        loop.for_each_row([&](const auto& offsets, int64_t out_offset, int64_t count, const auto& strides) {
            for (int64_t i = 0; i < count; ++i)
                out[dst_offset + out_offset + i] = in[offsets[0] + src_offset + i * strides[0]];
        });
        return;
    }
    const std::size_t size = dtype_size(src.dtype());
    const auto* in = static_cast<const uint8_t*>(src.data());
    auto* out = static_cast<uint8_t*>(dst.data());
    auto typed = [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* typed_in = reinterpret_cast<const T*>(in) + src_offset;
        T* typed_out = reinterpret_cast<T*>(out) + dst_offset;
        loop.for_each_row(
            [&](const auto& offsets, int64_t out_offset, int64_t count, const auto& strides) {
                const T* from = typed_in + offsets[0];
                T* to = typed_out + out_offset;
                if (strides[0] == 1) {
                    std::memcpy(to, from, static_cast<std::size_t>(count) * sizeof(T));
                } else if (strides[0] == 0) {
                    std::fill(to, to + count, *from);
                } else {
                    for (int64_t i = 0; i < count; ++i) to[i] = from[i * strides[0]];
                }
            },
            threads);
    };
    if (!dispatch_size(size, typed)) {
        // Wide types (complex128): byte-wise, one element at a time.
        loop.for_each_row([&](const auto& offsets, int64_t out_offset, int64_t count, const auto& strides) {
            for (int64_t i = 0; i < count; ++i)
                std::memcpy(out + (dst_offset + out_offset + i) * size,
                            in + (src_offset + offsets[0] + i * strides[0]) * size, size);
        });
    }
}

/// Copies `count` consecutive elements (any dtype) from src[src_index] to dst[dst_index].
inline void copy_elements(const Tensor& src, int64_t src_index, Tensor& dst, int64_t dst_index, int64_t count) {
    if (count <= 0) return;
    if (src.dtype() == DataType::kString) {
        std::copy_n(src.strings().begin() + src_index, count, dst.strings().begin() + dst_index);
        return;
    }
    const std::size_t size = dtype_size(src.dtype());
    std::memcpy(static_cast<uint8_t*>(dst.data()) + dst_index * size,
                static_cast<const uint8_t*>(src.data()) + src_index * size, static_cast<std::size_t>(count) * size);
}

}  // namespace polygraphy::ref
