// The runtime's own direct 2-D convolution between channel-blocked tensors ([N, C/8, H, W, 8],
// blocked_layout.h), for AVX2 and FMA: groups 1, dilation 1, channel counts that are multiples of 8.
// Used by the Conv kernel (conv.cpp) where it is measured faster than oneDNN's jit:avx2 kernel.
#pragma once

#include <cstdint>
#include <memory>

namespace polygraphy::ref::blocked_conv {

/// One convolution as this kernel sees it (sizes of the NCHW tensors, pads before each spatial dim).
struct Problem {
    int64_t batch = 0;
    int64_t in_channels = 0;   ///< a multiple of 8
    int64_t out_channels = 0;  ///< a multiple of 8
    int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
    int64_t k_h = 0, k_w = 0;
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_left = 0;  ///< >= 0; the end pads follow from the output size
};

/// What is applied to each sum as it is stored: y = clip(sum + bias + residual) (each part optional).
struct Epilogue {
    const float* bias = nullptr;      ///< out_channels values, or nullptr
    const float* residual = nullptr;  ///< a blocked tensor of Y's shape, or nullptr
    bool clip = false;                ///< Relu is a clip to [0, +inf); NaN becomes `lo`, as oneDNN's post-ops
    float lo = 0.0f, hi = 0.0f;
};

/// Whether this CPU runs the kernel (AVX2 and FMA). Everything else keeps oneDNN.
bool cpu_supported();

/// Whether the kernel was measured faster than oneDNN's jit:avx2 one for `p` (BENCHMARKS.md, issue
/// 16): windows larger than 1x1 over at least 128 input channels onto outputs of at most 14x14
/// (ResNet's last two stages). Elsewhere (1x1, few channels, 28x28 and larger) oneDNN's kernel is as
/// fast or faster.
bool measured_faster(const Problem& p);

/// W (out_channels, in_channels, k_h, k_w), row-major, packed as the kernel reads it: blocks of 32
/// output channels (the last one 8, 16 or 24 wide when out_channels is not a multiple of 32), each
/// [in_channels / 8][k_h][k_w][8 input channels][32 output channels].
std::shared_ptr<const float> pack_weights(const Problem& p, const float* w);

/// y = epilogue(conv(x, w)) with x and y blocked and `packed` from pack_weights(). Each output is
/// summed in one fixed order (input channel blocks, kernel rows, kernel columns, the 8 channels of a
/// block), whatever the thread count, so results do not depend on it.
void run(const Problem& p, const float* x, const float* packed, const Epilogue& epilogue, float* y, int num_threads);

/// blocked[n, c / 8, s, c % 8] = nchw[n, c, s] for s < spatial (X of a convolution whose input the
/// graph holds as NCHW).
void block_channels(const float* nchw, int64_t batch, int64_t channels, int64_t spatial, float* blocked);

/// y[n, c, s] = clip(blocked[n, c / 8, s, c % 8] + residual[n, c, s]) with the epilogue's residual
/// (NCHW here) and clip, the same arithmetic as run() applies at its store (Y of a convolution whose
/// output the graph holds as NCHW; its bias was added by run()).
void unblock_channels(const float* blocked, const Epilogue& epilogue, int64_t batch, int64_t channels, int64_t spatial,
                      float* y);

}  // namespace polygraphy::ref::blocked_conv
