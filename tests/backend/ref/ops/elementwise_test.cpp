// Elementwise operators (src/backend/ref/ops/elementwise.cpp). Expected values carry the numpy
// expression that produces them.
#include <cmath>
#include <limits>

#include "../ref_test_util.h"
#include "polygraphy/common/float16.h"
#include "test_helpers.h"

namespace polygraphy::ref {
namespace {

using testing::boolean;
using testing::f32;
using testing::f64;
using testing::i32;
using testing::i64;
using testing::make;
using testing::OpTester;
using testing::strings;
using testing::tensors_near;

using polygraphy::testing::kInf;
using polygraphy::testing::kNaN;

Tensor unary(const std::string& op, const Tensor& x, int64_t opset = 17) {
    return OpTester(op, opset).input(x).run();
}

TEST(ElementwiseTest, UnaryMath) {
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

TEST(ElementwiseTest, Activations) {
    const Tensor x = f32({5}, {-2, -0.5, 0, 0.5, 2});
    // np.maximum(x, 0)
    EXPECT_TRUE(tensors_near(unary("Relu", x), f32({5}, {0, 0, 0, 0.5, 2})));
    // 1 / (1 + np.exp(-x))
    EXPECT_TRUE(tensors_near(unary("Sigmoid", x), f32({5}, {0.11920292, 0.37754067, 0.5, 0.62245933, 0.88079708})));
    // np.where(x < 0, 0.1 * x, x)
    EXPECT_TRUE(
        tensors_near(OpTester("LeakyRelu").input(x).attr("alpha", 0.1).run(), f32({5}, {-0.2, -0.05, 0, 0.5, 2})));
    // default alpha 0.01
    EXPECT_TRUE(tensors_near(unary("LeakyRelu", x), f32({5}, {-0.02, -0.005, 0, 0.5, 2})));
    // np.where(x < 0, 2 * (np.exp(x) - 1), x)
    EXPECT_TRUE(
        tensors_near(OpTester("Elu").input(x).attr("alpha", 2.0).run(), f32({5}, {-1.7293294, -0.7869387, 0, 0.5, 2})));
    // np.where(x > 0, 1.0507 * x, 1.0507 * 1.67326 * (np.exp(x) - 1))
    EXPECT_TRUE(tensors_near(unary("Selu", x), f32({5}, {-1.5201665, -0.69175816, 0, 0.52535051, 2.101402}), 1e-5));
    // np.clip(0.2 * x + 0.5, 0, 1)
    EXPECT_TRUE(tensors_near(unary("HardSigmoid", f32({4}, {-3, -1, 1, 3})), f32({4}, {0, 0.3, 0.7, 1})));
    // x * np.clip(x / 6 + 0.5, 0, 1)
    EXPECT_TRUE(tensors_near(unary("HardSwish", f32({4}, {-4, -1, 1, 4})), f32({4}, {0, -0.33333334, 0.6666667, 4})));
    // np.log1p(np.exp(x)), stable for large x
    EXPECT_TRUE(
        tensors_near(unary("Softplus", f32({4}, {-2, 0, 2, 100})), f32({4}, {0.12692805, 0.69314718, 2.126928, 100})));
    // x / (1 + np.abs(x))
    EXPECT_TRUE(tensors_near(unary("Softsign", f32({3}, {-3, 0, 1})), f32({3}, {-0.75, 0, 0.5})));
    // Sigmoid does not overflow for very negative inputs
    EXPECT_TRUE(tensors_near(unary("Sigmoid", f32({2}, {-1000, 1000})), f32({2}, {0, 1})));
    // NaN propagates through Relu (np.maximum(nan, 0) is nan)
    EXPECT_TRUE(tensors_near(unary("Relu", f32({1}, {kNaN})), f32({1}, {kNaN})));
}

TEST(ElementwiseTest, IntegerUnaryWrapsLikeNumpy) {
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

TEST(ElementwiseTest, HalfTypesComputeInFloatAndRoundOnce) {
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

TEST(ElementwiseTest, UnsupportedDtypesAreNamed) {
    EXPECT_THROW_MESSAGE(unary("Sqrt", i32({1}, {4})), UnsupportedError,
                         "Node 'node' (Sqrt): input data type int32 is not supported");
    EXPECT_THROW_MESSAGE(unary("Not", f32({1}, {1})), UnsupportedError, "input data type float32 is not supported");
    EXPECT_THROW_MESSAGE(OpTester("Add").input(strings({1}, {"a"})).input(strings({1}, {"b"})).run(), UnsupportedError,
                         "input data type string is not supported");
}

TEST(ElementwiseTest, BinaryBroadcasting) {
    const Tensor a = testing::iota(DataType::kFloat32, {2, 3});
    // np.arange(6).reshape(2, 3) + [10, 20, 30]
    EXPECT_TRUE(tensors_near(OpTester("Add").input(a).input(f32({3}, {10, 20, 30})).run(),
                             f32({2, 3}, {10, 21, 32, 13, 24, 35})));
    // np.array([[1], [2]]) * np.array([[1, 2, 3]])
    EXPECT_TRUE(tensors_near(OpTester("Mul").input(f32({2, 1}, {1, 2})).input(f32({1, 3}, {1, 2, 3})).run(),
                             f32({2, 3}, {1, 2, 3, 2, 4, 6})));
    // scalar - tensor
    EXPECT_TRUE(tensors_near(OpTester("Sub").input(f32({}, {1})).input(a).run(), f32({2, 3}, {1, 0, -1, -2, -3, -4})));
    // np.arange(6).reshape(2, 3) / 2
    EXPECT_TRUE(
        tensors_near(OpTester("Div").input(a).constant(f32({}, {2})).run(), f32({2, 3}, {0, 0.5, 1, 1.5, 2, 2.5})));
    // (2, 1, 3) vs (4, 1): numpy broadcasts to (2, 4, 3)
    const Tensor out =
        OpTester("Add").input(testing::iota(DataType::kInt64, {2, 1, 3})).input(i64({4, 1}, {0, 10, 20, 30})).run();
    EXPECT_EQ(out.shape(), (Shape{2, 4, 3}));
    EXPECT_EQ(out.data_as<int64_t>()[23], 35);  // [1, 3, 2] = 5 + 30
}

TEST(ElementwiseTest, MismatchedShapesAreReported) {
    EXPECT_THROW_MESSAGE(
        OpTester("Add").input(f32({2, 3}, {1, 2, 3, 4, 5, 6})).input(f32({2}, {1, 2})).run(), ModelError,
        "Node 'node' (Add): cannot broadcast shapes (2, 3) and (2,) together (dimension 1 differs: 3 vs 2)");
    EXPECT_THROW_MESSAGE(OpTester("Add").input(f32({1}, {1})).input(i64({1}, {1})).run(), ModelError,
                         "inputs must have the same data type, but they are float32 and int64");
}

TEST(ElementwiseTest, ZeroSizeTensors) {
    // np.zeros((0, 3)) + [1, 2, 3] has shape (0, 3); (0,) + (1,) is (0,)
    const Tensor out = OpTester("Add").input(f32({0, 3}, {})).input(f32({3}, {1, 2, 3})).run();
    EXPECT_EQ(out.shape(), (Shape{0, 3}));
    EXPECT_EQ(OpTester("Mul").input(f32({0}, {})).input(f32({1}, {2})).run().shape(), (Shape{0}));
    EXPECT_EQ(unary("Relu", f32({0, 2}, {})).shape(), (Shape{0, 2}));
    EXPECT_EQ(OpTester("Where").input(boolean({0}, {})).input(f32({1}, {1})).input(f32({1}, {2})).run().shape(),
              (Shape{0}));
    EXPECT_EQ(OpTester("Sum").input(f32({0, 1}, {})).input(f32({1, 4}, {1, 2, 3, 4})).run().shape(), (Shape{0, 4}));
    EXPECT_EQ(OpTester("Cast").input(f32({0}, {})).attr("to", int64_t{7}).run().shape(), (Shape{0}));
    // (0,) vs (2,) cannot broadcast
    EXPECT_THROW_MESSAGE(OpTester("Add").input(f32({0}, {})).input(f32({2}, {1, 2})).run(), ModelError,
                         "cannot broadcast shapes (0,) and (2,)");
}

TEST(ElementwiseTest, LegacyBroadcastAttributes) {
    // Opset 6: B of shape (3,) aligned with axis 1 of A (2, 3, 2): B[None, :, None]
    const Tensor a = testing::iota(DataType::kFloat32, {2, 3, 2});
    const Tensor out =
        OpTester("Add", 6).input(a).input(f32({3}, {100, 200, 300})).attr("broadcast", 1).attr("axis", 1).run();
    EXPECT_TRUE(tensors_near(out, f32({2, 3, 2}, {100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311})));
    EXPECT_THROW_MESSAGE(
        OpTester("Add", 6).input(a).input(f32({3}, {1, 2, 3})).attr("broadcast", 1).attr("axis", 3).run(), ModelError,
        "attribute 'axis' (3) cannot align B of shape (3,) with A of shape (2, 3, 2)");
}

TEST(ElementwiseTest, IntegerDivisionAndModulo) {
    // C-style truncation as ONNX Runtime: [7, -7] / 2 -> [3, -3]
    EXPECT_TRUE(tensors_near(OpTester("Div").input(i32({2}, {7, -7})).input(i32({1}, {2})).run(), i32({2}, {3, -3})));
    // INT_MIN / -1 wraps instead of trapping
    const double int64_min = static_cast<double>(std::numeric_limits<int64_t>::min());
    EXPECT_TRUE(
        tensors_near(OpTester("Div").input(i64({1}, {int64_min})).input(i64({1}, {-1})).run(), i64({1}, {int64_min})));
    EXPECT_THROW_MESSAGE(OpTester("Div").input(i32({2}, {1, 2})).input(i32({2}, {1, 0})).run(), ModelError,
                         "Node 'node' (Div): integer division by zero");
    // np.mod([-7, 7], [3, -3]) == [2, -2]; np.fmod(...) == [-1, 1]
    EXPECT_TRUE(
        tensors_near(OpTester("Mod").input(i64({2}, {-7, 7})).input(i64({2}, {3, -3})).run(), i64({2}, {2, -2})));
    EXPECT_TRUE(tensors_near(OpTester("Mod").input(i64({2}, {-7, 7})).input(i64({2}, {3, -3})).attr("fmod", 1).run(),
                             i64({2}, {-1, 1})));
    // np.fmod(-7.5, 2) == -1.5
    EXPECT_TRUE(tensors_near(OpTester("Mod").input(f32({1}, {-7.5})).input(f32({1}, {2})).attr("fmod", 1).run(),
                             f32({1}, {-1.5})));
    EXPECT_THROW_MESSAGE(OpTester("Mod").input(i32({1}, {1})).input(i32({1}, {0})).run(), ModelError,
                         "integer division by zero");
    // Integer overflow wraps: np.int32(2**31 - 1) + 1
    EXPECT_TRUE(tensors_near(OpTester("Add").input(i32({1}, {2147483647})).input(i32({1}, {1})).run(),
                             i32({1}, {-2147483648.0})));
}

TEST(ElementwiseTest, PowWithMixedTypes) {
    // np.power([2., 9.], [3., 0.5])
    EXPECT_TRUE(
        tensors_near(OpTester("Pow").input(f32({2}, {2, 9})).input(f32({2}, {3, 0.5})).run(), f32({2}, {8, 3})));
    // float base, int64 exponent: [2., 0.5] ** [3, -1]
    EXPECT_TRUE(
        tensors_near(OpTester("Pow", 15).input(f32({2}, {2, 0.5})).input(i64({2}, {3, -1})).run(), f32({2}, {8, 2})));
    // int base, float exponent: int(2 ** 0.5), 3 ** 2
    EXPECT_TRUE(
        tensors_near(OpTester("Pow", 15).input(i32({2}, {2, 3})).input(f32({2}, {0.5, 2})).run(), i32({2}, {1, 9})));
    // int ** int with broadcasting: 3 ** [0, 1, 4]
    EXPECT_TRUE(
        tensors_near(OpTester("Pow").input(i64({}, {3})).input(i32({3}, {0, 1, 4})).run(), i64({3}, {1, 3, 81})));
    // before opset 12 the types must agree
    EXPECT_THROW_MESSAGE(OpTester("Pow", 7).input(f32({1}, {2})).input(i64({1}, {2})).run(), ModelError,
                         "base and exponent must have the same data type");
}

TEST(ElementwiseTest, ComparisonsAndLogic) {
    const Tensor a = f32({4}, {1, 2, 3, kNaN});
    const Tensor b = f32({1}, {2});
    // a == 2, a < 2, a > 2, a <= 2, a >= 2 (NaN compares false)
    EXPECT_TRUE(tensors_near(OpTester("Equal").input(a).input(b).run(), boolean({4}, {0, 1, 0, 0})));
    EXPECT_TRUE(tensors_near(OpTester("Less").input(a).input(b).run(), boolean({4}, {1, 0, 0, 0})));
    EXPECT_TRUE(tensors_near(OpTester("Greater").input(a).input(b).run(), boolean({4}, {0, 0, 1, 0})));
    EXPECT_TRUE(tensors_near(OpTester("LessOrEqual").input(a).input(b).run(), boolean({4}, {1, 1, 0, 0})));
    EXPECT_TRUE(tensors_near(OpTester("GreaterOrEqual").input(a).input(b).run(), boolean({4}, {0, 1, 1, 0})));
    EXPECT_TRUE(tensors_near(OpTester("Equal", 19).input(strings({2}, {"x", "y"})).input(strings({}, {"y"})).run(),
                             boolean({2}, {0, 1})));
    const Tensor p = boolean({4}, {0, 0, 1, 1});
    const Tensor q = boolean({4}, {0, 1, 0, 1});
    EXPECT_TRUE(tensors_near(OpTester("And").input(p).input(q).run(), boolean({4}, {0, 0, 0, 1})));
    EXPECT_TRUE(tensors_near(OpTester("Or").input(p).input(q).run(), boolean({4}, {0, 1, 1, 1})));
    EXPECT_TRUE(tensors_near(OpTester("Xor").input(p).input(q).run(), boolean({4}, {0, 1, 1, 0})));
    EXPECT_TRUE(tensors_near(unary("Not", p), boolean({4}, {1, 1, 0, 0})));
    EXPECT_THROW_MESSAGE(OpTester("And").input(f32({1}, {1})).input(f32({1}, {1})).run(), UnsupportedError,
                         "input data type float32 is not supported");
}

TEST(ElementwiseTest, IsNaNAndIsInf) {
    const Tensor x = f32({4}, {kNaN, kInf, -kInf, 1});
    EXPECT_TRUE(tensors_near(unary("IsNaN", x), boolean({4}, {1, 0, 0, 0})));
    EXPECT_TRUE(tensors_near(unary("IsInf", x), boolean({4}, {0, 1, 1, 0})));
    EXPECT_TRUE(tensors_near(OpTester("IsInf").input(x).attr("detect_negative", 0).run(), boolean({4}, {0, 1, 0, 0})));
}

TEST(ElementwiseTest, VariadicMaxMinSumMean) {
    const Tensor a = f32({2, 1}, {1, 5});
    const Tensor b = f32({3}, {0, 3, 6});
    const Tensor c = f32({}, {2});
    // np.maximum(np.maximum(a, b), c) etc., broadcast to (2, 3)
    EXPECT_TRUE(tensors_near(OpTester("Max").input(a).input(b).input(c).run(), f32({2, 3}, {2, 3, 6, 5, 5, 6})));
    EXPECT_TRUE(tensors_near(OpTester("Min").input(a).input(b).input(c).run(), f32({2, 3}, {0, 1, 1, 0, 2, 2})));
    EXPECT_TRUE(tensors_near(OpTester("Sum").input(a).input(b).input(c).run(), f32({2, 3}, {3, 6, 9, 7, 10, 13})));
    EXPECT_TRUE(tensors_near(OpTester("Mean").input(a).input(b).input(c).run(),
                             f32({2, 3}, {1, 2, 3, 7.0 / 3, 10.0 / 3, 13.0 / 3})));
    // single input: a copy
    EXPECT_TRUE(tensors_near(OpTester("Sum").input(b).run(), b));
    // np.maximum propagates NaN
    EXPECT_TRUE(tensors_near(OpTester("Max").input(f32({2}, {kNaN, 1})).input(f32({2}, {1, kNaN})).run(),
                             f32({2}, {kNaN, kNaN})));
    EXPECT_TRUE(
        tensors_near(OpTester("Max", 13).input(i64({2}, {1, 9})).input(i64({2}, {4, 2})).run(), i64({2}, {4, 9})));
    EXPECT_THROW_MESSAGE(OpTester("Mean").input(i64({1}, {1})).run(), UnsupportedError, "int64 is not supported");
}

TEST(ElementwiseTest, Where) {
    // np.where([[True], [False]], [1, 2], 0)
    EXPECT_TRUE(
        tensors_near(OpTester("Where").input(boolean({2, 1}, {1, 0})).input(f32({2}, {1, 2})).input(f32({}, {0})).run(),
                     f32({2, 2}, {1, 2, 0, 0})));
    EXPECT_TRUE(tensors_near(
        OpTester("Where").input(boolean({2}, {0, 1})).input(strings({2}, {"a", "b"})).input(strings({}, {"z"})).run(),
        strings({2}, {"z", "b"})));
    EXPECT_THROW_MESSAGE(OpTester("Where").input(f32({1}, {1})).input(f32({1}, {1})).input(f32({1}, {1})).run(),
                         ModelError, "condition must be a bool tensor, but it is float32");
}

TEST(ElementwiseTest, ClipByOpset) {
    const Tensor x = f32({5}, {-5, -1, 0, 1, kNaN});
    // Opset 6: attributes. np.clip(x, -1.5, 0.5)
    EXPECT_TRUE(tensors_near(OpTester("Clip", 6).input(x).attr("min", -1.5).attr("max", 0.5).run(),
                             f32({5}, {-1.5, -1, 0, 0.5, kNaN})));
    // Opset 6 defaults to the float range: inf is clipped to FLT_MAX
    EXPECT_TRUE(
        tensors_near(OpTester("Clip", 6).input(f32({1}, {kInf})).run(), f32({1}, {std::numeric_limits<float>::max()})));
    // Opset 11+: inputs; only max given
    EXPECT_TRUE(tensors_near(OpTester("Clip", 13).input(x).omit().constant(f32({}, {0})).run(),
                             f32({5}, {-5, -1, 0, 0, kNaN})));
    // min > max: everything becomes max
    EXPECT_TRUE(tensors_near(
        OpTester("Clip", 13).input(f32({2}, {-1, 5})).input(f32({}, {2})).input(f32({}, {1})).run(), f32({2}, {1, 1})));
    // integers from opset 12
    EXPECT_TRUE(
        tensors_near(OpTester("Clip", 12).input(i32({3}, {-9, 3, 9})).input(i32({}, {0})).input(i32({}, {5})).run(),
                     i32({3}, {0, 3, 5})));
    EXPECT_THROW_MESSAGE(OpTester("Clip", 13).input(x).input(f32({2}, {0, 1})).run(), ModelError,
                         "Node 'node' (Clip): min must be a scalar, but it has shape (2,)");
}

TEST(ElementwiseTest, CastBetweenNumbersBoolsHalvesAndStrings) {
    // np.array([1.7, -1.7, 0]).astype(np.int32) truncates
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(f32({3}, {1.7, -1.7, 0})).attr("to", int64_t{6}).run(),
                             i32({3}, {1, -1, 0})));
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(f32({3}, {1.7, 0, -2})).attr("to", int64_t{9}).run(),
                             boolean({3}, {1, 0, 1})));
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(i64({2}, {3, 70000})).attr("to", int64_t{10}).run(),
                             make(DataType::kFloat16, {2}, {3, kInf})));
    // Opset 1 names the type.
    EXPECT_TRUE(tensors_near(OpTester("Cast", 1).input(f32({1}, {2.5})).attr("to", "INT64").run(), i64({1}, {2})));
    // Strings: np.array(["1.5", "-inf"]).astype(np.float32), and back
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(strings({2}, {"1.5", "-inf"})).attr("to", int64_t{1}).run(),
                             f32({2}, {1.5, -kInf})));
    EXPECT_TRUE(
        tensors_near(OpTester("Cast").input(strings({1}, {"-42"})).attr("to", int64_t{7}).run(), i64({1}, {-42})));
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(f32({4}, {1.5, 2, kNaN, 0.1})).attr("to", int64_t{8}).run(),
                             strings({4}, {"1.5", "2.0", "nan", "0.1"})));
    EXPECT_TRUE(
        tensors_near(OpTester("Cast").input(i32({1}, {-3})).attr("to", int64_t{8}).run(), strings({1}, {"-3"})));
    EXPECT_THROW_MESSAGE(OpTester("Cast").input(strings({1}, {"abc"})).attr("to", int64_t{1}).run(), ModelError,
                         "Node 'node' (Cast): cannot convert the string 'abc' to float32");
    EXPECT_THROW_MESSAGE(OpTester("Cast").input(f32({1}, {1})).attr("to", int64_t{999}).run(), ModelError,
                         "attribute 'to' has an invalid data type 999");
    EXPECT_THROW_MESSAGE(OpTester("Cast").input(f32({1}, {1})).run(), ModelError, "attribute 'to' is required");
    // CastLike takes the type of its second input.
    EXPECT_TRUE(tensors_near(OpTester("CastLike", 15).input(f32({2}, {1.9, -0.5})).input(i64({0}, {})).run(),
                             i64({2}, {1, 0})));
}

