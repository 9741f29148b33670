// The operator families of the built-in runtime: one registration function per family file,
// called by OpRegistry::builtin() (src/backend/ref/op_registry.cpp). The runtime's own operators,
// which its graph passes write, are described in backend/ref/fused_ops.h.
#pragma once

#include "backend/ref/fused_ops.h"
#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

// One registration function per family file, src/backend/ref/ops/<family>.cpp (the file's first
// lines say what it holds), grouped as ONNX Runtime groups its CPU kernels.
void register_unary_ops(OpRegistry& registry);         // Neg, Abs, Sqrt, Exp, trigonometry, Floor, IsNaN...
void register_activation_ops(OpRegistry& registry);    // Relu, Sigmoid, Tanh, Gelu, PRelu, Shrink, Clip...
void register_binary_ops(OpRegistry& registry);        // Add, Div, Pow, Bitwise*, And, Equal, Max, Sum, Where...
void register_cast_ops(OpRegistry& registry);          // Cast, CastLike
void register_tensor_ops(OpRegistry& registry);        // Identity, Transpose, Concat, Split, Slice, Pad, Tile...
void register_shape_ops(OpRegistry& registry);         // Reshape, Flatten, Squeeze, Unsqueeze, Expand, Shape...
void register_indexing_ops(OpRegistry& registry);      // Gather*, Scatter*, Compress, NonZero, OneHot
void register_generator_ops(OpRegistry& registry);     // Constant, ConstantOfShape, Range, EyeLike
void register_reduce_ops(OpRegistry& registry);        // Reduce*, ArgMax, ArgMin
void register_nn_ops(OpRegistry& registry);            // Softmax, normalizations, Dropout
void register_conv_ops(OpRegistry& registry);          // Conv, ConvTranspose (oneDNN), DeformConv
void register_pool_ops(OpRegistry& registry);          // MaxPool, AveragePool, LpPool, Global*, MaxUnpool
void register_col2im_ops(OpRegistry& registry);        // Col2Im
void register_matmul_ops(OpRegistry& registry);        // MatMul, Gemm (oneDNN)
void register_quantized_ops(OpRegistry& registry);     // QuantizeLinear, DequantizeLinear, QLinear*, ConvInteger...
void register_quantized_matmul_ops(OpRegistry& registry);  // com.microsoft MatMulNBits, MatMulIntegerToFloat...
void register_transformer_ops(OpRegistry& registry);       // com.microsoft EmbedLayerNormalization, RotaryEmbedding
void register_attention_ops(OpRegistry& registry);  // com.microsoft Attention, MultiHeadAttention, GroupQueryAttention
void register_nchwc_ops(OpRegistry& registry);      // com.microsoft.nchwc ReorderInput, Conv, MaxPool...
void register_qlinear_ops(OpRegistry& registry);           // com.microsoft QLinearAdd, QLinearSoftmax, QLinearConcat...
void register_linalg_ops(OpRegistry& registry);        // Einsum, Det
void register_recurrent_ops(OpRegistry& registry);     // RNN, GRU, LSTM
void register_loss_ops(OpRegistry& registry);          // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_image_ops(OpRegistry& registry);         // Resize, Upsample
void register_sampling_ops(OpRegistry& registry);      // GridSample, AffineGrid, Random*, Bernoulli, Multinomial
void register_detection_ops(OpRegistry& registry);     // NonMaxSuppression, RoiAlign
void register_signal_ops(OpRegistry& registry);        // DFT, STFT, MelWeightMatrix, Hann/Hamming/BlackmanWindow
void register_sort_ops(OpRegistry& registry);          // TopK, Unique, CumSum
void register_control_flow_ops(OpRegistry& registry);  // If, Loop, Scan, SequenceMap (subgraphs)
void register_sequence_ops(OpRegistry& registry);      // Sequence*, SplitToSequence, ConcatFromSequence, Optional*
void register_string_ops(OpRegistry& registry);        // StringNormalizer, StringSplit, RegexFullMatch, TfIdfVectorizer
void register_ml_ops(OpRegistry& registry);            // ai.onnx.ml: LabelEncoder, Binarizer, TreeEnsemble...

/// Every family, in the order OpRegistry::builtin() registers them: adding a family is its file
/// and one line here.
inline constexpr void (*kOpFamilies[])(OpRegistry&) = {
    register_unary_ops,   register_activation_ops,   register_binary_ops,    register_cast_ops,
    register_tensor_ops,  register_shape_ops,        register_indexing_ops,  register_generator_ops,
    register_reduce_ops,  register_nn_ops,           register_conv_ops,      register_pool_ops,
    register_col2im_ops,  register_matmul_ops,       register_quantized_ops, register_quantized_matmul_ops,
    register_qlinear_ops, register_linalg_ops,       register_recurrent_ops, register_loss_ops,
    register_image_ops,   register_sampling_ops,     register_detection_ops, register_signal_ops,
    register_sort_ops,    register_control_flow_ops, register_sequence_ops,  register_string_ops,
    register_ml_ops,      register_transformer_ops,  register_attention_ops, register_nchwc_ops,
};

}  // namespace polygraphy::ref
