// QLinearMatMul, QLinearConv, ConvInteger and DynamicQuantizeLinear.
#include "kernel_harness.h"

namespace polygraphy::testing {
namespace {

Tensor u8(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kUInt8, shape, values);
}
Tensor i8(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kInt8, shape, values);
}

TEST(QLinearMatMulOp, RequantizesWithZeroPoints) {
    // (a - 0) @ (b - 1) = 2 * 0 + 4 * 2 = 8; 8 * 0.5 * 1 / 2 = 2; + 10 = 12
    KernelHarness h("QLinearMatMul", 10);
    h.input(u8({1, 2}, {2, 4}))
        .input(f32({}, {0.5}))
        .input(u8({}, {0}))
        .input(u8({2, 1}, {1, 3}))
        .input(f32({}, {1}))
        .input(u8({}, {1}))
        .input(f32({}, {2}))
        .input(u8({}, {10}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kUInt8);
    EXPECT_EQ(values_of(y), (std::vector<double>{12}));
}

TEST(QLinearMatMulOp, SaturatesAsTheSpecSays) {
    // 100 * 100 * 2 = 20000 does not fit int8: the spec saturates to 127 (no wrap-around).
    KernelHarness h("QLinearMatMul", 21);
    h.input(i8({1, 2}, {100, 100}))
        .input(f32({}, {1}))
        .input(i8({}, {0}))
        .input(i8({2, 1}, {100, 100}))
        .input(f32({}, {1}))
        .input(i8({}, {0}))
        .input(f32({}, {1}))
        .input(i8({}, {0}));
    EXPECT_EQ(values_of(h.run()[0]), (std::vector<double>{127}));
}

TEST(QLinearMatMulOp, RejectsMismatchedOperands) {
    KernelHarness h("QLinearMatMul", 10);
    h.input(u8({1, 2}, {2, 4}))
        .input(f32({}, {0.5}))
        .input(i8({}, {0}))
        .input(u8({2, 1}, {1, 3}))
        .input(f32({}, {1}))
        .input(u8({}, {1}))
        .input(f32({}, {2}))
        .input(u8({}, {10}));
    expect_error([&] { h.run(); }, "input a_zero_point must have the data type of its operand (uint8), but it is int8");
    KernelHarness k("QLinearMatMul", 10);
    k.input(u8({1, 2}, {2, 4}))
        .input(f32({}, {0.5}))
        .input(u8({}, {0}))
        .input(u8({3, 1}, {1, 3, 5}))
        .input(f32({}, {1}))
        .input(u8({}, {1}))
        .input(f32({}, {2}))
        .input(u8({}, {10}));
    expect_error([&] { k.run(); }, "inner dimensions of a (1, 2) and b (3, 1) differ");
}

TEST(ConvIntegerOp, SubtractsZeroPointsAndAccumulatesInInt32) {
    KernelHarness h("ConvInteger", 10);
    h.input(u8({1, 1, 3, 3}, arange(9, 1))).input(u8({1, 1, 2, 2}, {1, 1, 1, 1})).input(u8({}, {1}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kInt32);
    expect_close(y, {1, 1, 2, 2}, {8, 12, 20, 24});
    KernelHarness bad("ConvInteger", 10);
    set_attr(bad.node(), "group", int64_t{0});
    expect_error([&] { bad.create(); }, "attribute 'group' must be positive, but it is 0");
}

TEST(QLinearConvOp, AddsTheInt32BiasBeforeRequantizing) {
    // (sums + 2) * 0.5 * 1 / 1: (8 + 2) / 2 = 5, 7, 11, 13
    KernelHarness h("QLinearConv", 10);
    h.input(u8({1, 1, 3, 3}, arange(9, 1)))
        .input(f32({}, {0.5}))
        .input(u8({}, {1}))
        .input(u8({1, 1, 2, 2}, {1, 1, 1, 1}))
        .input(f32({1}, {1}))
        .input(u8({}, {0}))
        .input(f32({}, {1}))
        .input(u8({}, {0}))
        .input(Tensor::from_doubles(DataType::kInt32, {1}, {2}));
    expect_close(h.run()[0], {1, 1, 2, 2}, {5, 7, 11, 13});
    KernelHarness bias("QLinearConv", 10);
    bias.input(u8({1, 1, 3, 3}, arange(9, 1)))
        .input(f32({}, {0.5}))
        .input(u8({}, {1}))
        .input(u8({1, 1, 2, 2}, {1, 1, 1, 1}))
        .input(f32({1}, {1}))
        .input(u8({}, {0}))
        .input(f32({}, {1}))
        .input(u8({}, {0}))
        .input(f32({1}, {2}));
    expect_error([&] { bias.run(); }, "input B must be int32 with 1 values, but it is float32 of shape (1,)");
}

TEST(DynamicQuantizeLinearOp, RangeIncludesZero) {
    // min -1, max 2: scale 3 / 255, zero point 85.
    KernelHarness h("DynamicQuantizeLinear", 11, 3);
    h.input(f32({4}, {0, 2, -1, 1}));
    const auto out = h.run();
    EXPECT_EQ(values_of(out[0]), (std::vector<double>{85, 255, 0, 170}));
    expect_close(out[1], Shape{}, {3.0 / 255.0});
    EXPECT_EQ(values_of(out[2]), (std::vector<double>{85}));
    KernelHarness bad("DynamicQuantizeLinear", 11, 3);
    bad.input(Tensor::from_doubles(DataType::kInt32, {1}, {1}));
    expect_error([&] { bad.run(); }, "int32");
}

}  // namespace
}  // namespace polygraphy::testing
