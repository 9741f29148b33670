// The runtime's own channel-blocked direct convolution (blocked_conv.h). A micro-kernel keeps 3
// output pixels x 32 output channels (12 AVX2 registers) while it broadcasts each input value and
// multiply-adds it with the packed weight vectors. A tile's pixels all use the same kernel taps:
// along a row where no tap falls in the padding, and down a border column (the padded taps of the
// left and right edges are the same for every row); the corners of the border rows go one by one.
// A band of output rows is computed one input channel block at a time (partial sums kept in Y), so
// that block's weights stay in L1 while every tile of the band uses them.
#include "backend/ref/compute/blocked_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "backend/ref/compute/dnnl_util.h"

namespace polygraphy::ref::blocked_conv {
namespace {

constexpr int64_t kLanes = 8;      // channels per block, floats per AVX2 register
constexpr int64_t kOutBlock = 32;  // output channels per micro-kernel: four registers

/// Pixels per micro-kernel for kVectors registers of output channels: 12 accumulators (3 x 4, as
/// oneDNN's and MLAS's AVX2 kernels: fewer broadcasts per multiply-add than 6 x 2), the weights and
/// the broadcast inputs in the other 4 of AVX2's 16 registers.
template <int kVectors>
constexpr int kMaxPixels = kVectors >= 4   ? 3
                           : kVectors == 3 ? 4
                                           : 6;
constexpr int64_t kWeightChunkBytes = 16384;  // the weights one pass over a band's tiles reads (L1 is 32 KiB)
constexpr int64_t kCacheLine = 64;
constexpr int64_t kBandBytes = 16384;  // the partial sums of one band
constexpr int64_t kRowsPerBand = 8;    // at most, output rows per work item (a border column tile spans them)

/// Strides and the epilogue of one output-channel block (32 channels, or 8, 16 or 24 for the last).
struct Block {
    int64_t in_blocks;  // in_channels / 8
    int64_t x_block;    // floats between input channel blocks (H * W * 8)
    int64_t x_row;      // floats between input rows (W * 8)
    int64_t w_block;    // floats between the packed weights of input channel blocks
    int64_t w_row;      // ... of kernel rows
    int64_t y_block;    // floats between output channel blocks (OH * OW * 8)
    const float* bias;  // at this block's first channel, or nullptr
    bool clip;
    float lo, hi;
};

/// A set of pixels that use the same kernel taps: the first pixel's first valid tap in x (channel
/// block 0) and its weights, how many taps, and where the pixels and their outputs lie.
struct Tile {
    const float* x;
    int64_t x_pixel;  // floats between the tile's pixels in x
    const float* w;
    int64_t kh_count, kw_count;
    float* y;
    const float* residual;  // at the same offset as y, or nullptr
    int64_t y_pixel;        // floats between the tile's pixels in y
    int pixels;
};

/// Which input channel blocks one call sums: [begin, end). The first call of a tile starts from the
/// bias, later ones from the partial sums they find in y (stored as floats, so the sums are the same
/// as in one call); the last applies the epilogue.
struct Pass {
    int64_t begin, end;
    bool first, last;
};

/// The micro-kernel: kPixels x (8 * kVectors) sums. kStep is the distance between the tile's pixels
/// in x when it is known at compile time (along a row at stride 1 or 2: every input address is then a
/// constant offset from one pointer), 0 when it is t.x_pixel.
template <int kPixels, int kVectors, int kStep>
__attribute__((target("avx2,fma"))) void tile_kernel(const Block& b, const Tile& t, const Pass& pass) {
    __m256 acc[kPixels][kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
        const __m256 init = b.bias != nullptr ? _mm256_loadu_ps(b.bias + v * kLanes) : _mm256_setzero_ps();
#pragma GCC unroll 6
        for (int p = 0; p < kPixels; ++p)
            acc[p][v] = pass.first ? init : _mm256_loadu_ps(t.y + p * t.y_pixel + v * b.y_block);
    }
    const int64_t x_pixel = kStep > 0 ? kStep : t.x_pixel;
    constexpr int64_t w_tap = kLanes * kVectors * kLanes;  // one tap: 8 input x (8 to 32) output channels
    for (int64_t cb = pass.begin; cb < pass.end; ++cb) {
        for (int64_t kh = 0; kh < t.kh_count; ++kh) {
            // One pointer per pixel, moved along the kernel row: every input address is a pointer
            // plus a constant, and no offset has to be kept (GCC spilled them with a runtime step).
            const float* xp[kPixels];
#pragma GCC unroll 6
            for (int p = 0; p < kPixels; ++p) xp[p] = t.x + cb * b.x_block + kh * b.x_row + p * x_pixel;
            const float* ws = t.w + cb * b.w_block + kh * b.w_row;
            for (int64_t kw = 0; kw < t.kw_count; ++kw, ws += w_tap) {
#pragma GCC unroll 8
                for (int j = 0; j < kLanes; ++j) {
                    if constexpr (kPixels * kVectors + kPixels + kVectors <= 16) {
                        // Few accumulators: every weight and input in a register of its own.
                        __m256 xv[kPixels], wv[kVectors];
#pragma GCC unroll 6
                        for (int p = 0; p < kPixels; ++p) xv[p] = _mm256_broadcast_ss(xp[p] + j);
#pragma GCC unroll 4
                        for (int v = 0; v < kVectors; ++v) {
                            wv[v] = _mm256_loadu_ps(ws + (j * kVectors + v) * kLanes);
                            // Keeps each weight in a register: GCC otherwise folds the load into
                            // every multiply-add that uses it, loading it once per pixel.
                            __asm__("" : "+x"(wv[v]));
                        }
#pragma GCC unroll 6
                        for (int p = 0; p < kPixels; ++p)
#pragma GCC unroll 4
                            for (int v = 0; v < kVectors; ++v) acc[p][v] = _mm256_fmadd_ps(xv[p], wv[v], acc[p][v]);
                    } else {
                        __m256 xv[kPixels];
#pragma GCC unroll 6
                        for (int p = 0; p < kPixels; ++p) xv[p] = _mm256_broadcast_ss(xp[p] + j);
#pragma GCC unroll 4
                        for (int v = 0; v < kVectors; ++v) {
                            const __m256 wv = _mm256_loadu_ps(ws + (j * kVectors + v) * kLanes);
#pragma GCC unroll 6
                            for (int p = 0; p < kPixels; ++p) acc[p][v] = _mm256_fmadd_ps(xv[p], wv, acc[p][v]);
                        }
                    }
                }
#pragma GCC unroll 6
                for (int p = 0; p < kPixels; ++p) xp[p] += kLanes;
            }
        }
    }
    const __m256 lo = _mm256_set1_ps(b.lo), hi = _mm256_set1_ps(b.hi);
#pragma GCC unroll 6
    for (int p = 0; p < kPixels; ++p) {
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) {
            const int64_t offset = p * t.y_pixel + v * b.y_block;
            __m256 out = acc[p][v];
            if (!pass.last) {
                _mm256_storeu_ps(t.y + offset, out);
                continue;
            }
            if (t.residual != nullptr) out = _mm256_add_ps(out, _mm256_loadu_ps(t.residual + offset));
            if (b.clip) {
                // max_ps gives its second operand when either is NaN: NaN becomes lo, as oneDNN's clip.
                out = _mm256_min_ps(_mm256_max_ps(out, lo), hi);
            }
            _mm256_storeu_ps(t.y + offset, out);
        }
    }
}

/// One pixel (the corners of the border rows): as tile_kernel<1, ...>, but with the 8 channels of a
/// block summed in four separate chains (added at the end), so that it is not bound by the latency
/// of one chain of multiply-adds.
template <int kVectors>
__attribute__((target("avx2,fma"))) void pixel_kernel(const Block& b, const Tile& t, const Pass& pass) {
    constexpr int kChains = 4;
    __m256 acc[kChains][kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
        const __m256 bias = b.bias != nullptr ? _mm256_loadu_ps(b.bias + v * kLanes) : _mm256_setzero_ps();
        acc[0][v] = pass.first ? bias : _mm256_loadu_ps(t.y + v * b.y_block);
        for (int c = 1; c < kChains; ++c) acc[c][v] = _mm256_setzero_ps();
    }
    constexpr int64_t w_tap = kLanes * kVectors * kLanes;
    for (int64_t cb = pass.begin; cb < pass.end; ++cb) {
        for (int64_t kh = 0; kh < t.kh_count; ++kh) {
            const float* xs = t.x + cb * b.x_block + kh * b.x_row;
            const float* ws = t.w + cb * b.w_block + kh * b.w_row;
            for (int64_t kw = 0; kw < t.kw_count; ++kw, xs += kLanes, ws += w_tap) {
#pragma GCC unroll 8
                for (int j = 0; j < kLanes; ++j) {
                    const __m256 xv = _mm256_broadcast_ss(xs + j);
#pragma GCC unroll 4
                    for (int v = 0; v < kVectors; ++v) {
                        const __m256 wv = _mm256_loadu_ps(ws + (j * kVectors + v) * kLanes);
                        acc[j % kChains][v] = _mm256_fmadd_ps(xv, wv, acc[j % kChains][v]);
                    }
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
        __m256 out = _mm256_add_ps(_mm256_add_ps(acc[0][v], acc[1][v]), _mm256_add_ps(acc[2][v], acc[3][v]));
        if (!pass.last) {
            _mm256_storeu_ps(t.y + v * b.y_block, out);
            continue;
        }
        if (t.residual != nullptr) out = _mm256_add_ps(out, _mm256_loadu_ps(t.residual + v * b.y_block));
        if (b.clip) out = _mm256_min_ps(_mm256_max_ps(out, _mm256_set1_ps(b.lo)), _mm256_set1_ps(b.hi));
        _mm256_storeu_ps(t.y + v * b.y_block, out);
    }
}

template <int kVectors, int kStep, int kPixels = kMaxPixels<kVectors>>
void run_tile(const Block& b, const Tile& t, const Pass& pass) {
    if constexpr (kPixels == 1) {
        pixel_kernel<kVectors>(b, t, pass);
    } else if (t.pixels == kPixels) {
        tile_kernel<kPixels, kVectors, kStep>(b, t, pass);
    } else {
        run_tile<kVectors, kStep, kPixels - 1>(b, t, pass);
    }
}

/// A tile of t.pixels pixels t.x_pixel floats apart in x.
template <int kVectors>
void run_tile(const Block& b, const Tile& t, const Pass& pass) {
    if (t.x_pixel == kLanes) return run_tile<kVectors, kLanes>(b, t, pass);
    if (t.x_pixel == 2 * kLanes) return run_tile<kVectors, 2 * kLanes>(b, t, pass);
    run_tile<kVectors, 0>(b, t, pass);
}

/// The range [begin, end) of output positions whose every tap lies inside the input (size `in`).
std::pair<int64_t, int64_t> interior(int64_t out, int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
    const int64_t begin = std::min(out, (pad + stride - 1) / stride);
    const int64_t last_start = in - kernel + pad;  // the largest o * stride whose window fits
    const int64_t end = last_start < 0 ? begin : std::clamp(last_start / stride + 1, begin, out);
    return {begin, end};
}

/// The valid taps [begin, end) of a window starting at input position `start`.
std::pair<int64_t, int64_t> valid_taps(int64_t start, int64_t kernel, int64_t in) {
    const int64_t begin = std::max<int64_t>(0, -start);
    return {begin, std::max(begin, std::min(kernel, in - start))};
}

/// Splits `count` pixels into the fewest tiles of at most `most`, of sizes that differ by at most
/// one (26 by 6 -> 6, 5, 5, 5, 5 rather than 6, 6, 6, 6, 2), and calls body(first, size) for each.
template <typename Body>
void for_each_tile(int64_t count, int64_t most, Body&& body) {
    if (count <= 0) return;
    const int64_t tiles = (count + most - 1) / most;
    const int64_t small = count / tiles, extra = count % tiles;
    int64_t first = 0;
    for (int64_t i = 0; i < tiles; ++i) {
        const int64_t size = small + (i < extra ? 1 : 0);
        body(first, size);
        first += size;
    }
}

/// Output rows [row_begin, row_end) of image `n`, output channel block `ob`.
template <int kVectors>
void run_band(const Problem& p, const float* x_image, const float* w_block, const Epilogue& e, float* y_image,
              const float* residual_image, int64_t ob, int64_t row_begin, int64_t row_end) {
    const int64_t w_tap = kLanes * kVectors * kLanes;
    Block b{};
    b.in_blocks = p.in_channels / kLanes;
    b.x_row = p.in_w * kLanes;
    b.x_block = p.in_h * b.x_row;
    b.w_row = p.k_w * w_tap;
    b.w_block = p.k_h * b.w_row;
    b.y_block = p.out_h * p.out_w * kLanes;
    b.bias = e.bias != nullptr ? e.bias + ob * kOutBlock : nullptr;
    b.clip = e.clip;
    b.lo = e.lo;
    b.hi = e.hi;
    const int64_t y_offset = ob * (kOutBlock / kLanes) * b.y_block;
    // The band's tiles are listed first, then computed a few input channel blocks at a time, so
    // that those blocks' weights stay in L1 while every tile of the band uses them.
    std::vector<Tile> tiles;
    // One tile of pixels starting at output (oh, ow), all with the taps [kh0, kh1) x [kw0, kw1).
    auto tile = [&](int64_t oh, int64_t ow, int64_t pixels, bool down, int64_t kh0, int64_t kh1, int64_t kw0,
                    int64_t kw1) {
        const int64_t ih = oh * p.stride_h - p.pad_top + kh0, iw = ow * p.stride_w - p.pad_left + kw0;
        const int64_t out = y_offset + (oh * p.out_w + ow) * kLanes;
        Tile t{};
        t.x = x_image + (ih * p.in_w + iw) * kLanes;
        t.x_pixel = down ? p.stride_h * b.x_row : p.stride_w * kLanes;
        t.w = w_block + kh0 * b.w_row + kw0 * w_tap;
        t.kh_count = kh1 - kh0;
        t.kw_count = kw1 - kw0;
        t.y = y_image + out;
        t.residual = residual_image != nullptr ? residual_image + out : nullptr;
        t.y_pixel = down ? p.out_w * kLanes : kLanes;
        t.pixels = static_cast<int>(pixels);
        tiles.push_back(t);
    };
    // Plain copies, not structured bindings: clang 14 (the fuzz build) cannot capture bindings.
    const std::pair<int64_t, int64_t> columns = interior(p.out_w, p.in_w, p.k_w, p.stride_w, p.pad_left);
    const int64_t col_begin = columns.first, col_end = columns.second;
    const std::pair<int64_t, int64_t> rows = interior(p.out_h, p.in_h, p.k_h, p.stride_h, p.pad_top);
    const int64_t rows_begin = std::clamp(rows.first, row_begin, row_end);
    const int64_t rows_end = std::clamp(rows.second, rows_begin, row_end);
    auto border_column = [&](int64_t ow) {
        const std::pair<int64_t, int64_t> taps = valid_taps(ow * p.stride_w - p.pad_left, p.k_w, p.in_w);
        const int64_t kw0 = taps.first, kw1 = taps.second;
        if (kw0 == kw1) {
            return false;  // handled pixel by pixel (no tap: the epilogue of the bias alone)
        }
        for_each_tile(rows_end - rows_begin, kMaxPixels<kVectors>, [&](int64_t first, int64_t size) {
            tile(rows_begin + first, ow, size, true, 0, p.k_h, kw0, kw1);
        });
        return true;
    };
    std::vector<bool> column_done(static_cast<std::size_t>(p.out_w), false);
    for (int64_t ow = 0; ow < p.out_w; ++ow)
        if (ow < col_begin || ow >= col_end) column_done[static_cast<std::size_t>(ow)] = border_column(ow);
    for (int64_t oh = row_begin; oh < row_end; ++oh) {
        const std::pair<int64_t, int64_t> row_taps = valid_taps(oh * p.stride_h - p.pad_top, p.k_h, p.in_h);
        const int64_t kh0 = row_taps.first, kh1 = row_taps.second;
        for_each_tile(col_end - col_begin, kMaxPixels<kVectors>, [&](int64_t first, int64_t size) {
            tile(oh, col_begin + first, size, false, kh0, kh1, 0, p.k_w);
        });
        const bool full_row = oh >= rows_begin && oh < rows_end;
        for (int64_t ow = 0; ow < p.out_w; ++ow) {
            if (ow >= col_begin && ow < col_end) continue;
            if (full_row && column_done[static_cast<std::size_t>(ow)]) continue;
            auto [kw0, kw1] = valid_taps(ow * p.stride_w - p.pad_left, p.k_w, p.in_w);
            int64_t h0 = kh0, h1 = kh1;
            if (kw0 == kw1 || h0 == h1) {
                kw1 = kw0;  // no valid tap: the sum is empty, and (ih, iw) is never read
                h1 = h0;
            }
            tile(oh, ow, 1, false, h0, h1, kw0, kw1);
        }
    }
    const int64_t chunk =
        std::max<int64_t>(1, kWeightChunkBytes / (p.k_h * b.w_row * static_cast<int64_t>(sizeof(float))));
    const int64_t lines_per_block = b.w_block * static_cast<int64_t>(sizeof(float)) / kCacheLine;
    for (int64_t begin = 0; begin < b.in_blocks; begin += chunk) {
        const Pass pass{begin, std::min(b.in_blocks, begin + chunk), begin == 0, begin + chunk >= b.in_blocks};
        // The next pass's weights are fetched while this one runs, a few lines before each tile: the
        // first tiles of a pass otherwise wait for them (a quarter of the time at 7x7).
        const char* next = reinterpret_cast<const char*>(w_block + pass.end * b.w_block);
        const int64_t lines = (std::min(b.in_blocks, pass.end + chunk) - pass.end) * lines_per_block;
        const int64_t tile_count = std::max<int64_t>(1, static_cast<int64_t>(tiles.size()));
        const int64_t lines_per_tile = (lines + tile_count - 1) / tile_count;
        int64_t line = 0;
        for (const Tile& t : tiles) {
            for (const int64_t until = std::min(lines, line + lines_per_tile); line < until; ++line)
                __builtin_prefetch(next + line * kCacheLine, 0, 3);
            run_tile<kVectors>(b, t, pass);
        }
    }
}

}  // namespace

bool cpu_supported() {
    static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return supported;
}

bool measured_faster(const Problem& p) {
    return p.k_h * p.k_w > 1 && p.in_channels >= 128 && p.out_h * p.out_w <= 14 * 14;
}

std::shared_ptr<const float> pack_weights(const Problem& p, const float* w) {
    const int64_t taps = p.k_h * p.k_w;
    const int64_t in_blocks = p.in_channels / kLanes;
    const std::size_t count = static_cast<std::size_t>(p.out_channels * p.in_channels * taps);
    std::shared_ptr<void> buffer = onednn::aligned_buffer(count * sizeof(float));
    float* packed = static_cast<float*>(buffer.get());
    for (int64_t ob = 0; ob * kOutBlock < p.out_channels; ++ob) {
        const int64_t width = std::min(kOutBlock, p.out_channels - ob * kOutBlock);
        float* block = packed + ob * kOutBlock * p.in_channels * taps;
        for (int64_t cb = 0; cb < in_blocks; ++cb)
            for (int64_t t = 0; t < taps; ++t)
                for (int64_t j = 0; j < kLanes; ++j)
                    for (int64_t o = 0; o < width; ++o) {
                        const int64_t m = ob * kOutBlock + o, c = cb * kLanes + j;
                        block[((cb * taps + t) * kLanes + j) * width + o] = w[(m * p.in_channels + c) * taps + t];
                    }
    }
    return std::shared_ptr<const float>(buffer, packed);
}

void run(const Problem& p, const float* x, const float* packed, const Epilogue& e, float* y, int num_threads) {
    const int64_t out_blocks = (p.out_channels + kOutBlock - 1) / kOutBlock;
    // Bands whose partial sums stay in L1 between the passes, of equal heights (give or take one).
    const int64_t band_rows = std::clamp<int64_t>(kBandBytes / (p.out_w * kOutBlock * sizeof(float)), 1, kRowsPerBand);
    const int64_t bands = (p.out_h + band_rows - 1) / band_rows;
    const int64_t rows_per_band = (p.out_h + bands - 1) / bands;
    const int64_t x_image = p.in_channels * p.in_h * p.in_w;
    const int64_t y_image = p.out_channels * p.out_h * p.out_w;
    const int64_t item_cost = rows_per_band * p.out_w * kOutBlock * p.in_channels * p.k_h * p.k_w;
    onednn::parallel_for(p.batch * out_blocks * bands, num_threads, item_cost, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
            const int64_t band = item % bands, ob = item / bands % out_blocks, n = item / bands / out_blocks;
            const int64_t row_begin = band * rows_per_band, row_end = std::min(p.out_h, row_begin + rows_per_band);
            const float* w_block = packed + ob * kOutBlock * p.in_channels * p.k_h * p.k_w;
            const float* residual = e.residual != nullptr ? e.residual + n * y_image : nullptr;
            const float* x_n = x + n * x_image;
            float* y_n = y + n * y_image;
            switch (std::min(kOutBlock, p.out_channels - ob * kOutBlock) / kLanes) {
                case 1:
                    run_band<1>(p, x_n, w_block, e, y_n, residual, ob, row_begin, row_end);
                    break;
                case 2:
                    run_band<2>(p, x_n, w_block, e, y_n, residual, ob, row_begin, row_end);
                    break;
                case 3:
                    run_band<3>(p, x_n, w_block, e, y_n, residual, ob, row_begin, row_end);
                    break;
                default:
                    run_band<4>(p, x_n, w_block, e, y_n, residual, ob, row_begin, row_end);
                    break;
            }
        }
    });
}

void block_channels(const float* nchw, int64_t batch, int64_t channels, int64_t spatial, float* blocked) {
    for (int64_t n = 0; n < batch; ++n)
        for (int64_t c = 0; c < channels; ++c) {
            const float* from = nchw + (n * channels + c) * spatial;
            float* to = blocked + (n * channels + c / kLanes * kLanes) * spatial + c % kLanes;
            for (int64_t s = 0; s < spatial; ++s) to[s * kLanes] = from[s];
        }
}

void unblock_channels(const float* blocked, const Epilogue& e, int64_t batch, int64_t channels, int64_t spatial,
                      float* y) {
    for (int64_t n = 0; n < batch; ++n)
        for (int64_t c = 0; c < channels; ++c) {
            const float* from = blocked + (n * channels + c / kLanes * kLanes) * spatial + c % kLanes;
            const int64_t at = (n * channels + c) * spatial;
            for (int64_t s = 0; s < spatial; ++s) {
                float v = from[s * kLanes];
                if (e.residual != nullptr) v += e.residual[at + s];
                if (e.clip) {
                    v = v > e.lo ? v : e.lo;  // NaN becomes lo, as _mm256_max_ps(v, lo) in the kernel
                    v = v < e.hi ? v : e.hi;
                }
                y[at + s] = v;
            }
        }
}

}  // namespace polygraphy::ref::blocked_conv
