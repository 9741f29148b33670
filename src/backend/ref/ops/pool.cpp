// MaxPool (with optional Indices), AveragePool, LpPool, their Global* forms, and MaxUnpool (which
// scatters pooled values back to the indices MaxPool gave). Pooling is
// memory-bound: a direct loop over the plain NCHW planes (OpenMP over N*C planes, valid tap ranges
// precomputed per output coordinate) needs no layout reorders and handles every attribute.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/vector_math.h"
#include "backend/ref/compute/window_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

using window::ceil_div;
using window::Geometry;
using window::WindowAttrs;

enum class PoolKind { kMax, kAverage, kLp };

/// Window bounds of one output coordinate along one dim: taps [lo, hi) are inside the input, and
/// `padded` taps are inside the padded input (AveragePool's count_include_pad divisor).
struct TapRange {
    int64_t start;  ///< input position of tap 0
    int64_t lo;
    int64_t hi;
    int64_t padded;
};

std::vector<TapRange> tap_ranges(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                                 int64_t pad_begin, int64_t pad_end) {
    std::vector<TapRange> ranges(static_cast<std::size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
        TapRange& r = ranges[static_cast<std::size_t>(o)];
        r.start = o * stride - pad_begin;
        r.lo = std::max<int64_t>(0, ceil_div(-r.start, dilation));
        r.hi = std::min<int64_t>(kernel, ceil_div(in - r.start, dilation));
        if (r.hi < r.lo) r.hi = r.lo;
        const int64_t plo = std::max<int64_t>(0, ceil_div(-pad_begin - r.start, dilation));
        const int64_t phi = std::min<int64_t>(kernel, ceil_div(in + pad_end - r.start, dilation));
        r.padded = std::max<int64_t>(0, phi - plo);
    }
    return ranges;
}

/// A window of up to 3 spatial dims seen as (D, H, W); missing leading dims have size 1.
struct Window3 {
    int64_t in[3];
    int64_t out[3];
    int64_t dilation[3];
    int64_t kernel[3];
    int64_t stride[3];
    int64_t pad_begin[3];
    std::vector<TapRange> ranges[3];

    explicit Window3(const Geometry& g) {
        const std::size_t shift = 3 - g.rank();
        for (std::size_t d = 0; d < 3; ++d) {
            if (d < shift) {
                in[d] = out[d] = dilation[d] = kernel[d] = stride[d] = 1;
                pad_begin[d] = 0;
                ranges[d] = tap_ranges(1, 1, 1, 1, 1, 0, 0);
                continue;
            }
            const std::size_t s = d - shift;
            in[d] = g.input[s];
            out[d] = g.output[s];
            dilation[d] = g.dilations[s];
            kernel[d] = g.kernel[s];
            stride[d] = g.strides[s];
            pad_begin[d] = g.pad_begin[s];
            ranges[d] = tap_ranges(g.input[s], g.output[s], g.kernel[s], g.strides[s], g.dilations[s], g.pad_begin[s],
                                   g.pad_end[s]);
        }
    }
    int64_t in_size() const { return in[0] * in[1] * in[2]; }
    int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

template <typename T>
T lowest_value() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
}

/// max(best, value) where a NaN wins and stays (PyTorch max_pool semantics).
template <typename T>
inline bool takes_over(T value, T best) {
    if constexpr (std::is_floating_point_v<T>) {
        return value > best || (value != value && best == best);
    } else {
        return value > best;
    }
}

/// MaxPool over planes recording, for each maximum, its flat NCHW index (column-major over the
/// spatial dims when `column_major`; the first maximum wins ties; NaN wins like in PyTorch).
template <typename T>
void max_pool_with_indices(const Window3& w, int64_t planes, const T* x, T* y, int64_t* indices, bool column_major,
                           int threads) {
    const int64_t in_size = w.in_size();
    const int64_t out_size = w.out_size();
    onednn::parallel_for(planes, threads, out_size * 9, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
            const T* xp = x + plane * in_size;
            T* yp = y + plane * out_size;
            int64_t o = 0;
            for (int64_t od = 0; od < w.out[0]; ++od) {
                const TapRange& rd = w.ranges[0][static_cast<std::size_t>(od)];
                for (int64_t oh = 0; oh < w.out[1]; ++oh) {
                    const TapRange& rh = w.ranges[1][static_cast<std::size_t>(oh)];
                    for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
                        const TapRange& rw = w.ranges[2][static_cast<std::size_t>(ow)];
                        T best = lowest_value<T>();
                        int64_t best_d = -1, best_h = 0, best_w = 0;
                        for (int64_t kd = rd.lo; kd < rd.hi; ++kd) {
                            const int64_t id = rd.start + kd * w.dilation[0];
                            for (int64_t kh = rh.lo; kh < rh.hi; ++kh) {
                                const int64_t ih = rh.start + kh * w.dilation[1];
                                const T* row = xp + (id * w.in[1] + ih) * w.in[2] + rw.start;
                                for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
                                    const T value = row[kw * w.dilation[2]];
                                    if (best_d < 0 || takes_over(value, best)) {
                                        best = value;
                                        best_d = id;
                                        best_h = ih;
                                        best_w = rw.start + kw * w.dilation[2];
                                    }
                                }
                            }
                        }
                        yp[o] = best;
                        int64_t index = 0;
                        if (best_d >= 0) {
                            index = column_major ? best_d + w.in[0] * (best_h + w.in[1] * best_w)
                                                 : (best_d * w.in[1] + best_h) * w.in[2] + best_w;
                        }
                        indices[plane * out_size + o] = plane * in_size + index;
                    }
                }
            }
        }
    });
}

