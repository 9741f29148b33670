// Conversions to the 8-bit float types (float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz)
// and the 4-bit integer types (int4, uint4, stored one element per byte), which Tensor::cast
// does not write. Reading them back goes through Tensor::value_as_double.
#pragma once

#include <cmath>
#include <cstdint>

#include "polygraphy/common/tensor.h"

namespace polygraphy::ref {

inline bool is_float8(DataType dtype) {
    return dtype == DataType::kFloat8E4M3FN || dtype == DataType::kFloat8E4M3FNUZ || dtype == DataType::kFloat8E5M2 ||
           dtype == DataType::kFloat8E5M2FNUZ;
}

inline bool is_int4(DataType dtype) {
    return dtype == DataType::kInt4 || dtype == DataType::kUInt4;
}

/// `value` rounded to nearest-even in float8 `dtype`. Out-of-range values (infinities included)
/// become the largest finite value of their sign when `saturate`; otherwise infinity (e5m2) or NaN
/// (the types without infinity), as the ONNX Cast table specifies. The "uz" types have no negative
/// zero: -0 becomes +0.
inline uint8_t double_to_float8(double value, DataType dtype, bool saturate) {
    int mantissa_bits = 3, bias = 7;
    bool uz = false;
    double max_finite = 448.0;
    uint8_t max_code = 0x7E, nan_code = 0x7F, inf_code = 0;  // inf_code 0: no infinity
    switch (dtype) {
        case DataType::kFloat8E4M3FNUZ:
            bias = 8, uz = true, max_finite = 240.0, max_code = 0x7F, nan_code = 0x80;
            break;
        case DataType::kFloat8E5M2:
            mantissa_bits = 2, bias = 15, max_finite = 57344.0, max_code = 0x7B, nan_code = 0x7F, inf_code = 0x7C;
            break;
        case DataType::kFloat8E5M2FNUZ:
            mantissa_bits = 2, bias = 16, uz = true, max_finite = 57344.0, max_code = 0x7F, nan_code = 0x80;
            break;
        default:
            break;
    }
    const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
    if (std::isnan(value)) return uz ? nan_code : static_cast<uint8_t>(sign | nan_code);
    const double magnitude = std::fabs(value);
    auto overflow = [&]() -> uint8_t {
        if (saturate) return static_cast<uint8_t>(sign | max_code);
        if (inf_code) return static_cast<uint8_t>(sign | inf_code);
        return uz ? nan_code : static_cast<uint8_t>(sign | nan_code);
    };
    if (std::isinf(magnitude)) return overflow();
    if (magnitude == 0.0) return uz ? 0 : sign;
    const int min_exponent = 1 - bias;  // of normal numbers
    int exponent = 0;
    std::frexp(magnitude, &exponent);
    exponent -= 1;  // magnitude in [2^exponent, 2^(exponent+1))
    if (exponent < min_exponent) exponent = min_exponent;
    const double ulp = std::ldexp(1.0, exponent - mantissa_bits);
    const double rounded = std::nearbyint(magnitude / ulp) * ulp;  // ties to even (default rounding mode)
    if (rounded > max_finite) return overflow();
    if (rounded == 0.0) return uz ? 0 : sign;
    std::frexp(rounded, &exponent);
    exponent -= 1;
    uint32_t code;
    if (exponent < min_exponent) {
        code = static_cast<uint32_t>(rounded / std::ldexp(1.0, min_exponent - mantissa_bits));  // subnormal
    } else {
        const auto mantissa =
            static_cast<uint32_t>(rounded / std::ldexp(1.0, exponent - mantissa_bits)) - (1u << mantissa_bits);
        code = (static_cast<uint32_t>(exponent + bias) << mantissa_bits) | mantissa;
    }
    return static_cast<uint8_t>(sign | code);
}

/// `value` truncated toward zero and wrapped into 4 bits, the way Tensor::cast narrows every other
/// integer type (numpy astype). NaN and infinities give 0.
inline int8_t double_to_int4(double value, bool is_signed) {
    if (!std::isfinite(value)) return 0;
    const auto integer = static_cast<int64_t>(std::fmod(std::trunc(value), 16.0));
    const int low = static_cast<int>(integer & 0xF);
    return static_cast<int8_t>(is_signed && low >= 8 ? low - 16 : low);
}

/// Every element of `input` converted to float8 or int4/uint4 `dtype` (see above).
inline Tensor cast_to_small_type(const Tensor& input, DataType dtype, bool saturate) {
    Tensor result(dtype, input.shape());
    auto* out = static_cast<uint8_t*>(result.data());
    if (is_float8(dtype)) {
        for (int64_t i = 0; i < input.numel(); ++i)
            out[i] = double_to_float8(input.value_as_double(i), dtype, saturate);
    } else {
        for (int64_t i = 0; i < input.numel(); ++i)
            out[i] = static_cast<uint8_t>(double_to_int4(input.value_as_double(i), dtype == DataType::kInt4));
    }
    return result;
}

}  // namespace polygraphy::ref
