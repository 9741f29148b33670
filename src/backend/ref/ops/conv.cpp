// Conv, ConvTranspose and DeformConv. float32 (and float16/bfloat16, computed in float32) run on oneDNN with the
// weights in the layout oneDNN prefers (constant weights are packed once per layout); src and dst
// are reordered from/to the plain NCHW tensors when the chosen implementation wants another layout.
// float64, more than 3 spatial dims and shapes oneDNN refuses take a plain reference loop.
// Depthwise 2-D convolutions between NCHW tensors, and the channel-blocked 2-D ones that
// blocked_conv.h was measured faster on, run on the runtime's own kernels instead.
// DeformConv (2-D) samples X bilinearly per tap and sums directly in double.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/ref/ops/blocked_conv.h"
#include "backend/ref/ops/broadcast.h"
#include "backend/ref/ops/dnnl_util.h"
#include "backend/ref/ops/vector_math.h"
#include "backend/ref/ops/families.h"
#include "backend/ref/ops/window_util.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::ref {
namespace {

using window::Geometry;
using window::WindowAttrs;

const char* const kConvTypes = "float32, float64, float16, bfloat16";

int64_t product(const std::vector<int64_t>& values) {
    int64_t result = 1;
    for (int64_t v : values) result *= v;
    return result;
}

/// Everything a convolution needs besides the data, for one input shape.
struct ConvProblem {
    bool transpose = false;
    int64_t batch = 0;
    int64_t in_channels = 0;   ///< C
    int64_t out_channels = 0;  ///< M
    int64_t group = 1;
    Geometry geometry;
    std::vector<int64_t> output_padding;  ///< ConvTranspose only (all zero for Conv)
    Shape output_shape;

    /// X's shape as NCHW (however the graph holds X).
    Shape input_shape() const {
        Shape shape = {batch, in_channels};
        shape.insert(shape.end(), geometry.input.begin(), geometry.input.end());
        return shape;
    }
};

// ---- reference loops (float64, fallbacks) ---------------------------------------------------------

/// Offsets of every kernel tap: taps[t][d] is the tap's index along spatial dim d.
std::vector<std::vector<int64_t>> kernel_taps(const std::vector<int64_t>& kernel) {
    std::vector<std::vector<int64_t>> taps;
    std::vector<int64_t> index(kernel.size(), 0);
    const int64_t count = product(kernel);
    for (int64_t t = 0; t < count; ++t) {
        taps.push_back(index);
        for (std::size_t d = kernel.size(); d-- > 0;) {
            if (++index[d] < kernel[d]) break;
            index[d] = 0;
        }
    }
    return taps;
}

/// What both reference loops derive from a problem.
struct LoopSizes {
    explicit LoopSizes(const ConvProblem& p)
        : rank(p.geometry.rank()),
          in_size(product(p.geometry.input)),
          out_size(product(p.geometry.output)),
          taps_count(product(p.geometry.kernel)),
          cg(p.in_channels / p.group),
          mg(p.out_channels / p.group) {}
    std::size_t rank;
    int64_t in_size, out_size, taps_count;
    int64_t cg, mg;  // input / output channels per group
};

template <typename T>
void conv_reference(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y, int num_threads) {
    const Geometry& g = p.geometry;
    // Plain copies, not a structured binding: clang 14 (the fuzz build) cannot capture bindings.
    const LoopSizes sizes(p);
    const std::size_t rank = sizes.rank;
    const int64_t in_size = sizes.in_size, out_size = sizes.out_size, taps_count = sizes.taps_count;
    const int64_t cg = sizes.cg, mg = sizes.mg;
    const auto taps = kernel_taps(g.kernel);
    onednn::parallel_for(
        p.batch * p.out_channels, num_threads, out_size * cg * taps_count, [&](int64_t begin, int64_t end) {
            std::vector<int64_t> out_index(rank);
            std::vector<int64_t> in_index(rank);
            for (int64_t nm = begin; nm < end; ++nm) {
                const int64_t n = nm / p.out_channels;
                const int64_t m = nm % p.out_channels;
                const int64_t group = m / mg;
                T* y_plane = y + nm * out_size;
                for (int64_t o = 0; o < out_size; ++o) {
                    int64_t rest = o;
                    for (std::size_t d = rank; d-- > 0;) {
                        out_index[d] = rest % g.output[d];
                        rest /= g.output[d];
                    }
                    double acc = bias != nullptr ? static_cast<double>(bias[m]) : 0.0;
                    for (int64_t t = 0; t < taps_count; ++t) {
                        int64_t offset = 0;
                        bool inside = true;
                        for (std::size_t d = 0; d < rank && inside; ++d) {
                            in_index[d] = out_index[d] * g.strides[d] - g.pad_begin[d] + taps[t][d] * g.dilations[d];
                            inside = in_index[d] >= 0 && in_index[d] < g.input[d];
                            offset = offset * g.input[d] + in_index[d];
                        }
                        if (!inside) continue;
                        for (int64_t c = 0; c < cg; ++c) {
                            const T xv = x[((n * p.in_channels) + group * cg + c) * in_size + offset];
                            const T wv = w[(m * cg + c) * taps_count + t];
                            acc += static_cast<double>(xv) * static_cast<double>(wv);
                        }
                    }
                    y_plane[o] = static_cast<T>(acc);
                }
            }
        });
}

template <typename T>
void conv_transpose_reference(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y, int num_threads) {
    const Geometry& g = p.geometry;
    // Plain copies, not a structured binding: clang 14 (the fuzz build) cannot capture bindings.
    const LoopSizes sizes(p);
    const std::size_t rank = sizes.rank;
    const int64_t in_size = sizes.in_size, out_size = sizes.out_size, taps_count = sizes.taps_count;
    const int64_t cg = sizes.cg, mg = sizes.mg;
    const auto taps = kernel_taps(g.kernel);
    onednn::parallel_for(
        p.batch * p.out_channels, num_threads, in_size * cg * taps_count, [&](int64_t begin, int64_t end) {
            std::vector<int64_t> in_index(rank);
            std::vector<double> acc(static_cast<std::size_t>(out_size));
            for (int64_t nm = begin; nm < end; ++nm) {
                const int64_t n = nm / p.out_channels;
                const int64_t m = nm % p.out_channels;
                const int64_t group = m / mg;
                const int64_t m_in_group = m % mg;
                std::fill(acc.begin(), acc.end(), bias != nullptr ? static_cast<double>(bias[m]) : 0.0);
                for (int64_t c = 0; c < cg; ++c) {
                    const int64_t channel = group * cg + c;
                    const T* x_plane = x + (n * p.in_channels + channel) * in_size;
                    const T* w_taps = w + (channel * mg + m_in_group) * taps_count;
                    for (int64_t i = 0; i < in_size; ++i) {
                        int64_t rest = i;
                        for (std::size_t d = rank; d-- > 0;) {
                            in_index[d] = rest % g.input[d];
                            rest /= g.input[d];
                        }
                        const double xv = static_cast<double>(x_plane[i]);
                        for (int64_t t = 0; t < taps_count; ++t) {
                            int64_t offset = 0;
                            bool inside = true;
                            for (std::size_t d = 0; d < rank && inside; ++d) {
                                const int64_t pos =
                                    in_index[d] * g.strides[d] - g.pad_begin[d] + taps[t][d] * g.dilations[d];
                                inside = pos >= 0 && pos < g.output[d];
                                offset = offset * g.output[d] + pos;
                            }
                            if (inside) acc[static_cast<std::size_t>(offset)] += xv * static_cast<double>(w_taps[t]);
                        }
                    }
                }
                T* y_plane = y + nm * out_size;
                for (int64_t o = 0; o < out_size; ++o) y_plane[o] = static_cast<T>(acc[static_cast<std::size_t>(o)]);
            }
        });
}

// ---- depthwise (direct, NCHW) ---------------------------------------------------------------------

/// A 2-D convolution with one input and one output channel per group (MobileNet/EfficientNet style).
/// oneDNN runs these only on blocked layouts, and the two reorders around each one cost more than
/// the convolution itself, so they run here on the plain NCHW planes.
bool is_plain_depthwise_2d(const ConvProblem& p) {
    return !p.transpose && p.geometry.rank() == 2 && p.group > 1 && p.group == p.in_channels &&
           p.group == p.out_channels;
}

/// The activation folded into a depthwise convolution, applied to each vector of sums before it is
/// stored, so that it costs no pass over memory. Relu is Clip(0, +inf). GELU is not here: it runs
/// as a pass over the output after the kernel.
struct StoreActivation {
    enum class Kind { kNone, kClip, kSilu };
    Kind kind = Kind::kNone;
    float lo = 0.0f, hi = 0.0f;