enum class Reduction { kMax, kSum, kSquareSum, kPowerSum };

/// acc[i] = max(acc[i], v[i * step]), `acc` (the earlier taps) winning ties such as -0 vs +0. With
/// kKeepNaN a NaN in either wins (one more unordered compare); without, `b > a ? b : a` is one
/// maxps. Both forms are branch-free, so the loops vectorize.
template <bool kKeepNaN, typename T>
void max_into(T* acc, const T* v, int64_t n, int64_t step) {
    auto max = [](T a, T b) {
        if constexpr (kKeepNaN)
            return (b > a || b != b) ? b : a;
        else
            return b > a ? b : a;
    };
    if (step == 1) {
        for (int64_t i = 0; i < n; ++i) acc[i] = max(acc[i], v[i]);
    } else {
        for (int64_t i = 0; i < n; ++i) acc[i] = max(acc[i], v[i * step]);
    }
}

/// Whether `x` holds a NaN: MaxPool pays for NaN-keeping maxima only on planes that have one.
template <typename T>
bool contains_nan(const T* x, int64_t n) {
    if constexpr (std::is_floating_point_v<T>) {
        int found = 0;
        for (int64_t i = 0; i < n; ++i) found |= x[i] != x[i];
        return found != 0;
    } else {
        return false;
    }
}

/// MaxPool's horizontal pass over one output row: y[ow] = max over taps k of row[ow * stride + k *
/// dilation], in tap order. A stride-2 undilated window (the CNN stems and squeezenet's pools)
/// first splits the row into its even and odd positions, so that every tap reads a unit-stride run
/// and the loops vectorize; other geometries read the row with a stride. `phases` is scratch of at
/// least `padded` elements. With kKeepNaN every NaN comes out as the quiet NaN.
template <bool kKeepNaN, typename T>
void max_over_row_taps(const T* row, int64_t padded, int64_t out_width, int64_t stride, int64_t dilation, int64_t taps,
                       T* phases, T* y) {
    const bool split = stride == 2 && dilation == 1;
    T* even = phases;
    T* odd = phases + (padded + 1) / 2;
    if (split) {
        const int64_t pairs = padded / 2;
        for (int64_t i = 0; i < pairs; ++i) {
            even[i] = row[2 * i];
            odd[i] = row[2 * i + 1];
        }
        if (padded % 2 != 0) even[pairs] = row[padded - 1];
    }
    // Tap k of output ow is at position 2 * ow + k: even[ow + k / 2] or odd[ow + k / 2].
    auto tap = [&](int64_t k) -> const T* { return split ? (k % 2 == 0 ? even : odd) + k / 2 : row + k * dilation; };
    const int64_t step = split ? 1 : stride;
    const T* first = tap(0);
    for (int64_t ow = 0; ow < out_width; ++ow) y[ow] = first[ow * step];
    for (int64_t k = 1; k < taps; ++k) max_into<kKeepNaN>(y, tap(k), out_width, step);
    if constexpr (kKeepNaN) {
        for (int64_t ow = 0; ow < out_width; ++ow) y[ow] = y[ow] != y[ow] ? std::numeric_limits<T>::quiet_NaN() : y[ow];
    }
}

