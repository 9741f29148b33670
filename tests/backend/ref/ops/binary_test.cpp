// Binary and variadic operators with broadcasting, and Where (src/backend/ref/ops/binary.cpp).
// Expected values carry the numpy expression.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "backend/ref/ops/families.h"
#include "op_test_util.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

TEST(BinaryOps, BinaryBroadcasting) {
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

// Rows of one operand repeated over a full one ([N, C/8, H, W, 8] * [N, C/8, 1, 1, 8] in the blocked
// layout) take a shorter loop than other broadcasts; each case is checked element by element,
// in both operand orders (Sub), with rows of 8, of another length, too long for that loop, and of
// one value per row of the full operand (RMSNorm's scale, which the general loop takes).
TEST(BinaryOps, RepeatedRowsBroadcastElementByElement) {
    struct Case {
        Shape full, repeated;
    };
    for (const Case& c : {Case{{2, 3, 4, 8}, {2, 3, 1, 8}}, Case{{2, 3, 5, 8}, {2, 1, 1, 8}},
                          Case{{2, 5, 3}, {2, 1, 3}}, Case{{4, 6, 3}, {6, 3}}, Case{{3, 4, 70}, {3, 1, 70}},
                          Case{{1, 6, 40}, {1, 6, 1}}}) {
        const Tensor full = testing::iota(DataType::kFloat32, c.full);
        const Tensor repeated = testing::iota(DataType::kFloat32, c.repeated);
        for (bool full_first : {true, false}) {
            const Tensor out = full_first ? OpTester("Sub").input(full).input(repeated).run()
                                          : OpTester("Sub").input(repeated).input(full).run();
            ASSERT_EQ(out.shape(), c.full);
            for (int64_t i = 0; i < out.numel(); ++i) {
                // The repeated operand's element: the full index with the broadcast dims set to 0.
                const std::vector<int64_t> index = unravel(i, c.full);
                const std::size_t offset = c.full.size() - c.repeated.size();
                int64_t r = 0;
                for (std::size_t d = 0; d < c.repeated.size(); ++d)
                    r = r * c.repeated[d] + (c.repeated[d] == 1 ? 0 : index[offset + d]);
                const double expected = full_first ? double(i) - double(r) : double(r) - double(i);
                ASSERT_EQ(out.data_as<float>()[i], expected) << shape_to_string(c.full) << " at " << i;
            }
        }
    }
}

// An input the session donates (its last reader, nobody else holding the buffer) may become the
// output: the kernel then writes into it, and must read every element before writing it.
struct DonationCase {
    Tensor a, b;
    std::vector<bool> donatable;
};
Tensor run_donated(const std::string& op_type, DonationCase& c) {
    static const ref::OpRegistry registry = [] {
        ref::OpRegistry r;
        ref::register_binary_ops(r);
        return r;
    }();
    onnx::NodeProto proto;
    proto.set_op_type(op_type);
    proto.add_input("a");
    proto.add_input("b");
    proto.add_output("y");
    const ref::NodeInfo info(proto, 17, "node");
    const auto kernel = registry.find("", op_type, 17)->factory(info);
    ref::KernelContext context(info, {&c.a, &c.b}, 1, 2);
    context.attach_donatable(&c.donatable);
    kernel->compute(context);
    return context.output(0);
}

TEST(BinaryOps, ADonatedInputBecomesTheOutputOnlyWhenItCan) {
    const Tensor full = testing::iota(DataType::kFloat32, {2, 3, 4, 8});
    const Tensor rows = testing::iota(DataType::kFloat32, {2, 3, 1, 8});
    auto expected = [&](bool full_first) {
        return full_first ? OpTester("Sub").input(full).input(rows).run()
                          : OpTester("Sub").input(rows).input(full).run();
    };
    for (bool full_first : {true, false}) {
        // The full operand, donated: the result is written into it (the repeated-rows loop).
        DonationCase c{full.clone(), rows.clone(), {true, true}};
        if (!full_first) std::swap(c.a, c.b);
        Tensor& donated = full_first ? c.a : c.b;
        const void* buffer = donated.data();
        const Tensor y = run_donated("Sub", c);
        EXPECT_EQ(y.data(), buffer) << full_first;
        EXPECT_TRUE(y.equals(expected(full_first))) << full_first;
    }
    {
        // Another holder of the buffer (a Reshape's view, a kept result): not donated.
        DonationCase c{full.clone(), rows.clone(), {true, false}};
        const Tensor view = c.a.reshaped({6, 32});
        const Tensor before = c.a.clone();
        const Tensor y = run_donated("Sub", c);
        EXPECT_NE(y.data(), c.a.data());
        EXPECT_TRUE(c.a.equals(before));
        EXPECT_TRUE(y.equals(expected(true)));
    }
    {
        // Not the node's to give (read later in the graph), or smaller than the output: not donated.
        DonationCase c{full.clone(), rows.clone(), {false, true}};
        const Tensor before_a = c.a.clone(), before_b = c.b.clone();
        const Tensor y = run_donated("Sub", c);
        EXPECT_TRUE(c.a.equals(before_a));
        EXPECT_TRUE(c.b.equals(before_b));
        EXPECT_TRUE(y.equals(expected(true)));
    }
    {
        // Same shapes, the general loop, an integer type.
        const Tensor x = testing::iota(DataType::kInt64, {3, 70});
        DonationCase c{x.clone(), x.clone(), {false, true}};
        const void* buffer = c.b.data();
        const Tensor y = run_donated("Mul", c);
        EXPECT_EQ(y.data(), buffer);
        for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data_as<int64_t>()[i], i * i);
    }
}

