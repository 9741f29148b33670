// The direct convolutions of conv_direct.h.
#include "backend/ref/compute/conv_direct.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "backend/ref/compute/vector_math.h"

namespace polygraphy::ref::conv {
namespace {

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
/// oneDNN primitive's call costs more than its arithmetic (BENCHMARKS.md). Rows of W go four at a
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

}  // namespace

bool is_plain_depthwise_2d(const ConvProblem& p) {
    return !p.transpose && p.geometry.rank() == 2 && p.group > 1 && p.group == p.in_channels &&
           p.group == p.out_channels;
}

bool is_single_pixel_pointwise(const ConvProblem& p) {
    const Geometry& g = p.geometry;
    if (p.transpose || p.group != 1) return false;
    for (std::size_t d = 0; d < g.rank(); ++d)
        if (g.input[d] != 1 || g.kernel[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0) return false;
    return true;
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

void single_pixel_pointwise(const ConvProblem& p, const float* x, const float* w, const float* bias,
                            const float* residual, const StoreActivation& activation, float* y, int num_threads) {
    const int64_t channels = p.in_channels, outputs = p.out_channels;
    onednn::parallel_for(p.batch * outputs, num_threads, channels, [&](int64_t begin, int64_t end) {
        while (begin < end) {  // [begin, end) may span images
            const int64_t n = begin / outputs, first = begin % outputs;
            const int64_t last = std::min(outputs, first + (end - begin));
            pixel_pointwise(w, x + n * channels, channels, bias, residual != nullptr ? residual + n * outputs : nullptr,
                            activation, first, last, y + n * outputs);
            begin += last - first;
        }
    });
}

}  // namespace polygraphy::ref::conv
