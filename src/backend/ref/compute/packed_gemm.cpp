#include "backend/ref/compute/packed_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/ref/compute/dnnl_util.h"
#include "common/aligned_memory.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::ref::packed_gemm {
namespace {

// A 6x16 tile keeps its 12 sums in 12 of AVX2's 16 vector registers, leaving two for B's row and
// one for A's broadcast value. A depth block of a panel (256 x 16 floats, 16 KiB) stays in the L1
// cache while every row tile of a row block passes over it.
constexpr int64_t kTileRows = 6;
constexpr int64_t kPanelWidth = PackedMatrix::kPanelWidth;
constexpr int64_t kDepthBlock = 256;
constexpr int64_t kMaxRowBlock = 240;
// A row block is packed over all of K once (up to 4 MiB), then read from L2/L3 for each chunk of 8
// panels (128 columns), whose part of Y (up to 120 KiB) stays in L2 while the depth blocks pass.
constexpr int64_t kMaxPackedA = int64_t{1} << 20;
constexpr int64_t kChunkPanels = 8;

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

#define POLYGRAPHY_AVX2_FMA __attribute__((target("avx2,fma")))

/// Stores one row of a tile: adds what the earlier depth blocks left in `c` when `accumulate`, and
/// the bias (16 values) when not null.
POLYGRAPHY_AVX2_FMA inline void store_row(float* c, __m256 lo, __m256 hi, bool accumulate, const float* bias) {
    if (accumulate) {
        lo = _mm256_add_ps(_mm256_loadu_ps(c), lo);
        hi = _mm256_add_ps(_mm256_loadu_ps(c + 8), hi);
    }
    if (bias != nullptr) {
        lo = _mm256_add_ps(lo, _mm256_loadu_ps(bias));
        hi = _mm256_add_ps(hi, _mm256_loadu_ps(bias + 8));
    }
    _mm256_storeu_ps(c, lo);
    _mm256_storeu_ps(c + 8, hi);
}

/// c[0..kRows) x [0..16) (rows ldc apart) gets the product of a packed tile of A (kTileRows values
/// per k) and a packed panel of B (16 values per k, 32-byte aligned) over `depth` steps. Named
/// accumulators, not an array: GCC keeps an array of vectors on the stack.
template <int kRows>
POLYGRAPHY_AVX2_FMA void multiply_tile(int64_t depth, const float* a, const float* b, float* c, int64_t ldc,
                                       bool accumulate, const float* bias) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#pragma GCC unroll 4
    for (int64_t k = 0; k < depth; ++k, a += kTileRows, b += kPanelWidth) {
        const __m256 b0 = _mm256_load_ps(b);
        const __m256 b1 = _mm256_load_ps(b + 8);
        __m256 v = _mm256_broadcast_ss(a);
        c00 = _mm256_fmadd_ps(v, b0, c00);
        c01 = _mm256_fmadd_ps(v, b1, c01);
        if constexpr (kRows > 1) {
            v = _mm256_broadcast_ss(a + 1);
            c10 = _mm256_fmadd_ps(v, b0, c10);
            c11 = _mm256_fmadd_ps(v, b1, c11);
        }
        if constexpr (kRows > 2) {
            v = _mm256_broadcast_ss(a + 2);
            c20 = _mm256_fmadd_ps(v, b0, c20);
            c21 = _mm256_fmadd_ps(v, b1, c21);
        }
        if constexpr (kRows > 3) {
            v = _mm256_broadcast_ss(a + 3);
            c30 = _mm256_fmadd_ps(v, b0, c30);
            c31 = _mm256_fmadd_ps(v, b1, c31);
        }
        if constexpr (kRows > 4) {
            v = _mm256_broadcast_ss(a + 4);
            c40 = _mm256_fmadd_ps(v, b0, c40);
            c41 = _mm256_fmadd_ps(v, b1, c41);
        }
        if constexpr (kRows > 5) {
            v = _mm256_broadcast_ss(a + 5);
            c50 = _mm256_fmadd_ps(v, b0, c50);
            c51 = _mm256_fmadd_ps(v, b1, c51);
        }
    }
    store_row(c, c00, c01, accumulate, bias);
    if constexpr (kRows > 1) store_row(c + ldc, c10, c11, accumulate, bias);
    if constexpr (kRows > 2) store_row(c + 2 * ldc, c20, c21, accumulate, bias);
    if constexpr (kRows > 3) store_row(c + 3 * ldc, c30, c31, accumulate, bias);
    if constexpr (kRows > 4) store_row(c + 4 * ldc, c40, c41, accumulate, bias);
    if constexpr (kRows > 5) store_row(c + 5 * ldc, c50, c51, accumulate, bias);
}