/// Pooling without indices, as two separable passes per output row: the window's input rows are
/// first combined elementwise into one row (padded on both sides with the reduction's identity),
/// then the output row combines that row's taps, tap by tap across the whole row. Both passes are
/// unit- or constant-stride loops without branches, so they vectorize. Max keeps NaNs (like PyTorch,
/// see max_over_row_taps); sums finish as average or Lp norm.
template <typename T, Reduction kReduction>
void separable_pool(const Window3& w, int64_t planes, const T* x, T* y, bool count_include_pad, double p, int threads) {
    using Acc = std::conditional_t<kReduction == Reduction::kMax, T,
                                   std::conditional_t<std::is_same_v<T, double>, double, float>>;
    const int64_t in_size = w.in_size();
    const int64_t out_size = w.out_size();
    const int64_t width = w.in[2];
    const int64_t out_width = w.out[2];
    const int64_t stride = w.stride[2];
    const int64_t dilation = w.dilation[2];
    const int64_t taps = w.kernel[2];
    const int64_t left = w.pad_begin[2];
    // Padded row: [left identities][width values][identities up to the last tap of the last window].
    const int64_t padded = std::max(left + width, (out_width - 1) * stride + (taps - 1) * dilation + 1);
    const Acc identity = kReduction == Reduction::kMax ? static_cast<Acc>(lowest_value<T>()) : Acc{0};
    // Horizontal part of each output's divisor (AveragePool).
    std::vector<Acc> width_counts(static_cast<std::size_t>(out_width));
    for (int64_t ow = 0; ow < out_width; ++ow) {
        const TapRange& rw = w.ranges[2][static_cast<std::size_t>(ow)];
        width_counts[static_cast<std::size_t>(ow)] = static_cast<Acc>(count_include_pad ? rw.padded : rw.hi - rw.lo);
    }
    auto map = [p](T v) -> Acc {
        (void)p;  // used by kPowerSum only (clang warns about the capture otherwise)
        if constexpr (kReduction == Reduction::kSquareSum) return static_cast<Acc>(v) * static_cast<Acc>(v);
        else if constexpr (kReduction == Reduction::kPowerSum) return static_cast<Acc>(std::pow(std::abs(static_cast<double>(v)), p));
        else return static_cast<Acc>(v);
    };
    onednn::parallel_for(planes, threads, out_size * 9, [&, in_size, out_size, width, out_width, stride, dilation, taps,
                                                          left, padded, identity](int64_t begin, int64_t end) {
        // (Sizes are captured by value so the stores below cannot alias them: the loops vectorize.)
        std::vector<Acc> row_buffer(static_cast<std::size_t>(padded), identity);
        // Max writes its output rows directly and needs the row split in two phases; sums accumulate.
        constexpr bool kMax = kReduction == Reduction::kMax;
        std::vector<Acc> phase_buffer(kMax ? static_cast<std::size_t>(padded) : 0);
        std::vector<Acc> acc_buffer(kMax ? 0 : static_cast<std::size_t>(out_width));
        Acc* row = row_buffer.data();
        Acc* inner = row + left;
        Acc* phases = phase_buffer.data();
        Acc* acc = acc_buffer.data();
        for (int64_t plane = begin; plane < end; ++plane) {
            const T* xp = x + plane * in_size;
            T* yp = y + plane * out_size;
            const bool keep_nan = kMax && contains_nan(xp, in_size);
            for (int64_t od = 0; od < w.out[0]; ++od) {
                const TapRange& rd = w.ranges[0][static_cast<std::size_t>(od)];
                for (int64_t oh = 0; oh < w.out[1]; ++oh) {
                    const TapRange& rh = w.ranges[1][static_cast<std::size_t>(oh)];
                    // Vertical: combine the window's input rows.
                    bool first = true;
                    for (int64_t kd = rd.lo; kd < rd.hi; ++kd) {
                        const int64_t id = rd.start + kd * w.dilation[0];
                        for (int64_t kh = rh.lo; kh < rh.hi; ++kh) {
                            const T* in_row = xp + (id * w.in[1] + rh.start + kh * w.dilation[1]) * width;
                            if (first) {
                                for (int64_t j = 0; j < width; ++j) inner[j] = map(in_row[j]);
                                first = false;
                            } else if constexpr (kReduction == Reduction::kMax) {
                                if (keep_nan)
                                    max_into<true>(inner, in_row, width, 1);
                                else
                                    max_into<false>(inner, in_row, width, 1);
                            } else {
                                for (int64_t j = 0; j < width; ++j) inner[j] += map(in_row[j]);
                            }
                        }
                    }
                    if (first) std::fill(inner, inner + width, identity);
                    T* out_row = yp + (od * w.out[1] + oh) * out_width;
                    // Horizontal: tap by tap over the whole output row.
                    if constexpr (kMax) {
                        if (keep_nan)
                            max_over_row_taps<true>(row, padded, out_width, stride, dilation, taps, phases, out_row);
                        else
                            max_over_row_taps<false>(row, padded, out_width, stride, dilation, taps, phases, out_row);
                        continue;
                    }
                    for (int64_t ow = 0; ow < out_width; ++ow) acc[ow] = row[ow * stride];
                    for (int64_t k = 1; k < taps; ++k) {
                        const Acc* tap = row + k * dilation;
                        for (int64_t ow = 0; ow < out_width; ++ow) acc[ow] += tap[ow * stride];
                    }
                    if constexpr (kReduction == Reduction::kSum) {
                        const Acc rows = static_cast<Acc>(count_include_pad ? rd.padded * rh.padded
                                                                            : (rd.hi - rd.lo) * (rh.hi - rh.lo));
                        for (int64_t ow = 0; ow < out_width; ++ow) {
                            out_row[ow] = static_cast<T>(acc[ow] / (rows * width_counts[static_cast<std::size_t>(ow)]));
                        }
                    } else if constexpr (kReduction == Reduction::kSquareSum) {
                        for (int64_t ow = 0; ow < out_width; ++ow) out_row[ow] = static_cast<T>(std::sqrt(acc[ow]));
                    } else {
                        for (int64_t ow = 0; ow < out_width; ++ow) {
                            out_row[ow] = static_cast<T>(std::pow(static_cast<double>(acc[ow]), 1.0 / p));
                        }
                    }
                }
            }
        }
    });
}

