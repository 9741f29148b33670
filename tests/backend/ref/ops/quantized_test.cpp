// QuantizeLinear, DequantizeLinear, QLinearMatMul, QLinearConv, ConvInteger and DynamicQuantizeLinear; ONNX
// Runtime's com.microsoft QuantizeLinear and DequantizeLinear against its own kernels.
#include "onnxrt_reference.h"
#include "op_test_util.h"

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

TEST(QuantizeLinearOp, QuantizeAndDequantize) {
    // np.clip(np.round(x / 2) + 128, 0, 255).astype(np.uint8); np.round is half-to-even
    const Tensor x = f32({5}, {0, 1.5, -3, 300, 5});
    EXPECT_TRUE(tensors_near(OpTester("QuantizeLinear", 13)
                                 .input(x)
                                 .constant(f32({}, {2}))
                                 .constant(make(DataType::kUInt8, {}, {128}))
                                 .run(),
                             make(DataType::kUInt8, {5}, {128, 129, 126, 255, 130})));
    // no zero point: uint8
    EXPECT_EQ(OpTester("QuantizeLinear", 13).input(x).constant(f32({}, {2})).run().dtype(), DataType::kUInt8);
    // per-axis int8 on axis 1: scales [1, 0.5]
    EXPECT_TRUE(tensors_near(OpTester("QuantizeLinear", 13)
                                 .input(f32({2, 2}, {1, 1, -200, -1}))
                                 .constant(f32({2}, {1, 0.5}))
                                 .constant(make(DataType::kInt8, {2}, {0, 0}))
                                 .run(),
                             make(DataType::kInt8, {2, 2}, {1, 2, -128, -2})));
    // (x - zp) * scale
    EXPECT_TRUE(tensors_near(OpTester("DequantizeLinear", 13)
                                 .input(make(DataType::kInt8, {3}, {-128, 0, 127}))
                                 .constant(f32({}, {0.5}))
                                 .constant(make(DataType::kInt8, {}, {-1}))
                                 .run(),
                             f32({3}, {-63.5, 0.5, 64})));
    // blocked (opset 21): block_size 2 along axis 0 of a (4,) tensor: scales [1, 10]
    EXPECT_TRUE(tensors_near(OpTester("DequantizeLinear", 21)
                                 .input(make(DataType::kUInt8, {4}, {1, 2, 3, 4}))
                                 .constant(f32({2}, {1, 10}))
                                 .attr("axis", 0)
                                 .attr("block_size", 2)
                                 .run(),
                             f32({4}, {1, 2, 30, 40})));
    EXPECT_THROW_MESSAGE(OpTester("DequantizeLinear", 13)
                             .input(make(DataType::kInt8, {2, 3}, {1, 2, 3, 4, 5, 6}))
                             .constant(f32({2}, {1, 2}))
                             .run(),
                         ModelError,
                         "per-axis scale must be 1-D with 3 elements (axis 1 of input (2, 3)), got shape (2,)");
}

/// Integer `values` of `dtype`, 4-bit types included (stored one per byte, which from_doubles does not write).
Tensor integers(DataType dtype, const Shape& shape, const std::vector<double>& values) {
    if (dtype != DataType::kInt4 && dtype != DataType::kUInt4) return make(dtype, shape, values);
    Tensor tensor(dtype, shape);
    auto* bytes = static_cast<int8_t*>(tensor.data());
    for (std::size_t i = 0; i < values.size(); ++i) bytes[i] = static_cast<int8_t>(values[i]);
    return tensor;
}

// com.microsoft QuantizeLinear then DequantizeLinear in every integer type ONNX Runtime gives them,
// per tensor and per axis, against ONNX Runtime.
TEST(ContribQuantizeLinear, EveryTypePerTensorAndPerAxisMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const DataType types[] = {DataType::kUInt8, DataType::kInt8,  DataType::kUInt16,
                              DataType::kInt16, DataType::kUInt4, DataType::kInt4};
    for (DataType dtype : types) {
        for (bool per_axis : {false, true}) {
            SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << (per_axis ? " per axis" : " per tensor"));
            const bool is_unsigned =
                dtype == DataType::kUInt8 || dtype == DataType::kUInt16 || dtype == DataType::kUInt4;
            ModelBuilder builder(17);
            builder.opset_import("com.microsoft", 1);
            builder.input("x", DataType::kFloat32, Shape{2, 3, 4});
            builder.initializer("scale", per_axis ? f32({3}, {0.05, 0.2, 0.01}) : f32({}, {0.07}));
            builder.initializer("zero", per_axis ? integers(dtype, {3}, {is_unsigned ? 3.0 : -1.0, 1.0, 2.0})
                                                 : integers(dtype, {}, {is_unsigned ? 5.0 : -2.0}));
            onnx::NodeProto& q = builder.node("QuantizeLinear", {"x", "scale", "zero"}, {"q"}, "q", "com.microsoft");
            onnx::NodeProto& dq =
                builder.node("DequantizeLinear", {"q", "scale", "zero"}, {"y"}, "dq", "com.microsoft");
            if (per_axis) {
                set_attr(q, "axis", int64_t{1});
                set_attr(dq, "axis", int64_t{1});
            }
            // y shows every code (q itself stays inside: the ONNX Runtime backend returns no 4-bit tensors).
            builder.output("y", DataType::kFloat32, Shape{2, 3, 4});
            TensorMap feed;
            // Values past every type's range, to see both saturate alike.
            feed.set("x", random_tensor({2, 3, 4}, 11, -300.0f, 300.0f));
            expect_matches_onnxrt(builder, feed, 1e-6, 1e-6);
        }
    }
}

}  // namespace
}  // namespace polygraphy::testing
