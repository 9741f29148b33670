// One registration function per operator family; OpRegistry::builtin() calls each of them.
#pragma once

#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

void register_elementwise_ops(OpRegistry& registry);  // ops/elementwise.cpp: unary, binary, Where, Clip, Cast...
void register_tensor_ops(OpRegistry& registry);       // ops/tensor.cpp: Reshape, Transpose, Concat, Slice, Gather...
void register_reduce_ops(OpRegistry& registry);       // ops/reduce.cpp: Reduce*, ArgMax/ArgMin
void register_nn_ops(OpRegistry& registry);           // ops/nn.cpp: Softmax, norms, activations with attributes
void register_conv_ops(OpRegistry& registry);         // ops/conv.cpp: Conv, ConvTranspose (oneDNN)
void register_pool_ops(OpRegistry& registry);         // ops/pool.cpp: MaxPool, AveragePool, Global* (oneDNN)
void register_matmul_ops(OpRegistry& registry);       // ops/matmul.cpp: MatMul, Gemm (oneDNN)

}  // namespace polygraphy::ref
