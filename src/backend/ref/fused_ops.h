// The built-in runtime's own operators: what its graph passes (fusion.h, blocked_layout.h) turn a
// standard node into when they fold work into it or keep its tensors channel-blocked, so that a
// standard Conv, MatMul, Gemm or pool stays exactly its ONNX operator. Where ONNX Runtime has an
// operator of that meaning (com.microsoft.FusedConv with Relu or Clip, FusedGemm with Relu,
// FusedMatMul's alpha), the passes write it, and the graph the runtime runs is one ONNX Runtime runs
// too; the rest are operators of the private domain kRuntimeDomain, never part of user models.
#pragma once

#include <cstdint>
#include <string_view>

namespace polygraphy::ref {

/// The domain of the runtime's own operators. They take the model's ai.onnx opset (a blocked MaxPool
/// reads MaxPool's attributes of that opset):
/// - FusedConv: Conv's attributes and inputs X, W, B, plus an optional residual R (input 3, added to
///   the convolution and its bias with Add's broadcasting, in that order, so bit-identical to the
///   Add it replaces), then kActivationAttr; kBlockedInputAttr / kBlockedOutputAttr for X and Y.
///   com.microsoft.FusedConv is the same with an R of the output's shape (its Z) and ONNX Runtime's
///   activations.
/// - FusedConvTranspose: ConvTranspose's, then kActivationAttr.
/// - FusedMatMul: MatMul(A, B) times kAlphaAttr, plus an optional float32 bias [N] (input 2, with B a
///   constant float32 matrix) added to every row, then kActivationAttr. com.microsoft.FusedMatMul
///   with no transposes is the same without bias and activation.
/// - FusedGemm: Gemm's, then kActivationAttr (com.microsoft.FusedGemm's attribute names).
/// - BlockedMaxPool (2-D, no Indices), BlockedGlobalAveragePool: the pool of a channel-blocked X
///   (kBlockedInputAttr), the output blocked alike (GlobalAveragePool's only with kBlockedOutputAttr).
inline constexpr const char* kRuntimeDomain = "ai.polygraphy.ref";

/// STRING: the activation applied to the output: "Relu", "Clip" (bounds in kActivationParamsAttr:
/// FLOATs min, max), "Gelu" (the erf form torch exports) or "Silu" (x * sigmoid(x)). The kernel
/// applies it as it stores the output (a oneDNN post-op, or the runtime's vectorised pass), so it
/// costs no extra pass over memory. Differences from the unfused operators: Relu and Clip map NaN
/// to 0 and to the lower bound (oneDNN's max, as in ONNX Runtime's fused kernels), and Gelu's erf is
/// accurate to ~1e-7 absolute.
inline constexpr std::string_view kActivationAttr = "activation";
inline constexpr std::string_view kActivationParamsAttr = "activation_params";
/// FLOAT: the factor of a FusedMatMul's product (attention's 1 / sqrt(head size)), applied as oneDNN
/// stores it. Dividing by a power of two (BERT's and ViT's sqrt(64) = 8) gives the same bits as the
/// Div it replaces; other divisors can differ by an ulp.
inline constexpr std::string_view kAlphaAttr = "alpha";
/// INT: input 0 (kBlockedInputAttr) or output 0 (kBlockedOutputAttr) of a FusedConv or blocked pool
/// is a float32 tensor in a channel-blocked layout of this block B: 8 (oneDNN's nChw8c) or 16
/// (nChw16c), the 5-D tensor [N, C / B, H, W, B] instead of [N, C, H, W]: element (n, c, h, w) is
/// at [n, c / B, h, w, c % B]. 0 or absent: as written. Elementwise operators and Concat along axis
/// 1 read and write it unchanged.
inline constexpr std::string_view kBlockedInputAttr = "blocked_input";
inline constexpr std::string_view kBlockedOutputAttr = "blocked_output";
/// The blocks: 8 floats are one AVX2 vector, 16 one AVX-512 vector.
inline constexpr int64_t kNarrowChannelBlock = 8;
inline constexpr int64_t kWideChannelBlock = 16;
/// kWideChannelBlock where oneDNN runs its AVX-512 kernels on this CPU (they take nChw16c only),
/// else kNarrowChannelBlock.
int64_t widest_channel_block();

}  // namespace polygraphy::ref