    /// The store-time form of `activation`, or nullopt where it has none (GELU).
    static std::optional<StoreActivation> of(const onednn::FusedActivation& activation) {
        using Fused = onednn::FusedActivation::Kind;
        switch (activation.kind()) {
            case Fused::kNone:
                return StoreActivation{};
            case Fused::kRelu:
                return StoreActivation{Kind::kClip, 0.0f, std::numeric_limits<float>::infinity()};
            case Fused::kClip:
                return StoreActivation{Kind::kClip, activation.clip_min(), activation.clip_max()};
            case Fused::kSilu:
                return StoreActivation{Kind::kSilu};
            case Fused::kGelu:
                break;
        }
        return std::nullopt;
    }
};

// As vector_math.h's helpers, these are always inlined into the clones that call them.

/// v = activation(v) per lane. Clip maps NaN to its lower bound (Relu: 0), as the oneDNN post-ops
/// do; SiLU is x / (1 + exp(-x)), as oneDNN's swish.
__attribute__((always_inline)) inline void activate_in_place(Float8Lanes& v, const StoreActivation& activation) {
    switch (activation.kind) {
        case StoreActivation::Kind::kNone:
            return;
        case StoreActivation::Kind::kClip:
            v = v > activation.lo ? v : Float8Lanes{} + activation.lo;
            v = v < activation.hi ? v : Float8Lanes{} + activation.hi;
            return;
        case StoreActivation::Kind::kSilu:
            silu_lanes<8>(v);
            return;
    }
}

/// acc[i] = activation(bias + sum over t < taps of w[t] * src[t][i]), for i < n. Blocks of 64
/// outputs (eight vectors) stay in registers while every tap is added, so acc is written once
/// (compiled for AVX-512/AVX2 too).
POLYGRAPHY_VECTOR_CLONES void depthwise_accumulate(const float* const* src, const float* w, int64_t taps, float bias,
                                                   const StoreActivation& activation, float* acc, int64_t n) {
    using V = Float8Lanes;
    constexpr int kVectors = 8;
    constexpr int64_t kLanes = 8;
    int64_t i0 = 0;
    for (; i0 + kVectors * kLanes <= n; i0 += kVectors * kLanes) {
        V b[kVectors];
        for (V& v : b) v = V{} + bias;
        for (int64_t t = 0; t < taps; ++t) {
            const float* in = src[t] + i0;
            const V wv = V{} + w[t];
            for (int k = 0; k < kVectors; ++k) b[k] += wv * *reinterpret_cast<const V*>(in + k * kLanes);
        }
        for (int k = 0; k < kVectors; ++k) {
            activate_in_place(b[k], activation);
            *reinterpret_cast<V*>(acc + i0 + k * kLanes) = b[k];
        }
    }
    for (; i0 + kLanes <= n; i0 += kLanes) {
        V b0 = V{} + bias;
        for (int64_t t = 0; t < taps; ++t) b0 += (V{} + w[t]) * *reinterpret_cast<const V*>(src[t] + i0);
        activate_in_place(b0, activation);
        *reinterpret_cast<V*>(acc + i0) = b0;
    }
    for (int64_t i = i0; i < n; ++i) {
        float sum = bias;
        for (int64_t t = 0; t < taps; ++t) sum += w[t] * src[t][i];
        V lanes = V{} + sum;
        activate_in_place(lanes, activation);  // the same arithmetic as the vectors
        acc[i] = lanes[0];
    }
}

/// y[i] = activation(acc[i] + residual[i]) for i < n: the store of a depthwise row with a folded
/// residual Add (compiled for AVX-512/AVX2 too).
POLYGRAPHY_VECTOR_CLONES void add_residual_and_store(const float* acc, const float* residual,
                                                     const StoreActivation& activation, float* y, int64_t n) {
    using V = Float8Lanes;
    constexpr int64_t kLanes = 8;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        V v = *reinterpret_cast<const V*>(acc + i) + *reinterpret_cast<const V*>(residual + i);
        activate_in_place(v, activation);
        *reinterpret_cast<V*>(y + i) = v;
    }
    for (; i < n; ++i) {
        V lanes = V{} + (acc[i] + residual[i]);
        activate_in_place(lanes, activation);  // the same arithmetic as the vectors
        y[i] = lanes[0];
    }
}

/// y[m] = activation(sum over c of w[m, c] * x[c] + bias[m] + residual[m]) for m in [first, last):
/// a 1x1 convolution of one pixel (a squeeze-excite block's, after its GlobalAveragePool), where a
/// oneDNN primitive's call cost more than its arithmetic (21 us against 3-8). Rows of W go four at a
/// time, sharing each load of x; a sum runs over c in eight lanes added in a fixed order, so it does
/// not depend on how the outputs are split between threads (compiled for AVX-512/AVX2 too).
POLYGRAPHY_VECTOR_CLONES void pixel_pointwise(const float* w, const float* x, int64_t channels, const float* bias,
                                              const float* residual, const StoreActivation& activation, int64_t first,
                                              int64_t last, float* y) {
    using V = Float8Lanes;
    constexpr int64_t kLanes = 8;
    constexpr int kRows = 4;
    const int64_t whole = channels - channels % kLanes;
    auto total = [&](const V& acc, const float* row, int64_t m) {
        float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (int64_t c = whole; c < channels; ++c) sum += row[c] * x[c];
        return bias != nullptr ? sum + bias[m] : sum;
    };
    int64_t m = first;
    for (; m + kRows <= last; m += kRows) {
        V acc[kRows] = {};
        for (int64_t c = 0; c < whole; c += kLanes) {
            const V xv = *reinterpret_cast<const V*>(x + c);
            for (int r = 0; r < kRows; ++r) acc[r] += *reinterpret_cast<const V*>(w + (m + r) * channels + c) * xv;
        }
        for (int r = 0; r < kRows; ++r) y[m + r] = total(acc[r], w + (m + r) * channels, m + r);
    }
    for (; m < last; ++m) {
        V acc{};
        for (int64_t c = 0; c < whole; c += kLanes)
            acc += *reinterpret_cast<const V*>(w + m * channels + c) * *reinterpret_cast<const V*>(x + c);
        y[m] = total(acc, w + m * channels, m);
    }
    int64_t i = first;
    for (; i + kLanes <= last; i += kLanes) {
        V v = *reinterpret_cast<const V*>(y + i);
        if (residual != nullptr) v += *reinterpret_cast<const V*>(residual + i);
        activate_in_place(v, activation);
        *reinterpret_cast<V*>(y + i) = v;
    }
    for (; i < last; ++i) {
        V lanes = V{} + (residual != nullptr ? y[i] + residual[i] : y[i]);
        activate_in_place(lanes, activation);  // the same arithmetic as the vectors
        y[i] = lanes[0];
    }
}

