#include "nbits_weights.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace polygraphy::testing {

NBitsWeights quantize_nbits(const Tensor& w, int64_t bits, int64_t block_size, NBitsZeroPoints zero_points) {
    const int64_t k = w.shape().at(0), n = w.shape().at(1);
    const int64_t blocks = (k + block_size - 1) / block_size;
    const int64_t blob = block_size * bits / 8;
    const double levels = static_cast<double>((int64_t{1} << bits) - 1);
    const int64_t zp_row_bytes = (blocks * bits + 7) / 8;
    NBitsWeights out{Tensor(DataType::kUInt8, {n, blocks, blob}), Tensor(DataType::kFloat32, {n * blocks}), Tensor()};
    std::vector<uint8_t> packed_zp(static_cast<std::size_t>(n * zp_row_bytes), 0);
    std::vector<double> float_zp;
    const float* values = w.data_as<float>();
    uint8_t* codes = out.b.data_as<uint8_t>();
    for (int64_t col = 0; col < n; ++col) {
        for (int64_t g = 0; g < blocks; ++g) {
            const int64_t k_end = std::min(k, (g + 1) * block_size);
            double lo = 0.0, hi = 0.0;
            for (int64_t row = g * block_size; row < k_end; ++row) {
                lo = std::min(lo, static_cast<double>(values[row * n + col]));
                hi = std::max(hi, static_cast<double>(values[row * n + col]));
            }
            double scale, zp;
            if (zero_points == NBitsZeroPoints::kNone) {
                zp = static_cast<double>(int64_t{1} << (bits - 1));
                scale = std::max(-lo, hi) / zp;
            } else {
                scale = (hi - lo) / levels;
                zp = scale > 0.0 ? std::clamp(std::round(-lo / scale), 0.0, levels) : 0.0;
            }
            scale = static_cast<float>(scale);
            out.scales.data_as<float>()[col * blocks + g] = static_cast<float>(scale);
            const int64_t zp_bit = g * bits;
            packed_zp[static_cast<std::size_t>(col * zp_row_bytes + zp_bit / 8)] |=
                static_cast<uint8_t>(static_cast<int64_t>(zp) << (zp_bit % 8));
            float_zp.push_back(zp);
            for (int64_t row = g * block_size; row < k_end; ++row) {
                const double q =
                    scale > 0.0 ? std::clamp(std::round(values[row * n + col] / scale) + zp, 0.0, levels) : zp;
                const int64_t bit = (row - g * block_size) * bits;
                codes[(col * blocks + g) * blob + bit / 8] |=
                    static_cast<uint8_t>(static_cast<int64_t>(q) << (bit % 8));
            }
        }
    }
    if (zero_points == NBitsZeroPoints::kPacked) {
        out.zero_points = Tensor(DataType::kUInt8, {n * zp_row_bytes});
        std::copy(packed_zp.begin(), packed_zp.end(), out.zero_points.data_as<uint8_t>());
    } else if (zero_points == NBitsZeroPoints::kFloat) {
        out.zero_points = Tensor::from_doubles(DataType::kFloat32, {n * blocks}, float_zp);
    }
    return out;
}

int64_t nbits_weight_bytes(int64_t k, int64_t n, int64_t bits, int64_t block_size, NBitsZeroPoints zero_points) {
    const int64_t blocks = (k + block_size - 1) / block_size;
    int64_t bytes = n * blocks * (block_size * bits / 8) + n * blocks * 4;
    if (zero_points == NBitsZeroPoints::kPacked) bytes += n * ((blocks * bits + 7) / 8);
    if (zero_points == NBitsZeroPoints::kFloat) bytes += n * blocks * 4;
    return bytes;
}

}  // namespace polygraphy::testing