void multiply_tile_rows(int64_t rows, int64_t depth, const float* a, const float* b, float* c, int64_t ldc,
                        bool accumulate, const float* bias) {
    switch (rows) {
        case 6:
            return multiply_tile<6>(depth, a, b, c, ldc, accumulate, bias);
        case 5:
            return multiply_tile<5>(depth, a, b, c, ldc, accumulate, bias);
        case 4:
            return multiply_tile<4>(depth, a, b, c, ldc, accumulate, bias);
        case 3:
            return multiply_tile<3>(depth, a, b, c, ldc, accumulate, bias);
        case 2:
            return multiply_tile<2>(depth, a, b, c, ldc, accumulate, bias);
        default:
            return multiply_tile<1>(depth, a, b, c, ldc, accumulate, bias);
    }
}

#define POLYGRAPHY_AVX512 __attribute__((target("avx512f,avx2,fma")))

/// store_row for 32 columns (two panels) in 16-lane vectors: the same additions in the same order.
POLYGRAPHY_AVX512 inline void store_row32(float* c, __m512 lo, __m512 hi, bool accumulate, const float* bias) {
    if (accumulate) {
        lo = _mm512_add_ps(_mm512_loadu_ps(c), lo);
        hi = _mm512_add_ps(_mm512_loadu_ps(c + 16), hi);
    }
    if (bias != nullptr) {
        lo = _mm512_add_ps(lo, _mm512_loadu_ps(bias));
        hi = _mm512_add_ps(hi, _mm512_loadu_ps(bias + 16));
    }
    _mm512_storeu_ps(c, lo);
    _mm512_storeu_ps(c + 16, hi);
}

/// multiply_tile on AVX-512 over kTiles whole tiles (6 or 12 rows; the second at a1, which steps
/// along unread when kTiles is 1: a valid pointer, never null) and two adjacent panels (32 columns;
/// b1 = b0 + depth * 16): 24 sums in AVX-512's 32 registers. Each element takes the same
/// multiply-adds in the same order as in multiply_tile, so the bits match.
template <int kTiles>
POLYGRAPHY_AVX512 void multiply_wide_tile(int64_t depth, const float* a0, const float* a1, const float* b0,
                                          const float* b1, float* c, int64_t ldc, bool accumulate, const float* bias) {
    __m512 x00 = _mm512_setzero_ps(), x01 = x00, x10 = x00, x11 = x00, x20 = x00, x21 = x00;
    __m512 x30 = x00, x31 = x00, x40 = x00, x41 = x00, x50 = x00, x51 = x00;
    __m512 y00 = x00, y01 = x00, y10 = x00, y11 = x00, y20 = x00, y21 = x00;
    __m512 y30 = x00, y31 = x00, y40 = x00, y41 = x00, y50 = x00, y51 = x00;
#define POLYGRAPHY_WIDE_ROW(s, r, a)              \
    {                                             \
        const __m512 v = _mm512_set1_ps((a)[r]);  \
        s##r##0 = _mm512_fmadd_ps(v, p, s##r##0); \
        s##r##1 = _mm512_fmadd_ps(v, q, s##r##1); \
    }
#pragma GCC unroll 2
    for (int64_t k = 0; k < depth; ++k, a0 += kTileRows, a1 += kTileRows, b0 += kPanelWidth, b1 += kPanelWidth) {
        const __m512 p = _mm512_load_ps(b0);
        const __m512 q = _mm512_load_ps(b1);
        POLYGRAPHY_WIDE_ROW(x, 0, a0)
        POLYGRAPHY_WIDE_ROW(x, 1, a0)
        POLYGRAPHY_WIDE_ROW(x, 2, a0)
        POLYGRAPHY_WIDE_ROW(x, 3, a0)
        POLYGRAPHY_WIDE_ROW(x, 4, a0)
        POLYGRAPHY_WIDE_ROW(x, 5, a0)
        if constexpr (kTiles > 1) {
            POLYGRAPHY_WIDE_ROW(y, 0, a1)
            POLYGRAPHY_WIDE_ROW(y, 1, a1)
            POLYGRAPHY_WIDE_ROW(y, 2, a1)
            POLYGRAPHY_WIDE_ROW(y, 3, a1)
            POLYGRAPHY_WIDE_ROW(y, 4, a1)
            POLYGRAPHY_WIDE_ROW(y, 5, a1)
        }
    }
#undef POLYGRAPHY_WIDE_ROW
    store_row32(c, x00, x01, accumulate, bias);
    store_row32(c + ldc, x10, x11, accumulate, bias);
    store_row32(c + 2 * ldc, x20, x21, accumulate, bias);
    store_row32(c + 3 * ldc, x30, x31, accumulate, bias);
    store_row32(c + 4 * ldc, x40, x41, accumulate, bias);
    store_row32(c + 5 * ldc, x50, x51, accumulate, bias);
    if constexpr (kTiles > 1) {
        float* d = c + kTileRows * ldc;
        store_row32(d, y00, y01, accumulate, bias);
        store_row32(d + ldc, y10, y11, accumulate, bias);
        store_row32(d + 2 * ldc, y20, y21, accumulate, bias);
        store_row32(d + 3 * ldc, y30, y31, accumulate, bias);
        store_row32(d + 4 * ldc, y40, y41, accumulate, bias);
        store_row32(d + 5 * ldc, y50, y51, accumulate, bias);
    }
}

