// Weights quantized for com.microsoft.MatMulNBits, laid out as ONNX Runtime's MatMulNBitsQuantizer
// writes them (round to nearest, one scale and zero point per block of K): for the operator's tests
// and for the int4 decoder of the benchmarks.
#pragma once

#include <cstdint>

#include "polygraphy/common/tensor.h"

namespace polygraphy::testing {

/// How a block's zero point is stored.
enum class NBitsZeroPoints {
    kNone,    ///< no zero points: symmetric around 2^(bits - 1), the operator's default
    kPacked,  ///< uint8, packed like the codes: ceil(blocks * bits / 8) bytes per column
    kFloat,   ///< float32, one per block
};

/// The inputs B, scales and zero_points of a MatMulNBits node.
struct NBitsWeights {
    Tensor b;            ///< uint8 [N, blocks, block_size * bits / 8]
    Tensor scales;       ///< float32 [N * blocks]
    Tensor zero_points;  ///< as NBitsZeroPoints says (undefined for kNone)
};

/// Quantizes the float32 K x N weight `w` (MatMul's B) with `bits` bits in blocks of `block_size` along K.
/// With zero points, each block maps its range [min(0, lo), max(0, hi)] onto the codes; without, its
/// largest magnitude onto 2^(bits - 1).
NBitsWeights quantize_nbits(const Tensor& w, int64_t bits, int64_t block_size, NBitsZeroPoints zero_points);

/// Bytes of the three tensors quantize_nbits() returns for a K x N weight.
int64_t nbits_weight_bytes(int64_t k, int64_t n, int64_t bits, int64_t block_size, NBitsZeroPoints zero_points);

}  // namespace polygraphy::testing