TEST(ElementwiseTest, IdentityAndDropout) {
    const Tensor x = f32({2}, {1, 2});
    EXPECT_TRUE(tensors_near(unary("Identity", x), x));
    // Inference-mode Dropout is the identity; the mask is all true (bool from opset 10)
    const auto out = OpTester("Dropout", 13).input(x).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(out[0], x));
    EXPECT_TRUE(tensors_near(out[1], boolean({2}, {1, 1})));
    const auto old = OpTester("Dropout", 7).input(x).attr("ratio", 0.3).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(old[1], f32({2}, {1, 1})));
    EXPECT_THROW_MESSAGE(OpTester("Dropout", 13).input(x).constant(f32({}, {1.5})).constant(boolean({}, {1})).run(),
                         ModelError, "ratio must be in [0, 1), got 1.5");
    EXPECT_THROW_MESSAGE(OpTester("Dropout", 7).input(x).attr("ratio", 1.5).run(), ModelError,
                         "attribute 'ratio' must be in [0, 1), got 1.5");
}

TEST(ElementwiseTest, TrainingDropoutKeepsAndScalesWhatTheMaskKeeps) {
    const Tensor x = f32({1000}, std::vector<double>(1000, 2.0));
    const auto out = OpTester("Dropout", 13).input(x).constant(f32({}, {0.75})).constant(boolean({}, {1})).outputs(2).run_all();
    ASSERT_EQ(out[1].dtype(), DataType::kBool);
    int64_t kept = 0;
    for (int64_t i = 0; i < 1000; ++i) {
        const bool keep = out[1].data_as<bool>()[i];
        kept += keep;
        EXPECT_EQ(out[0].value_as_double(i), keep ? 8.0 : 0.0);  // 2 / (1 - 0.75)
    }
    EXPECT_NEAR(static_cast<double>(kept), 250.0, 60.0);  // binomial(1000, 0.25): sd 13.7
}