template <typename T>
void max_pool(const Window3& w, int64_t planes, const T* x, T* y, int64_t* indices, bool column_major, int threads) {
    if (indices != nullptr) max_pool_with_indices<T>(w, planes, x, y, indices, column_major, threads);
    else separable_pool<T, Reduction::kMax>(w, planes, x, y, false, 0.0, threads);
}

/// AveragePool (p == 0) or LpPool (p >= 1) over planes.
template <typename T>
void average_or_lp_pool(const Window3& w, int64_t planes, const T* x, T* y, bool count_include_pad, double p,
                        int threads) {
    if (p == 0.0) separable_pool<T, Reduction::kSum>(w, planes, x, y, count_include_pad, p, threads);
    else if (p == 2.0) separable_pool<T, Reduction::kSquareSum>(w, planes, x, y, false, p, threads);
    else separable_pool<T, Reduction::kPowerSum>(w, planes, x, y, false, p, threads);
}

void check_pool_input(const NodeInfo& node, const Tensor& x, int64_t min_rank) {
    if (x.rank() < min_rank) {
        node.fail("input X must have rank >= " + std::to_string(min_rank) + " (N, C and spatial dims)\nNote: X shape = " +
                  shape_to_string(x.shape()));
    }
}

/// MaxPool of one channel block of a channel-blocked float32 tensor [N, C/B, H, W, B]
/// (kBlockedInputAttr, B a multiple of 8): max_pool()'s windows, each 8 channels of a position as
/// one vector (compiled for AVX-512/AVX2 too). As max_pool(), a NaN in the window gives NaN: the
/// maximum is one max instruction per tap, and whether a NaN was seen is tracked beside it, off the
/// maximum's dependency chain.
POLYGRAPHY_VECTOR_CLONES void max_pool_block(const Window3& w, int64_t block, const float* xb, float* yb) {
    using V = Float8Lanes;
    typedef int32_t Mask __attribute__((vector_size(32), aligned(4)));
    constexpr int64_t kLanes = sizeof(V) / sizeof(float);
    // A whole 3x3 window (dilation 1) has its nine taps at fixed offsets: unrolled (squeezenet1_1's
    // pools took 2.5x ONNX Runtime's time through the general loop).
    const bool three_by_three = w.kernel[1] == 3 && w.kernel[2] == 3 && w.dilation[1] == 1 && w.dilation[2] == 1;
    // The lambda takes vectors by reference: a 32-byte vector passed or returned by value has another
    // ABI in the clone without AVX (GCC's -Wpsabi). Two taps at a time keep the maxima's chain short.
    auto take_two = [](V& best, Mask& nan, const float* p, const float* q) {
        const V a = *reinterpret_cast<const V*>(p), b = *reinterpret_cast<const V*>(q);
        const V larger = a > b ? a : b;
        best = larger > best ? larger : best;
        nan |= (a != a) | (b != b);
    };
    for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        const TapRange& rh = w.ranges[1][static_cast<std::size_t>(oh)];
        const bool full_rows = three_by_three && rh.lo == 0 && rh.hi == 3;
        for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            const TapRange& rw = w.ranges[2][static_cast<std::size_t>(ow)];
            float* y = yb + (oh * w.out[2] + ow) * block;
            if (full_rows && rw.lo == 0 && rw.hi == 3) {
                const int64_t row = w.in[2] * block;
                for (int64_t lane = 0; lane < block; lane += kLanes) {
                    const float* r0 = xb + (rh.start * w.in[2] + rw.start) * block + lane;
                    V best = V{} - std::numeric_limits<float>::infinity(), other = best;
                    Mask nan{}, other_nan{};
                    take_two(best, nan, r0, r0 + block);
                    take_two(other, other_nan, r0 + 2 * block, r0 + row);
                    take_two(best, nan, r0 + row + block, r0 + row + 2 * block);
                    take_two(other, other_nan, r0 + 2 * row, r0 + 2 * row + block);
                    take_two(best, nan, r0 + 2 * row + 2 * block, r0 + 2 * row + 2 * block);
                    best = other > best ? other : best;
                    nan |= other_nan;
                    *reinterpret_cast<V*>(y + lane) = nan != 0 ? V{} + std::numeric_limits<float>::quiet_NaN() : best;
                }
                continue;
            }
            for (int64_t lane = 0; lane < block; lane += kLanes) {
                V best = V{} - std::numeric_limits<float>::infinity();
                Mask nan{};
                for (int64_t kh = rh.lo; kh < rh.hi; ++kh) {
                    const float* row = xb + ((rh.start + kh * w.dilation[1]) * w.in[2] + rw.start) * block + lane;
                    for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
                        const V v = *reinterpret_cast<const V*>(row + kw * w.dilation[2] * block);
                        best = v > best ? v : best;
                        nan |= v != v;
                    }
                }
                *reinterpret_cast<V*>(y + lane) = nan != 0 ? V{} + std::numeric_limits<float>::quiet_NaN() : best;
            }
        }
    }
}

