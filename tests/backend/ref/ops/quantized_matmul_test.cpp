// com.microsoft.MatMulNBits against ONNX Runtime's CPU kernel and against the dequantized product
// written out here, on weights quantized as ONNX Runtime's quantizer lays them out (nbits_weights.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nbits_weights.h"
#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

using ::testing::HasSubstr;

using ZeroPoints = NBitsZeroPoints;

struct NBitsCase {
    int64_t m = 3, k = 64, n = 24, bits = 4, block_size = 32;
    ZeroPoints zero_points = ZeroPoints::kPacked;
    bool bias = false;
    bool g_idx = false;
    DataType dtype = DataType::kFloat32;
    Shape a_prefix = {};  ///< A's dimensions before M (batch dimensions)
};

NBitsWeights quantize(const Tensor& w, const NBitsCase& c) {
    return quantize_nbits(w, c.bits, c.block_size, c.zero_points);
}

Tensor cast_if(const Tensor& t, DataType dtype) {
    return t.dtype() == dtype ? t : t.cast(dtype);
}

/// The group of k in the cases with g_idx: the blocks in reverse order (a valid, shuffled map).
int64_t group_of(const NBitsCase& c, int64_t k) {
    const int64_t blocks = (c.k + c.block_size - 1) / c.block_size;
    return c.g_idx ? blocks - 1 - k / c.block_size : k / c.block_size;
}

/// A model of one MatMulNBits node for `c`, and its feed (A).
std::pair<ModelBuilder, TensorMap> nbits_model(const NBitsCase& c) {
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    Shape a_shape = c.a_prefix;
    a_shape.push_back(c.m);
    a_shape.push_back(c.k);
    builder.input("a", c.dtype, a_shape);
    const NBitsWeights q = quantize(random_tensor({c.k, c.n}, 7), c);
    builder.initializer("b", q.b);
    builder.initializer("scales", cast_if(q.scales, c.dtype));
    std::vector<std::string> inputs = {"a", "b", "scales"};
    if (q.zero_points.defined()) {
        builder.initializer(
            "zp", q.zero_points.dtype() == DataType::kUInt8 ? q.zero_points : cast_if(q.zero_points, c.dtype));
        inputs.push_back("zp");
    }
    if (c.g_idx) {
        std::vector<double> groups;
        for (int64_t k = 0; k < c.k; ++k) groups.push_back(static_cast<double>(group_of(c, k)));
        inputs.resize(4);  // zero points may be absent
        builder.initializer("g_idx", Tensor::from_doubles(DataType::kInt32, {c.k}, groups));
        inputs.push_back("g_idx");
    }
    if (c.bias) {
        inputs.resize(5);
        builder.initializer("bias", cast_if(random_tensor({c.n}, 9), c.dtype));
        inputs.push_back("bias");
    }
    onnx::NodeProto& node = builder.node("MatMulNBits", inputs, {"y"}, "nbits", "com.microsoft");
    set_attr(node, "K", c.k);
    set_attr(node, "N", c.n);
    set_attr(node, "bits", c.bits);
    set_attr(node, "block_size", c.block_size);
    builder.output("y", c.dtype, Shape{}, false);
    TensorMap feed;
    feed.set("a", cast_if(random_tensor(a_shape, 8, -2.0f, 2.0f), c.dtype));
    return {std::move(builder), std::move(feed)};
}

void expect_nbits_matches_onnxrt(const NBitsCase& c) {
    SCOPED_TRACE(::testing::Message() << "M " << c.m << " K " << c.k << " N " << c.n << " bits " << c.bits << " block "
                                      << c.block_size << " zp " << static_cast<int>(c.zero_points) << " bias " << c.bias
                                      << " g_idx " << c.g_idx << " " << dtype_name(c.dtype));
    auto [builder, feed] = nbits_model(c);
    const double tolerance = c.dtype == DataType::kFloat16 ? 2e-3 : 1e-5;
    expect_matches_onnxrt(builder, feed, tolerance, tolerance * 10);
}