/// A 1x1 convolution of single-pixel images with no padding (its output is one pixel too): X is
/// [N, C] and Y [N, M] in memory, channel-blocked or not.
bool is_single_pixel_pointwise(const ConvProblem& p) {
    const Geometry& g = p.geometry;
    if (p.transpose || p.group != 1) return false;
    for (std::size_t d = 0; d < g.rank(); ++d)
        if (g.input[d] != 1 || g.kernel[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0) return false;
    return true;
}

/// The shape of one depthwise problem, as the direct kernel sees it. The zero-padded input plane is
/// split into stride_h x stride_w phase planes (rows/columns with the same remainder modulo the
/// stride), each `qh` x `qw`: then every tap is a stride-1 shift of one phase plane, and the output,
/// computed `qw` wide (the columns past out_w are discarded), is one contiguous multiply-add per tap.
struct DepthwiseLayout {
    explicit DepthwiseLayout(const Geometry& g)
        : in_h(g.input[0]),
          in_w(g.input[1]),
          out_h(g.output[0]),
          out_w(g.output[1]),
          k_h(g.kernel[0]),
          k_w(g.kernel[1]),
          s_h(g.strides[0]),
          s_w(g.strides[1]),
          d_h(g.dilations[0]),
          d_w(g.dilations[1]),
          pad_t(g.pad_begin[0]),
          pad_l(g.pad_begin[1]) {
        const int64_t padded_h = (out_h - 1) * s_h + (k_h - 1) * d_h + 1;
        const int64_t padded_w = (out_w - 1) * s_w + (k_w - 1) * d_w + 1;
        qh = (padded_h + s_h - 1) / s_h;
        qw = (padded_w + s_w - 1) / s_w;
        // Slack after each plane: shifted reads run up to qw - 1 past it, plus the rounding of the
        // output count up to whole vectors.
        phase_stride = qh * qw + qw + kLanes;
        acc_count = (out_h * qw + kLanes - 1) / kLanes * kLanes;
    }
    static constexpr int64_t kLanes = 16;
    int64_t in_h, in_w, out_h, out_w, k_h, k_w, s_h, s_w, d_h, d_w, pad_t, pad_l;
    int64_t qh = 0, qw = 0, phase_stride = 0;
    int64_t acc_count = 0;  ///< out_h * qw rounded up to whole vectors
    std::size_t scratch_floats() const { return static_cast<std::size_t>(s_h * s_w * phase_stride + acc_count); }
};

/// Index range [begin, end) of the phase coordinates q whose input coordinate q * stride + shift lies
/// in [0, size); `count` phase coordinates exist.
std::pair<int64_t, int64_t> valid_phase_range(int64_t shift, int64_t stride, int64_t size, int64_t count) {
    const int64_t begin = std::min(count, shift >= 0 ? 0 : (-shift + stride - 1) / stride);
    const int64_t end = std::max(begin, std::min(count, size - shift <= 0 ? 0 : (size - 1 - shift) / stride + 1));
    return {begin, end};
}

/// Computes one plane. `phases` holds zeros wherever the padded input is padding (they are never
/// written, so they are zeroed once per scratch buffer); `sources` are the tap start points in it.
/// A `residual` plane (or nullptr) is added to the sums before the activation.
void depthwise_plane(const DepthwiseLayout& l, const float* x, const float* w, float bias, const float* residual,
                     const StoreActivation& activation, float* y, float* phases, float* acc,
                     const std::vector<const float*>& sources) {
    for (int64_t a = 0; a < l.s_h; ++a) {
        const auto [r_begin, r_end] = valid_phase_range(a - l.pad_t, l.s_h, l.in_h, l.qh);
        for (int64_t b = 0; b < l.s_w; ++b) {
            const int64_t shift = b - l.pad_l;
            const auto [c_begin, c_end] = valid_phase_range(shift, l.s_w, l.in_w, l.qw);
            float* plane = phases + (a * l.s_w + b) * l.phase_stride;
            for (int64_t r = r_begin; r < r_end; ++r) {
                float* out = plane + r * l.qw;
                const float* row = x + (r * l.s_h + a - l.pad_t) * l.in_w + shift;
                if (l.s_w == 1) {
                    std::copy(row + c_begin, row + c_end, out + c_begin);
                } else if (l.s_w == 2) {
                    for (int64_t c = c_begin; c < c_end; ++c) out[c] = row[c * 2];  // constant stride: vectorizes
                } else {
                    for (int64_t c = c_begin; c < c_end; ++c) out[c] = row[c * l.s_w];
                }
            }
        }
    }
    if (residual != nullptr) {
        depthwise_accumulate(sources.data(), w, l.k_h * l.k_w, bias, StoreActivation{}, acc, l.acc_count);
        for (int64_t oh = 0; oh < l.out_h; ++oh)
            add_residual_and_store(acc + oh * l.qw, residual + oh * l.out_w, activation, y + oh * l.out_w, l.out_w);
        return;
    }
    depthwise_accumulate(sources.data(), w, l.k_h * l.k_w, bias, activation, acc, l.acc_count);
    for (int64_t oh = 0; oh < l.out_h; ++oh) std::copy(acc + oh * l.qw, acc + oh * l.qw + l.out_w, y + oh * l.out_w);
}

void depthwise_conv(const ConvProblem& p, const float* x, const float* w, const float* bias, const float* residual,
                    const StoreActivation& activation, float* y, int num_threads) {
    const DepthwiseLayout l(p.geometry);
    const int64_t in_size = l.in_h * l.in_w;
    const int64_t out_size = l.out_h * l.out_w;
    const int64_t taps = l.k_h * l.k_w;
    onednn::parallel_for(p.batch * p.out_channels, num_threads, out_size * taps, [&](int64_t begin, int64_t end) {
        float* scratch = static_cast<float*>(onednn::thread_scratch(0, l.scratch_floats() * sizeof(float)));
        std::fill(scratch, scratch + l.scratch_floats(), 0.0f);
        float* phases = scratch;
        float* acc = scratch + l.s_h * l.s_w * l.phase_stride;
        // Where each tap reads: a shift of one phase plane.
        std::vector<const float*> sources;
        for (int64_t kh = 0; kh < l.k_h; ++kh) {
            const int64_t row = kh * l.d_h;
            for (int64_t kw = 0; kw < l.k_w; ++kw) {
                const int64_t col = kw * l.d_w;
                const float* plane = phases + ((row % l.s_h) * l.s_w + col % l.s_w) * l.phase_stride;
                sources.push_back(plane + (row / l.s_h) * l.qw + col / l.s_w);
            }
        }
        for (int64_t nc = begin; nc < end; ++nc) {
            const int64_t c = nc % p.out_channels;
            depthwise_plane(l, x + nc * in_size, w + c * taps, bias != nullptr ? bias[c] : 0.0f,
                            residual != nullptr ? residual + nc * out_size : nullptr, activation, y + nc * out_size,
                            phases, acc, sources);
        }
    });
}

// ---- oneDNN -----------------------------------------------------------------------------------------

/// Primitives for one input shape. `src_user` and `dst_user` are the layouts of X and Y as the graph
/// holds them (NCHW, or channel-blocked where the layout pass said so); `src` and `dst` are those the
/// primitive runs on, reordered from and to them when they differ.
struct DnnlConvPlan {
    dnnl::primitive primitive;
    dnnl::memory::desc src_user, src, weights_plain, weights, dst_user, dst, bias;
    dnnl::memory::desc scratchpad;  // the caller passes it (onednn::add_thread_scratchpad)
    bool reorder_src = false;
    bool reorder_dst = false;
    bool activation_after = false;  // the fused activation runs as a separate pass over the output
    bool residual_after = false;    // a folded residual is added (then the activation) in a pass after
    bool residual_post_op = false;  // ... or by the primitive as it stores Y (binary post-op, argument SRC_1)
    dnnl::reorder src_reorder, dst_reorder;
};

/// A plan's primitive arguments: the residual when the primitive adds it (plan.residual_post_op), the
/// bias when there is one (nullptr: none).
std::unordered_map<int, dnnl::memory> primitive_args(const DnnlConvPlan& plan, dnnl::memory src, dnnl::memory weights,
                                                     dnnl::memory dst, const float* residual, const float* bias) {
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, std::move(src)}, {DNNL_ARG_WEIGHTS, std::move(weights)}, {DNNL_ARG_DST, std::move(dst)}};
    if (plan.residual_post_op)
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, onednn::wrap_memory(plan.dst_user, residual));
    if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, onednn::wrap_memory(plan.bias, bias));
    return args;
}

