// Unary math operators (src/backend/ref/ops/unary.cpp) and what every elementwise operator shares:
// half types, unsupported dtypes, the parallel path. Expected values carry the numpy expression.
#include <cmath>
#include <limits>

#include "op_test_util.h"
#include "polygraphy/common/float16.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

TEST(UnaryOps, UnaryMath) {
    const Tensor x = f32({5}, {-2, -0.5, 0, 0.5, 2});
    // np.negative, np.abs, np.sign
    EXPECT_TRUE(tensors_near(unary("Neg", x), f32({5}, {2, 0.5, 0, -0.5, -2})));
    EXPECT_TRUE(tensors_near(unary("Abs", x), f32({5}, {2, 0.5, 0, 0.5, 2})));
    EXPECT_TRUE(tensors_near(unary("Sign", x), f32({5}, {-1, -1, 0, 1, 1})));
    // np.floor, np.ceil, np.exp, np.tanh, np.sin, np.cos
    EXPECT_TRUE(tensors_near(unary("Floor", x), f32({5}, {-2, -1, 0, 0, 2})));
    EXPECT_TRUE(tensors_near(unary("Ceil", x), f32({5}, {-2, -0.0, 0, 1, 2})));
    EXPECT_TRUE(tensors_near(unary("Exp", x), f32({5}, {0.13533528, 0.60653066, 1, 1.6487213, 7.3890561})));
    EXPECT_TRUE(tensors_near(unary("Tanh", x), f32({5}, {-0.96402758, -0.46211716, 0, 0.46211716, 0.96402758})));
    EXPECT_TRUE(tensors_near(unary("Sin", x), f32({5}, {-0.90929743, -0.47942554, 0, 0.47942554, 0.90929743})));
    EXPECT_TRUE(tensors_near(unary("Cos", x), f32({5}, {-0.41614684, 0.87758256, 1, 0.87758256, -0.41614684})));
    // scipy.special.erf
    EXPECT_TRUE(tensors_near(unary("Erf", x), f32({5}, {-0.99532227, -0.52049988, 0, 0.52049988, 0.99532227})));
    const Tensor positive = f32({3}, {0.25, 1, 4});
    // np.sqrt, 1 / x, np.log
    EXPECT_TRUE(tensors_near(unary("Sqrt", positive), f32({3}, {0.5, 1, 2})));
    EXPECT_TRUE(tensors_near(unary("Reciprocal", positive), f32({3}, {4, 1, 0.25})));
    EXPECT_TRUE(tensors_near(unary("Log", positive), f32({3}, {-1.3862944, 0, 1.3862944})));
    // np.sqrt(-1) is nan, np.log(0) is -inf
    EXPECT_TRUE(tensors_near(unary("Sqrt", f32({1}, {-1})), f32({1}, {kNaN})));
    EXPECT_TRUE(tensors_near(unary("Log", f32({1}, {0})), f32({1}, {-kInf})));
    // np.round rounds half to even
    EXPECT_TRUE(
        tensors_near(unary("Round", f32({6}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.6})), f32({6}, {0, 2, 2, -0.0, -2, 3})));
}

TEST(UnaryOps, IntegerUnaryWrapsLikeNumpy) {
    const double int32_min = std::numeric_limits<int32_t>::min();
    // np.negative(np.int32(-2**31)) wraps to itself; np.abs likewise
    EXPECT_TRUE(tensors_near(unary("Neg", i32({3}, {int32_min, -5, 7})), i32({3}, {int32_min, 5, -7})));
    EXPECT_TRUE(tensors_near(unary("Abs", make(DataType::kInt8, {3}, {-128, -5, 7})),
                             make(DataType::kInt8, {3}, {-128, 5, 7})));
    EXPECT_TRUE(tensors_near(unary("Sign", i64({3}, {-9, 0, 4})), i64({3}, {-1, 0, 1})));
    EXPECT_TRUE(tensors_near(unary("Relu", i32({3}, {-9, 0, 4}), 14), i32({3}, {0, 0, 4})));
    EXPECT_TRUE(
        tensors_near(unary("Abs", make(DataType::kUInt8, {2}, {0, 200})), make(DataType::kUInt8, {2}, {0, 200})));
}

TEST(UnaryOps, IsNaNAndIsInf) {
    const Tensor x = f32({4}, {kNaN, kInf, -kInf, 1});
    EXPECT_TRUE(tensors_near(unary("IsNaN", x), boolean({4}, {1, 0, 0, 0})));
    EXPECT_TRUE(tensors_near(unary("IsInf", x), boolean({4}, {0, 1, 1, 0})));
    EXPECT_TRUE(tensors_near(OpTester("IsInf").input(x).attr("detect_negative", 0).run(), boolean({4}, {0, 1, 0, 0})));
}

TEST(UnaryOps, HalfTypesComputeInFloatAndRoundOnce) {
    // np.float16(1) + np.float16(0.0001) == 1; 2048 + 1 ties to even (2048)
    const Tensor a = make(DataType::kFloat16, {2}, {1, 2048});
    const Tensor b = make(DataType::kFloat16, {2}, {0.0001, 1});
    EXPECT_TRUE(tensors_near(OpTester("Add").input(a).input(b).run(), make(DataType::kFloat16, {2}, {1, 2048})));
    // bfloat16 relu and exp stay bfloat16
    const Tensor x = make(DataType::kBFloat16, {2}, {-1, 1});
    EXPECT_TRUE(tensors_near(unary("Relu", x), make(DataType::kBFloat16, {2}, {0, 1})));
    const Tensor e = unary("Exp", x);
    EXPECT_EQ(e.dtype(), DataType::kBFloat16);
    EXPECT_EQ(e.data_as<uint16_t>()[1], float_to_bfloat16(std::exp(1.0f)));
    // comparisons of halves give bool
    EXPECT_TRUE(tensors_near(OpTester("Less").input(a).input(b).run(), boolean({2}, {0, 0})));
}

TEST(UnaryOps, UnsupportedDtypesAreNamed) {
    EXPECT_THROW_MESSAGE(unary("Sqrt", i32({1}, {4})), UnsupportedError,
                         "Node 'node' (Sqrt): input data type int32 is not supported");
    EXPECT_THROW_MESSAGE(unary("Not", f32({1}, {1})), UnsupportedError, "input data type float32 is not supported");
    EXPECT_THROW_MESSAGE(OpTester("Add").input(strings({1}, {"a"})).input(strings({1}, {"b"})).run(), UnsupportedError,
                         "input data type string is not supported");
}

TEST(UnaryOps, LargeInputsTakeTheParallelPath) {
    // 100000 elements: above the OpenMP threshold. np.maximum(x, 0) and x * 2 + x
    const Tensor x = polygraphy::testing::random_tensor({100000}, 7);
    const Tensor relu = unary("Relu", x);
    const Tensor sum = OpTester("Add").input(x).input(OpTester("Mul").input(x).input(f32({}, {2})).run()).run();
    for (int64_t i = 0; i < x.numel(); i += 997) {
        const float v = x.data_as<float>()[i];
        ASSERT_EQ(relu.data_as<float>()[i], v < 0 ? 0.0f : v);
        ASSERT_EQ(sum.data_as<float>()[i], v + v * 2.0f);
    }
}

TEST(UnaryOps, BitwiseNot) {
    // ~np.int32([0, 5]) = [-1, -6]
    EXPECT_TRUE(tensors_near(OpTester("BitwiseNot", 18).input(i32({2}, {0, 5})).run(), i32({2}, {-1, -6})));
}

}  // namespace
}  // namespace polygraphy::testing