bool cpu_has_avx512() {
    static const bool supported = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") != 0;
    }();
    return supported;
}

/// Columns k .. k + 7 of a tile's rows (missing rows zero) as 8 columns of kTileRows values at
/// out[j * kTileRows]: an 8 x 8 transpose in registers; each column is stored as 8 floats, the two
/// beyond it overwritten by the next column's store, and the last one masked.
POLYGRAPHY_AVX2_FMA inline void pack_tile_columns8(const float* const* rows, int64_t k, float* out) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i)
        r[i] = i < kTileRows && rows[i] != nullptr ? _mm256_loadu_ps(rows[i] + k) : _mm256_setzero_ps();
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    const __m256 c[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                         _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                         _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                         _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
    for (int j = 0; j < 7; ++j) _mm256_storeu_ps(out + j * kTileRows, c[j]);
    const __m256i first6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    _mm256_maskstore_ps(out + 7 * kTileRows, first6, c[7]);
}

/// Copies rows [0, rows) x columns [k0, k0 + depth) of A into tiles of kTileRows rows, kTileRows
/// values per k (rows past `rows` are zero), so that a tile reads A as one sequential stream.
POLYGRAPHY_AVX2_FMA void pack_a(const float* a, int64_t lda, int64_t rows, int64_t k0, int64_t depth, float* out) {
    static_assert(kTileRows <= 8, "pack_tile_columns8 transposes 8 rows");
    for (int64_t i0 = 0; i0 < rows; i0 += kTileRows, out += depth * kTileRows) {
        const int64_t tile_rows = std::min(kTileRows, rows - i0);
        const float* row[8] = {};
        for (int64_t r = 0; r < tile_rows; ++r) row[r] = a + (i0 + r) * lda + k0;
        int64_t k = 0;
        for (; k + 8 <= depth; k += 8) pack_tile_columns8(row, k, out + k * kTileRows);
        for (; k < depth; ++k)
            for (int64_t r = 0; r < kTileRows; ++r) out[k * kTileRows + r] = r < tile_rows ? row[r][k] : 0.0f;
    }
}

