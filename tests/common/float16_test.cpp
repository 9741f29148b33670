#include "polygraphy/common/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace polygraphy {
namespace {

float float_of_bits(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

// The bit-level float32 -> half conversion against the one-rounding double path (float -> double is
// exact), over a stride of all float bit patterns and every pattern near the rounding boundaries.
TEST(Float16, FloatToHalfMatchesTheDoublePath) {
    uint64_t checked = 0;
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
        const float value = float_of_bits(static_cast<uint32_t>(bits));
        ASSERT_EQ(float_to_half(value), double_to_half(static_cast<double>(value))) << std::hex << bits;
        ++checked;
    }
    // Around each half's midpoint: the 13 dropped bits at 0x0fff, 0x1000 (the tie) and 0x1001.
    for (uint32_t half = 0; half < 0x7c00u; ++half) {
        const float upper = half_to_float(static_cast<uint16_t>(half));
        uint32_t bits;
        std::memcpy(&bits, &upper, sizeof(bits));
        for (uint32_t offset : {0x0fffu, 0x1000u, 0x1001u}) {
            for (uint32_t sign : {0u, 0x80000000u}) {
                const float value = float_of_bits((bits + offset) | sign);
                ASSERT_EQ(float_to_half(value), double_to_half(static_cast<double>(value))) << std::hex << half;
            }
        }
    }
    EXPECT_GT(checked, 17'000'000u);
}

TEST(Float16, SpecialValues) {
    EXPECT_EQ(float_to_half(65504.0f), 0x7bffu);
    EXPECT_EQ(float_to_half(65519.996f), 0x7bffu);
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00u);  // the tie rounds to the even infinity
    EXPECT_EQ(float_to_half(-INFINITY), 0xfc00u);
    EXPECT_EQ(float_to_half(NAN), 0x7e00u);
    EXPECT_EQ(float_to_half(0x1p-14f), 0x0400u);  // smallest normal
    EXPECT_EQ(float_to_half(0x1p-24f), 0x0001u);  // smallest subnormal
    EXPECT_EQ(float_to_half(0x1p-25f), 0x0000u);  // the tie to zero is even
    EXPECT_EQ(float_to_half(-0.0f), 0x8000u);
}

// Every half converts to float and back to itself (NaNs stay NaN).
TEST(Float16, HalfToFloatRoundTrips) {
    for (uint32_t half = 0; half <= 0xffffu; ++half) {
        const float value = half_to_float(static_cast<uint16_t>(half));
        const bool nan = (half & 0x7c00u) == 0x7c00u && (half & 0x3ffu) != 0;
        if (nan) {
            EXPECT_TRUE(std::isnan(value)) << std::hex << half;
        } else {
            ASSERT_EQ(float_to_half(value), half) << std::hex << half;
        }
    }
    EXPECT_EQ(half_to_float(0x0001u), 0x1p-24f);
    EXPECT_EQ(half_to_float(0x8001u), -0x1p-24f);
}

}  // namespace
}  // namespace polygraphy
