// One registration function per operator family; OpRegistry::builtin() calls each of them.
#pragma once

#include <string_view>

#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

/// Private node attributes (never part of user models) through which a graph pass may fold an
/// activation that is the only consumer of a Conv, ConvTranspose, Gemm or MatMul output into that
/// node: STRING "Relu", "Gelu" (the erf form torch exports), "Silu" (x * sigmoid(x)), or "Clip" with
/// FLOATs kFusedClipMinAttr / kFusedClipMaxAttr (missing bounds are -inf / +inf). The kernel
/// applies it to its output (a oneDNN post-op), so the activation costs no extra pass over memory.
/// Differences from the unfused operators: fused Relu and Clip map NaN to 0 (oneDNN's max, as in
/// ONNX Runtime's fused kernels), and fused Gelu's erf is accurate to ~1e-7 absolute.
inline constexpr std::string_view kFusedActivationAttr = "polygraphy.fused_activation";
inline constexpr std::string_view kFusedClipMinAttr = "polygraphy.fused_clip_min";
inline constexpr std::string_view kFusedClipMaxAttr = "polygraphy.fused_clip_max";

void register_elementwise_ops(OpRegistry& registry);  // ops/elementwise.cpp: unary, binary, Where, Clip, Cast...
void register_tensor_ops(OpRegistry& registry);       // ops/tensor.cpp: Reshape, Transpose, Concat, Slice, Gather...
void register_reduce_ops(OpRegistry& registry);       // ops/reduce.cpp: Reduce*, ArgMax/ArgMin
void register_nn_ops(OpRegistry& registry);           // ops/nn.cpp: Softmax, norms, activations with attributes
void register_conv_ops(OpRegistry& registry);         // ops/conv.cpp: Conv, ConvTranspose (oneDNN)
void register_pool_ops(OpRegistry& registry);         // ops/pool.cpp: MaxPool, AveragePool, Global* (oneDNN)
void register_matmul_ops(OpRegistry& registry);       // ops/matmul.cpp: MatMul, Gemm (oneDNN)
void register_loss_ops(OpRegistry& registry);         // ops/loss.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_image_ops(OpRegistry& registry);        // ops/image.cpp: Resize, Upsample
void register_sort_ops(OpRegistry& registry);         // ops/sort.cpp: TopK, Unique, CumSum, Shrink
void register_control_flow_ops(OpRegistry& registry);  // ops/control_flow.cpp: If, Loop, Scan, SequenceMap (subgraphs)
void register_sequence_ops(OpRegistry& registry);      // ops/sequence.cpp: Sequence*, SplitToSequence, ConcatFromSequence, Optional*
void register_string_ops(OpRegistry& registry);        // ops/strings.cpp: StringNormalizer, StringConcat, StringSplit, RegexFullMatch, TfIdfVectorizer
void register_recurrent_ops(OpRegistry& registry);     // ops/recurrent.cpp: RNN, GRU, LSTM
void register_sampling_ops(OpRegistry& registry);      // ops/sampling.cpp: GridSample, AffineGrid, DeformConv, Random*, Bernoulli, Multinomial
void register_detection_ops(OpRegistry& registry);     // ops/detection.cpp: NonMaxSuppression, RoiAlign
void register_quantized_ops(OpRegistry& registry);     // ops/quantized.cpp: QLinearMatMul, QLinearConv, ConvInteger, DynamicQuantizeLinear
void register_linalg_ops(OpRegistry& registry);        // ops/linalg.cpp: Einsum, Det
void register_signal_ops(OpRegistry& registry);        // ops/signal.cpp: DFT, STFT, MelWeightMatrix
void register_col2im_ops(OpRegistry& registry);        // ops/col2im.cpp: Col2Im, MaxUnpool
void register_ml_ops(OpRegistry& registry);            // ops/ml.cpp: ai.onnx.ml LabelEncoder, Binarizer, ArrayFeatureExtractor, TreeEnsemble
void register_extra_ops(OpRegistry& registry);        // ops/extra.cpp: Bitwise*, Gelu, Mish, Celu, ThresholdedRelu, windows, EyeLike, Compress, ReverseSequence, CenterCropPad

}  // namespace polygraphy::ref
