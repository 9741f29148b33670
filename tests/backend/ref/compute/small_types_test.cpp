// Casts and quantization to float8 and int4/uint4 (src/backend/ref/compute/small_types.h).
#include "backend/ref/compute/small_types.h"
#include "../ops/op_test_util.h"

namespace polygraphy::testing {
namespace {

Tensor cast(const Tensor& x, DataType to, int64_t saturate = 1) {
    KernelHarness h("Cast", 21);
    set_attr(h.node(), "to", static_cast<int64_t>(dtype_to_onnx(to)));
    set_attr(h.node(), "saturate", saturate);
    h.input(x);
    return h.run()[0];
}

TEST(Float8Cast, RoundsToNearestEvenAndSaturates) {
    const Tensor x = f32({6}, {1.0, 1.0625, 1.1875, 448, 500, -1e9});
    const Tensor y = cast(x, DataType::kFloat8E4M3FN);
    EXPECT_EQ(y.dtype(), DataType::kFloat8E4M3FN);
    EXPECT_EQ(static_cast<const uint8_t*>(y.data())[0], 0x38);  // 1.0 = 0 0111 000
    // 1.0625 is halfway between 1 and 1.125: even mantissa (1.0); 1.1875 rounds up to 1.25.
    expect_close(y, {6}, {1.0, 1.0, 1.25, 448, 448, -448});
    expect_close(cast(x, DataType::kFloat8E4M3FN, 0), {6}, {1.0, 1.0, 1.25, 448, std::nan(""), std::nan("")});
}

TEST(Float8Cast, InfinityNaNAndSubnormalsPerType) {
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor x = f32({4}, {inf, std::nan(""), -0.0, 0.0009765625});  // 2^-10
    expect_close(cast(x, DataType::kFloat8E5M2), {4}, {57344, std::nan(""), 0, 0.0009765625});
    expect_close(cast(x, DataType::kFloat8E5M2, 0), {4}, {inf, std::nan(""), 0, 0.0009765625});
    const Tensor fnuz = cast(x, DataType::kFloat8E4M3FNUZ);
    expect_close(fnuz, {4}, {240, std::nan(""), 0, 0.0009765625});  // 2^-10 = 1 * 2^(1 - 8 - 3)
    EXPECT_EQ(static_cast<const uint8_t*>(fnuz.data())[2], 0x00);   // no negative zero in fnuz
    EXPECT_EQ(ref::double_to_float8(-0.0, DataType::kFloat8E4M3FN, true), 0x80);
}

TEST(BFloat16Cast, TruncatesLikeTheOnnxReference) {
    // 0.48 = 0x3EF5C28F: truncation keeps 0x3EF5 (0.478515625); rounding would give 0x3EF6.
    const Tensor y = cast(f32({2}, {0.48, std::nan("")}), DataType::kBFloat16);
    EXPECT_EQ(y.data_as<uint16_t>()[0], 0x3EF5);
    EXPECT_TRUE(std::isnan(y.value_as_double(1)));
}

TEST(Int4Cast, TruncatesAndWrapsLikeOtherIntegerCasts) {
    const Tensor x = f32({5}, {7, -8, -3.7, 9, 16});
    EXPECT_EQ(values_of(cast(x, DataType::kInt4)), (std::vector<double>{7, -8, -3, -7, 0}));
    EXPECT_EQ(values_of(cast(x, DataType::kUInt4)), (std::vector<double>{7, 8, 13, 9, 0}));
}

TEST(Float8Quantization, QuantizeAndDequantize) {
    KernelHarness q("QuantizeLinear", 21);
    Tensor zero(DataType::kFloat8E4M3FN, {});
    q.input(f32({2}, {0.5, 1000})).input(f32({}, {0.5})).input(zero);
    const Tensor y = q.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kFloat8E4M3FN);
    expect_close(y, {2}, {1.0, 448});
    KernelHarness d("DequantizeLinear", 21);
    d.input(y).input(f32({}, {2}));
    expect_close(d.run()[0], {2}, {2, 896});
    KernelHarness i4("QuantizeLinear", 21);
    i4.input(f32({3}, {3, 100, -100})).input(f32({}, {1})).input(Tensor(DataType::kInt4, {}));
    EXPECT_EQ(values_of(i4.run()[0]), (std::vector<double>{3, 7, -8}));  // QuantizeLinear saturates
    KernelHarness bad("Cast", 21);
    set_attr(bad.node(), "to", static_cast<int64_t>(dtype_to_onnx(DataType::kFloat8E5M2)));
    set_attr(bad.node(), "saturate", int64_t{3});
    expect_error([&] { bad.create(); }, "attribute 'saturate' must be 0 or 1, but it is 3");
}

}  // namespace
}  // namespace polygraphy::testing
