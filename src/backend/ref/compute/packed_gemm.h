// The built-in runtime's own float32 GEMM for products whose right-hand matrix is a constant (the
// weights of Linear and Gemm layers). The weights are packed once into 16-column panels; an AVX2/FMA
// micro-kernel computes 6x16 tiles of the result in registers. oneDNN 2.6's AVX2 GEMM packs the
// weights again on every call, which left the transformers' products behind ONNX Runtime's MLAS,
// which packs them once as this does (BENCHMARKS.md, issue 16). Where the CPU has AVX-512,
// 12x32 tiles run in its 32 registers, with the same sums in the same order.
#pragma once

#include <cstdint>
#include <functional>
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

    /// Writes one panel of one depth block: out[kk * kPanelWidth + c] is element (k0 + kk, panel *
    /// kPanelWidth + c) for kk < depth, and 0 for columns at or past N. Called once per (block, panel),
    /// possibly from several threads at once; must not throw.
    using PanelFill = std::function<void(int64_t k0, int64_t depth, int64_t panel, float* out)>;
    /// A K x N matrix whose panels `fill` writes (weights stored in another form, such as block-quantized
    /// ones, dequantized straight into the packed layout). Into `storage` when it is not null (at least
    /// packed_floats(k, n) floats, 64-byte aligned; shared, not copied), so that a caller packing
    /// many matrices in turn reuses one buffer.
    PackedMatrix(int64_t k, int64_t n, const PanelFill& fill, int threads, std::shared_ptr<float> storage = nullptr);

    /// Columns in one panel.
    static constexpr int64_t kPanelWidth = 16;
    /// Floats a packed K x N matrix occupies.
    static int64_t packed_floats(int64_t k, int64_t n) { return (n + kPanelWidth - 1) / kPanelWidth * kPanelWidth * k; }

    int64_t k() const { return k_; }
    int64_t n() const { return n_; }
    /// Number of 16-column panels.
    int64_t panels() const { return panels_; }
    /// The panel `panel` of the depth block that starts at row `k0` of the matrix.
    const float* panel(int64_t k0, int64_t panel) const;

private:
    void fill_panels(const PanelFill& fill, int threads);

    int64_t k_;
    int64_t n_;
    int64_t panels_;
    std::shared_ptr<float> data_;
};

/// The micro-kernels multiply() may use: the CPU's widest (AVX-512 where it has it), or AVX2 only (for
/// tests, which compare the two).
enum class KernelChoice { kWidest, kAvx2Only };

/// y (M x N, rows `ldy` apart; N when ldy is negative) = a (M x K, row i at a + i * lda) times b, plus
/// bias[j] in column j when `bias` is not null; the bias is added after the whole sum, as a separate
/// Add would. Each element is summed over k in the same order whatever `threads` and `kernel` are,
/// so results do not depend on them.
void multiply(const float* a, int64_t m, int64_t lda, const PackedMatrix& b, const float* bias, float* y, int threads,
              KernelChoice kernel = KernelChoice::kWidest, int64_t ldy = -1);

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