/// oneDNN dims and plain strides of the ONNX weight tensor: Conv W is (M, C/g, k...) and ConvTranspose
/// W is (C, M/g, k...); oneDNN wants (g, M/g, C/g, k...) (without g when g == 1).
dnnl::memory::desc plain_weights_desc(const ConvProblem& p) {
    const int64_t taps = product(p.geometry.kernel);
    const int64_t cg = p.in_channels / p.group;
    const int64_t mg = p.out_channels / p.group;
    dnnl::memory::dims dims;
    dnnl::memory::dims strides;
    if (p.group > 1) {
        dims.push_back(p.group);
        strides.push_back(cg * mg * taps);
    }
    dims.push_back(mg);
    dims.push_back(cg);
    if (p.transpose) {
        strides.push_back(taps);       // o
        strides.push_back(mg * taps);  // i
    } else {
        strides.push_back(cg * taps);
        strides.push_back(taps);
    }
    int64_t stride = taps;
    for (int64_t k : p.geometry.kernel) {
        dims.push_back(k);
        stride /= k;
        strides.push_back(stride);
    }
    return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

/// nullptr when oneDNN has no implementation for the problem (the reference loop runs instead).
/// The caller passes the primitive's scratchpad (DnnlConvPlan::scratchpad), so that threads can run
/// the one primitive at the same time.
std::shared_ptr<const DnnlConvPlan> make_dnnl_plan(const NodeInfo& node, const ConvProblem& p, bool has_bias,
                                                   const onednn::FusedActivation& activation, bool residual,
                                                   int64_t input_block, int64_t output_block) {
    using dnnl::memory;
    const Geometry& g = p.geometry;
    if (g.rank() > 3) return nullptr;
    auto plan = std::make_shared<DnnlConvPlan>();
    const memory::dims src_dims = onednn::to_dims(p.input_shape());
    const memory::dims dst_dims = onednn::to_dims(p.output_shape);
    const bool blocked_input = input_block != 0, blocked_output = output_block != 0;
    plan->src_user = blocked_input ? onednn::blocked_desc(src_dims, input_block) : onednn::plain_desc(src_dims);
    plan->dst_user = blocked_output ? onednn::blocked_desc(dst_dims, output_block) : onednn::plain_desc(dst_dims);
    plan->weights_plain = plain_weights_desc(p);
    // A pointwise convolution between NCHW tensors is a plain matrix product (W[M, C] x X[C, HW]):
    // oneDNN's GEMM implementation runs it as fast as a blocked one without the two layout reorders.
    // Where the graph holds X or Y blocked, the primitive takes that layout as it is.
    const bool pointwise = !p.transpose && p.group == 1 &&
                           std::all_of(g.kernel.begin(), g.kernel.end(), [](int64_t k) { return k == 1; }) &&
                           std::all_of(g.strides.begin(), g.strides.end(), [](int64_t s) { return s == 1; }) &&
                           std::all_of(g.pad_begin.begin(), g.pad_begin.end(), [](int64_t v) { return v == 0; }) &&
                           std::all_of(g.pad_end.begin(), g.pad_end.end(), [](int64_t v) { return v == 0; });
    const bool gemm = pointwise && !blocked_input && !blocked_output;
    // Between blocks of 8 and 16 oneDNN has only its reference loop (1000x slower), so the narrow
    // side is left to the primitive (the wide block, channels padded) and reordered.
    const bool mixed = blocked_input && blocked_output && input_block != output_block;
    const bool take_src = gemm || (blocked_input && !(mixed && input_block < output_block));
    const bool take_dst = gemm || (blocked_output && !(mixed && output_block < input_block));
    const memory::desc src_any =
        take_src ? plan->src_user : memory::desc(src_dims, memory::data_type::f32, memory::format_tag::any);
    const memory::desc dst_any =
        take_dst ? plan->dst_user : memory::desc(dst_dims, memory::data_type::f32, memory::format_tag::any);
    const memory::desc weights_any(plan->weights_plain.dims(), memory::data_type::f32, memory::format_tag::any);
    const memory::desc bias_desc =
        has_bias ? memory::desc({p.out_channels}, memory::data_type::f32, memory::format_tag::x) : memory::desc();
    memory::dims strides(g.strides.begin(), g.strides.end());
    memory::dims dilates;
    for (int64_t d : g.dilations) dilates.push_back(d - 1);
    memory::dims pad_l(g.pad_begin.begin(), g.pad_begin.end());
    memory::dims pad_r;
    for (std::size_t d = 0; d < g.rank(); ++d) pad_r.push_back(g.pad_end[d] - p.output_padding[d]);
    const auto& engine = onednn::cpu_engine();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // oneDNN's GEMM convolution (the pointwise case) applies post-ops far slower than its JIT
    // elementwise pass does (mobilenet_v2's 1x1 convolutions with Clip took twice as long), so there
    // the activation follows the primitive.
    plan->residual_after = residual;
    // oneDNN's swish post-op (SiLU) costs more than the convolution on EfficientNet's early layers;
    // our SiLU pass after it is much cheaper.
    const bool silu = activation.kind() == onednn::FusedActivation::Kind::kSilu;
    plan->activation_after = activation.active() && (gemm || residual || silu);
    if (activation.active() && !plan->activation_after) {
        dnnl::post_ops ops;
        activation.append_to(ops);
        attr.set_post_ops(ops);
    }
    std::string impl;
    try {
        if (p.transpose) {
            dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::deconvolution_direct, src_any, weights_any,
                                                   bias_desc, dst_any, strides, dilates, pad_l, pad_r);
            dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine);
            plan->src = pd.src_desc();
            plan->weights = pd.weights_desc();
            plan->dst = pd.dst_desc();
            plan->scratchpad = pd.scratchpad_desc();
            plan->primitive = dnnl::deconvolution_forward(pd);
            impl = pd.impl_info_str();
        } else {
            dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::convolution_direct, src_any, weights_any, bias_desc,
                                                 dst_any, strides, dilates, pad_l, pad_r);
            // Into a blocked Y (the residual is blocked too) the JIT kernels add the residual as they
            // store each result, then the activation: the sums of the nodes as written, in one pass.
            // Not into a Y that is reordered after the primitive: the residual has Y's layout, which
            // only the reference loop takes there.
            std::optional<dnnl::convolution_forward::primitive_desc> fused;
            if (residual && blocked_output && take_dst) {
                dnnl::post_ops ops;
                ops.append_binary(dnnl::algorithm::binary_add, plan->dst_user);
                if (activation.active() && !silu) activation.append_to(ops);
                dnnl::primitive_attr residual_attr;
                residual_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
                residual_attr.set_post_ops(ops);
                try {
                    fused.emplace(desc, residual_attr, engine);
                    plan->residual_after = false;
                    plan->activation_after = silu;
                    plan->residual_post_op = true;
                } catch (const dnnl::error&) {
                    // no kernel takes it: the pass after the primitive adds it
                }
            }
            const dnnl::convolution_forward::primitive_desc pd =
                fused ? *fused : dnnl::convolution_forward::primitive_desc(desc, attr, engine);
            plan->src = pd.src_desc();
            plan->weights = pd.weights_desc();
            plan->dst = pd.dst_desc();
            plan->scratchpad = pd.scratchpad_desc();
            plan->primitive = dnnl::convolution_forward(pd);
            impl = pd.impl_info_str();
        }
    } catch (const dnnl::error&) {
        return nullptr;  // e.g. negative end padding oneDNN does not take: the reference loop handles it
    }
    if (logger().enabled(Severity::kSuperVerbose)) {
        logger().super_verbose("Node '" + node.name() + "' (" + node.op_type() + "): input " +
                               shape_to_string(p.input_shape()) + " runs on oneDNN " + impl);
    }
    plan->bias = bias_desc;
    plan->reorder_src = plan->src != plan->src_user;
    plan->reorder_dst = plan->dst != plan->dst_user;
    if (plan->reorder_src)
        plan->src_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plan->src_user, engine, plan->src));
    if (plan->reorder_dst)
        plan->dst_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plan->dst, engine, plan->dst_user));
    return plan;
}

/// y = activation(y + r) over contiguous float32 values: a folded residual Add and the activation
/// after it as one oneDNN binary primitive with an eltwise post-op, one pass over memory where the
/// nodes as written take two. Primitives are cached per element count and thread count (one kernel
/// always passes the same activation).
class ResidualAdd {
public:
    void run(const onednn::FusedActivation& activation, float* y, const float* r, int64_t count,
             int num_threads) const {
        const int threads = onednn::resolve_threads(num_threads);
        onednn::ThreadScope scope(threads);
        auto plan = cache_.get({count, threads}, [&]() -> std::shared_ptr<const Plan> {
            auto plan = std::make_shared<Plan>();
            plan->desc = onednn::plain_desc({count});
            dnnl::primitive_attr attr;
            dnnl::post_ops ops;
            activation.append_to(ops);
            attr.set_post_ops(ops);
            try {
                dnnl::binary::desc desc(dnnl::algorithm::binary_add, plan->desc, plan->desc, plan->desc);
                plan->primitive = dnnl::binary(dnnl::binary::primitive_desc(desc, attr, onednn::cpu_engine()));
            } catch (const dnnl::error&) {
                return nullptr;
            }
            return plan;
        });
        if (plan == nullptr) {  // no oneDNN implementation: the same sum, then the activation of each value
            onednn::parallel_for(count, threads, 4, [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                    y[i] = static_cast<float>(activation.apply(static_cast<double>(y[i] + r[i])));
            });
            return;
        }
        onednn::execute(plan->primitive, {{DNNL_ARG_SRC_0, onednn::wrap_memory(plan->desc, y)},
                                          {DNNL_ARG_SRC_1, onednn::wrap_memory(plan->desc, r)},
                                          {DNNL_ARG_DST, onednn::wrap_memory(plan->desc, y)}});
    }

private:
    struct Plan {
        dnnl::binary primitive;
        dnnl::memory::desc desc;
    };
    onednn::PrimitiveCache<Plan> cache_;
};