TEST(MatMulNBits, TwoFourAndEightBitsAtEveryBlockSizeMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (int64_t bits : {2, 4, 8})
        for (int64_t block : {16, 32, 64, 128, 256}) {
            NBitsCase c;
            c.bits = bits;
            c.block_size = block;
            c.k = 2 * block + 16;  // a last, partial block
            expect_nbits_matches_onnxrt(c);
        }
}

TEST(MatMulNBits, ZeroPointsBiasAndGroupIndexMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (ZeroPoints zp : {ZeroPoints::kNone, ZeroPoints::kPacked, ZeroPoints::kFloat})
        for (int64_t bits : {4, 8}) {
            // ONNX Runtime 1.30's CPU kernel takes float zero points with 2 and 4 bits only ("Only 2b and 4b
            // quantization is supported for unpacked compute"); BothPathsComputeTheDequantizedProduct covers 8.
            if (zp == ZeroPoints::kFloat && bits == 8) continue;
            NBitsCase c;
            c.bits = bits;
            c.zero_points = zp;
            c.bias = true;
            expect_nbits_matches_onnxrt(c);
        }
}

TEST(MatMulNBits, TallProductsBatchesAndFloat16MatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    // More rows than the direct path takes, and more columns than one slice: the packed path.
    NBitsCase tall;
    tall.m = 37;
    tall.k = 320;
    tall.n = 600;
    tall.bias = true;
    expect_nbits_matches_onnxrt(tall);
    NBitsCase batched;
    batched.a_prefix = {2, 3};
    batched.m = 5;
    expect_nbits_matches_onnxrt(batched);
    NBitsCase half;
    half.dtype = DataType::kFloat16;
    half.m = 9;
    expect_nbits_matches_onnxrt(half);
}

/// A (M x K) times the weights of `c` dequantized as (code - zero point) * scale, plus the bias, in
/// double: the bits, blocks and zero points read here independently of the kernel.
Tensor dequantized_product(const NBitsCase& c, const Tensor& a) {
    const NBitsWeights q = quantize(random_tensor({c.k, c.n}, 7), c);
    const Tensor bias = random_tensor({c.n}, 9);
    const int64_t blocks = (c.k + c.block_size - 1) / c.block_size, blob = c.block_size * c.bits / 8;
    const int mask = (1 << c.bits) - 1;
    Tensor expected(DataType::kFloat32, {c.m, c.n});
    for (int64_t j = 0; j < c.n; ++j) {
        std::vector<double> column(static_cast<std::size_t>(c.k));
        for (int64_t k = 0; k < c.k; ++k) {
            const int64_t block = k / c.block_size, g = group_of(c, k), bit = (k % c.block_size) * c.bits;
            const int code = (q.b.data_as<uint8_t>()[(j * blocks + block) * blob + bit / 8] >> (bit % 8)) & mask;
            double zp = static_cast<double>(1 << (c.bits - 1));
            if (c.zero_points == ZeroPoints::kFloat) zp = q.zero_points.value_as_double(j * blocks + g);
            if (c.zero_points == ZeroPoints::kPacked) {
                const int64_t zp_bit = g * c.bits, zp_row = (blocks * c.bits + 7) / 8;
                zp = (q.zero_points.data_as<uint8_t>()[j * zp_row + zp_bit / 8] >> (zp_bit % 8)) & mask;
            }
            column[static_cast<std::size_t>(k)] = (code - zp) * q.scales.value_as_double(j * blocks + g);
        }
        for (int64_t i = 0; i < c.m; ++i) {
            double sum = c.bias ? bias.value_as_double(j) : 0.0;
            for (int64_t k = 0; k < c.k; ++k)
                sum += a.value_as_double(i * c.k + k) * column[static_cast<std::size_t>(k)];
            expected.data_as<float>()[i * c.n + j] = static_cast<float>(sum);
        }
    }
    return expected;
}