/// One row of A times kPanels adjacent panels (up to 64 columns) over all of K, into out[0..16 *
/// kPanels) with the bias added: a 6-row tile run with one row keeps two sums and waits on each
/// multiply-add's latency, where a single row (a classifier's) has more panels than rows to spread over.
template <int kPanels>
POLYGRAPHY_AVX2_FMA void multiply_row_panels(const float* a, const PackedMatrix& b, int64_t first_panel,
                                             const float* bias, float* out) {
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int64_t k0 = 0; k0 < b.k(); k0 += kDepthBlock) {
        const int64_t depth = std::min(kDepthBlock, b.k() - k0);
        const float* p = b.panel(k0, first_panel);  // the panels of a depth block are adjacent
        const int64_t next = depth * kPanelWidth;
        for (int64_t k = 0; k < depth; ++k, p += kPanelWidth) {
            const __m256 v = _mm256_broadcast_ss(a + k0 + k);
            c0 = _mm256_fmadd_ps(v, _mm256_load_ps(p), c0);
            c1 = _mm256_fmadd_ps(v, _mm256_load_ps(p + 8), c1);
            if constexpr (kPanels > 1) {
                c2 = _mm256_fmadd_ps(v, _mm256_load_ps(p + next), c2);
                c3 = _mm256_fmadd_ps(v, _mm256_load_ps(p + next + 8), c3);
            }
            if constexpr (kPanels > 2) {
                c4 = _mm256_fmadd_ps(v, _mm256_load_ps(p + 2 * next), c4);
                c5 = _mm256_fmadd_ps(v, _mm256_load_ps(p + 2 * next + 8), c5);
            }
            if constexpr (kPanels > 3) {
                c6 = _mm256_fmadd_ps(v, _mm256_load_ps(p + 3 * next), c6);
                c7 = _mm256_fmadd_ps(v, _mm256_load_ps(p + 3 * next + 8), c7);
            }
        }
    }
    // The bias (16 values per panel, or none) goes to the finished sum, as in store_row.
    auto bias_of = [bias](int panel) { return bias != nullptr ? bias + panel * kPanelWidth : nullptr; };
    store_row(out, c0, c1, false, bias_of(0));
    if constexpr (kPanels > 1) store_row(out + kPanelWidth, c2, c3, false, bias_of(1));
    if constexpr (kPanels > 2) store_row(out + 2 * kPanelWidth, c4, c5, false, bias_of(2));
    if constexpr (kPanels > 3) store_row(out + 3 * kPanelWidth, c6, c7, false, bias_of(3));
}

constexpr int64_t kRowPanels = 4;

/// Panels [panel_begin, panel_end) of a single-row product, on the calling thread (a bias holds 16
/// values for every panel, as multiply() pads it).
void multiply_single_row(const float* a, const PackedMatrix& b, const float* bias, float* y, int64_t panel_begin,
                         int64_t panel_end) {
    float out[kRowPanels * kPanelWidth];
    for (int64_t panel = panel_begin; panel < panel_end; panel += kRowPanels) {
        const int64_t panels = std::min(kRowPanels, panel_end - panel);
        const int64_t col = panel * kPanelWidth;
        const int64_t width = std::min(panels * kPanelWidth, b.n() - col);
        const float* group_bias = bias != nullptr ? bias + col : nullptr;
        switch (panels) {
            case 4:
                multiply_row_panels<4>(a, b, panel, group_bias, out);
                break;
            case 3:
                multiply_row_panels<3>(a, b, panel, group_bias, out);
                break;
            case 2:
                multiply_row_panels<2>(a, b, panel, group_bias, out);
                break;
            default:
                multiply_row_panels<1>(a, b, panel, group_bias, out);
                break;
        }
        std::copy(out, out + width, y + col);
    }
}

/// The rows of a block of A, which is packed over all of K (at most kMaxPackedA floats): blocks of
/// equal size (a multiple of the tile), so that 197 rows are one block, not 192 + 5.
int64_t row_block_size(int64_t rows, int64_t k) {
    const int64_t max_rows = std::clamp(kMaxPackedA / k / kTileRows * kTileRows, kTileRows, kMaxRowBlock);
    return ceil_div(ceil_div(rows, ceil_div(rows, max_rows)), kTileRows) * kTileRows;
}

/// Packs tiles [tile_begin, tile_end) of a block of `rows` rows of A (row 0 at `a`) over all of K into
/// `packed`, laid out as multiply_packed_rows reads it: depth block by depth block, each holding the
/// block's tiles one after another.
void pack_rows(const float* a, int64_t lda, int64_t k, int64_t rows, int64_t tile_begin, int64_t tile_end,
               float* packed) {
    const int64_t padded_rows = ceil_div(rows, kTileRows) * kTileRows;
    const int64_t first = tile_begin * kTileRows;
    const int64_t count = std::min(tile_end * kTileRows, rows) - first;
    if (count <= 0) return;
    for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
        const int64_t depth = std::min(kDepthBlock, k - k0);
        pack_a(a + first * lda, lda, count, k0, depth, packed + k0 * padded_rows + first * depth);
    }
}

