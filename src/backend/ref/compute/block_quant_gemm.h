// Products with block-quantized weights in ONNX Runtime's MatMulNBits layout: Y = A W^T, where W is
// N x K and each column of the product (a row of W) is stored as codes of 2, 4 or 8 bits, packed low
// bits first along K, with one scale (and zero point) per block of K. The weights stay quantized in
// memory: each product dequantizes them a slice at a time, straight into the layout the float32 GEMM
// reads (packed_gemm.h), or into a row of K for products of a few rows.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace polygraphy::ref::block_quant {

/// A view of quantized weights (nothing is owned; every pointer outlives the view).
struct QuantizedWeights {
    int64_t k = 0;           ///< the reduction length
    int64_t n = 0;           ///< the number of columns of the product (rows of W)
    int64_t bits = 4;        ///< bits per code: 2, 4 or 8
    int64_t block_size = 0;  ///< codes per block (a power of two, at least 16)
    /// Codes: row n of W is `blocks() * blob_bytes()` bytes at codes + n * row_bytes(); code k sits in
    /// byte (k / block_size) * blob_bytes() + (k % block_size) * bits / 8, at bit ((k * bits) % 8).
    const uint8_t* codes = nullptr;
    /// One float32 scale per (row, group): scales[n * blocks() + g].
    const float* scales = nullptr;
    /// Zero points, one per (row, group), either packed like the codes (zero_point_row_bytes() bytes
    /// per row) or as floats (zero_points_float[n * blocks() + g]); both null: 2^(bits - 1).
    const uint8_t* zero_points_packed = nullptr;
    const float* zero_points_float = nullptr;
    /// The group of each k (K values in [0, blocks())), or null: k / block_size.
    const int32_t* group_index = nullptr;

    int64_t blocks() const { return (k + block_size - 1) / block_size; }
    int64_t blob_bytes() const { return block_size * bits / 8; }
    int64_t row_bytes() const { return blocks() * blob_bytes(); }
    int64_t zero_point_row_bytes() const { return (blocks() * bits + 7) / 8; }
};

/// Row `row` of W over [k0, k0 + count), dequantized as (code - zero point) * scale into out[0..count).
void dequantize_row(const QuantizedWeights& w, int64_t row, int64_t k0, int64_t count, float* out);

/// Constant quantized weights rearranged once for the tiled product: the codes of each panel of 16
/// columns stored k by k (the 16 codes of one k together: 8 bytes at 4 bits, one byte per code at 2
/// and 8), and each (panel, group)'s 16 scales and zero points as floats, so that a depth block of a
/// panel dequantizes with a few vector instructions per k, each value exactly as dequantize_row()
/// gives it. For weights without a group index (groups are then the blocks).
class PanelWeights {
public:
    /// Rearranges `w` (whose group_index must be null) on up to `threads` threads.
    PanelWeights(const QuantizedWeights& w, int threads);

    /// Writes the panel `panel` of W^T's depth block [k0, k0 + depth) in packed_gemm's layout
    /// (PackedMatrix::PanelFill).
    void fill(int64_t k0, int64_t depth, int64_t panel, float* out) const;

    /// Bytes held (codes, scales, zero points).
    int64_t bytes() const;

private:
    int64_t k_, n_, bits_, block_size_, groups_, panels_, code_bytes_;  // code_bytes_: bytes per (panel, k)
    std::unique_ptr<uint8_t[]> codes_;                                  // [panel][k][code_bytes_]
    std::vector<float> scales_, zeros_;                                 // [panel][group][16]
};

/// y (M x N, rows N apart) = a (M x K, rows K apart) times W^T, plus bias[j] in column j when `bias`
/// is not null (added after the whole sum). `panels`, when not null, is `w` rearranged (it is then
/// read instead of `w` for products of many rows). Each element is summed in an order that does not
/// depend on `threads`, so results are the same at every thread count.
void multiply(const float* a, int64_t m, const QuantizedWeights& w, const PanelWeights* panels, const float* bias,
              float* y, int threads);

}  // namespace polygraphy::ref::block_quant
