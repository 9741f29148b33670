#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {
namespace {

TEST(DataType, NamesRoundTripAndOnnxCodes) {
    EXPECT_EQ(dtype_name(DataType::kFloat32), "float32");
    EXPECT_EQ(dtype_from_name("float16"), DataType::kFloat16);
    EXPECT_EQ(dtype_from_name("half"), DataType::kFloat16);
    EXPECT_FALSE(dtype_from_name("float128").has_value());
    EXPECT_EQ(dtype_from_onnx(1), DataType::kFloat32);
    EXPECT_EQ(dtype_from_onnx(16), DataType::kBFloat16);
    EXPECT_EQ(dtype_from_onnx(22), DataType::kInt4);
    EXPECT_EQ(dtype_from_onnx(999), DataType::kUndefined);
    EXPECT_EQ(dtype_to_onnx(DataType::kBool), 9);
    EXPECT_EQ(dtype_to_npy_descr(DataType::kBool), "|b1");
    EXPECT_EQ(dtype_from_npy_descr("<i8"), DataType::kInt64);
    EXPECT_EQ(dtype_from_npy_descr(">f4"), DataType::kFloat32);
    EXPECT_FALSE(dtype_to_npy_descr(DataType::kBFloat16).has_value());
}

TEST(Float16, RoundsToNearestEven) {
    EXPECT_EQ(float_to_half(1.0f), 0x3c00);
    EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // halfway to the next binade rounds to inf
    EXPECT_EQ(float_to_half(-2.0f), 0xc000);
    EXPECT_EQ(float_to_half(5.960464477539063e-08f), 0x0001);  // smallest subnormal
    // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even mantissa (1.0) wins.
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
    EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
    EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
    // numpy: np.float16(np.float64(0.1)).view(np.uint16) == 0x2e66
    EXPECT_EQ(double_to_half(0.1), 0x2e66);
    EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
    EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
}

TEST(Tensor, AllocatesZeroedAlignedBuffers) {
    Tensor tensor(DataType::kFloat32, {2, 3});
    EXPECT_EQ(tensor.numel(), 6);
    EXPECT_EQ(tensor.nbytes(), 24u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data()) % 64, 0u);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(tensor.data_as<float>()[i], 0.0f);
}

TEST(Tensor, CopiesShareAndCloneCopies) {
    Tensor tensor = Tensor::from_doubles(DataType::kInt32, {3}, {1, 2, 3});
    Tensor shared = tensor;
    Tensor copy = tensor.clone();
    tensor.data_as<int32_t>()[0] = 42;
    EXPECT_EQ(shared.data_as<int32_t>()[0], 42);
    EXPECT_EQ(copy.data_as<int32_t>()[0], 1);
}

TEST(Tensor, RejectsAbsurdShapes) {
    EXPECT_THROW(Tensor(DataType::kFloat32, {-1, 2}), PolygraphyException);
    EXPECT_THROW(Tensor(DataType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}), PolygraphyException);
    EXPECT_THROW(Tensor(DataType::kFloat32, {int64_t{1} << 38}), PolygraphyException);
}

// Fuzzing finding (npy_fuzzer): a zero dimension after dimensions whose product overflows made
// shape_volume throw, although the volume is 0 (and a zero dimension first was accepted).
TEST(Tensor, ZeroDimensionMakesAnyShapeEmptyInAnyOrder) {
    const int64_t big = int64_t{1} << 62;
    EXPECT_EQ(shape_volume({big, big, 0}), 0);
    EXPECT_EQ(shape_volume({0, big, big}), 0);
    EXPECT_EQ(Tensor(DataType::kFloat32, {big, big, 0}).numel(), 0);
    EXPECT_EQ(Tensor(DataType::kString, {big, 0, big}).strings().size(), 0u);
    EXPECT_THROW(shape_volume({big, big, -1}), PolygraphyException);
}