class ConvKernelBase : public Kernel {
public:
    ConvKernelBase(const NodeInfo& node, bool transpose) : transpose_(transpose) {
        attrs_ = window::parse_window_attrs(node, /*kernel_shape_required=*/false, /*has_dilations=*/true,
                                            /*has_ceil_mode=*/false);
        group_ = node.attr_int("group", 1);
        activation_ = onednn::FusedActivation(node);
        has_residual_ = onednn::private_flag(node, kFusedResidualAttr);
        input_block_ = onednn::channel_block(node, kBlockedInputAttr);
        output_block_ = onednn::channel_block(node, kBlockedOutputAttr);
        if (group_ < 1) node.fail("attribute 'group' must be >= 1\nNote: group = " + std::to_string(group_));
        if (transpose_) {
            output_padding_ = node.attr_ints("output_padding");
            output_shape_attr_ = node.attr_ints("output_shape");
            for (int64_t v : output_padding_) {
                if (v < 0)
                    node.fail("attribute 'output_padding' must have values >= 0\nNote: output_padding = " +
                              ints_to_string(output_padding_));
            }
            const int64_t rank = attrs_.spatial_rank();
            if (rank >= 0 && !output_padding_.empty() && static_cast<int64_t>(output_padding_.size()) != rank) {
                node.fail("attribute 'output_padding' has " + std::to_string(output_padding_.size()) +
                          " values but the window has " + std::to_string(rank) + " spatial dims");
            }
        }
        // Constant weights: validate against the attributes now and keep a float32 copy to pack.
        if (const Tensor* weight = node.constant_input(1)) {
            if (weight->rank() < 3) {
                node.fail("weight W must have rank >= 3 (out/in channels and a kernel)\nNote: W shape = " +
                          shape_to_string(weight->shape()));
            }
            const std::vector<int64_t> kernel(weight->shape().begin() + 2, weight->shape().end());
            if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) {
                node.fail("attribute 'kernel_shape' " + ints_to_string(attrs_.kernel_shape) +
                          " does not match the weight's spatial dims " + ints_to_string(kernel));
            }
            const int64_t rank = attrs_.spatial_rank();
            if (rank >= 0 && rank != static_cast<int64_t>(kernel.size())) {
                node.fail("attributes describe " + std::to_string(rank) + " spatial dims but the weight has " +
                          std::to_string(kernel.size()));
            }
            const int64_t divisible_dim = weight->shape()[0];
            if (divisible_dim % group_ != 0) {
                node.fail(std::string("weight dim 0 (") + (transpose_ ? "input" : "output") + " channels, " +
                          std::to_string(divisible_dim) + ") is not divisible by attribute 'group' (" +
                          std::to_string(group_) + ")");
            }
            if (weight->dtype() == DataType::kFloat32) {
                constant_weight_ = *weight;
            } else if (weight->dtype() == DataType::kFloat16 || weight->dtype() == DataType::kBFloat16) {
                constant_weight_ = weight->cast(DataType::kFloat32);
            }
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& w = context.required_input(1);
        const Tensor* b = context.input(2);
        if (b != nullptr && !b->defined()) b = nullptr;
        const DataType dtype = x.dtype();
        if (w.dtype() != dtype || (b != nullptr && b->dtype() != dtype)) {
            node.fail("inputs must share one data type\nNote: X is " + std::string(dtype_name(dtype)) + ", W is " +
                      std::string(dtype_name(w.dtype())) +
                      (b != nullptr ? ", B is " + std::string(dtype_name(b->dtype())) : std::string()));
        }
        if (dtype != DataType::kFloat32 && dtype != DataType::kFloat64 && dtype != DataType::kFloat16 &&
            dtype != DataType::kBFloat16) {
            onednn::fail_dtype(node, "input X", dtype, kConvTypes);
        }
        // A blocked X may have a padded last block (blocked_layout.h): its channels are W's.
        const ConvProblem problem = make_problem(
            node,
            input_block_ != 0
                ? onednn::unblocked_shape(node, x, input_block_, w.shape().size() > 1 ? w.shape()[1] * group_ : -1)
                : x.shape(),
            w.shape(), b);
        if (blocked() && dtype != DataType::kFloat32)
            throw InternalError("Node '" + node.name() + "': a channel-blocked convolution computes float32 only");
        const Shape y_shape =
            output_block_ != 0 ? onednn::blocked_shape(problem.output_shape, output_block_) : problem.output_shape;
        const Tensor* residual = has_residual_ ? &context.required_input(3) : nullptr;
        if (residual != nullptr && residual->dtype() != dtype) {
            node.fail("the folded residual Add's inputs must have the same data type, but they are " +
                      std::string(dtype_name(dtype)) + " and " + std::string(dtype_name(residual->dtype())));
        }
        // A float32 residual of the output's own shape is added as the output is stored; any other
        // is added after the convolution as the Add node would (broadcasting, float16 rounding). A
        // residual of a blocked output is blocked too (the layout pass puts them in one class), and
        // broadcasting over [N, C/B, H, W, B] pairs the same elements as over [N, C, H, W].
        const bool residual_inside = residual != nullptr && dtype == DataType::kFloat32 && residual->shape() == y_shape;
        const bool residual_after = residual != nullptr && !residual_inside;
        const int threads = context.num_threads();
        Tensor y;
        if (shape_volume(problem.output_shape) == 0 || x.numel() == 0) {
            y = Tensor(dtype, y_shape);
        } else if (dtype == DataType::kFloat64) {
            y = Tensor::uninitialized(dtype, problem.output_shape);  // every element is written
            run_reference<double>(problem, x, w, b, y, threads);
            if (!residual_after) activation_.apply_in_place(y, threads);
        } else if (dtype == DataType::kFloat32) {
            y = context.output_buffer(0, dtype, y_shape);  // every element is written
            run_float(node, problem, x, w, b, residual_inside ? residual->data_as<float>() : nullptr, !residual_after,
                      y, threads);
        } else {
            // float16 / bfloat16: compute in float32 (a residual is added to the rounded output, as
            // the Add node would).
            const Tensor x32 = x.cast(DataType::kFloat32);
            const Tensor w32 = constant_weight_.defined() ? constant_weight_ : w.cast(DataType::kFloat32);
            std::optional<Tensor> b32;
            if (b != nullptr) b32 = b->cast(DataType::kFloat32);
            Tensor y32 = Tensor::uninitialized(DataType::kFloat32, problem.output_shape);
            run_float(node, problem, x32, w32, b32 ? &*b32 : nullptr, nullptr, !residual_after, y32, threads);
            y = y32.cast(dtype);
        }
        if (residual_after) y = add_residual_after(node, y, *residual, threads);
        context.set_output(0, std::move(y));
    }

private:
    ConvProblem make_problem(const NodeInfo& node, const Shape& x_shape, const Shape& w_shape, const Tensor* b) const {
        if (x_shape.size() < 3) {
            node.fail("input X must have rank >= 3 (N, C and spatial dims)\nNote: X shape = " +
                      shape_to_string(x_shape));
        }
        if (w_shape.size() != x_shape.size()) {
            node.fail("weight W must have the same rank as input X\nNote: X shape = " + shape_to_string(x_shape) +
                      ", W shape = " + shape_to_string(w_shape));
        }
        ConvProblem p;
        p.transpose = transpose_;
        p.batch = x_shape[0];
        p.in_channels = x_shape[1];
        p.group = group_;
        const std::vector<int64_t> spatial(x_shape.begin() + 2, x_shape.end());
        const std::vector<int64_t> kernel(w_shape.begin() + 2, w_shape.end());
        if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) {
            node.fail("attribute 'kernel_shape' " + ints_to_string(attrs_.kernel_shape) +
                      " does not match the weight's spatial dims " + ints_to_string(kernel));
        }
        if (p.in_channels % group_ != 0) {
            node.fail("input channels (" + std::to_string(p.in_channels) +
                      ") are not divisible by attribute 'group' (" + std::to_string(group_) + ")");
        }
        if (transpose_) {
            if (w_shape[0] != p.in_channels) {
                node.fail("weight dim 0 (" + std::to_string(w_shape[0]) + ") must equal the input channels (" +
                          std::to_string(p.in_channels) + ")\nNote: X shape = " + shape_to_string(x_shape) +
                          ", W shape = " + shape_to_string(w_shape));
            }
            p.out_channels = w_shape[1] * group_;
        } else {
            if (w_shape[1] * group_ != p.in_channels) {
                node.fail("weight dim 1 (" + std::to_string(w_shape[1]) + ") times group (" + std::to_string(group_) +
                          ") must equal the input channels (" + std::to_string(p.in_channels) +
                          ")\nNote: X shape = " + shape_to_string(x_shape) + ", W shape = " + shape_to_string(w_shape));
            }
            p.out_channels = w_shape[0];
            if (p.out_channels % group_ != 0) {
                node.fail("output channels (" + std::to_string(p.out_channels) +
                          ") are not divisible by attribute 'group' (" + std::to_string(group_) + ")");
            }
        }
        if (b != nullptr && (b->rank() != 1 || b->shape()[0] != p.out_channels)) {
            node.fail("bias B must have shape (" + std::to_string(p.out_channels) +
                      ",)\nNote: B shape = " + shape_to_string(b->shape()));
        }
        if (transpose_) {
            resolve_transpose(node, spatial, kernel, p);
        } else {
            p.geometry = window::resolve_geometry(node, attrs_, spatial, kernel);
            p.output_padding.assign(spatial.size(), 0);
        }
        p.output_shape = {p.batch, p.out_channels};
        p.output_shape.insert(p.output_shape.end(), p.geometry.output.begin(), p.geometry.output.end());
        return p;
    }

    /// ConvTranspose sizes per the ONNX spec: explicit pads give the output size; output_shape (or
    /// SAME_* giving input * stride) gives the pads, the odd one at the end for SAME_UPPER.
    void resolve_transpose(const NodeInfo& node, const std::vector<int64_t>& spatial,
                           const std::vector<int64_t>& kernel, ConvProblem& p) const {
        const std::size_t rank = spatial.size();
        const int64_t attr_rank = attrs_.spatial_rank();
        if (attr_rank >= 0 && static_cast<std::size_t>(attr_rank) != rank) {
            node.fail("attributes describe " + std::to_string(attr_rank) + " spatial dims but the input has " +
                      std::to_string(rank));
        }
        if (!output_padding_.empty() && output_padding_.size() != rank) {
            node.fail("attribute 'output_padding' has " + std::to_string(output_padding_.size()) +
                      " values but the input has " + std::to_string(rank) + " spatial dims");
        }
        std::vector<int64_t> target;  // requested output spatial size, if any
        if (!output_shape_attr_.empty()) {
            if (output_shape_attr_.size() == rank) {
                target = output_shape_attr_;
            } else if (output_shape_attr_.size() == rank + 2) {
                target.assign(output_shape_attr_.begin() + 2, output_shape_attr_.end());
            } else {
                node.fail("attribute 'output_shape' has " + std::to_string(output_shape_attr_.size()) +
                          " values but the input has " + std::to_string(rank) +
                          " spatial dims\nNote: output_shape = " + ints_to_string(output_shape_attr_));
            }
        }
        Geometry& g = p.geometry;
        g.input = spatial;
        g.kernel = kernel;
        g.strides = attrs_.strides;
        if (g.strides.empty()) g.strides.assign(rank, 1);
        g.dilations = attrs_.dilations;
        if (g.dilations.empty()) g.dilations.assign(rank, 1);
        g.pad_begin.assign(rank, 0);
        g.pad_end.assign(rank, 0);
        g.output.assign(rank, 0);
        p.output_padding = output_padding_;
        if (p.output_padding.empty()) p.output_padding.assign(rank, 0);
        const bool same =
            attrs_.auto_pad == window::AutoPad::kSameUpper || attrs_.auto_pad == window::AutoPad::kSameLower;
        for (std::size_t d = 0; d < rank; ++d) {
            const int64_t full = g.strides[d] * (spatial[d] - 1) + p.output_padding[d] + g.effective_kernel(d);
            if (!target.empty() || same) {
                const int64_t out = !target.empty() ? target[d] : spatial[d] * g.strides[d];
                const int64_t total = full - out;
                const int64_t half = window::floor_div(total, 2);
                if (attrs_.auto_pad == window::AutoPad::kSameUpper) {
                    g.pad_begin[d] = half;
                    g.pad_end[d] = total - half;
                } else {
                    g.pad_begin[d] = total - half;
                    g.pad_end[d] = half;
                }
                g.output[d] = out;
            } else {
                if (attrs_.auto_pad == window::AutoPad::kNotSet && !attrs_.pads.empty()) {
                    g.pad_begin[d] = attrs_.pads[d];
                    g.pad_end[d] = attrs_.pads[d + rank];
                }
                g.output[d] = full - g.pad_begin[d] - g.pad_end[d];
            }
            if (g.output[d] <= 0) {
                node.fail("output spatial dim " + std::to_string(d) + " would be " + std::to_string(g.output[d]) +
                          "\nNote: input size " + std::to_string(spatial[d]) + ", pads " +
                          std::to_string(g.pad_begin[d]) + "/" + std::to_string(g.pad_end[d]));
            }
        }
    }

    /// activation(y + r) with the Add operator's broadcasting; float16/bfloat16 are summed in float32
    /// and rounded once, as the Add node does.
    Tensor add_residual_after(const NodeInfo& node, const Tensor& y, const Tensor& r, int threads) const {
        const Shape out = broadcast_shapes(node, {y.shape(), r.shape()});
        const bool half = is_half(y.dtype());
        const Tensor a = half ? y.cast(DataType::kFloat32) : y, b = half ? r.cast(DataType::kFloat32) : r;
        Tensor sum = Tensor::uninitialized(a.dtype(), out);
        auto add = [&](auto* typed) {
            using T = std::remove_pointer_t<decltype(typed)>;
            broadcast_binary(
                out, a.shape(), b.shape(), a.data_as<T>(), b.data_as<T>(), typed, [](T u, T v) { return u + v; },
                threads);
        };
        if (a.dtype() == DataType::kFloat64)
            add(sum.data_as<double>());
        else
            add(sum.data_as<float>());
        activation_.apply_in_place(sum, threads);
        return half ? sum.cast(y.dtype()) : sum;
    }

    template <typename T>
    void run_reference(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                       int threads) const {
        const T* bias = b != nullptr ? b->data_as<T>() : nullptr;
        if (transpose_) {
            conv_transpose_reference<T>(p, x.data_as<T>(), w.data_as<T>(), bias, y.data_as<T>(), threads);
        } else {
            conv_reference<T>(p, x.data_as<T>(), w.data_as<T>(), bias, y.data_as<T>(), threads);
        }
    }

    /// y = activation(conv(x, w) + b + residual) in float32; `residual` (nullptr: none) has y's
    /// shape; without `activate`, the folded activation is left to the caller (and residual is null).
    void run_float(const NodeInfo& context_node, const ConvProblem& p, const Tensor& x, const Tensor& w,
                   const Tensor* b, const float* residual, bool activate, Tensor& y, int threads) const {
        threads = onednn::resolve_threads(threads);
        const onednn::FusedActivation activation = activate ? activation_ : onednn::FusedActivation();
        // That kernel reads X and Y as [N, C] and [N, M], which a padded block is not.
        const bool padded = (input_block_ != 0 && p.in_channels % input_block_ != 0) ||
                            (output_block_ != 0 && p.out_channels % output_block_ != 0);
        if (is_single_pixel_pointwise(p) && !padded) {
            run_single_pixel(p, x, w, b, residual, activation, y, threads);
            return;
        }
        if (!blocked() && is_plain_depthwise_2d(p)) {
            const std::optional<StoreActivation> at_store = StoreActivation::of(activation);
            depthwise_conv(p, x.data_as<float>(), w.data_as<float>(), b != nullptr ? b->data_as<float>() : nullptr,
                           residual, at_store.value_or(StoreActivation{}), y.data_as<float>(), threads);
            if (!at_store) activation.apply_in_place(y, threads);
            return;
        }
        if (own_blocked_conv_runs(p, w)) {
            run_own_blocked(context_node, p, x, b, residual, activation, y, threads);
            return;
        }
        if (split_by_output_channels(context_node, p, w, x, b, residual, activate, activation, y, threads)) return;
        Shape key = x.shape();
        key.insert(key.end(), w.shape().begin(), w.shape().end());
        key.push_back(b != nullptr ? 1 : 0);
        key.push_back(threads);
        key.push_back(activate ? 1 : 0);
        key.push_back(residual != nullptr ? 1 : 0);
        onednn::ThreadScope scope(threads);
        auto plan = cache_.get(key, [&] {
            return make_dnnl_plan(context_node, p, b != nullptr, activation, residual != nullptr, input_block_,
                                  output_block_);
        });
        if (plan == nullptr && blocked()) {
            // The layout pass leaves out what oneDNN refuses (negative pads), so this is a bug.
            throw InternalError("Node '" + context_node.name() + "': oneDNN has no channel-blocked convolution for it");
        }
        if (plan == nullptr) {
            run_reference<float>(p, x, w, b, y, threads);
            if (residual != nullptr)
                residual_add_.run(activation, y.data_as<float>(), residual, y.numel(), threads);
            else
                activation.apply_in_place(y, threads);
            return;
        }
        const auto& engine = onednn::cpu_engine();
        dnnl::memory src = onednn::wrap_memory(plan->src_user, x.data());
        if (plan->reorder_src) {
            dnnl::memory packed(plan->src, engine, onednn::thread_scratch(0, plan->src.get_size()));
            onednn::execute(plan->src_reorder, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, packed}});
            src = packed;
        }
        dnnl::memory weights;
        if (constant_weight_.defined() && constant_weight_.shape() == w.shape() &&
            plan->weights != plan->weights_plain) {
            weights = onednn::wrap_memory(
                plan->weights, packed_weights_.get(plan->weights_plain, constant_weight_.data(), plan->weights));
        } else if (plan->weights != plan->weights_plain) {
            weights = dnnl::memory(plan->weights, engine, onednn::thread_scratch(1, plan->weights.get_size()));
            dnnl::memory plain = onednn::wrap_memory(plan->weights_plain, w.data());
            onednn::execute(dnnl::reorder(plain, weights), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, weights}});
        } else {
            weights = onednn::wrap_memory(plan->weights, w.data());  // the plain layout is W itself
        }
        dnnl::memory dst_user = onednn::wrap_memory(plan->dst_user, y.data());
        dnnl::memory dst = plan->reorder_dst
                               ? dnnl::memory(plan->dst, engine, onednn::thread_scratch(2, plan->dst.get_size()))
                               : dst_user;
        auto args = primitive_args(*plan, src, weights, dst, residual, b != nullptr ? b->data_as<float>() : nullptr);
        onednn::add_thread_scratchpad(args, plan->scratchpad);
        onednn::execute(plan->primitive, args);
        if (plan->reorder_dst) onednn::execute(plan->dst_reorder, {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, dst_user}});
        if (plan->residual_after)
            residual_add_.run(activation, y.data_as<float>(), residual, y.numel(), threads);
        else if (plan->activation_after)
            activation.apply_in_place(y, threads);
    }

    /// y = activation(conv(x, w) + b + residual) for is_single_pixel_pointwise(p): one matrix-vector
    /// product per image, the outputs split between threads (each sum on one thread).
    static void run_single_pixel(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b,
                                 const float* residual, const onednn::FusedActivation& activation, Tensor& y,
                                 int threads) {
        const int64_t channels = p.in_channels, outputs = p.out_channels;
        const std::optional<StoreActivation> at_store = StoreActivation::of(activation);
        const float* xs = x.data_as<float>();
        const float* ws = w.data_as<float>();
        const float* bias = b != nullptr ? b->data_as<float>() : nullptr;
        float* ys = y.data_as<float>();
        onednn::parallel_for(p.batch * outputs, threads, channels, [&](int64_t begin, int64_t end) {
            while (begin < end) {  // [begin, end) may span images
                const int64_t n = begin / outputs, first = begin % outputs;
                const int64_t last = std::min(outputs, first + (end - begin));
                pixel_pointwise(ws, xs + n * channels, channels, bias,
                                residual != nullptr ? residual + n * outputs : nullptr,
                                at_store.value_or(StoreActivation{}), first, last, ys + n * outputs);
                begin += last - first;
            }
        });
        if (!at_store) activation.apply_in_place(y, threads);
    }

    /// A pointwise convolution between blocked tensors on a small image (ResNet's and MobileNetV2's
    /// last stages), on 2+ threads: oneDNN splits its pixels between the threads, so each thread
    /// streams all of the weights; here each thread runs a single-threaded primitive on its share of
    /// the output channels (and weights). False, having done nothing, where that does not apply.
    bool split_by_output_channels(const NodeInfo& context_node, const ConvProblem& p, const Tensor& w, const Tensor& x,
                                  const Tensor* b, const float* residual, bool activate,
                                  const onednn::FusedActivation& activation, Tensor& y, int threads) const {
        constexpr int64_t kMaxPixels = 14 * 14;
        const Geometry& g = p.geometry;
        if (threads < 2 || input_block_ == 0 || output_block_ == 0 || p.transpose || p.group != 1 || p.batch != 1 ||
            g.rank() != 2 || !constant_weight_.defined() || constant_weight_.shape() != w.shape() ||
            p.out_channels % (threads * output_block_) != 0 || g.output[0] * g.output[1] > kMaxPixels)
            return false;
        for (std::size_t d = 0; d < 2; ++d)
            if (g.kernel[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0 || g.dilations[d] != 1) return false;
        ConvProblem part = p;
        part.out_channels = p.out_channels / threads;
        part.output_shape[1] = part.out_channels;
        Shape key = x.shape();
        key.insert(key.end(), w.shape().begin(), w.shape().end());
        key.insert(key.end(), {b != nullptr ? 1 : 0, -threads, activate ? 1 : 0, residual != nullptr ? 1 : 0});
        std::shared_ptr<const DnnlConvPlan> plan;
        {
            onednn::ThreadScope scope(1);  // each part's primitive runs on one thread
            plan = cache_.get(key, [&] {
                return make_dnnl_plan(context_node, part, b != nullptr, activation, residual != nullptr, input_block_,
                                      output_block_);
            });
        }
        if (plan == nullptr || plan->reorder_src || plan->reorder_dst || plan->activation_after ||
            plan->residual_after || plan->weights == plan->weights_plain)
            return false;
        const int64_t pixels = g.output[0] * g.output[1];
        const int64_t weights_per_part = part.out_channels * p.in_channels;
        std::vector<const void*> packed(static_cast<std::size_t>(threads));
        for (int i = 0; i < threads; ++i)
            packed[i] = packed_weights_.get(plan->weights_plain,
                                            constant_weight_.data_as<float>() + i * weights_per_part, plan->weights);
        std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
        onednn::parallel_chunks(threads, threads, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                try {
                    const int64_t channel = i * part.out_channels;
                    auto args = primitive_args(
                        *plan, onednn::wrap_memory(plan->src_user, x.data()),
                        onednn::wrap_memory(plan->weights, packed[i]),
                        onednn::wrap_memory(plan->dst_user, y.data_as<float>() + channel * pixels),
                        residual != nullptr ? residual + channel * pixels : nullptr,
                        b != nullptr ? b->data_as<float>() + channel : nullptr);
                    onednn::add_thread_scratchpad(args, plan->scratchpad);
                    onednn::execute(plan->primitive, args);
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            }
        });
        for (const auto& error : errors)
            if (error) std::rethrow_exception(error);
        return true;
    }

    /// X or Y is channel-blocked (the layout pass runs these on oneDNN's blocked kernels only).
    bool blocked() const { return input_block_ != 0 || output_block_ != 0; }

    /// Whether our own blocked convolution (blocked_conv.h) runs `p` instead of oneDNN: where the
    /// layout pass made X or Y blocked in 8 channels (the kernel's block; oneDNN's AVX-512 kernels
    /// on 16 beat it), with constant weights (packed once), on a CPU with AVX2 and FMA, for the
    /// shapes where it was measured faster (BENCHMARKS.md, issue 16).
    bool own_blocked_conv_runs(const ConvProblem& p, const Tensor& w) const {
        const Geometry& g = p.geometry;
        const auto narrow_or_plain = [](int64_t block) { return block == 0 || block == kNarrowChannelBlock; };
        if (!blocked() || !narrow_or_plain(input_block_) || !narrow_or_plain(output_block_) || p.transpose ||
            p.group != 1 || g.rank() != 2 || p.in_channels % kNarrowChannelBlock != 0 ||
            p.out_channels % kNarrowChannelBlock != 0 || !constant_weight_.defined() ||
            constant_weight_.shape() != w.shape() || !blocked_conv::cpu_supported())
            return false;
        for (std::size_t d = 0; d < 2; ++d)
            if (g.dilations[d] != 1 || g.pad_begin[d] < 0 || g.pad_end[d] < 0) return false;
        return blocked_conv::measured_faster(own_problem(p));
    }

    /// `p` as blocked_conv sees it (2-D, groups 1).
    static blocked_conv::Problem own_problem(const ConvProblem& p) {
        const Geometry& g = p.geometry;
        blocked_conv::Problem problem;
        problem.batch = p.batch;
        problem.in_channels = p.in_channels;
        problem.out_channels = p.out_channels;
        problem.in_h = g.input[0];
        problem.in_w = g.input[1];
        problem.out_h = g.output[0];
        problem.out_w = g.output[1];
        problem.k_h = g.kernel[0];
        problem.k_w = g.kernel[1];
        problem.stride_h = g.strides[0];
        problem.stride_w = g.strides[1];
        problem.pad_top = g.pad_begin[0];
        problem.pad_left = g.pad_begin[1];
        return problem;
    }

    /// y = activation(conv(x, w) + b + residual) with our own kernel; Relu and Clip are applied as
    /// each sum is stored, SiLU and GELU by a pass after it.
    void run_own_blocked(const NodeInfo& context_node, const ConvProblem& p, const Tensor& x, const Tensor* b,
                         const float* residual, const onednn::FusedActivation& activation, Tensor& y,
                         int threads) const {
        const blocked_conv::Problem problem = own_problem(p);
        std::shared_ptr<const float> packed;
        {
            std::lock_guard<std::mutex> lock(own_packed_mutex_);
            if (own_packed_ == nullptr) {
                own_packed_ = blocked_conv::pack_weights(problem, constant_weight_.data_as<float>());
                if (logger().enabled(Severity::kSuperVerbose)) {
                    logger().super_verbose("Node '" + context_node.name() + "' (" + context_node.op_type() +
                                           "): runs on the runtime's own blocked convolution");
                }
            }
            packed = own_packed_;
        }
        blocked_conv::Epilogue epilogue;
        epilogue.bias = b != nullptr ? b->data_as<float>() : nullptr;
        epilogue.residual = residual;
        using Kind = onednn::FusedActivation::Kind;
        const bool at_store = activation.kind() == Kind::kRelu || activation.kind() == Kind::kClip;
        if (at_store) {
            epilogue.clip = true;
            epilogue.lo = activation.kind() == Kind::kRelu ? 0.0f : activation.clip_min();
            epilogue.hi =
                activation.kind() == Kind::kRelu ? std::numeric_limits<float>::infinity() : activation.clip_max();
        }
        // A side the graph holds as NCHW (where a blocked tensor meets an NCHW class, e.g. ResNet's
        // last stage, whose sums reach GlobalAveragePool and Flatten) is converted in a scratch buffer.
        const float* xb = x.data_as<float>();
        if (input_block_ == 0) {
            float* scratch = static_cast<float*>(onednn::thread_scratch(0, x.nbytes()));
            blocked_conv::block_channels(xb, problem.batch, problem.in_channels, problem.in_h * problem.in_w, scratch);
            xb = scratch;
        }
        if (output_block_ != 0) {
            blocked_conv::run(problem, xb, packed.get(), epilogue, y.data_as<float>(), threads);
        } else {
            float* yb = static_cast<float*>(onednn::thread_scratch(2, y.nbytes()));
            blocked_conv::Epilogue bias_only;
            bias_only.bias = epilogue.bias;
            blocked_conv::run(problem, xb, packed.get(), bias_only, yb, threads);
            blocked_conv::unblock_channels(yb, epilogue, problem.batch, problem.out_channels,
                                           problem.out_h * problem.out_w, y.data_as<float>());
        }
        if (!at_store) activation.apply_in_place(y, threads);
    }

    bool transpose_;
    WindowAttrs attrs_;
    int64_t group_ = 1;
    onednn::FusedActivation activation_;
    bool has_residual_ = false;  ///< a residual Add was folded (input 3, kFusedResidualAttr)
    int64_t input_block_ = 0;    ///< X's channel block (kBlockedInputAttr; 0: NCHW)
    int64_t output_block_ = 0;   ///< Y's channel block (kBlockedOutputAttr; 0: NCHW)
    ResidualAdd residual_add_;   ///< y = activation(y + residual), cached primitives
    std::vector<int64_t> output_padding_;
    std::vector<int64_t> output_shape_attr_;
    Tensor constant_weight_;  ///< float32 value of a constant W (undefined when W is computed)
    onednn::PackedWeights packed_weights_;
    mutable std::mutex own_packed_mutex_;
    mutable std::shared_ptr<const float> own_packed_;  ///< constant_weight_ packed for blocked_conv::run
    onednn::PrimitiveCache<DnnlConvPlan> cache_;
};