/// max_pool_block() over every block of `block` channels, on up to `threads` threads.
void max_pool_blocked(const Window3& w, int64_t blocks, int64_t block, const float* x, float* y, int threads) {
    static_assert(kNarrowChannelBlock * sizeof(float) == sizeof(Float8Lanes), "a narrow channel block is one vector");
    static_assert(kWideChannelBlock % kNarrowChannelBlock == 0, "a wide channel block is whole vectors");
    const int64_t in_size = w.in_size() * block;
    const int64_t out_size = w.out_size() * block;
    onednn::parallel_for(blocks, threads, out_size * 9, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) max_pool_block(w, block, x + b * in_size, y + b * out_size);
    });
}

class PoolKernel final : public Kernel {
public:
    /// `blocked`: kRuntimeDomain's BlockedMaxPool, whose X (and Y) are channel-blocked.
    PoolKernel(const NodeInfo& node, PoolKind kind, bool blocked = false)
        : kind_(kind), input_block_(blocked ? onednn::channel_block(node, kBlockedInputAttr) : 0) {
        const int64_t opset = node.opset();
        const bool has_dilations = kind == PoolKind::kMax ? opset >= 10 : kind == PoolKind::kAverage ? opset >= 19 : opset >= 18;
        const bool has_ceil_mode = kind == PoolKind::kLp ? opset >= 18 : opset >= 10;
        attrs_ = window::parse_window_attrs(node, /*kernel_shape_required=*/true, has_dilations, has_ceil_mode);
        const std::size_t rank = attrs_.kernel_shape.size();
        if (rank > 3) {
            throw UnsupportedError("Node '" + node.name() + "' (" + node.op_type() +
                                   "): pooling over more than 3 spatial dims is not supported\nNote: kernel_shape = " +
                                   ints_to_string(attrs_.kernel_shape));
        }
        for (std::size_t d = 0; d < attrs_.pads.size(); ++d) {
            const std::size_t axis = d % rank;
            const int64_t dilation = attrs_.dilations.empty() ? 1 : attrs_.dilations[axis];
            if (attrs_.pads[d] >= (attrs_.kernel_shape[axis] - 1) * dilation + 1) {
                node.fail("attribute 'pads' must be smaller than the kernel\nNote: pads = " +
                          ints_to_string(attrs_.pads) + ", kernel_shape = " +
                          ints_to_string(attrs_.kernel_shape));
            }
        }
        if (kind == PoolKind::kMax) {
            storage_order_ = node.attr_int("storage_order", 0);
            if (storage_order_ != 0 && storage_order_ != 1) {
                node.fail("attribute 'storage_order' must be 0 or 1\nNote: storage_order = " + std::to_string(storage_order_));
            }
            const auto& outputs = node.proto().output();
            want_indices_ = outputs.size() > 1 && !outputs[1].empty();
        } else if (kind == PoolKind::kAverage) {
            const int64_t include = node.attr_int("count_include_pad", 0);
            if (include != 0 && include != 1) {
                node.fail("attribute 'count_include_pad' must be 0 or 1\nNote: count_include_pad = " + std::to_string(include));
            }
            count_include_pad_ = include == 1;
        } else {
            p_ = read_p(node);
        }
        if (input_block_ != 0 && (kind != PoolKind::kMax || want_indices_ || rank != 2)) {
            throw InternalError("Node '" + node.name() +
                                "': only a 2-D MaxPool without Indices takes a channel-blocked input");
        }
    }