TEST(ElementwiseTest, PRelu) {
    // slope per channel (3, 1, 1) on (1, 3, 1, 2): np.where(x < 0, slope * x, x)
    const Tensor x = f32({1, 3, 1, 2}, {-1, 1, -2, 2, -3, 3});
    EXPECT_TRUE(tensors_near(OpTester("PRelu").input(x).input(f32({3, 1, 1}, {0.1, 0.2, 0.3})).run(),
                             f32({1, 3, 1, 2}, {-0.1, 1, -0.4, 2, -0.9, 3})));
    // Opset 6: a 1-D slope of C values applies to axis 1
    EXPECT_TRUE(tensors_near(OpTester("PRelu", 6).input(x).input(f32({3}, {0.1, 0.2, 0.3})).run(),
                             f32({1, 3, 1, 2}, {-0.1, 1, -0.4, 2, -0.9, 3})));
    EXPECT_THROW_MESSAGE(OpTester("PRelu").input(f32({2}, {1, 2})).input(f32({2, 2}, {1, 2, 3, 4})).run(), ModelError,
                         "slope of shape (2, 2) cannot be broadcast to X of shape (2,)");
}

TEST(ElementwiseTest, BitShift) {
    const Tensor x = make(DataType::kUInt8, {3}, {1, 16, 255});
    const Tensor s = make(DataType::kUInt8, {3}, {1, 2, 9});
    // x << s (uint8 wraps; shifting by >= 8 gives 0), x >> s
    EXPECT_TRUE(tensors_near(OpTester("BitShift").input(x).input(s).attr("direction", "LEFT").run(),
                             make(DataType::kUInt8, {3}, {2, 64, 0})));
    EXPECT_TRUE(tensors_near(OpTester("BitShift").input(x).input(s).attr("direction", "RIGHT").run(),
                             make(DataType::kUInt8, {3}, {0, 4, 0})));
    EXPECT_THROW_MESSAGE(OpTester("BitShift").input(x).input(s).attr("direction", "UP").run(), ModelError,
                         "attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"UP\"");
    EXPECT_THROW_MESSAGE(OpTester("BitShift").input(i32({1}, {1})).input(i32({1}, {1})).attr("direction", "LEFT").run(),
                         UnsupportedError, "int32 is not supported");
}