class ConvKernel final : public ConvKernelBase {
public:
    explicit ConvKernel(const NodeInfo& node) : ConvKernelBase(node, false) {}
};

class ConvTransposeKernel final : public ConvKernelBase {
public:
    explicit ConvTransposeKernel(const NodeInfo& node) : ConvKernelBase(node, true) {}
};

// ---- DeformConv --------------------------------------------------------------------------------------

// 2-D deformable convolution (opset 19): every kernel tap samples X bilinearly at its regular
// position plus a learned offset, scaled by an optional mask. Samples outside the image are 0.
class DeformConvKernel final : public Kernel {
public:
    explicit DeformConvKernel(const NodeInfo& node)
        : group_(node.attr_int("group", 1)),
          offset_group_(node.attr_int("offset_group", 1)),
          dilations_(node.attr_ints("dilations", {1, 1})),
          strides_(node.attr_ints("strides", {1, 1})),
          pads_(node.attr_ints("pads", {0, 0, 0, 0})),
          kernel_shape_(node.attr_ints("kernel_shape")) {
        if (group_ <= 0 || offset_group_ <= 0)
            node.fail(
                fmt::format("attributes 'group' ({}) and 'offset_group' ({}) must be positive", group_, offset_group_));
        if (dilations_.size() != 2 || strides_.size() != 2 || pads_.size() != 4)
            node.fail("attributes 'dilations' and 'strides' need 2 values and 'pads' 4 (only 2-D is supported)");
        for (int64_t v : dilations_)
            if (v <= 0) node.fail(fmt::format("attribute 'dilations' values must be positive, but one is {}", v));
        for (int64_t v : strides_)
            if (v <= 0) node.fail(fmt::format("attribute 'strides' values must be positive, but one is {}", v));
        for (int64_t v : pads_)
            if (v < 0) node.fail(fmt::format("attribute 'pads' values must not be negative, but one is {}", v));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        const Tensor& w0 = context.required_input(1);
        const Tensor& offset0 = context.required_input(2);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        if (x0.rank() != 4 || w0.rank() != 4)
            node.fail(fmt::format("X and W must have rank 4 (2-D convolution), but they have shapes {} and {}",
                                  shape_to_string(x0.shape()), shape_to_string(w0.shape())));
        const int64_t batch = x0.shape()[0], channels = x0.shape()[1], height = x0.shape()[2], width = x0.shape()[3];
        const int64_t filters = w0.shape()[0], kh = w0.shape()[2], kw = w0.shape()[3];
        if (!kernel_shape_.empty() && kernel_shape_ != std::vector<int64_t>{kh, kw})
            node.fail(
                fmt::format("attribute 'kernel_shape' does not match the weights {}", shape_to_string(w0.shape())));
        if (channels % group_ != 0 || filters % group_ != 0 || w0.shape()[1] * group_ != channels ||
            channels % offset_group_ != 0)
            node.fail(fmt::format("groups ({}, offset {}) do not divide X {} and W {}", group_, offset_group_,
                                  shape_to_string(x0.shape()), shape_to_string(w0.shape())));
        const int64_t out_h = (height + pads_[0] + pads_[2] - (dilations_[0] * (kh - 1) + 1)) / strides_[0] + 1;
        const int64_t out_w = (width + pads_[1] + pads_[3] - (dilations_[1] * (kw - 1) + 1)) / strides_[1] + 1;
        if (out_h <= 0 || out_w <= 0) node.fail("the kernel does not fit the padded input");
        const Shape offset_shape{batch, offset_group_ * 2 * kh * kw, out_h, out_w};
        if (offset0.shape() != offset_shape)
            node.fail(fmt::format("offset must have shape {}, but it has shape {}", shape_to_string(offset_shape),
                                  shape_to_string(offset0.shape())));
        const Tensor* bias0 = context.input(3);
        if (bias0 && !bias0->defined()) bias0 = nullptr;
        if (bias0 && bias0->numel() != filters)
            node.fail(
                fmt::format("B must have {} values, but it has shape {}", filters, shape_to_string(bias0->shape())));
        const Tensor* mask0 = context.input(4);
        if (mask0 && !mask0->defined()) mask0 = nullptr;
        const Shape mask_shape{batch, offset_group_ * kh * kw, out_h, out_w};
        if (mask0 && mask0->shape() != mask_shape)
            node.fail(fmt::format("mask must have shape {}, but it has shape {}", shape_to_string(mask_shape),
                                  shape_to_string(mask0->shape())));
        const Tensor x = x0.cast(DataType::kFloat64), w = w0.cast(DataType::kFloat64);
        const Tensor offset = offset0.cast(DataType::kFloat64);
        const Tensor mask = mask0 ? mask0->cast(DataType::kFloat64) : Tensor();
        const Tensor bias = bias0 ? bias0->cast(DataType::kFloat64) : Tensor();
        Tensor y(DataType::kFloat64, {batch, filters, out_h, out_w});
        const int64_t per_group = channels / group_, per_filter_group = filters / group_;
        const int64_t per_offset_group = channels / offset_group_;
        const int64_t points = out_h * out_w;
        auto sample = [&](const double* plane, double py, double px) {
            // Written so that NaN positions also read 0.
            if (!(py > -1 && py < static_cast<double>(height) && px > -1 && px < static_cast<double>(width)))
                return 0.0;
            const auto y0 = static_cast<int64_t>(std::floor(py)), x0i = static_cast<int64_t>(std::floor(px));
            const double ly = py - static_cast<double>(y0), lx = px - static_cast<double>(x0i);
            auto at = [&](int64_t yy, int64_t xx) {
                return yy >= 0 && yy < height && xx >= 0 && xx < width ? plane[yy * width + xx] : 0.0;
            };
            return (1 - ly) * (1 - lx) * at(y0, x0i) + (1 - ly) * lx * at(y0, x0i + 1) +
                   ly * (1 - lx) * at(y0 + 1, x0i) + ly * lx * at(y0 + 1, x0i + 1);
        };
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t f = 0; f < filters; ++f) {
                const int64_t g = f / per_filter_group;
                for (int64_t oh = 0; oh < out_h; ++oh)
                    for (int64_t ow = 0; ow < out_w; ++ow) {
                        double sum = bias.defined() ? bias.data_as<double>()[f] : 0.0;
                        for (int64_t c = 0; c < per_group; ++c) {
                            const int64_t channel = g * per_group + c;
                            const int64_t og = channel / per_offset_group;
                            const double* plane = x.data_as<double>() + (n * channels + channel) * height * width;
                            for (int64_t i = 0; i < kh; ++i)
                                for (int64_t j = 0; j < kw; ++j) {
                                    const int64_t tap = i * kw + j;
                                    const int64_t o =
                                        ((n * offset_group_ + og) * 2 * kh * kw + 2 * tap) * points + oh * out_w + ow;
                                    const double dy = offset.data_as<double>()[o];
                                    const double dx = offset.data_as<double>()[o + points];
                                    const double py =
                                        static_cast<double>(oh * strides_[0] - pads_[0] + i * dilations_[0]) + dy;
                                    const double px =
                                        static_cast<double>(ow * strides_[1] - pads_[1] + j * dilations_[1]) + dx;
                                    double value = sample(plane, py, px);
                                    if (mask.defined())
                                        value *=
                                            mask.data_as<double>()[((n * offset_group_ + og) * kh * kw + tap) * points +
                                                                   oh * out_w + ow];
                                    sum += value * w.data_as<double>()[((f * per_group + c) * kh + i) * kw + j];
                                }
                        }
                        y.data_as<double>()[((n * filters + f) * out_h + oh) * out_w + ow] = sum;
                    }
            }
        context.set_output(0, y.cast(x0.dtype()));
    }

private:
    int64_t group_, offset_group_;
    std::vector<int64_t> dilations_, strides_, pads_, kernel_shape_;
};

}  // namespace

void register_conv_ops(OpRegistry& registry) {
    registry.add("", "Conv", 1, kMaxOpset, make_factory<ConvKernel>());
    registry.add("", "ConvTranspose", 1, kMaxOpset, make_factory<ConvTransposeKernel>());
    registry.add("", "DeformConv", 19, kMaxOpset, make_factory<DeformConvKernel>());
}

}  // namespace polygraphy::ref