// The kernel's two paths (a few rows: dot products; more: packed tiles) give the product of A with
// the weights dequantized as (code - zero point) * scale, written out here in double.
TEST(MatMulNBits, BothPathsComputeTheDequantizedProduct) {
    for (int64_t m : {1, 4, 5, 40}) {
        for (int64_t bits : {2, 4, 8}) {
            for (ZeroPoints zero_points : {ZeroPoints::kNone, ZeroPoints::kPacked, ZeroPoints::kFloat}) {
                SCOPED_TRACE(::testing::Message()
                             << "M " << m << " bits " << bits << " zero points " << static_cast<int>(zero_points));
                NBitsCase c;
                c.m = m;
                c.bits = bits;
                c.k = 272;
                c.n = 50;
                c.bias = true;
                c.zero_points = zero_points;
                auto [builder, feed] = nbits_model(c);
                const Tensor expected = dequantized_product(c, feed.at("a"));
                const OnnxModel model = builder.build();
                for (int threads : {1, 2}) {
                    ref::SessionOptions options;
                    options.num_threads = threads;
                    EXPECT_TRUE(tensors_near(ref::Session(*model, options).run(feed).at("y"), expected, 1e-4));
                }
            }
        }
    }
}

// g_idx gives each k the scale and zero point of its group, as the operator defines it. (ONNX Runtime
// 1.30's CPU kernel gives another product once g_idx is present, even for the map k -> k / block_size,
// which must equal the product without g_idx: README, "The built-in runtime".)
TEST(MatMulNBits, AGroupIndexTakesEachKsScaleAndZeroPointFromItsGroup) {
    for (int64_t m : {2, 9}) {
        for (ZeroPoints zero_points : {ZeroPoints::kPacked, ZeroPoints::kFloat}) {
            NBitsCase c;
            c.m = m;
            c.k = 96;
            c.g_idx = true;
            c.zero_points = zero_points;
            auto [builder, feed] = nbits_model(c);
            EXPECT_TRUE(tensors_near(ref::Session(*builder.build()).run(feed).at("y"),
                                     dequantized_product(c, feed.at("a")), 1e-4));
        }
    }
    // The map of every k to its own block gives exactly the product without g_idx.
    NBitsCase plain;
    plain.m = 9;
    auto [builder, feed] = nbits_model(plain);
    const Tensor expected = ref::Session(*builder.build()).run(feed).at("y");
    std::vector<double> own_blocks;
    for (int64_t k = 0; k < plain.k; ++k) own_blocks.push_back(static_cast<double>(k / plain.block_size));
    builder.initializer("g_idx", Tensor::from_doubles(DataType::kInt32, {plain.k}, own_blocks));
    onnx::NodeProto& node = *builder.proto().mutable_graph()->mutable_node(0);
    node.add_input("g_idx");
    const Tensor y = ref::Session(*builder.build()).run(feed).at("y");
    ASSERT_EQ(y.numel(), expected.numel());
    EXPECT_EQ(std::memcmp(y.data(), expected.data(), static_cast<std::size_t>(y.numel()) * sizeof(float)), 0);
}

// Constant weights are rearranged once for the tiled product (block_quant::PanelWeights); weights
// that arrive as inputs are dequantized from their own layout. Both give the same bits.
TEST(MatMulNBits, RearrangedConstantWeightsGiveTheBitsOfWeightsFedAsInputs) {
    for (int64_t bits : {2, 4, 8}) {
        for (ZeroPoints zero_points : {ZeroPoints::kNone, ZeroPoints::kPacked, ZeroPoints::kFloat}) {
            SCOPED_TRACE(::testing::Message() << "bits " << bits << " zero points " << static_cast<int>(zero_points));
            NBitsCase c;
            c.m = 20;
            c.k = 300;  // a partial last block
            c.n = 37;   // a partial last panel
            c.bits = bits;
            c.zero_points = zero_points;
            c.bias = true;
            auto [builder, feed] = nbits_model(c);
            const Tensor constant = ref::Session(*builder.build()).run(feed).at("y");
            // The same node with B as a graph input.
            onnx::GraphProto& graph = *builder.proto().mutable_graph();
            for (int i = 0; i < graph.initializer_size(); ++i) {
                if (graph.initializer(i).name() != "b") continue;
                feed.set("b", tensor_from_proto(graph.initializer(i)));
                graph.mutable_initializer()->DeleteSubrange(i, 1);
                break;
            }
            builder.input("b", DataType::kUInt8, feed.at("b").shape());
            const Tensor fed = ref::Session(*builder.build()).run(feed).at("y");
            ASSERT_EQ(fed.numel(), constant.numel());
            EXPECT_EQ(std::memcmp(fed.data(), constant.data(), static_cast<std::size_t>(fed.numel()) * sizeof(float)),
                      0);
        }
    }
}