TEST(ElementwiseTest, QuantizeAndDequantize) {
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

TEST(ElementwiseTest, MeanVarianceAndLpNormalization) {
    // (x - x.mean()) / (x.std() + 1e-9) over axes [0, 2, 3] of (1, 1, 1, 4)
    const Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
    const double sd = std::sqrt(1.25);
    EXPECT_TRUE(tensors_near(unary("MeanVarianceNormalization", x, 13),
                             f32({1, 1, 1, 4}, {-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd}), 1e-5));
    // x / np.linalg.norm(x, axis=-1, keepdims=True); zero rows stay zero
    EXPECT_TRUE(tensors_near(unary("LpNormalization", f32({2, 2}, {3, 4, 0, 0})), f32({2, 2}, {0.6, 0.8, 0, 0})));
    EXPECT_TRUE(
        tensors_near(OpTester("LpNormalization").input(f32({2, 2}, {1, 3, -1, 1})).attr("axis", 0).attr("p", 1).run(),
                     f32({2, 2}, {0.5, 0.75, -0.5, 0.25})));
    EXPECT_THROW_MESSAGE(OpTester("LpNormalization").input(x).attr("p", 3).run(), ModelError,
                         "attribute 'p' must be 1 or 2, got 3");
}

TEST(ElementwiseTest, LargeInputsTakeTheParallelPath) {
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

}  // namespace
}  // namespace polygraphy::ref
