// The private node attributes through which the runtime's graph passes (fusion.h, blocked_layout.h)
// tell the kernels what they folded into a node or which layout a tensor has. Never part of user
// models.
#pragma once

#include <cstdint>
#include <string_view>

namespace polygraphy::ref {

/// Private node attributes (never part of user models) through which a graph pass may fold an
/// activation that is the only consumer of a Conv, ConvTranspose, Gemm or MatMul output into that
/// node: STRING "Relu", "Gelu" (the erf form torch exports), "Silu" (x * sigmoid(x)), or "Clip" with
/// FLOATs kFusedClipMinAttr / kFusedClipMaxAttr (missing bounds are -inf / +inf). The kernel
/// applies it to its output (a oneDNN post-op; the depthwise kernel as it stores each result, GELU
/// excepted), so the activation costs no extra pass over memory; a Conv's SiLU runs as the
/// runtime's own vectorised pass instead (vector_math.h), faster than oneDNN's swish post-op.
/// Differences from the unfused operators: fused Relu and Clip map NaN to 0 (oneDNN's max, as in
/// ONNX Runtime's fused kernels), and fused Gelu's erf is accurate to ~1e-7 absolute.
inline constexpr std::string_view kFusedActivationAttr = "polygraphy.fused_activation";
inline constexpr std::string_view kFusedClipMinAttr = "polygraphy.fused_clip_min";
inline constexpr std::string_view kFusedClipMaxAttr = "polygraphy.fused_clip_max";
/// Private MatMul attribute (INT 1) through which a graph pass folds the Add of a float32 bias [N]
/// into a MatMul with a float32 matrix B: the bias is the node's third input, added to every row of
/// the product (before a fused activation): to the finished sum by the runtime's own GEMM
/// (packed_gemm.h, a constant B on AVX2 CPUs), bit-identical to the Add; otherwise inside oneDNN's
/// kernel, which may add it at another point of its float32 accumulation (last bits differ).
inline constexpr std::string_view kFusedBiasAttr = "polygraphy.fused_bias";
/// Private MatMul attribute (FLOAT) through which a graph pass folds a Mul or Div by a float32 scalar
/// constant, of a MatMul's output or of its A input, into a MatMul whose B is computed (attention:
/// scores divided by sqrt(head size), or the query divided before the product): the kernel multiplies
/// the product by this factor (1 / divisor for a Div) as oneDNN stores it. Dividing by a power of two
/// (BERT's and ViT's sqrt(64) = 8) gives the same bits either way; other divisors can differ by an ulp.
inline constexpr std::string_view kFusedScaleAttr = "polygraphy.fused_scale";
/// Private Conv attribute (INT 1) through which a graph pass folds a residual Add, Add(y, r) or
/// Add(r, y) that is the only reader of the Conv's output y, into the Conv: r is the node's fourth
/// input (B is "" when the Conv has no bias), and the output is activation((conv + B) + r): the
/// sum in the order of the nodes as written, so it is bit-identical to theirs. A float32 r of
/// exactly the output's shape is added together with the activation, in one pass over the output
/// (a oneDNN binary primitive with the activation as its post-op; the depthwise kernel adds it as
/// it stores each row); any other r (broadcasting, or another data type) is added after the
/// convolution with the Add operator's rules, then the folded activation (if any) runs.
inline constexpr std::string_view kFusedResidualAttr = "polygraphy.fused_residual";
/// Private Conv, GlobalAveragePool and MaxPool attributes set by the layout pass (blocked_layout.h):
/// the node's input 0 (kBlockedInputAttr) or output 0 (kBlockedOutputAttr) is a float32 tensor in
/// a channel-blocked layout, and the value is its block B: 8 (oneDNN's nChw8c) or 16 (nChw16c), the
/// 5-D tensor [N, C / B, H, W, B] instead of [N, C, H, W]: element (n, c, h, w) is at
/// [n, c / B, h, w, c % B]. 0 or absent: as written. Elementwise operators and Concat along axis 1
/// read and write it unchanged; MaxPool's output is blocked too, GlobalAveragePool's when it has
/// kBlockedOutputAttr (its [N, C, 1, 1] output has the same bytes either way).
inline constexpr std::string_view kBlockedInputAttr = "polygraphy.blocked_input";
inline constexpr std::string_view kBlockedOutputAttr = "polygraphy.blocked_output";
/// The blocks: 8 floats are one AVX2 vector, 16 one AVX-512 vector.
inline constexpr int64_t kNarrowChannelBlock = 8;
inline constexpr int64_t kWideChannelBlock = 16;
/// kWideChannelBlock where oneDNN runs its AVX-512 kernels on this CPU (they take nChw16c only),
/// else kNarrowChannelBlock.
int64_t widest_channel_block();

}  // namespace polygraphy::ref
