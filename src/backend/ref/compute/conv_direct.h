// The runtime's own direct convolutions on plain NCHW float32 planes, where a oneDNN primitive
// costs more than the arithmetic: depthwise 2-D ones, and 1x1 ones of single-pixel images.
#pragma once

#include <cstdint>
#include <optional>

#include "backend/ref/compute/conv_problem.h"
#include "backend/ref/compute/dnnl_util.h"

namespace polygraphy::ref::conv {

/// A 2-D convolution with one input and one output channel per group (MobileNet/EfficientNet style).
/// oneDNN runs these only on blocked layouts, and the two reorders around each one cost more than
/// the convolution itself, so they run here on the plain NCHW planes.
bool is_plain_depthwise_2d(const ConvProblem& p);

/// A 1x1 convolution of single-pixel images with no padding (its output is one pixel too): X is
/// [N, C] and Y [N, M] in memory, channel-blocked or not.
bool is_single_pixel_pointwise(const ConvProblem& p);

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

/// y = activation(conv(x, w) + bias + residual) for is_plain_depthwise_2d(p); bias and residual
/// (y's shape) may be nullptr.
void depthwise_conv(const ConvProblem& p, const float* x, const float* w, const float* bias, const float* residual,
                    const StoreActivation& activation, float* y, int num_threads);

/// y = activation(conv(x, w) + bias + residual) for is_single_pixel_pointwise(p): one matrix-vector
/// product per image, the outputs split between threads (each sum on one thread); bias and
/// residual may be nullptr.
void single_pixel_pointwise(const ConvProblem& p, const float* x, const float* w, const float* bias,
                            const float* residual, const StoreActivation& activation, float* y, int num_threads);

}  // namespace polygraphy::ref::conv