    /// LpPool-1 has a float `p`, later versions an int.
    static double read_p(const NodeInfo& node) {
        const onnx::AttributeProto* attr = node.attr("p");
        double p = 2.0;
        if (attr != nullptr) {
            p = attr->type() == onnx::AttributeProto::FLOAT ? static_cast<double>(attr->f()) : static_cast<double>(attr->i());
        }
        if (!(p >= 1.0)) node.fail("attribute 'p' must be >= 1\nNote: p = " + std::to_string(p));
        return p;
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        if (input_block_ != 0) {
            const Shape plain = onednn::unblocked_shape(node, x, input_block_);
            const Geometry geometry =
                window::resolve_geometry(node, attrs_, {plain[2], plain[3]}, attrs_.kernel_shape);
            const Shape out_shape = {plain[0], plain[1], geometry.output[0], geometry.output[1]};
            Tensor& y = context.allocate_uninitialized_output(0, DataType::kFloat32,
                                                              onednn::blocked_shape(out_shape, input_block_));
            max_pool_blocked(Window3(geometry), x.shape()[0] * x.shape()[1], input_block_, x.data_as<float>(),
                             y.data_as<float>(), context.num_threads());
            return;
        }
        check_pool_input(node, x, 3);
        const DataType dtype = x.dtype();
        const bool int8 = dtype == DataType::kInt8 || dtype == DataType::kUInt8;
        if (!is_float_type(dtype) && !(kind_ == PoolKind::kMax && int8)) {
            onednn::fail_dtype(node, "input X", dtype,
                               kind_ == PoolKind::kMax ? "float32, float64, float16, bfloat16, int8, uint8"
                                                       : "float32, float64, float16, bfloat16");
        }
        const std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
        const Geometry geometry = window::resolve_geometry(node, attrs_, spatial, attrs_.kernel_shape);
        Shape out_shape = {x.shape()[0], x.shape()[1]};
        out_shape.insert(out_shape.end(), geometry.output.begin(), geometry.output.end());
        const int64_t planes = x.shape()[0] * x.shape()[1];
        const Window3 window(geometry);
        const int threads = context.num_threads();

        if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
            const Tensor x32 = x.cast(DataType::kFloat32);
            Tensor y32 = Tensor::uninitialized(DataType::kFloat32, out_shape);
            int64_t* indices = allocate_indices(context, out_shape);
            run<float>(window, planes, x32, y32, indices, threads);
            context.set_output(0, y32.cast(dtype));
            return;
        }
        // Every output element (and index) is written.
        Tensor& y = context.allocate_uninitialized_output(0, dtype, out_shape);
        int64_t* indices = allocate_indices(context, out_shape);
        switch (dtype) {
            case DataType::kFloat32: run<float>(window, planes, x, y, indices, threads); break;
            case DataType::kFloat64: run<double>(window, planes, x, y, indices, threads); break;
            case DataType::kInt8: run<int8_t>(window, planes, x, y, indices, threads); break;
            case DataType::kUInt8: run<uint8_t>(window, planes, x, y, indices, threads); break;
            default: break;
        }
    }

private:
    int64_t* allocate_indices(KernelContext& context, const Shape& out_shape) const {
        if (!want_indices_ || context.num_outputs() < 2) return nullptr;
        return context.allocate_uninitialized_output(1, DataType::kInt64, out_shape).data_as<int64_t>();
    }

    template <typename T>
    void run(const Window3& window, int64_t planes, const Tensor& x, Tensor& y, int64_t* indices, int threads) const {
        if (kind_ == PoolKind::kMax) {
            max_pool<T>(window, planes, x.data_as<T>(), y.data_as<T>(), indices, storage_order_ == 1, threads);
        } else if constexpr (std::is_floating_point_v<T>) {
            average_or_lp_pool<T>(window, planes, x.data_as<T>(), y.data_as<T>(), count_include_pad_,
                                  kind_ == PoolKind::kLp ? p_ : 0.0, threads);
        }
    }

    PoolKind kind_;
    int64_t input_block_;  ///< X's (and so Y's) channel block, 0: NCHW (2-D MaxPool only)
    WindowAttrs attrs_;
    int64_t storage_order_ = 0;
    bool want_indices_ = false;
    bool count_include_pad_ = false;
    double p_ = 2.0;
};

/// GlobalMaxPool / GlobalAveragePool / GlobalLpPool: one value per (n, c) plane.
template <typename T>
void global_pool(PoolKind kind, double p, int64_t planes, int64_t plane_size, const T* x, T* y, int threads) {
    onednn::parallel_for(planes, threads, plane_size, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
            const T* xp = x + plane * plane_size;
            if (kind == PoolKind::kMax) {
                T best = lowest_value<T>();
                for (int64_t i = 0; i < plane_size; ++i) {
                    if (i == 0 || takes_over(xp[i], best)) best = xp[i];
                }
                y[plane] = best;
            } else if (kind == PoolKind::kAverage) {
                y[plane] = static_cast<T>(onednn::lane_sum(xp, plane_size) / static_cast<double>(plane_size));
            } else {
                double sum = 0;
                for (int64_t i = 0; i < plane_size; ++i) sum += std::pow(std::abs(static_cast<double>(xp[i])), p);
                y[plane] = static_cast<T>(std::pow(sum, 1.0 / p));
            }
        }
    });
}

/// The means of one channel block's plane for GlobalAveragePool: lane l of y is the mean of lane l
/// over the plane's `positions`, summed in double as global_pool() does, four positions at a time
/// into separate sums so that the additions do not wait on each other.
template <int64_t kBlock>
__attribute__((always_inline)) inline void blocked_plane_means(const float* xb, int64_t positions, float* y) {
    constexpr int64_t kWays = 4;
    double sums[kWays][kBlock] = {};
    int64_t i = 0;
    for (; i + kWays <= positions; i += kWays)
        for (int64_t way = 0; way < kWays; ++way)
            for (int64_t lane = 0; lane < kBlock; ++lane) sums[way][lane] += xb[(i + way) * kBlock + lane];
    for (; i < positions; ++i)
        for (int64_t lane = 0; lane < kBlock; ++lane) sums[0][lane] += xb[i * kBlock + lane];
    for (int64_t lane = 0; lane < kBlock; ++lane) {
        const double sum = (sums[0][lane] + sums[1][lane]) + (sums[2][lane] + sums[3][lane]);
        y[lane] = static_cast<float>(sum / static_cast<double>(positions));
    }
}

