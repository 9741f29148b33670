// The built-in runtime's own float32 GEMM for products whose right-hand matrix is a constant (the
// weights of Linear and Gemm layers). The weights are packed once into 16-column panels; an AVX2/FMA
// micro-kernel computes 6x16 tiles of the result in registers. oneDNN 2.6's AVX2 GEMM packs the
// weights again on every call and ran the transformers' products 12-20% slower than ONNX Runtime's
// MLAS, which packs them once as this does (BENCHMARKS.md, issue 16).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

namespace polygraphy::ref::packed_gemm {

/// Whether this CPU runs the kernel (AVX2 and FMA). Callers use another path when it does not.
bool available();

/// A K x N float32 matrix packed for multiply(): blocks of up to 256 rows of K, each cut into
/// panels of 16 columns stored row by row, the last panel zero-padded.
class PackedMatrix {
public:
    /// Packs `b`, whose element (k, n) is at b[k * row_stride + n * col_stride] (a row-major K x N
    /// matrix: row_stride N, col_stride 1; its transpose stored N x K: row_stride 1, col_stride K),
    /// on up to `threads` threads. Throws PolygraphyException when the memory cannot be allocated.
    PackedMatrix(const float* b, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride, int threads);

    int64_t k() const { return k_; }
    int64_t n() const { return n_; }
    /// Number of 16-column panels.
    int64_t panels() const { return panels_; }
    /// The panel `panel` of the depth block that starts at row `k0` of the matrix.
    const float* panel(int64_t k0, int64_t panel) const;

private:
    int64_t k_;
    int64_t n_;
    int64_t panels_;
    std::shared_ptr<float> data_;
};

/// Where element (i, j) of a matrix is: i * row_stride + (j / 8) * block_stride + j % 8 floats from
/// its start. A row-major matrix of N columns is row_major(N); a channel-blocked tensor [C/8, P, 8]
/// read as P rows (pixels) of C columns (channels), as a 1x1 convolution reads its input and writes
/// its output, is channel_blocked(P).
struct MatrixLayout {
    int64_t row_stride = 0;
    int64_t block_stride = 8;

    static MatrixLayout row_major(int64_t columns) { return {columns, 8}; }
    static MatrixLayout channel_blocked(int64_t pixels) { return {8, 8 * pixels}; }
};

/// Bounds a result is clamped to (a folded Relu or Clip).
struct Clamp {
    float lo = 0.0f;
    float hi = 0.0f;
};

/// What multiply() reads and writes besides the packed matrix.
struct Operands {
    const float* a = nullptr;  ///< M x K
    MatrixLayout a_layout{};
    float* y = nullptr;  ///< M x N
    MatrixLayout y_layout{};
    const float* bias = nullptr;      ///< N values, one per column, or null
    const float* residual = nullptr;  ///< M x N laid out as y, or null
    bool clamp = false;               ///< clamp every result to clamp_to (NaN becomes clamp_to.lo)
    Clamp clamp_to{};
};

/// y = a times b, plus bias[j] in column j, plus the residual, clamped: the bias is added to the
/// finished sum (as a separate Add would), then the residual, then the clamp. Each element is summed over k in the same
/// order whatever `threads` is, so results do not depend on it. A channel-blocked layout needs its channel count (K for
/// a, N for y) a multiple of 8.
void multiply(const Operands& operands, int64_t m, const PackedMatrix& b, int threads);

/// A constant matrix packed on first use (kernels are const during compute, and the thread count
/// for the packing is known only then). Thread-safe.
class LazyPackedMatrix {
public:
    /// The packed form of `b` (arguments as PackedMatrix's), created by the first call.
    const PackedMatrix& get(const float* b, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride,
                            int threads) const;

private:
    mutable std::once_flag once_;
    mutable std::unique_ptr<PackedMatrix> packed_;
};

}  // namespace polygraphy::ref::packed_gemm
