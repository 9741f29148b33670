#include "polygraphy/common/float16.h"

#include <cmath>

namespace polygraphy {
namespace {

// Rounds a finite, non-NaN double to binary16 with one rounding step (nearest, ties to even).
uint16_t round_to_half(double value) {
    const uint16_t sign = std::signbit(value) ? 0x8000u : 0u;
    double magnitude = std::fabs(value);
    if (magnitude >= 65520.0) return sign | 0x7c00u;  // rounds to infinity
    if (magnitude < 0x1p-14) {
        // Subnormal range: units of 2^-24.
        const double units = std::nearbyint(magnitude * 0x1p24);  // default rounding mode: ties to even
        return sign | static_cast<uint16_t>(units);
    }
    int exponent;
    const double mantissa = std::frexp(magnitude, &exponent);  // magnitude = mantissa * 2^exponent, mantissa in [0.5,1)
    // 11 significant bits: scale mantissa to [1024, 2048).
    double significand = std::nearbyint(mantissa * 2048.0);
    if (significand >= 2048.0) {
        significand /= 2.0;
        ++exponent;
    }
    const int biased = exponent - 1 + 15;
    if (biased >= 31) return sign | 0x7c00u;
    return sign | static_cast<uint16_t>((biased << 10) | (static_cast<uint32_t>(significand) - 1024u));
}

}  // namespace

uint16_t double_to_half(double value) {
    if (std::isnan(value)) return 0x7e00u;
    if (std::isinf(value)) return value > 0 ? 0x7c00u : 0xfc00u;
    return round_to_half(value);
}

}  // namespace polygraphy
