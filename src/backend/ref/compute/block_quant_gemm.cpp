#include "backend/ref/compute/block_quant_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/packed_gemm.h"
#include "backend/ref/compute/vector_math.h"
#include "common/aligned_memory.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::ref::block_quant {
namespace {

// Products of up to this many rows read each dequantized row of W once per row of A, straight from
// a buffer of K floats; taller ones pack W a slice at a time for the tiled GEMM, whose packing pays
// off once several rows share it.
constexpr int64_t kDirectRows = 4;
// Columns of the product dequantized and packed at a time on one thread: 16 panels, 64 KiB per 256
// rows of K, so that the slice stays in L2 while every row tile of A passes over it.
constexpr int64_t kSliceColumns = 256;

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

float zero_point(const QuantizedWeights& w, int64_t row, int64_t group) {
    if (w.zero_points_float != nullptr) return w.zero_points_float[row * w.blocks() + group];
    if (w.zero_points_packed == nullptr) return static_cast<float>(1 << (w.bits - 1));
    const int64_t bit = group * w.bits;
    const uint8_t byte = w.zero_points_packed[row * w.zero_point_row_bytes() + bit / 8];
    return static_cast<float>((byte >> (bit % 8)) & ((1 << w.bits) - 1));
}

int code(const uint8_t* blob, int64_t j, int64_t bits) {
    const int64_t bit = j * bits;
    return (blob[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

#define POLYGRAPHY_AVX512 __attribute__((target("avx512f,avx2,fma")))

bool cpu_has_avx512() {
    static const bool supported = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") != 0;
    }();
    return supported;
}

// The zero-masked forms of the intrinsics below: GCC 12's plain forms start from an "undefined"
// register that -Wuninitialized reports.
constexpr __mmask16 kAll = 0xFFFF;

/// 32 four-bit codes (16 bytes, low nibble first) through a table of their 16 values, in order.
__attribute__((always_inline)) POLYGRAPHY_AVX512 inline void dequantize_nibbles32(const uint8_t* bytes, __m512 table,
                                                                                  float* out) {
    const __m512i packed = _mm512_maskz_cvtepu8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
    const __m512 low = _mm512_maskz_permutexvar_ps(kAll, _mm512_and_si512(packed, _mm512_set1_epi32(15)), table);
    const __m512 high = _mm512_maskz_permutexvar_ps(kAll, _mm512_maskz_srli_epi32(kAll, packed, 4), table);
    // Interleave: code 2i is low[i], code 2i + 1 is high[i].
    const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    _mm512_storeu_ps(out, _mm512_permutex2var_ps(low, first, high));
    _mm512_storeu_ps(out + 16, _mm512_permutex2var_ps(low, second, high));
}

POLYGRAPHY_AVX512 void dequantize_nibbles_avx512(const uint8_t* blob, int64_t j0, int64_t count, const float* values,
                                                 float* out) {
    const __m512 table = _mm512_loadu_ps(values);
    int64_t j = j0;
    for (; j % 2 != 0 && j < j0 + count; ++j) *out++ = values[code(blob, j, 4)];
    for (; j + 32 <= j0 + count; j += 32, out += 32) dequantize_nibbles32(blob + j / 2, table, out);
    for (; j < j0 + count; ++j) *out++ = values[code(blob, j, 4)];
}

/// Whole 4-bit groups of one row, [k0, k0 + count) with k0 and count multiples of 16 (AVX-512): each
/// group's 16 values are one vector, (code - zero point) * scale, and its codes go through it 32 (or
/// 16) at a time.
POLYGRAPHY_AVX512 void dequantize_row4_avx512(const QuantizedWeights& w, int64_t row, int64_t k0, int64_t count,
                                              float* out) {
    const __m512 iota = _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f,
                                       13.0f, 14.0f, 15.0f);
    // Everything that divides, once per row (an integer division costs more than a group's codes).
    const int64_t blocks = w.blocks(), blob = w.blob_bytes(), block_size = w.block_size;
    const int block_shift = __builtin_ctzll(static_cast<unsigned long long>(block_size));  // a power of two
    const uint8_t* codes = w.codes + row * blocks * blob;
    const float* scales = w.scales + row * blocks;
    const uint8_t* packed_zero =
        w.zero_points_packed != nullptr ? w.zero_points_packed + row * ((blocks + 1) / 2) : nullptr;
    const float* float_zero = w.zero_points_float != nullptr ? w.zero_points_float + row * blocks : nullptr;
    const __m512i interleave = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    for (int64_t k = k0; k < k0 + count;) {
        const int64_t group = k >> block_shift;
        const int64_t group_start = group << block_shift;
        const int64_t end = std::min(group_start + block_size, k0 + count);
        const float zero = packed_zero != nullptr
                               ? static_cast<float>((packed_zero[group >> 1] >> ((group & 1) * 4)) & 15)
                           : float_zero != nullptr ? float_zero[group]
                                                   : 8.0f;
        const __m512 table = _mm512_mul_ps(_mm512_sub_ps(iota, _mm512_set1_ps(zero)), _mm512_set1_ps(scales[group]));
        const uint8_t* blob_codes = codes + group * blob;
        int64_t j = k - group_start;
        for (; j + 32 <= end - group_start; j += 32, out += 32) dequantize_nibbles32(blob_codes + j / 2, table, out);
        if (j < end - group_start) {  // 16 codes left: 8 bytes
            const __m512i packed =
                _mm512_maskz_cvtepu8_epi32(kAll, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blob_codes + j / 2)));
            const __m512 low =
                _mm512_maskz_permutexvar_ps(kAll, _mm512_and_si512(packed, _mm512_set1_epi32(15)), table);
            const __m512 high = _mm512_maskz_permutexvar_ps(kAll, _mm512_maskz_srli_epi32(kAll, packed, 4), table);
            _mm512_storeu_ps(out, _mm512_permutex2var_ps(low, interleave, high));
            out += 16;
        }
        k = end;
    }
}