/// Rows [0, rows) x panels [panel_begin, panel_end) of the product from A packed by pack_rows, into y
/// (row 0 of the block), on the calling thread (a bias holds 16 values for every panel, as multiply()
/// pads it); pairs of whole panels through the AVX-512 kernel when `wide_kernel`.
void multiply_packed_rows(const float* packed_a, int64_t rows, const PackedMatrix& b, const float* bias, float* y,
                          int64_t ldy, int64_t panel_begin, int64_t panel_end, bool wide_kernel) {
    const int64_t n = b.n();
    const int64_t k = b.k();
    const int64_t padded_rows = ceil_div(rows, kTileRows) * kTileRows;
    // Columns in chunks whose part of Y stays in L2 over all depth blocks: Y is read and written
    // once per depth block, and the decoder's 128 x 32000 output is 16 MB.
    float edge_tile[kTileRows * kPanelWidth];
    for (int64_t chunk = panel_begin; chunk < panel_end; chunk += kChunkPanels) {
        const int64_t chunk_end = std::min(chunk + kChunkPanels, panel_end);
        for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
            const int64_t depth = std::min(kDepthBlock, k - k0);
            const bool accumulate = k0 > 0;
            const bool last = k0 + depth == k;
            const float* a_block = packed_a + k0 * padded_rows;
            for (int64_t panel = chunk; panel < chunk_end;) {
                // Two whole panels at a time through the AVX-512 kernel where the CPU has it.
                const bool wide = wide_kernel && panel + 1 < chunk_end && (panel + 2) * kPanelWidth <= n;
                const int64_t step = wide ? 2 : 1;
                const float* b_panel = b.panel(k0, panel);
                const int64_t col = panel * kPanelWidth;
                const int64_t width = std::min(kPanelWidth, n - col);
                const float* panel_bias = last && bias != nullptr ? bias + col : nullptr;
                // The next panels come from memory: each tile fetches a share of them into L2 while
                // it computes, so that the next step's first tile does not wait for memory.
                const float* next = nullptr;
                int64_t next_floats = 0;
                if (panel + step < chunk_end) {
                    next = b.panel(k0, panel + step);
                    next_floats = std::min<int64_t>(2, chunk_end - panel - step) * depth * kPanelWidth;
                } else if (!last) {
                    next = b.panel(k0 + depth, chunk);
                    next_floats =
                        std::min<int64_t>(2, chunk_end - chunk) * std::min(kDepthBlock, k - k0 - depth) * kPanelWidth;
                } else if (chunk_end < panel_end) {
                    next = b.panel(0, chunk_end);
                    next_floats = std::min<int64_t>(2, panel_end - chunk_end) * std::min(kDepthBlock, k) * kPanelWidth;
                }
                const int64_t next_lines = next_floats * static_cast<int64_t>(sizeof(float)) / 64;
                const int64_t whole_tiles = rows / kTileRows;
                const int64_t calls =
                    wide ? ceil_div(whole_tiles, 2) + (rows % kTileRows != 0 ? 1 : 0) : ceil_div(rows, kTileRows);
                const int64_t lines_per_call = ceil_div(next_lines, calls);
                int64_t call = 0;
                auto prefetch_share = [&] {
                    const int64_t first_line = call++ * lines_per_call;
                    const int64_t end_line = std::min(first_line + lines_per_call, next_lines);
                    for (int64_t line = first_line; line < end_line; ++line)
                        _mm_prefetch(reinterpret_cast<const char*>(next) + line * 64, _MM_HINT_T1);
                };
                int64_t i = 0;
                if (wide) {
                    for (; i + 2 * kTileRows <= rows; i += 2 * kTileRows) {
                        prefetch_share();
                        multiply_wide_tile<2>(depth, a_block + i * depth, a_block + (i + kTileRows) * depth, b_panel,
                                              b_panel + depth * kPanelWidth, y + i * ldy + col, ldy, accumulate,
                                              panel_bias);
                    }
                    if (i + kTileRows <= rows) {
                        prefetch_share();
                        multiply_wide_tile<1>(depth, a_block + i * depth, a_block + i * depth, b_panel,
                                              b_panel + depth * kPanelWidth, y + i * ldy + col, ldy, accumulate,
                                              panel_bias);
                        i += kTileRows;
                    }
                    if (i < rows) {  // a partial tile: each panel through the 6-row kernel
                        prefetch_share();
                        for (int64_t half = 0; half < 2; ++half)
                            multiply_tile_rows(rows - i, depth, a_block + i * depth,
                                               b_panel + half * depth * kPanelWidth,
                                               y + i * ldy + col + half * kPanelWidth, ldy, accumulate,
                                               panel_bias != nullptr ? panel_bias + half * kPanelWidth : nullptr);
                    }
                    panel += step;
                    continue;
                }
                for (; i < rows; i += kTileRows) {
                    const int64_t tile_rows = std::min(kTileRows, rows - i);
                    prefetch_share();
                    const float* a_tile = a_block + i * depth;
                    float* c = y + i * ldy + col;
                    if (width == kPanelWidth) {
                        multiply_tile_rows(tile_rows, depth, a_tile, b_panel, c, ldy, accumulate, panel_bias);
                        continue;
                    }
                    // The last, narrower panel: through a full-width tile, copied in and out.
                    for (int64_t r = 0; r < tile_rows && accumulate; ++r)
                        std::copy(c + r * ldy, c + r * ldy + width, edge_tile + r * kPanelWidth);
                    multiply_tile_rows(tile_rows, depth, a_tile, b_panel, edge_tile, kPanelWidth, accumulate,
                                       panel_bias);
                    for (int64_t r = 0; r < tile_rows; ++r)
                        std::copy(edge_tile + r * kPanelWidth, edge_tile + r * kPanelWidth + width, c + r * ldy);
                }
                panel += step;
            }
        }
    }
}

