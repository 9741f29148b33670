// IEEE half and bfloat16 conversions (round to nearest even, as numpy and ONNX do).
#pragma once

#include <cstdint>
#include <cstring>

namespace polygraphy {

/// float64 -> IEEE binary16 bits with a single rounding (numpy's float64.astype(float16)).
uint16_t double_to_half(double value);

/// float32 -> IEEE binary16 bits, round to nearest even, overflow to inf, NaN kept NaN. Inline and on the
/// bits: fp16 casts and comparisons convert every element of every tensor (BENCHMARKS.md, debug diff).
inline uint16_t float_to_half(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return 0x7e00u;                // NaN, as double_to_half gives it
    if (magnitude >= 0x477ff000u) return sign | 0x7c00u;        // 65520 and above round to infinity
    if (magnitude < 0x38800000u) return double_to_half(value);  // half's subnormal range, rare
    // Rebias the exponent (127 -> 15), then round the 13 dropped bits to nearest even; a carry out of
    // the mantissa moves the exponent up, as it should.
    const uint32_t rebiased = magnitude - 0x38000000u;
    return sign | static_cast<uint16_t>((rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13);
}

/// IEEE binary16 bits -> float32 (exact).
inline float half_to_float(uint16_t bits) {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1fu;
    const uint32_t mantissa = bits & 0x3ffu;
    uint32_t result;
    if (exponent == 0) {
        if (mantissa == 0) {
            result = sign;
        } else {
            // Subnormal: mantissa * 2^-24, exact in float32.
            float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
            std::memcpy(&result, &magnitude, sizeof(result));
            result |= sign;
        }
    } else if (exponent == 31) {
        result = sign | 0x7f800000u | (mantissa << 13);
    } else {
        result = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    float value;
    std::memcpy(&value, &result, sizeof(value));
    return value;
}

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