TEST(Tensor, CastFollowsNumpy) {
    Tensor floats = Tensor::from_doubles(DataType::kFloat32, {4}, {1.7, -1.7, 0.0, 300.0});
    Tensor ints = floats.cast(DataType::kInt32);
    EXPECT_EQ(ints.data_as<int32_t>()[0], 1);   // truncation toward zero
    EXPECT_EQ(ints.data_as<int32_t>()[1], -1);
    Tensor bools = floats.cast(DataType::kBool);
    EXPECT_EQ(bools.data_as<uint8_t>()[0], 1);
    EXPECT_EQ(bools.data_as<uint8_t>()[2], 0);
    Tensor big = Tensor::from_doubles(DataType::kInt64, {1}, {0});
    big.data_as<int64_t>()[0] = (int64_t{1} << 53) + 1;  // not representable as double
    EXPECT_EQ(big.cast(DataType::kUInt64).data_as<uint64_t>()[0], (uint64_t{1} << 53) + 1);
    Tensor halves = floats.cast(DataType::kFloat16);
    EXPECT_FLOAT_EQ(static_cast<float>(halves.value_as_double(3)), 300.0f);
}

// Casts between the plain numeric types saturate into integers, map NaN to 0 and round through
// double, element by element as value_as_double() reads them.
TEST(Tensor, NumericCastsSaturateAndMatchTheElementValues) {
    const double nan = std::nan("");
    const Tensor doubles = Tensor::from_doubles(DataType::kFloat64, {7}, {-1e10, -129.0, -2.5, 0.0, 127.9, 1e10, nan});
    const Tensor int8s = doubles.cast(DataType::kInt8);
    EXPECT_EQ(std::vector<int8_t>(int8s.data_as<int8_t>(), int8s.data_as<int8_t>() + 7),
              (std::vector<int8_t>{-128, -128, -2, 0, 127, 127, 0}));
    const Tensor uint8s = doubles.cast(DataType::kUInt8);
    EXPECT_EQ(std::vector<uint8_t>(uint8s.data_as<uint8_t>(), uint8s.data_as<uint8_t>() + 7),
              (std::vector<uint8_t>{0, 0, 0, 0, 127, 255, 0}));
    const Tensor floats = int8s.cast(DataType::kFloat32);
    for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(floats.value_as_double(i), int8s.value_as_double(i)) << i;
    Tensor wide(DataType::kInt64, {1});
    wide.data_as<int64_t>()[0] = (int64_t{1} << 60) + 1;
    // Through double first (numpy's int64 -> float32 rounds once here, as the cast always has).
    EXPECT_EQ(wide.cast(DataType::kFloat32).data_as<float>()[0],
              static_cast<float>(static_cast<double>((int64_t{1} << 60) + 1)));
}

TEST(Tensor, ReshapeChecksVolume) {
    Tensor tensor(DataType::kFloat32, {2, 3});
    EXPECT_EQ(tensor.reshaped({3, 2}).shape(), (Shape{3, 2}));
    EXPECT_THROW(tensor.reshaped({4}), PolygraphyException);
}

TEST(Tensor, StringTensors) {
    Tensor tensor(DataType::kString, {2});
    tensor.strings()[0] = "a";
    Tensor copy = tensor.clone();
    copy.strings()[1] = "b";
    EXPECT_EQ(tensor.strings()[1], "");
    EXPECT_THROW(Tensor(DataType::kFloat32, {1}).strings(), InternalError);
}

TEST(TensorMetadata, PrintsLikePolygraphy) {
    TensorMetadata metadata;
    metadata.add("x", DataType::kFloat32, to_dyn_shape({1, 1, 2, 2}));
    EXPECT_EQ(metadata.to_string(), "{x [dtype=float32, shape=(1, 1, 2, 2)]}");
    metadata.add("ids", DataType::kInt64, DynShape{Dim::named("batch"), Dim::unknown()});
    EXPECT_EQ(metadata.to_string(), "{x [dtype=float32, shape=(1, 1, 2, 2)],\n ids [dtype=int64, shape=('batch', -1)]}");
    TensorMetadata partial;
    partial.add("z", std::nullopt, to_dyn_shape({2, 5}));
    EXPECT_EQ(partial.to_string(), "{z [shape=(2, 5)]}");
    EXPECT_EQ(shape_to_string({4}), "(4,)");
    EXPECT_EQ(shape_to_string({}), "()");
    EXPECT_TRUE(shape_matches({5, 3}, DynShape{Dim::named("n"), Dim::fixed(3)}));
    EXPECT_FALSE(shape_matches({5, 4}, DynShape{Dim::named("n"), Dim::fixed(3)}));
    EXPECT_FALSE(shape_matches({5}, DynShape{Dim::named("n"), Dim::fixed(3)}));
}

}  // namespace
}  // namespace polygraphy