TEST(MatMulNBits, ResultsDoNotDependOnTheThreadCount) {
    NBitsCase c;
    c.m = 30;
    c.k = 512;
    c.n = 700;
    auto [builder, feed] = nbits_model(c);
    const OnnxModel model = builder.build();
    ref::SessionOptions one, three;
    one.num_threads = 1;
    three.num_threads = 3;
    const Tensor a = ref::Session(*model, one).run(feed).at("y");
    const Tensor b = ref::Session(*model, three).run(feed).at("y");
    ASSERT_EQ(a.numel(), b.numel());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(float)), 0);
}

// ---- bad input: one line each ---------------------------------------------------------------------------

std::string nbits_error(const std::function<void(onnx::NodeProto&, ModelBuilder&)>& edit) {
    NBitsCase c;
    auto [builder, feed] = nbits_model(c);
    edit(*builder.proto().mutable_graph()->mutable_node(0), builder);
    return error_message<PolygraphyException>([&] { ref::Session(*builder.build()).run(feed); });
}

void set_int(onnx::NodeProto& node, const std::string& name, int64_t value) {
    for (auto& attribute : *node.mutable_attribute())
        if (attribute.name() == name) attribute.set_i(value);
}

TEST(MatMulNBits, AttributesOnnxRuntimeRejectsAreOneLine) {
    EXPECT_THAT(nbits_error([](onnx::NodeProto& node, ModelBuilder&) { set_int(node, "bits", 3); }),
                HasSubstr("attribute bits must be 2, 4 or 8, but it is 3"));
    EXPECT_THAT(nbits_error([](onnx::NodeProto& node, ModelBuilder&) { set_int(node, "block_size", 24); }),
                HasSubstr("attribute block_size must be a power of two of at least 16, but it is 24"));
    EXPECT_THAT(nbits_error([](onnx::NodeProto& node, ModelBuilder&) { set_int(node, "N", 0); }),
                HasSubstr("attribute N must be positive, but it is 0"));
    const std::string missing = nbits_error([](onnx::NodeProto& node, ModelBuilder&) {
        node.mutable_attribute()->erase(node.mutable_attribute()->begin());  // K
    });
    EXPECT_THAT(missing, HasSubstr("'K'"));
    EXPECT_EQ(missing.find('\n'), std::string::npos) << missing;
}

TEST(MatMulNBits, APackedWeightThatDoesNotFitItsShapeBitsOrBlockSizeIsOneLine) {
    // The weight of 4-bit blocks of 32 read as 8-bit: its blob is half the size the attributes say.
    const std::string bits = nbits_error([](onnx::NodeProto& node, ModelBuilder&) { set_int(node, "bits", 8); });
    EXPECT_THAT(bits, HasSubstr("input B must be uint8 of shape (24, 2, 32)"));
    EXPECT_THAT(bits, HasSubstr("but it is uint8 of shape (24, 2, 16)"));
    EXPECT_EQ(bits.find('\n'), std::string::npos);
    EXPECT_THAT(nbits_error([](onnx::NodeProto& node, ModelBuilder&) { set_int(node, "block_size", 64); }),
                HasSubstr("input B must be uint8 of shape (24, 1, 32)"));
    EXPECT_THAT(nbits_error([](onnx::NodeProto& node, ModelBuilder&) { set_int(node, "K", 32); }),
                HasSubstr("input A of shape (3, 64) must end in K = 32"));
    EXPECT_THAT(nbits_error([](onnx::NodeProto& node, ModelBuilder&) { set_int(node, "N", 20); }),
                HasSubstr("input B must be uint8 of shape (20, 2, 16)"));
}

}  // namespace
}  // namespace polygraphy::testing