// The block size is a constant in each, so the lanes are vectors (a loop over a variable block does
// not vectorize).
POLYGRAPHY_VECTOR_CLONES void narrow_blocked_plane_means(const float* xb, int64_t positions, float* y) {
    blocked_plane_means<kNarrowChannelBlock>(xb, positions, y);
}
POLYGRAPHY_VECTOR_CLONES void wide_blocked_plane_means(const float* xb, int64_t positions, float* y) {
    blocked_plane_means<kWideChannelBlock>(xb, positions, y);
}

/// GlobalAveragePool of a channel-blocked float32 tensor [N, C/B, HW..., B] (kBlockedInputAttr)
/// into [N, C/B, 1, 1, B], which holds the bytes of [N, C, 1, 1].
void global_average_pool_blocked(const Tensor& x, Tensor& y, int threads) {
    const Shape& shape = x.shape();
    const int64_t blocks = shape[0] * shape[1];
    const int64_t plane_size = shape[2] * shape[3];
    const int64_t block = shape[4];
    const auto plane_means = block == kWideChannelBlock ? wide_blocked_plane_means : narrow_blocked_plane_means;
    const float* xs = x.data_as<float>();
    float* ys = y.data_as<float>();
    onednn::parallel_for(blocks, threads, plane_size * block, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) plane_means(xs + b * plane_size * block, plane_size, ys + b * block);
    });
}

class GlobalPoolKernel final : public Kernel {
public:
    /// `blocked`: kRuntimeDomain's BlockedGlobalAveragePool (fused_ops.h).
    GlobalPoolKernel(const NodeInfo& node, PoolKind kind, bool blocked = false)
        : kind_(kind),
          input_block_(blocked ? onednn::channel_block(node, kBlockedInputAttr) : 0),
          output_block_(blocked ? onednn::channel_block(node, kBlockedOutputAttr) : 0) {
        if (kind == PoolKind::kLp) p_ = PoolKernel::read_p(node);
        if ((input_block_ != 0 || output_block_ != 0) && kind != PoolKind::kAverage)
            throw InternalError("Node '" + node.name() + "': only GlobalAveragePool takes a channel-blocked input");
        if (output_block_ != 0 && input_block_ == 0)
            throw InternalError("Node '" + node.name() + "': a channel-blocked output needs a channel-blocked input");
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        if (input_block_ != 0) {
            const Shape plain = onednn::unblocked_shape(node, x, input_block_);
            if (plain[2] * plain[3] == 0)
                node.fail("input X has an empty spatial extent\nNote: X shape = " + shape_to_string(plain));
            // [N, C, 1, 1] and its blocked forms [N, C/B, 1, 1, B] hold the same bytes: one kernel
            // writes any of them.
            const Shape plain_out = {plain[0], plain[1], 1, 1};
            Tensor& y = context.allocate_uninitialized_output(
                0, DataType::kFloat32,
                output_block_ != 0 ? onednn::blocked_shape(plain_out, output_block_) : plain_out);
            global_average_pool_blocked(x, y, context.num_threads());
            return;
        }
        check_pool_input(node, x, 2);
        const DataType dtype = x.dtype();
        if (!is_float_type(dtype)) onednn::fail_dtype(node, "input X", dtype, "float32, float64, float16, bfloat16");
        Shape out_shape = x.shape();
        for (std::size_t d = 2; d < out_shape.size(); ++d) out_shape[d] = 1;
        const int64_t planes = x.shape()[0] * x.shape()[1];
        const int64_t plane_size = planes == 0 ? 0 : x.numel() / planes;
        if (plane_size == 0 && planes > 0) {
            node.fail("input X has an empty spatial extent\nNote: X shape = " + shape_to_string(x.shape()));
        }
        const int threads = context.num_threads();
        if (dtype == DataType::kFloat32 || dtype == DataType::kFloat64) {
            Tensor& y = context.allocate_uninitialized_output(0, dtype, out_shape);  // one value per plane
            if (dtype == DataType::kFloat32) {
                global_pool<float>(kind_, p_, planes, plane_size, x.data_as<float>(), y.data_as<float>(), threads);
            } else {
                global_pool<double>(kind_, p_, planes, plane_size, x.data_as<double>(), y.data_as<double>(), threads);
            }
            return;
        }
        const Tensor x32 = x.cast(DataType::kFloat32);
        Tensor y32 = Tensor::uninitialized(DataType::kFloat32, out_shape);
        global_pool<float>(kind_, p_, planes, plane_size, x32.data_as<float>(), y32.data_as<float>(), threads);
        context.set_output(0, y32.cast(dtype));
    }

private:
    PoolKind kind_;
    int64_t input_block_;   ///< X's channel block, 0: NCHW (only GlobalAveragePool)
    int64_t output_block_;  ///< Y's (kBlockedOutputAttr; 0: [N, C, 1, 1])
    double p_ = 2.0;
};