/// Codes [j0, j0 + count) of one block, whose codes take the values values[code].
void dequantize_block(const uint8_t* blob, int64_t bits, int64_t j0, int64_t count, float scale, float zero,
                      float* out) {
    if (bits == 8) {
        for (int64_t j = 0; j < count; ++j) out[j] = (static_cast<float>(blob[j0 + j]) - zero) * scale;
        return;
    }
    float values[16];
    for (int q = 0; q < (1 << bits); ++q) values[q] = (static_cast<float>(q) - zero) * scale;
    if (bits == 4 && cpu_has_avx512()) return dequantize_nibbles_avx512(blob, j0, count, values, out);
    for (int64_t j = 0; j < count; ++j) out[j] = values[code(blob, j0 + j, bits)];
}

/// The calling thread's buffer of at least `floats` floats (kept between calls).
float* thread_buffer(int64_t floats) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < static_cast<std::size_t>(floats)) buffer.resize(static_cast<std::size_t>(floats));
    return buffer.data();
}

/// Few rows: each row of W dequantized once into K floats, then one dot product per row of A.
void multiply_direct(const float* a, int64_t m, const QuantizedWeights& w, const float* bias, float* y, int threads) {
    const int64_t k = w.k, n = w.n;
    onednn::parallel_for(n, threads, k * (m + 4), [&](int64_t begin, int64_t end) {
        float* row = thread_buffer(k);
        for (int64_t j = begin; j < end; ++j) {
            dequantize_row(w, j, 0, k, row);
            for (int64_t i = 0; i < m; ++i)
                y[i * n + j] = dot_product(a + i * k, row, k) + (bias != nullptr ? bias[j] : 0.0f);
        }
    });
}

/// Transposes the 16 x 16 floats at in (rows in_stride apart) into out (rows 16 apart), in registers:
/// pairs, then quads, then 128-bit lanes, then 256-bit halves.
POLYGRAPHY_AVX512 void transpose16x16(const float* in, int64_t in_stride, float* out) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * in_stride);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
        t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int half = 0; half < 16; half += 8)
        for (int i = 0; i < 4; ++i) {
            t[half + i] = _mm512_maskz_shuffle_f32x4(kAll, r[half + i], r[half + i + 4], 0x88);
            t[half + i + 4] = _mm512_maskz_shuffle_f32x4(kAll, r[half + i], r[half + i + 4], 0xdd);
        }
    for (int i = 0; i < 8; ++i) {
        r[i] = _mm512_maskz_shuffle_f32x4(kAll, t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_maskz_shuffle_f32x4(kAll, t[i], t[i + 8], 0xdd);
    }
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(out + i * 16, r[i]);
}

