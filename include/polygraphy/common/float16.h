// IEEE half and bfloat16 conversions (round to nearest even, as numpy and ONNX do).
#pragma once

#include <cstdint>
#include <cstring>

namespace polygraphy {

/// float32 -> IEEE binary16 bits, round to nearest even, overflow to inf, NaN kept NaN.
uint16_t float_to_half(float value);
/// IEEE binary16 bits -> float32 (exact).
float half_to_float(uint16_t bits);
/// float64 -> IEEE binary16 bits with a single rounding (numpy's float64.astype(float16)).
uint16_t double_to_half(double value);

/// float32 -> bfloat16 bits, round to nearest even; NaN stays NaN.
inline uint16_t float_to_bfloat16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>((bits + rounding) >> 16);
}

/// bfloat16 bits -> float32 (exact).
inline float bfloat16_to_float(uint16_t bits) {
    const uint32_t widened = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &widened, sizeof(value));
    return value;
}

}  // namespace polygraphy