// In a graph: an intermediate read by two nodes is given to neither but the last; graph outputs and
// the caller's inputs are never written.
TEST(BinaryOps, DonationInAGraphKeepsEveryValueThatIsReadAgain) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4, 64});
    builder.initializer("c", testing::iota(DataType::kFloat32, {64}));
    builder.node("Relu", {"x"}, {"r"});
    builder.node("Add", {"r", "c"}, {"s"});  // r is read again below: not donated
    builder.node("Mul", {"s", "r"}, {"m"});  // s is a graph output: not donated; r's last read
    builder.node("Sub", {"m", "x"}, {"y"});  // m donated; x is the caller's
    builder.output("s", DataType::kFloat32, Shape{4, 64});
    builder.output("y", DataType::kFloat32, Shape{4, 64});
    Tensor x = testing::iota(DataType::kFloat32, {4, 64});
    for (int64_t i = 0; i < x.numel(); i += 3) x.data_as<float>()[i] *= -1.0f;
    const Tensor x_before = x.clone();
    ref::Session session(*builder.build(), ref::SessionOptions{2});
    for (int run = 0; run < 3; ++run) {
        const TensorMap result = session.run({{"x", x}});
        EXPECT_TRUE(x.equals(x_before));
        for (int64_t i = 0; i < x.numel(); ++i) {
            const float xi = x.data_as<float>()[i], r = std::max(xi, 0.0f), s = r + static_cast<float>(i % 64);
            ASSERT_EQ(result.at("s").data_as<float>()[i], s) << i;
            ASSERT_EQ(result.at("y").data_as<float>()[i], s * r - xi) << i;
        }
    }
}

TEST(BinaryOps, MismatchedShapesAreReported) {
    EXPECT_THROW_MESSAGE(
        OpTester("Add").input(f32({2, 3}, {1, 2, 3, 4, 5, 6})).input(f32({2}, {1, 2})).run(), ModelError,
        "Node 'node' (Add): cannot broadcast shapes (2, 3) and (2,) together (dimension 1 differs: 3 vs 2)");
    EXPECT_THROW_MESSAGE(OpTester("Add").input(f32({1}, {1})).input(i64({1}, {1})).run(), ModelError,
                         "inputs must have the same data type, but they are float32 and int64");
}