/// The calling thread's buffer for packed rows of A, of at least `floats` floats (kept between calls).
float* packing_buffer(int64_t floats) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < static_cast<std::size_t>(floats)) buffer.resize(static_cast<std::size_t>(floats));
    return buffer.data();
}

/// Rows [row_begin, row_end) x panels [panel_begin, panel_end) of the product, on the calling thread.
void multiply_block(const float* a, int64_t lda, const PackedMatrix& b, const float* bias, float* y, int64_t ldy,
                    int64_t row_begin, int64_t row_end, int64_t panel_begin, int64_t panel_end, bool wide_kernel) {
    const int64_t block_rows = row_block_size(row_end - row_begin, b.k());
    float* const packed_a = packing_buffer(block_rows * b.k());
    for (int64_t i0 = row_begin; i0 < row_end; i0 += block_rows) {
        const int64_t rows = std::min(block_rows, row_end - i0);
        pack_rows(a + i0 * lda, lda, b.k(), rows, 0, ceil_div(rows, kTileRows), packed_a);
        multiply_packed_rows(packed_a, rows, b, bias, y + i0 * ldy, ldy, panel_begin, panel_end, wide_kernel);
    }
}

/// All rows, the panels split between `threads` threads: each reads only its share of the weights,
/// which is most of the memory a product touches. The threads pack each block of A's rows together,
/// a share of its tiles each, and all read the one copy.
void multiply_by_panels(const float* a, int64_t m, int64_t lda, const PackedMatrix& b, const float* bias, float* y,
                        int64_t ldy, int threads, bool wide_kernel) {
    const int64_t block_rows = row_block_size(m, b.k());
    float* const packed = packing_buffer(block_rows * b.k());  // the caller's, shared with the team
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num();
        const int64_t nt = omp_get_num_threads();
        auto share = [&](int64_t count, int64_t part) { return part * (count / nt) + std::min(part, count % nt); };
        for (int64_t i0 = 0; i0 < m; i0 += block_rows) {
            const int64_t rows = std::min(block_rows, m - i0);
            const int64_t tiles = ceil_div(rows, kTileRows);
            pack_rows(a + i0 * lda, lda, b.k(), rows, share(tiles, t), share(tiles, t + 1), packed);
#pragma omp barrier
            multiply_packed_rows(packed, rows, b, bias, y + i0 * ldy, ldy, share(b.panels(), t),
                                 share(b.panels(), t + 1), wide_kernel);
#pragma omp barrier
        }
    }
}

}  // namespace

bool available() {
    static const bool supported = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return supported;
}

PackedMatrix::PackedMatrix(const float* b, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride, int threads)
    : PackedMatrix(
          k, n,
          [&](int64_t k0, int64_t depth, int64_t panel_index, float* out) {
              for (int64_t kk = k0; kk < k0 + depth; ++kk) {
                  for (int64_t c = 0; c < kPanelWidth; ++c, ++out) {
                      const int64_t col = panel_index * kPanelWidth + c;
                      *out = col < n ? b[kk * row_stride + col * col_stride] : 0.0f;
                  }
              }
          },
          threads) {}