namespace polygraphy::testing {
namespace {

// ---- MatMulIntegerToFloat, DynamicQuantizeMatMul ----------------------------------------------------------

TEST(MatMulIntegerToFloat, PerTensorAndPerColumnQuantizationWithBiasMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (DataType a_type : {DataType::kUInt8, DataType::kInt8}) {
        for (DataType b_type : {DataType::kUInt8, DataType::kInt8}) {
            // ONNX Runtime 1.30 has no CPU kernel for int8 A with uint8 B (the built-in runtime runs it).
            if (a_type == DataType::kInt8 && b_type == DataType::kUInt8) continue;
            for (bool per_column : {false, true}) {
                SCOPED_TRACE(::testing::Message() << dtype_name(a_type) << " x " << dtype_name(b_type)
                                                  << (per_column ? " per column" : " per tensor"));
                ModelBuilder builder(17);
                builder.opset_import("com.microsoft", 1);
                builder.input("a", a_type, Shape{2, 5, 12});
                builder.initializer("b", random_codes(b_type, {12, 6}, 2));
                builder.initializer("a_scale", f32({}, {0.02}));
                builder.initializer("b_scale", per_column ? random_tensor({6}, 3, 0.01f, 0.05f) : f32({}, {0.03}));
                builder.initializer("a_zero", make(a_type, {}, {a_type == DataType::kUInt8 ? 128.0 : -3.0}));
                const Tensor b_zero = random_codes(b_type, {per_column ? 6 : 1}, 4);
                builder.initializer("b_zero", per_column ? b_zero : make(b_type, {}, {b_zero.value_as_double(0)}));
                builder.initializer("bias", random_tensor({6}, 5));
                builder.node("MatMulIntegerToFloat", {"a", "b", "a_scale", "b_scale", "a_zero", "b_zero", "bias"},
                             {"y"}, "q", "com.microsoft");
                builder.output("y", DataType::kFloat32, Shape{}, false);
                TensorMap feed;
                feed.set("a", random_codes(a_type, {2, 5, 12}, 1));
                expect_matches_onnxrt(builder, feed, 1e-6, 1e-6);
            }
        }
    }
}

TEST(DynamicQuantizeMatMul, QuantizesAOverTheWholeTensorAndMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (DataType b_type : {DataType::kUInt8, DataType::kInt8}) {
        for (bool with_optional : {false, true}) {
            SCOPED_TRACE(::testing::Message()
                         << dtype_name(b_type) << (with_optional ? " with zero point and bias" : ""));
            ModelBuilder builder(17);
            builder.opset_import("com.microsoft", 1);
            builder.input("a", DataType::kFloat32, Shape{3, 16});
            builder.initializer("b", random_codes(b_type, {16, 7}, 7));
            builder.initializer("b_scale", random_tensor({7}, 8, 0.01f, 0.05f));
            std::vector<std::string> inputs = {"a", "b", "b_scale"};
            if (with_optional) {
                builder.initializer("b_zero", random_codes(b_type, {7}, 9));
                builder.initializer("bias", random_tensor({7}, 10));
                inputs.insert(inputs.end(), {"b_zero", "bias"});
            }
            builder.node("DynamicQuantizeMatMul", inputs, {"y"}, "q", "com.microsoft");
            builder.output("y", DataType::kFloat32, Shape{}, false);
            TensorMap feed;
            feed.set("a", random_tensor({3, 16}, 6, -3.0f, 2.0f));
            expect_matches_onnxrt(builder, feed, 1e-5, 1e-5);
        }
    }
}

TEST(MatMulIntegerToFloat, AScaleOfTheWrongShapeIsOneLine) {
    const std::string message = error_message<ModelError>([] {
        OpTester("MatMulIntegerToFloat", 17, "com.microsoft")
            .input(random_codes(DataType::kUInt8, {2, 3}, 1))
            .input(random_codes(DataType::kUInt8, {3, 4}, 2))
            .input(f32({}, {0.1}))
            .input(f32({3}, {0.1, 0.2, 0.3}))
            .run();
    });
    EXPECT_THAT(message,
                HasSubstr("input b_scale must be a scalar or hold one value per column (4), but it has shape (3,)"));
}

}  // namespace
}  // namespace polygraphy::testing