/// Writes one panel of a slice of W^T (columns [col0, col0 + width) of the product) in packed_gemm's
/// layout: each of its 16 rows of W dequantized over the depth block, then transposed.
void fill_panel(const QuantizedWeights& w, int64_t col0, int64_t width, int64_t k0, int64_t depth, int64_t panel,
                float* out) {
    constexpr int64_t kWidth = packed_gemm::PackedMatrix::kPanelWidth;
    alignas(64) float rows[kWidth][256];
    const int64_t first = col0 + panel * kWidth;
    const int64_t count = std::min(kWidth, col0 + width - first);
    // The next panel's codes of this depth block: 16 rows far apart in memory, which the hardware
    // prefetcher does not follow; fetched while this panel dequantizes.
    // Their scales and zero points too: one cache line of each row per depth block.
    const int64_t depth_bytes = depth * w.bits / 8, code_offset = k0 * w.bits / 8;
    const int64_t blocks = w.blocks(), first_group = k0 / w.block_size;
    for (int64_t c = 2 * kWidth; c < std::min(3 * kWidth, col0 + width - first); ++c) {
        const int64_t row = first + c;
        for (int64_t line = 0; line < depth_bytes; line += 64)
            __builtin_prefetch(w.codes + row * w.row_bytes() + code_offset + line);
        __builtin_prefetch(w.scales + row * blocks + first_group);
        if (w.zero_points_packed != nullptr)
            __builtin_prefetch(w.zero_points_packed + row * w.zero_point_row_bytes() + first_group * w.bits / 8);
        if (w.zero_points_float != nullptr) __builtin_prefetch(w.zero_points_float + row * blocks + first_group);
    }
    for (int64_t c = 0; c < count; ++c) dequantize_row(w, first + c, k0, depth, rows[c]);
    for (int64_t c = count; c < kWidth; ++c) std::fill(rows[c], rows[c] + depth, 0.0f);
    int64_t kk = 0;
    if (cpu_has_avx512())
        for (; kk + 16 <= depth; kk += 16) transpose16x16(&rows[0][kk], 256, out + kk * kWidth);
    for (; kk < depth; ++kk)
        for (int64_t c = 0; c < kWidth; ++c) out[kk * kWidth + c] = rows[c][kk];
}

/// Many rows: slices of kSliceColumns columns, each dequantized into packed panels and multiplied by
/// the tiled GEMM on one thread, straight into its columns of y; the threads take whole slices.
void multiply_packed(const float* a, int64_t m, const QuantizedWeights& w, const PanelWeights* panels,
                     const float* bias, float* y, int threads) {
    constexpr int64_t kWidth = packed_gemm::PackedMatrix::kPanelWidth;
    const int64_t k = w.k, n = w.n;
    const int64_t resolved = onednn::resolve_threads(threads);
    // Narrow products still spread over every thread: slices shrink to whole panels.
    const int64_t slice = std::clamp<int64_t>(ceil_div(ceil_div(n, resolved), kWidth) * kWidth, kWidth, kSliceColumns);
    const int64_t slices = ceil_div(n, slice);
    onednn::parallel_for(slices, threads, m * k * slice, [&](int64_t begin, int64_t end) {
        const int64_t packed_floats = packed_gemm::PackedMatrix::packed_floats(k, slice);
        thread_local std::shared_ptr<float> storage;
        thread_local int64_t storage_floats = 0;
        if (storage_floats < packed_floats) {
            std::shared_ptr<void> memory = allocate_aligned(static_cast<std::size_t>(packed_floats) * sizeof(float));
            storage = std::shared_ptr<float>(memory, static_cast<float*>(memory.get()));
            storage_floats = storage != nullptr ? packed_floats : 0;
        }
        for (int64_t s = begin; s < end; ++s) {
            const int64_t col0 = s * slice;
            const int64_t width = std::min(slice, n - col0);
            const packed_gemm::PackedMatrix packed(
                k, width,
                [&](int64_t k0, int64_t depth, int64_t panel, float* out) {
                    if (panels != nullptr)
                        panels->fill(k0, depth, col0 / kWidth + panel, out);
                    else
                        fill_panel(w, col0, width, k0, depth, panel, out);
                },
                1, storage);
            packed_gemm::multiply(a, m, k, packed, bias != nullptr ? bias + col0 : nullptr, y + col0, 1,
                                  packed_gemm::KernelChoice::kWidest, n);
        }
    });
}