PackedMatrix::PackedMatrix(int64_t k, int64_t n, const PanelFill& fill, int threads, std::shared_ptr<float> storage)
    : k_(k), n_(n), panels_(ceil_div(n, kPanelWidth)), data_(std::move(storage)) {
    if (data_ == nullptr) {
        const std::size_t bytes = static_cast<std::size_t>(packed_floats(k, n)) * sizeof(float);
        std::shared_ptr<void> memory = allocate_aligned(bytes);
        if (memory == nullptr)
            throw PolygraphyException("could not allocate " + std::to_string(bytes) + " bytes for packed weights");
        data_ = std::shared_ptr<float>(memory, static_cast<float*>(memory.get()));
    }
    fill_panels(fill, threads);
}

void PackedMatrix::fill_panels(const PanelFill& fill, int threads) {
    // One task per (depth block, panel), each writing its own depth x 16 floats.
    const int64_t blocks = ceil_div(k_, kDepthBlock);
    const int64_t panels = panels_;
    onednn::parallel_for(blocks * panels, threads, kDepthBlock * kPanelWidth, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
            const int64_t k0 = (task / panels) * kDepthBlock;
            const int64_t panel_index = task % panels;
            fill(k0, std::min(kDepthBlock, k_ - k0), panel_index, const_cast<float*>(panel(k0, panel_index)));
        }
    });
}

const float* PackedMatrix::panel(int64_t k0, int64_t panel_index) const {
    const int64_t depth = std::min(kDepthBlock, k_ - k0);
    return data_.get() + k0 * panels_ * kPanelWidth + panel_index * depth * kPanelWidth;
}

void multiply(const float* a, int64_t m, int64_t lda, const PackedMatrix& b, const float* bias, float* y, int threads,
              KernelChoice kernel, int64_t ldy) {
    if (ldy < 0) ldy = b.n();
    const bool wide_kernel = kernel == KernelChoice::kWidest && cpu_has_avx512();
    if (m <= 0 || b.n() <= 0) return;
    if (b.k() == 0) throw InternalError("packed_gemm::multiply with K = 0");
    // The bias padded with zeros to whole panels, so that the narrow last panel reads 16 values too.
    std::vector<float> padded_bias;
    if (bias != nullptr && b.n() % kPanelWidth != 0) {
        padded_bias.assign(static_cast<std::size_t>(b.panels() * kPanelWidth), 0.0f);
        std::copy(bias, bias + b.n(), padded_bias.begin());
        bias = padded_bias.data();
    }
    // Below about 2M multiply-adds per thread, another thread costs more than it saves; a
    // product of few rows is bound by reading the weights, which a second thread still speeds up
    // from 1 MiB on.
    const int64_t work = std::max(m * b.n() * b.k(), (b.n() * b.k()) << 3);
    const int useful =
        static_cast<int>(std::clamp<int64_t>(work >> 21, 1, static_cast<int64_t>(onednn::resolve_threads(threads))));
    if (m == 1) {
        const int64_t groups = ceil_div(b.panels(), kRowPanels);
        onednn::parallel_chunks(
            groups, static_cast<int>(std::min<int64_t>(useful, groups)), [&](int64_t begin, int64_t end) {
                multiply_single_row(a, b, bias, y, begin * kRowPanels, std::min(end * kRowPanels, b.panels()));
            });
    } else if (useful <= 1) {
        multiply_block(a, lda, b, bias, y, ldy, 0, m, 0, b.panels(), wide_kernel);
    } else if (b.panels() >= 2 * useful) {
        multiply_by_panels(a, m, lda, b, bias, y, ldy, useful, wide_kernel);
    } else {
        onednn::parallel_chunks(ceil_div(m, kTileRows), useful, [&](int64_t begin, int64_t end) {
            multiply_block(a, lda, b, bias, y, ldy, begin * kTileRows, std::min(end * kTileRows, m), 0, b.panels(),
                           wide_kernel);
        });
    }
}

const PackedMatrix& LazyPackedMatrix::get(const float* b, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride,
                                          int threads) const {
    std::call_once(once_, [&] {
        packed_ = std::make_unique<PackedMatrix>(b, k, n, row_stride, col_stride, threads);
        // The kernels that pack a constant read only the packed copy from then on.
        if (k > 0 && n > 0)
            release_file_pages(
                b, static_cast<std::size_t>((k - 1) * row_stride + (n - 1) * col_stride + 1) * sizeof(float));
    });
    return *packed_;
}

}  // namespace polygraphy::ref::packed_gemm