template <PoolKind kKind>
KernelFactory pool_factory() {
    return [](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<PoolKernel>(node, kKind); };
}

template <PoolKind kKind>
KernelFactory global_pool_factory() {
    return [](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<GlobalPoolKernel>(node, kKind); };
}

class MaxUnpoolKernel final : public Kernel {
public:
    explicit MaxUnpoolKernel(const NodeInfo& node) : kernel_(node.attr_ints("kernel_shape")) {
        if (kernel_.empty()) node.fail("attribute 'kernel_shape' is required");
        for (int64_t k : kernel_)
            if (k <= 0) node.fail(fmt::format("attribute 'kernel_shape' values must be positive, but one is {}", k));
        strides_ = window::ints_or(node, "strides", kernel_.size(), 1, true);
        pads_ = window::ints_or(node, "pads", 2 * kernel_.size(), 0, false);
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& indices = context.required_input(1);
        const std::size_t rank = kernel_.size();
        if (x.rank() != static_cast<int64_t>(rank) + 2)
            node.fail(fmt::format("input X must have rank {} (kernel_shape has {} values), but it has shape {}",
                                  rank + 2, rank, shape_to_string(x.shape())));
        if (indices.shape() != x.shape())
            node.fail(fmt::format("input I must have the shape of X {}, but it has shape {}",
                                  shape_to_string(x.shape()), shape_to_string(indices.shape())));
        Shape out_shape{x.shape()[0], x.shape()[1]};
        for (std::size_t d = 0; d < rank; ++d)
            out_shape.push_back((x.shape()[d + 2] - 1) * strides_[d] - (pads_[d] + pads_[rank + d]) + kernel_[d]);
        // Indices address the default (inferred) output; a larger output_shape keeps their coordinates
        // (the extra rows and columns stay zero), as ONNX Runtime and the test data do.
        const Shape inferred = out_shape;
        if (const Tensor* given = context.input(2); given && given->defined()) {
            const std::vector<int64_t> shape = read_ints(node, *given, "output_shape");
            if (shape.size() != out_shape.size())
                node.fail(
                    fmt::format("output_shape must have {} values, but it has {}", out_shape.size(), shape.size()));
            for (std::size_t d = 0; d < shape.size(); ++d)
                if (shape[d] < inferred[d])
                    node.fail(fmt::format("output_shape {} is smaller than the unpooled shape {}",
                                          shape_to_string(Shape(shape.begin(), shape.end())),
                                          shape_to_string(inferred)));
            out_shape.assign(shape.begin(), shape.end());
        }
        Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
        std::vector<int64_t> where = read_ints(node, indices, "I");
        const int64_t inferred_count = shape_volume(inferred);
        if (out_shape != inferred) {
            for (int64_t& flat : where) {
                if (flat < 0 || flat >= inferred_count) continue;  // reported below
                int64_t rest = flat, mapped = 0, stride = 1;
                for (std::size_t d = inferred.size(); d-- > 0;) {
                    mapped += (rest % inferred[d]) * stride;
                    rest /= inferred[d];
                    stride *= out_shape[d];
                }
                flat = mapped;
            }
        }
        const std::size_t element = dtype_size(x.dtype());
        if (element == 0) unsupported_dtype(node, x.dtype());
        for (int64_t i = 0; i < x.numel(); ++i) {
            if (where[i] < 0 || where[i] >= y.numel())
                node.fail(
                    fmt::format("index {} in I is out of range for an output of {} elements", where[i], y.numel()));
            std::memcpy(static_cast<unsigned char*>(y.data()) + where[i] * element,
                        static_cast<const unsigned char*>(x.data()) + i * element, element);
        }
    }

private:
    std::vector<int64_t> kernel_, strides_, pads_;
};

}  // namespace

void register_pool_ops(OpRegistry& registry) {
    registry.add("", "MaxPool", 1, kMaxOpset, pool_factory<PoolKind::kMax>());
    registry.add("", "AveragePool", 1, kMaxOpset, pool_factory<PoolKind::kAverage>());
    registry.add("", "LpPool", 1, kMaxOpset, pool_factory<PoolKind::kLp>());
    registry.add("", "GlobalMaxPool", 1, kMaxOpset, global_pool_factory<PoolKind::kMax>());
    registry.add("", "GlobalAveragePool", 1, kMaxOpset, global_pool_factory<PoolKind::kAverage>());
    registry.add("", "GlobalLpPool", 1, kMaxOpset, global_pool_factory<PoolKind::kLp>());
    registry.add("", "MaxUnpool", 9, kMaxOpset, make_factory<MaxUnpoolKernel>());
    registry.add(kRuntimeDomain, "BlockedMaxPool", 1, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<PoolKernel>(node, PoolKind::kMax, true);
    });
    registry.add(kRuntimeDomain, "BlockedGlobalAveragePool", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<GlobalPoolKernel>(node, PoolKind::kAverage, true);
                 });
}

}  // namespace polygraphy::ref