/// 16 codes of one k (one byte each) dequantized with their columns' zero points and scales.
POLYGRAPHY_AVX512 inline __m512 dequantize16(__m512i codes, __m512 zeros, __m512 scales) {
    return _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_cvtepi32_ps(kAll, codes), zeros), scales);
}

/// PanelWeights::fill over whole groups with AVX-512: `codes` the panel's codes from the first k.
POLYGRAPHY_AVX512 void fill_groups_avx512(const uint8_t* codes, int64_t code_bytes, bool nibbles, const float* scales,
                                          const float* zeros, int64_t block_size, int64_t k0, int64_t depth,
                                          float* out) {
    const __m512i shifts = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    const __m512i low4 = _mm512_set1_epi32(15);
    for (int64_t k = k0; k < k0 + depth;) {
        const int64_t group = k / block_size;
        const int64_t end = std::min((group + 1) * block_size, k0 + depth);
        const __m512 s = _mm512_loadu_ps(scales + group * 16), z = _mm512_loadu_ps(zeros + group * 16);
        const uint8_t* at = codes + k * code_bytes;
        for (; k < end; ++k, at += code_bytes, out += 16) {
            __m512i q;
            if (nibbles) {
                // Byte j holds columns 2j (low nibble) and 2j + 1 (high): each byte twice, then shifted.
                const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(at));
                q = _mm512_maskz_cvtepu8_epi32(kAll, _mm_unpacklo_epi8(bytes, bytes));
                q = _mm512_and_si512(_mm512_maskz_srlv_epi32(kAll, q, shifts), low4);
            } else {
                q = _mm512_maskz_cvtepu8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));
            }
            _mm512_storeu_ps(out, dequantize16(q, z, s));
        }
    }
}

}  // namespace

void dequantize_row(const QuantizedWeights& w, int64_t row, int64_t k0, int64_t count, float* out) {
    const uint8_t* codes = w.codes + row * w.row_bytes();
    const int64_t blob = w.blob_bytes();
    if (w.group_index != nullptr) {
        for (int64_t k = k0; k < k0 + count; ++k) {
            const int64_t group = w.group_index[k];
            const float scale = w.scales[row * w.blocks() + group];
            const int q = code(codes + (k / w.block_size) * blob, k % w.block_size, w.bits);
            *out++ = (static_cast<float>(q) - zero_point(w, row, group)) * scale;
        }
        return;
    }
    if (w.bits == 4 && k0 % 16 == 0 && count % 16 == 0 && cpu_has_avx512())
        return dequantize_row4_avx512(w, row, k0, count, out);
    for (int64_t k = k0; k < k0 + count;) {
        const int64_t group = k / w.block_size;
        const int64_t end = std::min((group + 1) * w.block_size, k0 + count);
        dequantize_block(codes + group * blob, w.bits, k - group * w.block_size, end - k,
                         w.scales[row * w.blocks() + group], zero_point(w, row, group), out);
        out += end - k;
        k = end;
    }
}