TEST(BinaryOps, ZeroSizeTensors) {
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

TEST(BinaryOps, LegacyBroadcastAttributes) {
    // Opset 6: B of shape (3,) aligned with axis 1 of A (2, 3, 2): B[None, :, None]
    const Tensor a = testing::iota(DataType::kFloat32, {2, 3, 2});
    const Tensor out =
        OpTester("Add", 6).input(a).input(f32({3}, {100, 200, 300})).attr("broadcast", 1).attr("axis", 1).run();
    EXPECT_TRUE(tensors_near(out, f32({2, 3, 2}, {100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311})));
    EXPECT_THROW_MESSAGE(
        OpTester("Add", 6).input(a).input(f32({3}, {1, 2, 3})).attr("broadcast", 1).attr("axis", 3).run(), ModelError,
        "attribute 'axis' (3) cannot align B of shape (3,) with A of shape (2, 3, 2)");
}

TEST(BinaryOps, IntegerDivisionAndModulo) {
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

TEST(BinaryOps, PowWithMixedTypes) {
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

/// Pow(values, exponent) with one exponent value (the kernel's fast path), as doubles.
template <typename T>
std::vector<double> pow_by_scalar(const std::vector<T>& values, double exponent, Shape exponent_shape = {}) {
    const DataType dtype = std::is_same_v<T, float> ? DataType::kFloat32 : DataType::kFloat64;
    const std::vector<double> as_doubles(values.begin(), values.end());
    const Tensor y = OpTester("Pow")
                         .input(make(dtype, {static_cast<int64_t>(values.size())}, as_doubles))
                         .input(make(dtype, std::move(exponent_shape), {exponent}))
                         .run();
    EXPECT_EQ(y.dtype(), dtype);
    return values_of(y);
}

template <typename T>
void expect_pow_by_constant_matches_std_pow() {
    using Limits = std::numeric_limits<T>;
    const std::vector<T> special = {Limits::quiet_NaN(),
                                    Limits::infinity(),
                                    -Limits::infinity(),
                                    T(0),
                                    -T(0),
                                    Limits::denorm_min(),
                                    -Limits::denorm_min(),
                                    Limits::min() / T(3),
                                    Limits::min(),
                                    Limits::epsilon(),
                                    T(1.5),
                                    T(-3),
                                    T(4),
                                    std::sqrt(Limits::max()) * T(1.5),
                                    Limits::max(),
                                    -Limits::max()};
    for (const double exponent : {2.0, 1.0, 0.5}) {
        // A rank-2 exponent broadcasts the output to (1, n): the same elements in the same order.
        for (const Shape& exponent_shape : {Shape{}, Shape{1, 1}}) {
            const std::vector<double> y = pow_by_scalar(special, exponent, exponent_shape);
            ASSERT_EQ(y.size(), special.size());
            for (std::size_t i = 0; i < special.size(); ++i) {
                const T expected = std::pow(special[i], static_cast<T>(exponent));
                const T actual = static_cast<T>(y[i]);
                if (std::isnan(expected)) {
                    EXPECT_TRUE(std::isnan(actual)) << special[i] << " ** " << exponent;
                } else {
                    EXPECT_EQ(actual, expected) << special[i] << " ** " << exponent;
                    EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << special[i] << " ** " << exponent;
                }
            }
        }
    }
}

TEST(BinaryOps, PowByTwoOneAndHalfMatchesStdPowOnSpecialValues) {
    // NaN, infinities, signed zeros, denormals (whose squares underflow), overflowing squares, and
    // pow(-0, 0.5) = +0, pow(-inf, 0.5) = +inf where sqrt gives -0 and NaN.
    expect_pow_by_constant_matches_std_pow<float>();
    expect_pow_by_constant_matches_std_pow<double>();
}

/// 20000 values with random mantissas and binary exponents drawn from [low, high) (a fixed seed).
template <typename T>
std::vector<T> random_with_exponents(int low, int high) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<T> mantissa(T(1), T(2));
    std::uniform_int_distribution<int> exponent(low, high - 1);
    std::vector<T> values(20000);
    for (T& value : values) value = std::ldexp(mantissa(rng), exponent(rng));
    return values;
}

TEST(BinaryOps, PowByTwoIsTheCorrectlyRoundedSquare) {
    // glibc's powf and pow are within 0.52 ulp, so they are one ulp off on these squares; x * x (as
    // ONNX Runtime and numpy compute it) is correctly rounded: 0x1.002p-64 ** 2 is a tie between two
    // denormals, which rounds to the even 0x1.004p-128.
    EXPECT_EQ(pow_by_scalar<float>({0x1.002p-64f}, 2)[0], 0x1.004p-128);
    EXPECT_EQ(pow_by_scalar<double>({-0x1.66cb116c5f0a9p-267}, 2)[0], 0x1.f6dc95cfbcdfep-534);

    // float32: the product of two floats is exact in double, so rounding it once is the reference.
    const std::vector<float> floats = random_with_exponents<float>(-80, 80);
    const std::vector<double> float_squares = pow_by_scalar(floats, 2);
    for (std::size_t i = 0; i < floats.size(); ++i)
        ASSERT_EQ(float_squares[i], static_cast<float>(static_cast<double>(floats[i]) * floats[i])) << floats[i];

    // float64: the rounding error of a normal square, fma(x, x, -r), is exact and at most half an ulp.
    const std::vector<double> doubles = random_with_exponents<double>(-300, 300);
    const std::vector<double> double_squares = pow_by_scalar(doubles, 2);
    for (std::size_t i = 0; i < doubles.size(); ++i) {
        const double r = double_squares[i];
        const double half_ulp = (std::nextafter(r, INFINITY) - r) / 2;
        ASSERT_LE(std::abs(std::fma(doubles[i], doubles[i], -r)), half_ulp) << doubles[i];
    }
}

TEST(BinaryOps, ComparisonsAndLogic) {
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

TEST(BinaryOps, BitShift) {
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

TEST(BinaryOps, BitwiseBroadcasts) {
    // np.bitwise_and(np.int32([[12], [10]]), np.int32([6, 3])) = [[4, 0], [2, 2]]
    EXPECT_TRUE(tensors_near(OpTester("BitwiseAnd", 18).input(i32({2, 1}, {12, 10})).input(i32({2}, {6, 3})).run(),
                             i32({2, 2}, {4, 0, 2, 2})));
    // np.bitwise_xor(12, 10) = 6, np.bitwise_or(12, 10) = 14
    EXPECT_TRUE(
        tensors_near(OpTester("BitwiseXor", 18).input(i64({1}, {12})).input(i64({1}, {10})).run(), i64({1}, {6})));
    EXPECT_TRUE(
        tensors_near(OpTester("BitwiseOr", 18).input(i64({1}, {12})).input(i64({1}, {10})).run(), i64({1}, {14})));
    EXPECT_THROW_MESSAGE(OpTester("BitwiseAnd", 18).input(f32({1}, {1})).input(f32({1}, {1})).run(), UnsupportedError,
                         "float32 is not supported");
}

TEST(BinaryOps, VariadicMaxMinSumMean) {
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

TEST(BinaryOps, Where) {
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

}  // namespace
}  // namespace polygraphy::testing