PanelWeights::PanelWeights(const QuantizedWeights& w, int threads)
    : k_(w.k),
      n_(w.n),
      bits_(w.bits),
      block_size_(w.block_size),
      groups_(w.blocks()),
      panels_(ceil_div(w.n, 16)),
      code_bytes_(w.bits == 4 ? 8 : 16) {
    // Every byte is written below: no zero-fill pass over the largest array.
    codes_.reset(new uint8_t[static_cast<std::size_t>(panels_ * k_ * code_bytes_)]);
    scales_.assign(static_cast<std::size_t>(panels_ * groups_ * 16), 0.0f);
    zeros_.assign(static_cast<std::size_t>(panels_ * groups_ * 16), 0.0f);
    const int64_t padded_k = groups_ * block_size_;  // the codes of a row's last block run past K
    onednn::parallel_for(panels_, threads, k_ * 16, [&](int64_t begin, int64_t end) {
        // Row `row`'s codes, one per byte (zeros past N).
        std::vector<uint8_t> first(static_cast<std::size_t>(padded_k)), second(first.size());
        const auto unpack_row = [&](int64_t row, std::vector<uint8_t>& out) {
            if (row >= n_) return std::fill(out.begin(), out.end(), uint8_t{0});
            const uint8_t* bytes = w.codes + row * w.row_bytes();
            const int per_byte = 8 / static_cast<int>(bits_), mask = (1 << bits_) - 1;
            for (int64_t i = 0; i < w.row_bytes(); ++i)
                for (int j = 0; j < per_byte; ++j)
                    out[static_cast<std::size_t>(i * per_byte + j)] =
                        static_cast<uint8_t>((bytes[i] >> (j * bits_)) & mask);
        };
        for (int64_t panel = begin; panel < end; ++panel) {
            for (int64_t c = 0; c < 16 && panel * 16 + c < n_; ++c)
                for (int64_t group = 0; group < groups_; ++group) {
                    const std::size_t at = static_cast<std::size_t>((panel * groups_ + group) * 16 + c);
                    scales_[at] = w.scales[(panel * 16 + c) * groups_ + group];
                    zeros_[at] = zero_point(w, panel * 16 + c, group);
                }
            // Byte c of the panel's row k holds code k of column c; at 4 bits, byte c / 2 holds columns
            // c (low nibble) and c + 1.
            uint8_t* codes = codes_.get() + panel * k_ * code_bytes_;
            for (int64_t c = 0; c < 16; c += bits_ == 4 ? 2 : 1) {
                unpack_row(panel * 16 + c, first);
                if (bits_ == 4) unpack_row(panel * 16 + c + 1, second);
                uint8_t* target = codes + (bits_ == 4 ? c / 2 : c);
                for (int64_t k = 0; k < k_; ++k, target += code_bytes_)
                    *target = bits_ == 4 ? static_cast<uint8_t>(first[k] | (second[k] << 4)) : first[k];
            }
        }
    });
    // The codes, scales and zero points were read once to build this copy and are read again only by
    // products of a few rows: the weights are not held twice.
    release_file_pages(w.codes, static_cast<std::size_t>(n_ * w.row_bytes()));
    release_file_pages(w.scales, static_cast<std::size_t>(n_ * groups_) * sizeof(float));
    release_file_pages(w.zero_points_packed, static_cast<std::size_t>(n_ * w.zero_point_row_bytes()));
    release_file_pages(w.zero_points_float, static_cast<std::size_t>(n_ * groups_) * sizeof(float));
}

void PanelWeights::fill(int64_t k0, int64_t depth, int64_t panel, float* out) const {
    const uint8_t* codes = codes_.get() + panel * k_ * code_bytes_;
    const float* scales = scales_.data() + panel * groups_ * 16;
    const float* zeros = zeros_.data() + panel * groups_ * 16;
    if (cpu_has_avx512())
        return fill_groups_avx512(codes, code_bytes_, bits_ == 4, scales, zeros, block_size_, k0, depth, out);
    for (int64_t k = k0; k < k0 + depth; ++k) {
        const int64_t group = k / block_size_;
        for (int64_t c = 0; c < 16; ++c, ++out) {
            const uint8_t byte = codes[k * code_bytes_ + (bits_ == 4 ? c / 2 : c)];
            const int q = bits_ == 4 ? (byte >> (4 * (c % 2))) & 15 : byte;
            *out = (static_cast<float>(q) - zeros[group * 16 + c]) * scales[group * 16 + c];
        }
    }
}

int64_t PanelWeights::bytes() const {
    return panels_ * k_ * code_bytes_ + static_cast<int64_t>((scales_.size() + zeros_.size()) * sizeof(float));
}

void multiply(const float* a, int64_t m, const QuantizedWeights& w, const PanelWeights* panels, const float* bias,
              float* y, int threads) {
    if (m <= 0 || w.n <= 0) return;
    if (w.k == 0) {
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < w.n; ++j) y[i * w.n + j] = bias != nullptr ? bias[j] : 0.0f;
        return;
    }
    if (m <= kDirectRows || !packed_gemm::available()) {
        multiply_direct(a, m, w, bias, y, threads);
        return;
    }
    multiply_packed(a, m, w, panels, bias, y, threads);
}

}  // namespace polygraphy::ref::block_quant
