// Activation folding (src/backend/ref/fusion.cpp): which patterns fold into the convolution, which
// must not, and that folded and unfolded sessions compute the same values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/blocked_layout.h"
#include "backend/ref/compute/blocked_conv.h"
#include "backend/ref/fused_attributes.h"
#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::ref {
namespace {

using polygraphy::testing::ModelBuilder;
using polygraphy::testing::random_tensor;
using polygraphy::testing::set_attr;
using Names = std::vector<std::string>;

// x(1,4,8,8) -> Conv 3x3 (8 channels, pads 1) -> "c"; the caller adds what reads c.
ModelBuilder conv_model(int64_t opset = 17) {
    ModelBuilder builder(opset);
    builder.input("x", DataType::kFloat32, Shape{1, 4, 8, 8});
    builder.initializer("w", random_tensor({8, 4, 3, 3}, 1));
    builder.initializer("b", random_tensor({8}, 2));
    set_attr(builder.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
    return builder;
}

Tensor scalar(float value) {
    return Tensor::from_doubles(DataType::kFloat32, {}, {value});
}

// `channel_block`: SessionOptions::max_channel_block (0: the CPU's widest).
SessionOptions with_fusion(bool fuse, int channel_block = 0) {
    SessionOptions options;
    options.num_threads = 1;
    options.fuse_activations = fuse;
    options.max_channel_block = channel_block;
    return options;
}

// Runs the model folded and as written on `feed`; returns the folded session's execution order
// after checking that both give `output` (of any float type) within `tolerance` (0: bit-identical).
// The folded model runs with blocked layouts of at most 8 and of at most 16 channels, whatever this
// CPU's widest block is.
Names expect_same_values_on(const ModelBuilder& builder, const std::string& output, double tolerance,
                            const TensorMap& feed) {
    const OnnxModel model = builder.build();
    const Session written(*model, with_fusion(false));
    const Tensor b0 = written.run(feed).at(output);
    const Tensor b = b0.cast(DataType::kFloat64);
    std::optional<Names> order;
    for (const int block : {8, 16}) {
        const Session folded(*model, with_fusion(true, block));
        const Tensor a0 = folded.run(feed).at(output);
        EXPECT_EQ(a0.dtype(), b0.dtype());
        EXPECT_EQ(a0.shape(), b0.shape());
        const Tensor a = a0.cast(DataType::kFloat64);
        for (int64_t i = 0; i < a.numel(); ++i)
            EXPECT_NEAR(a.data_as<double>()[i], b.data_as<double>()[i], tolerance)
                << output << "[" << i << "], blocks of at most " << block;
        if (order) {
            EXPECT_EQ(folded.execution_order(), *order) << "blocks of at most " << block;
        }
        order = folded.execution_order();
    }
    std::size_t runnable = 0;  // Constant nodes are evaluated while preparing, so they never run
    for (const auto& node : model->graph().node()) runnable += node.op_type() != "Constant";
    EXPECT_EQ(written.execution_order().size(), runnable);
    return *order;
}

// expect_same_values_on() with an input x of `x_shape` only.
Names expect_same_values(const ModelBuilder& builder, const std::string& output, double tolerance = 0.0,
                         const Shape& x_shape = {1, 4, 8, 8}) {
    return expect_same_values_on(builder, output, tolerance, {{"x", random_tensor(x_shape, 3, -2.0f, 2.0f)}});
}

TEST(Fusion, ReluFoldsIntoTheConvolution) {
    ModelBuilder builder = conv_model();
    builder.node("Relu", {"c"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv"}));
}

TEST(Fusion, ClipWithConstantNodeBoundsFoldsAsPyTorchExportsRelu6) {
    ModelBuilder builder = conv_model();
    set_attr(builder.node("Constant", {}, {"lo"}, "lo"), "value", scalar(0.0f));
    set_attr(builder.node("Constant", {}, {"hi"}, "hi"), "value", scalar(0.5f));
    builder.node("Clip", {"c", "lo", "hi"}, {"y"}, "clip");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv"}));
}

TEST(Fusion, ClipWithInitializerBoundsOrAttributesOrNoUpperBoundFolds) {
    {
        ModelBuilder builder = conv_model();
        builder.initializer("lo", scalar(-0.25f));
        builder.node("Clip", {"c", "lo"}, {"y"}, "clip");  // no max: unbounded above
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv"}));
    }
    {
        ModelBuilder builder = conv_model(6);  // Clip-6: bounds are attributes
        auto& clip = builder.node("Clip", {"c"}, {"y"}, "clip");
        set_attr(clip, "min", -0.5f);
        set_attr(clip, "max", 0.75f);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv"}));
    }
}

TEST(Fusion, ClipWhoseBoundsCanBeFedIsNotFolded) {
    ModelBuilder builder = conv_model();
    builder.input("hi", DataType::kFloat32, Shape{});
    builder.initializer("hi", scalar(0.5f));  // an initializer that is also an input: a default only
    builder.node("Clip", {"c", "", "hi"}, {"y"}, "clip");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv", "clip"}));
}

TEST(Fusion, SiluAsSigmoidTimesInputFoldsInEitherOperandOrder) {
    for (bool sigmoid_first : {false, true}) {
        ModelBuilder builder = conv_model();
        builder.node("Sigmoid", {"c"}, {"s"}, "sigmoid");
        builder.node("Mul", sigmoid_first ? Names{"s", "c"} : Names{"c", "s"}, {"y"}, "mul");
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        // oneDNN's swish against Sigmoid then Mul: a few ulps apart.
        EXPECT_EQ(expect_same_values(builder, "y", 1e-6), (Names{"conv"})) << sigmoid_first;
    }
}

TEST(Fusion, ConvolutionOutputsReadElsewhereOrMarkedAsOutputsStayUnfolded) {
    {  // c is also a graph output (what `--onnx-outputs mark all` does)
        ModelBuilder builder = conv_model();
        builder.node("Relu", {"c"}, {"y"}, "relu");
        builder.output("c", DataType::kFloat32, Shape{1, 8, 8, 8});
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "c"), (Names{"conv", "relu"}));
    }
    {  // c has a second reader
        ModelBuilder builder = conv_model();
        builder.node("Relu", {"c"}, {"r"}, "relu");
        builder.node("Add", {"r", "c"}, {"y"}, "add");
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv", "relu", "add"}));
    }
    {  // the Sigmoid's output is itself read elsewhere: not the SiLU pattern
        ModelBuilder builder = conv_model();
        builder.node("Sigmoid", {"c"}, {"s"}, "sigmoid");
        builder.node("Mul", {"c", "s"}, {"m"}, "mul");
        builder.node("Add", {"m", "s"}, {"y"}, "add");
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv", "sigmoid", "mul", "add"}));
    }
}

// Between two convolutions of 8-channel multiples the activation stays channel-blocked
// (blocked_layout.h), and oneDNN's blocked kernels sum in another order than its NCHW GEMM: results
// differ by a few units in the last place, more where a sum cancels. The values of these tests
// reach ~10-100 (an ulp of 64 is 7.6e-6), so the bound is 1e-4.
constexpr double kBlockedLayoutTolerance = 1e-4;

TEST(Fusion, ConsecutiveConvolutionsEachTakeTheirActivation) {
    ModelBuilder builder = conv_model();
    builder.node("Relu", {"c"}, {"r"}, "relu");
    builder.initializer("w2", random_tensor({8, 8, 1, 1}, 4));
    builder.node("Conv", {"r", "w2"}, {"c2"}, "conv2");
    builder.node("Relu", {"c2"}, {"y"}, "relu2");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance), (Names{"conv", "conv2"}));
}

// x(2,5,16) -> MatMul with w (16x24) -> "m"; a torch Linear on a 3-D input, less its bias.
const Shape kLinearInput = {2, 5, 16};
ModelBuilder linear_model(int64_t opset = 17) {
    ModelBuilder builder(opset);
    builder.input("x", DataType::kFloat32, kLinearInput);
    builder.initializer("w", random_tensor({16, 24}, 1));
    builder.initializer("b", random_tensor({24}, 2));
    builder.node("MatMul", {"x", "w"}, {"m"}, "matmul");
    return builder;
}

// Tolerances of the folds below: oneDNN adds a fused bias inside its float32 accumulation, and its
// GELU post-op evaluates erf with ~1e-7 absolute error, so folded and written results differ in the
// last bits; the bound is well above that for values of magnitude ~1-10.
constexpr double kFoldedLinearTolerance = 1e-5;

TEST(Fusion, MatMulPlusConstantBiasFoldsAsALinearLayerInEitherOperandOrder) {
    for (bool bias_first : {false, true}) {
        ModelBuilder builder = linear_model();
        builder.node("Add", bias_first ? Names{"b", "m"} : Names{"m", "b"}, {"y"}, "add");
        builder.output("y", DataType::kFloat32, Shape{2, 5, 24});
        EXPECT_EQ(expect_same_values(builder, "y", kFoldedLinearTolerance, kLinearInput), (Names{"matmul"}))
            << bias_first;
    }
}

TEST(Fusion, MatMulBiasThatIsNotAConstantVectorOrAMarkedProductStaysUnfolded) {
    {  // a [1, 24] bias: Add broadcasts it the same, but only a vector is folded
        ModelBuilder builder = linear_model();
        builder.initializer("b2", random_tensor({1, 24}, 4));
        builder.node("Add", {"m", "b2"}, {"y"}, "add");
        builder.output("y", DataType::kFloat32, Shape{2, 5, 24});
        EXPECT_EQ(expect_same_values(builder, "y", 0.0, kLinearInput), (Names{"matmul", "add"}));
    }
    {  // the bias can be fed
        ModelBuilder builder = linear_model();
        builder.input("fed", DataType::kFloat32, Shape{24});
        builder.initializer("fed", random_tensor({24}, 5));
        builder.node("Add", {"m", "fed"}, {"y"}, "add");
        builder.output("y", DataType::kFloat32, Shape{2, 5, 24});
        EXPECT_EQ(expect_same_values(builder, "y", 0.0, kLinearInput), (Names{"matmul", "add"}));
    }
    {  // the product is a graph output (`mark all`)
        ModelBuilder builder = linear_model();
        builder.node("Add", {"m", "b"}, {"y"}, "add");
        builder.output("m", DataType::kFloat32, Shape{2, 5, 24});
        builder.output("y", DataType::kFloat32, Shape{2, 5, 24});
        EXPECT_EQ(expect_same_values(builder, "m", 0.0, kLinearInput), (Names{"matmul", "add"}));
    }
}

// Attention scores as exporters write them: q (2,3,4,8) and k (2,3,8,5) fed, "m" = MatMul(q, k)
// (the caller adds the scaling, and what reads it).
ModelBuilder attention_model() {
    ModelBuilder builder(17);
    builder.input("q", DataType::kFloat32, Shape{2, 3, 4, 8});
    builder.input("k", DataType::kFloat32, Shape{2, 3, 8, 5});
    return builder;
}

const TensorMap& attention_feed() {
    static const TensorMap feed = {{"q", random_tensor({2, 3, 4, 8}, 5, -2.0f, 2.0f)},
                                   {"k", random_tensor({2, 3, 8, 5}, 6, -2.0f, 2.0f)}};
    return feed;
}

TEST(Fusion, AttentionScaleFoldsIntoTheMatMulOnEitherSide) {
    {  // BERT: MatMul(q, k) / 8, then Softmax; dividing by a power of two gives the same bits
        ModelBuilder builder = attention_model();
        builder.initializer("d", scalar(8.0f));
        builder.node("MatMul", {"q", "k"}, {"m"}, "matmul");
        builder.node("Div", {"m", "d"}, {"s"}, "div");
        builder.node("Softmax", {"s"}, {"y"}, "softmax");
        builder.output("y", DataType::kFloat32, Shape{2, 3, 4, 5});
        EXPECT_EQ(expect_same_values_on(builder, "y", 0.0, attention_feed()), (Names{"matmul", "softmax"}));
    }
    {  // ViT: the query divided before the product (a Constant node), and a Mul after it in the
       // other operand order: the factors combine (1/8 * 0.5), all powers of two
        ModelBuilder builder = attention_model();
        set_attr(builder.node("Constant", {}, {"d"}, "d"), "value", scalar(8.0f));
        builder.initializer("h", scalar(0.5f));
        builder.node("Div", {"q", "d"}, {"qs"}, "div");
        builder.node("MatMul", {"qs", "k"}, {"m"}, "matmul");
        builder.node("Mul", {"h", "m"}, {"y"}, "mul");
        builder.output("y", DataType::kFloat32, Shape{2, 3, 4, 5});
        EXPECT_EQ(expect_same_values_on(builder, "y", 0.0, attention_feed()), (Names{"matmul"}));
    }
    {  // a factor that is not a power of two (a decoder's 1 / sqrt(128)): an ulp or so apart
        ModelBuilder builder = attention_model();
        builder.initializer("d", scalar(std::sqrt(128.0f)));
        builder.initializer("c", scalar(0.3f));
        builder.node("Mul", {"q", "c"}, {"qs"}, "mul");
        builder.node("MatMul", {"qs", "k"}, {"m"}, "matmul");
        builder.node("Div", {"m", "d"}, {"y"}, "div");
        builder.output("y", DataType::kFloat32, Shape{2, 3, 4, 5});
        EXPECT_EQ(expect_same_values_on(builder, "y", 1e-6, attention_feed()), (Names{"matmul"}));
    }
}

TEST(Fusion, ScaleStaysUnfoldedUnlessItIsAConstantScalarOnAComputedProductReadOnlyThere) {
    struct Case {
        const char* what;
        Tensor divisor;
        bool mark_product;   // the product is also a graph output (`mark all`)
        bool constant_b;     // B is a weight (a Linear layer, left to the bias and activation folds)
        bool divisor_first;  // Div(d, m): the product is the divisor
        Names order;
    };
    const std::vector<Case> cases = {
        {"marked product", scalar(8.0f), true, false, false, {"matmul", "div"}},
        {"divisor of shape [1]",
         Tensor::from_doubles(DataType::kFloat32, {1}, {8.0}),
         false,
         false,
         false,
         {"matmul", "div"}},
        {"infinite divisor", scalar(std::numeric_limits<float>::infinity()), false, false, false, {"matmul", "div"}},
        {"constant B", scalar(8.0f), false, true, false, {"matmul", "div"}},
        {"product as the divisor", scalar(8.0f), false, false, true, {"matmul", "div"}},
    };
    for (const Case& c : cases) {
        ModelBuilder builder = attention_model();
        if (c.constant_b) builder.initializer("w", random_tensor({2, 3, 8, 5}, 7));
        builder.initializer("d", c.divisor);
        builder.node("MatMul", {"q", c.constant_b ? "w" : "k"}, {"m"}, "matmul");
        builder.node("Div", c.divisor_first ? Names{"d", "m"} : Names{"m", "d"}, {"y"}, "div");
        if (c.mark_product) builder.output("m", DataType::kFloat32, Shape{2, 3, 4, 5});
        builder.output("y", DataType::kFloat32, Shape{2, 3, 4, 5});
        EXPECT_EQ(expect_same_values_on(builder, "y", 0.0, attention_feed()), c.order) << c.what;
    }
    {  // the scaled query is read by another node too: the Div stays
        ModelBuilder builder = attention_model();
        builder.initializer("d", scalar(8.0f));
        builder.node("Div", {"q", "d"}, {"qs"}, "div");
        builder.node("MatMul", {"qs", "k"}, {"y"}, "matmul");
        builder.node("Neg", {"qs"}, {"n"}, "neg");
        builder.output("y", DataType::kFloat32, Shape{2, 3, 4, 5});
        builder.output("n", DataType::kFloat32, Shape{2, 3, 4, 8});
        EXPECT_EQ(expect_same_values_on(builder, "y", 0.0, attention_feed()), (Names{"div", "matmul", "neg"}));
    }
}

// y = x * 0.5 * (1 + erf(x / sqrt(2))) as torch exports it (with another `divisor`, not GELU);
// `swapped` puts every commutative operand the other way round.
void add_torch_gelu(ModelBuilder& builder, const std::string& x, const std::string& y, bool swapped,
                    float divisor = static_cast<float>(M_SQRT2)) {
    set_attr(builder.node("Constant", {}, {"sqrt2"}, "sqrt2"), "value", scalar(divisor));
    set_attr(builder.node("Constant", {}, {"one"}, "one"), "value", scalar(1.0f));
    set_attr(builder.node("Constant", {}, {"half"}, "half"), "value", scalar(0.5f));
    builder.node("Div", {x, "sqrt2"}, {"d"}, "div");
    builder.node("Erf", {"d"}, {"e"}, "erf");
    builder.node("Add", swapped ? Names{"one", "e"} : Names{"e", "one"}, {"a"}, "add1");
    builder.node("Mul", swapped ? Names{"a", x} : Names{x, "a"}, {"p"}, "mul");
    builder.node("Mul", swapped ? Names{"half", "p"} : Names{"p", "half"}, {y}, "mul_half");
}

TEST(Fusion, TorchGeluFoldsIntoTheLinearLayerBeforeIt) {
    for (bool swapped : {false, true}) {
        ModelBuilder builder = linear_model();
        builder.node("Add", {"b", "m"}, {"l"}, "add");
        add_torch_gelu(builder, "l", "y", swapped);
        builder.output("y", DataType::kFloat32, Shape{2, 5, 24});
        EXPECT_EQ(expect_same_values(builder, "y", kFoldedLinearTolerance, kLinearInput), (Names{"matmul"})) << swapped;
    }
}

TEST(Fusion, GeluPatternWithAnotherConstantOrASharedValueStaysUnfolded) {
    {  // x / 2 is not GELU
        ModelBuilder builder = conv_model();
        add_torch_gelu(builder, "c", "y", false, 2.0f);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "y").size(), 6u);
    }
    {  // erf(x / sqrt 2) is also a graph output
        ModelBuilder builder = conv_model();
        add_torch_gelu(builder, "c", "y", false);
        builder.output("e", DataType::kFloat32, Shape{1, 8, 8, 8});
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "y").size(), 6u);
    }
}

TEST(Fusion, GeluOperatorFoldsIntoAConvolutionUnlessItIsTheTanhForm) {
    for (const std::string approximate : {"none", "tanh"}) {
        ModelBuilder builder = conv_model(20);
        set_attr(builder.node("Gelu", {"c"}, {"y"}, "gelu"), "approximate", approximate);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        const Names expected = approximate == "none" ? Names{"conv"} : Names{"conv", "gelu"};
        EXPECT_EQ(expect_same_values(builder, "y", kFoldedLinearTolerance), expected) << approximate;
    }
}

TEST(Fusion, ActivationsFoldIntoGemmAndMatMulWithFloatWeightsOnly) {
    {  // Gemm with a constant B (and C)
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{3, 16});
        builder.initializer("w", random_tensor({24, 16}, 1));
        builder.initializer("c", random_tensor({24}, 2));
        set_attr(builder.node("Gemm", {"x", "w", "c"}, {"g"}, "gemm"), "transB", int64_t{1});
        builder.node("Relu", {"g"}, {"y"}, "relu");
        builder.output("y", DataType::kFloat32, Shape{3, 24});
        EXPECT_EQ(expect_same_values(builder, "y", 0.0, {3, 16}), (Names{"gemm"}));
    }
    {  // MatMul whose B is fed: its type is unknown before running, so nothing folds
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{3, 16});
        builder.input("w", DataType::kFloat32, Shape{16, 24});
        builder.node("MatMul", {"x", "w"}, {"m"}, "matmul");
        builder.node("Relu", {"m"}, {"y"}, "relu");
        builder.output("y", DataType::kFloat32, Shape{3, 24});
        const Session folded(*builder.build(), with_fusion(true));
        EXPECT_EQ(folded.execution_order(), (Names{"matmul", "relu"}));
    }
    {  // integer MatMul: the Relu stays a node (a fused activation takes floats only)
        ModelBuilder builder(17);
        builder.input("x", DataType::kInt32, Shape{2, 2});
        builder.initializer("w", Tensor::from_doubles(DataType::kInt32, {2, 2}, {1, -2, 3, -4}));
        builder.node("MatMul", {"x", "w"}, {"m"}, "matmul");
        builder.node("Relu", {"m"}, {"y"}, "relu");
        builder.output("y", DataType::kInt32, Shape{2, 2});
        const Session folded(*builder.build(), with_fusion(true));
        EXPECT_EQ(folded.execution_order(), (Names{"matmul", "relu"}));
        const Tensor y = folded.run({{"x", Tensor::from_doubles(DataType::kInt32, {2, 2}, {1, 1, 2, 0})}}).at("y");
        // numpy: np.maximum([[1, 1], [2, 0]] @ [[1, -2], [3, -4]], 0) = [[4, 0], [2, 0]]
        EXPECT_EQ(std::vector<int32_t>(y.data_as<int32_t>(), y.data_as<int32_t>() + 4),
                  (std::vector<int32_t>{4, 0, 2, 0}));
    }
}

// A depthwise convolution (one channel per group) runs in the runtime's own kernel, which applies a
// folded Relu, Clip or SiLU as it stores each vector of sums (a GELU as a pass after it). Inputs
// span +-60 so that SiLU's exp meets its clamped range, and NaN goes where Relu/Clip map it.
TEST(Fusion, ActivationsFoldIntoTheDepthwiseKernelAsWrittenOrAsDocumentedForNaN) {
    const Shape x_shape{1, 8, 13, 13};
    for (const std::string activation : {"Relu", "Clip", "Silu", "Gelu"}) {
        for (int64_t stride : {1, 2}) {
            for (bool mark_conv_output : {false, true}) {
                ModelBuilder builder(20);
                builder.input("x", DataType::kFloat32, x_shape);
                builder.initializer("w", random_tensor({8, 1, 3, 3}, 1));
                builder.initializer("b", random_tensor({8}, 2));
                auto& conv = builder.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
                set_attr(conv, "group", int64_t{8});
                set_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
                set_attr(conv, "strides", std::vector<int64_t>{stride, stride});
                builder.initializer("lo", scalar(-0.5f));
                builder.initializer("hi", scalar(6.0f));
                Names expected_order{"conv"};
                if (activation == "Silu") {
                    builder.node("Sigmoid", {"c"}, {"s"}, "sigmoid");
                    builder.node("Mul", {"c", "s"}, {"y"}, "mul");
                    if (mark_conv_output) expected_order = {"conv", "sigmoid", "mul"};
                } else {
                    builder.node(activation, activation == "Clip" ? Names{"c", "lo", "hi"} : Names{"c"}, {"y"}, "act");
                    if (mark_conv_output) expected_order = {"conv", "act"};
                }
                const int64_t out = (13 + 2 - 3) / stride + 1;
                builder.output("y", DataType::kFloat32, Shape{1, 8, out, out});
                if (mark_conv_output) builder.output("c", DataType::kFloat32, Shape{1, 8, out, out});
                const OnnxModel model = builder.build();
                Tensor x = random_tensor(x_shape, 3, -60.0f, 60.0f);
                x.data_as<float>()[14] = std::numeric_limits<float>::quiet_NaN();  // reaches y[0] at both strides
                const Session folded(*model, with_fusion(true));
                ASSERT_EQ(folded.execution_order(), expected_order) << activation << " stride " << stride;
                const TensorMap a = folded.run({{"x", x}});
                const TensorMap b = Session(*model, with_fusion(false)).run({{"x", x}});
                const Tensor &y = a.at("y"), &written = b.at("y");
                ASSERT_EQ(y.shape(), written.shape());
                // A folded Relu/Clip maps NaN to its lower bound; everything else keeps it.
                const bool nan_mapped = !mark_conv_output && (activation == "Relu" || activation == "Clip");
                const float lower_bound = activation == "Relu" ? 0.0f : -0.5f;
                ASSERT_TRUE(std::isnan(written.data_as<float>()[0]));
                for (int64_t i = 0; i < y.numel(); ++i) {
                    const float got = y.data_as<float>()[i], expected = written.data_as<float>()[i];
                    if (std::isnan(expected)) {
                        if (nan_mapped)
                            EXPECT_EQ(got, lower_bound) << activation << "[" << i << "]";
                        else
                            EXPECT_TRUE(std::isnan(got)) << activation << "[" << i << "]";
                        continue;
                    }
                    // SiLU (exp within a few ulps) and GELU: kFoldedLinearTolerance, relative above 1
                    const double tolerance = activation == "Silu" || activation == "Gelu"
                                                 ? kFoldedLinearTolerance * std::max(1.0f, std::abs(expected))
                                                 : 0.0;
                    EXPECT_NEAR(got, expected, tolerance) << activation << "[" << i << "]";
                }
                if (mark_conv_output) {  // the convolution's own output, as written
                    const Tensor &c = a.at("c"), &c_written = b.at("c");
                    for (int64_t i = 0; i < c.numel(); ++i) {
                        const float got = c.data_as<float>()[i], expected = c_written.data_as<float>()[i];
                        EXPECT_TRUE(got == expected || (std::isnan(got) && std::isnan(expected))) << "c[" << i << "]";
                    }
                }
            }
        }
    }
}

// Both ways a folded activation runs (a oneDNN post-op, and the separate oneDNN pass after pointwise
// convolutions) treat NaN the same documented way.
TEST(Fusion, FoldedReluAndClipMapNaNToZeroOrTheLowerBoundAsDocumented) {
    for (int64_t kernel : {3, 1}) {
        for (const std::string activation : {"Relu", "Clip"}) {
            ModelBuilder builder(17);
            builder.input("x", DataType::kFloat32, Shape{1, 4, 8, 8});
            builder.initializer("w", random_tensor({8, 4, kernel, kernel}, 1));
            const int64_t pad = kernel / 2;
            set_attr(builder.node("Conv", {"x", "w"}, {"c"}, "conv"), "pads", std::vector<int64_t>{pad, pad, pad, pad});
            builder.initializer("lo", scalar(-0.5f));
            builder.initializer("hi", scalar(0.5f));
            if (activation == "Relu")
                builder.node("Relu", {"c"}, {"y"}, "act");
            else
                builder.node("Clip", {"c", "lo", "hi"}, {"y"}, "act");
            builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
            const OnnxModel model = builder.build();
            Tensor x = random_tensor({1, 4, 8, 8}, 5);
            x.data_as<float>()[0] = std::numeric_limits<float>::quiet_NaN();
            const Session folded(*model, with_fusion(true));
            ASSERT_EQ(folded.execution_order(), (Names{"conv"}));
            const Tensor y = folded.run({{"x", x}}).at("y");
            const Tensor written = Session(*model, with_fusion(false)).run({{"x", x}}).at("y");
            const float expected = activation == "Relu" ? 0.0f : -0.5f;
            EXPECT_EQ(y.data_as<float>()[0], expected)
                << activation << " after a " << kernel << "x" << kernel << " conv";
            EXPECT_TRUE(std::isnan(written.data_as<float>()[0])) << activation;
        }
    }
}

// ---- residual Adds -----------------------------------------------------------------------------------

// Tolerance of a folded residual Add: the fused kernel sums conv + bias + r in the order the nodes
// as written do (the Conv's float32 result, then the Add), so the results are bit-identical.
constexpr double kFoldedResidualTolerance = 0.0;

// x(1,4,size,size) of `dtype` -> Conv (8 channels, `kernel` x `kernel`, same padding, a bias if
// `bias`) -> "c"; then "s" = Add(c, r) or Add(r, c) with `residual_first`, r an input of `r_shape`.
// The caller adds what reads s and marks the outputs.
ModelBuilder residual_model(bool bias, bool residual_first, int64_t kernel = 3, const Shape& r_shape = {1, 8, 8, 8},
                            DataType dtype = DataType::kFloat32, int64_t size = 8) {
    ModelBuilder builder(17);
    builder.input("x", dtype, Shape{1, 4, size, size});
    builder.input("r", dtype, r_shape);
    builder.initializer("w", random_tensor({8, 4, kernel, kernel}, 1).cast(dtype));
    builder.initializer("b", random_tensor({8}, 2).cast(dtype));
    auto& conv = builder.node("Conv", bias ? Names{"x", "w", "b"} : Names{"x", "w"}, {"c"}, "conv");
    const int64_t pad = kernel / 2;
    set_attr(conv, "pads", std::vector<int64_t>{pad, pad, pad, pad});
    builder.node("Add", residual_first ? Names{"r", "c"} : Names{"c", "r"}, {"s"}, "add");
    return builder;
}

TensorMap residual_feed(const Shape& x_shape, const Shape& r_shape, DataType dtype = DataType::kFloat32) {
    return {{"x", random_tensor(x_shape, 3, -2.0f, 2.0f).cast(dtype)},
            {"r", random_tensor(r_shape, 4, -2.0f, 2.0f).cast(dtype)}};
}

// The op type label of the profile's first node, after two runs of a profiling session.
std::string profiled_op_type(const ModelBuilder& builder, const TensorMap& feed) {
    SessionOptions options = with_fusion(true);
    options.profile = true;
    const Session session(*builder.build(), options);
    session.run(feed);
    session.run(feed);
    return session.profile()->nodes.at(0).op_type;
}

TEST(Fusion, ResidualAddAndTheReluAfterItFoldIntoTheConvolutionInEitherOperandOrderWithOrWithoutBias) {
    // 3x3 runs on oneDNN's blocked kernels, 1x1 on its GEMM one (a plain layout); on 8x8 and 64x64.
    for (const auto& [kernel, size] : std::vector<std::pair<int64_t, int64_t>>{{3, 8}, {1, 8}, {3, 64}, {1, 64}}) {
        for (bool bias : {true, false}) {
            for (bool residual_first : {false, true}) {
                for (bool relu : {false, true}) {
                    ModelBuilder builder =
                        residual_model(bias, residual_first, kernel, {1, 8, size, size}, DataType::kFloat32, size);
                    if (relu) builder.node("Relu", {"s"}, {"y"}, "relu");
                    builder.output(relu ? "y" : "s", DataType::kFloat32, Shape{1, 8, size, size});
                    const TensorMap feed = residual_feed({1, 4, size, size}, {1, 8, size, size});
                    EXPECT_EQ(expect_same_values_on(builder, relu ? "y" : "s", kFoldedResidualTolerance, feed),
                              (Names{"conv"}))
                        << kernel << "x" << kernel << " on " << size << " bias " << bias << " residual first "
                        << residual_first << " relu " << relu;
                    EXPECT_EQ(profiled_op_type(builder, feed), relu ? "Conv+Add+Relu" : "Conv+Add");
                }
            }
        }
    }
}

TEST(Fusion, ActivationsOtherThanReluFoldAfterAResidualAdd) {
    for (const std::string activation : {"Clip", "Silu", "Gelu"}) {
        ModelBuilder builder = residual_model(true, false);
        builder.initializer("lo", scalar(-0.5f));
        builder.initializer("hi", scalar(1.5f));
        if (activation == "Silu") {
            builder.node("Sigmoid", {"s"}, {"g"}, "sigmoid");
            builder.node("Mul", {"s", "g"}, {"y"}, "mul");
        } else if (activation == "Clip") {
            builder.node("Clip", {"s", "lo", "hi"}, {"y"}, "clip");
        } else {
            builder.node("Gelu", {"s"}, {"y"}, "gelu");
            builder.proto().mutable_opset_import(0)->set_version(20);
        }
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        const TensorMap feed = residual_feed({1, 4, 8, 8}, {1, 8, 8, 8});
        // The activations as oneDNN computes them: see kFoldedLinearTolerance.
        EXPECT_EQ(expect_same_values_on(builder, "y", kFoldedLinearTolerance, feed), (Names{"conv"})) << activation;
        EXPECT_EQ(profiled_op_type(builder, feed), "Conv+Add+" + activation);
    }
}

// The depthwise kernel adds the residual as it stores each row, then applies the activation (GELU
// as a pass after). The residual here is the convolution's own input: MobileNetV2's shortcut.
TEST(Fusion, ResidualAddFoldsIntoADepthwiseConvolutionReadingTheSameInput) {
    for (const std::string activation : {"", "Relu", "Gelu"}) {
        ModelBuilder builder(20);
        builder.input("x", DataType::kFloat32, Shape{1, 8, 13, 13});
        builder.initializer("w", random_tensor({8, 1, 3, 3}, 1));
        builder.initializer("b", random_tensor({8}, 2));
        auto& conv = builder.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
        set_attr(conv, "group", int64_t{8});
        set_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
        builder.node("Add", {"x", "c"}, {"s"}, "add");
        if (!activation.empty()) builder.node(activation, {"s"}, {"y"}, "act");
        const std::string output = activation.empty() ? "s" : "y";
        builder.output(output, DataType::kFloat32, Shape{1, 8, 13, 13});
        const double tolerance = activation == "Gelu" ? kFoldedLinearTolerance : kFoldedResidualTolerance;
        EXPECT_EQ(expect_same_values(builder, output, tolerance, {1, 8, 13, 13}), (Names{"conv"})) << activation;
    }
}

// A residual of another shape is added after the convolution with Add's broadcasting: the folded
// node gives the broadcast shape, whichever operand broadcasts.
TEST(Fusion, ResidualThatBroadcastsIsAddedAfterTheConvolution) {
    for (const Shape& r_shape : {Shape{1, 8, 1, 1}, Shape{8, 1}, Shape{2, 8, 8, 8}}) {
        for (bool residual_first : {false, true}) {
            ModelBuilder builder = residual_model(true, residual_first, 3, r_shape);
            builder.node("Relu", {"s"}, {"y"}, "relu");
            const Shape out = r_shape[0] == 2 ? Shape{2, 8, 8, 8} : Shape{1, 8, 8, 8};
            builder.output("y", DataType::kFloat32, out);
            EXPECT_EQ(
                expect_same_values_on(builder, "y", kFoldedResidualTolerance, residual_feed({1, 4, 8, 8}, r_shape)),
                (Names{"conv"}))
                << shape_to_string(r_shape) << " residual first " << residual_first;
        }
    }
}

// float64 and float16 convolutions, and a 4-D one (oneDNN has none: the reference loop runs), add
// the residual to the convolution's rounded output, as the Add node does.
TEST(Fusion, ResidualAddFoldsForEveryFloatTypeAndTheReferenceLoop) {
    for (DataType dtype : {DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
        ModelBuilder builder = residual_model(true, true, 3, {1, 8, 8, 8}, dtype);
        builder.node("Relu", {"s"}, {"y"}, "relu");
        builder.output("y", dtype, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values_on(builder, "y", kFoldedResidualTolerance,
                                        residual_feed({1, 4, 8, 8}, {1, 8, 8, 8}, dtype)),
                  (Names{"conv"}))
            << dtype_name(dtype);
    }
    {
        const Shape x_shape{1, 2, 3, 3, 3, 3}, y_shape{1, 4, 3, 3, 3, 3};
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, x_shape);
        builder.input("r", DataType::kFloat32, y_shape);
        builder.initializer("w", random_tensor({4, 2, 1, 1, 1, 1}, 1));
        builder.node("Conv", {"x", "w"}, {"c"}, "conv");
        builder.node("Add", {"c", "r"}, {"s"}, "add");
        builder.node("Relu", {"s"}, {"y"}, "relu");
        builder.output("y", DataType::kFloat32, y_shape);
        EXPECT_EQ(expect_same_values_on(builder, "y", kFoldedResidualTolerance, residual_feed(x_shape, y_shape)),
                  (Names{"conv"}));
    }
}

TEST(Fusion, ResidualAddStaysUnfoldedWhenTheConvolutionOutputIsMarkedOrReadElsewhere) {
    const TensorMap feed = residual_feed({1, 4, 8, 8}, {1, 8, 8, 8});
    {  // c is a graph output (`mark all`)
        ModelBuilder builder = residual_model(true, false);
        builder.node("Relu", {"s"}, {"y"}, "relu");
        builder.output("c", DataType::kFloat32, Shape{1, 8, 8, 8});
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values_on(builder, "c", 0.0, feed), (Names{"conv", "add", "relu"}));
        EXPECT_EQ(expect_same_values_on(builder, "y", 0.0, feed), (Names{"conv", "add", "relu"}));
    }
    {  // c has a second reader
        ModelBuilder builder = residual_model(true, false);
        builder.node("Mul", {"s", "c"}, {"y"}, "mul");
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values_on(builder, "y", 0.0, feed), (Names{"conv", "add", "mul"}));
    }
    {  // Add(c, c) has no residual
        ModelBuilder builder = conv_model();
        builder.node("Add", {"c", "c"}, {"y"}, "double");
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv", "double"}));
    }
    {  // the sum is a graph output: the Add folds, the Relu after it does not
        ModelBuilder builder = residual_model(true, false);
        builder.node("Relu", {"s"}, {"y"}, "relu");
        builder.output("s", DataType::kFloat32, Shape{1, 8, 8, 8});
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        EXPECT_EQ(expect_same_values_on(builder, "s", kFoldedResidualTolerance, feed), (Names{"conv", "relu"}));
        EXPECT_EQ(expect_same_values_on(builder, "y", kFoldedResidualTolerance, feed), (Names{"conv", "relu"}));
    }
}

// ResNet's downsampling block: Add(conv(x), conv_shortcut(x)) where both Convs are read by the Add
// only. One takes the Add (and the Relu); the other's output becomes its residual, and the node
// order changes, since the folded Conv now waits for the shortcut.
TEST(Fusion, ResidualAddOfTwoConvolutionsFoldsIntoOneOfThem) {
    ModelBuilder builder = conv_model();
    builder.initializer("w2", random_tensor({8, 4, 1, 1}, 4));
    builder.node("Conv", {"x", "w2"}, {"shortcut"}, "shortcut");
    builder.node("Add", {"c", "shortcut"}, {"s"}, "add");
    builder.node("Relu", {"s"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    const Names order = expect_same_values(builder, "y", kFoldedResidualTolerance);
    EXPECT_EQ(order, (Names{"shortcut", "conv"}));
}

// A residual of another data type fails in the folded Conv as the Add would, naming the types.
TEST(Fusion, FoldedResidualOfAnotherDataTypeFailsAsTheAddWould) {
    ModelBuilder builder = conv_model();
    builder.input("r", DataType::kFloat64, Shape{1, 8, 8, 8});
    builder.node("Add", {"c", "r"}, {"y"}, "add");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    const OnnxModel model = builder.build();
    const TensorMap feed{{"x", random_tensor({1, 4, 8, 8}, 3)},
                         {"r", random_tensor({1, 8, 8, 8}, 4).cast(DataType::kFloat64)}};
    for (bool fuse : {true, false}) {
        const Session session(*model, with_fusion(fuse));
        EXPECT_EQ(session.execution_order().size(), fuse ? 1u : 2u);
        try {
            session.run(feed);
            ADD_FAILURE() << "no error, fused " << fuse;
        } catch (const PolygraphyException& error) {
            EXPECT_NE(std::string(error.what()).find("same data type, but they are float32 and float64"),
                      std::string::npos)
                << error.what();
        }
    }
}

// ---- channel-blocked layouts (blocked_layout.h) -------------------------------------------------

// What the layout pass chooses on the graph as written: the tensors kept blocked, and per node the
// flags it set ("in", "out", "in+out").
struct LayoutChoice {
    Names blocked;
    std::map<std::string, std::string> flags;
};

// The flags name a block of 16 ("in16", "out16"); "in" and "out" are blocks of 8.
LayoutChoice choose_layouts(const ModelBuilder& builder, const std::map<std::string, Names>& implicit_inputs = {},
                            int64_t widest_block = kNarrowChannelBlock) {
    const OnnxModel model = builder.build();
    std::vector<onnx::NodeProto> nodes(model->graph().node().begin(), model->graph().node().end());
    std::vector<std::vector<std::string>> node_inputs;
    for (const auto& node : nodes) {
        node_inputs.emplace_back(node.input().begin(), node.input().end());
        if (auto found = implicit_inputs.find(node.name()); found != implicit_inputs.end())
            node_inputs.back().insert(node_inputs.back().end(), found->second.begin(), found->second.end());
    }
    LayoutChoice choice;
    choice.blocked = choose_blocked_layouts(nodes, node_inputs, model->graph(), widest_block);
    auto block = [](int64_t value) -> std::string {
        if (value == kNarrowChannelBlock) return "";
        if (value == kWideChannelBlock) return "16";
        return "(unexpected block " + std::to_string(value) + ")";
    };
    for (const auto& node : nodes) {
        std::string flags;
        for (const auto& attr : node.attribute()) {
            if (attr.name() == kBlockedInputAttr) flags += "in" + block(attr.i());
            if (attr.name() == kBlockedOutputAttr) flags += (flags.empty() ? "out" : "+out") + block(attr.i());
        }
        if (!flags.empty()) choice.flags[node.name()] = flags;
    }
    return choice;
}

onnx::NodeProto& add_conv(ModelBuilder& builder, const std::string& x, const Shape& w_shape, const std::string& y,
                          uint32_t seed, int64_t pads = 0) {
    const std::string w = y + "_w", b = y + "_b";
    builder.initializer(w, random_tensor(w_shape, seed, -0.5f, 0.5f));  // keeps values of deep chains ~1-10
    builder.initializer(b, random_tensor({w_shape[0]}, seed + 100));
    onnx::NodeProto& conv = builder.node("Conv", {x, w, b}, {y}, "conv_" + y);
    if (pads > 0) set_attr(conv, "pads", std::vector<int64_t>{pads, pads, pads, pads});
    return conv;
}

// A MobileNetV2-style block: 3x3 Conv + Relu, depthwise 3x3 + Clip, 1x1 Conv + residual Add, then a
// strided 3x3 Conv whose Relu is the graph output. x is (2, 8, 10, 10).
ModelBuilder inverted_residual_model() {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 8, 10, 10});
    add_conv(builder, "x", {16, 8, 3, 3}, "c1", 10, 1);
    builder.node("Relu", {"c1"}, {"r1"}, "relu1");
    set_attr(add_conv(builder, "r1", {16, 1, 3, 3}, "c2", 20, 1), "group", int64_t{16});
    builder.initializer("lo", scalar(0.0f));
    builder.initializer("hi", scalar(0.5f));
    builder.node("Clip", {"c2", "lo", "hi"}, {"r2"}, "clip2");
    add_conv(builder, "r2", {16, 16, 1, 1}, "c3", 30);
    builder.node("Add", {"c3", "r1"}, {"s"}, "add3");
    set_attr(add_conv(builder, "s", {24, 16, 3, 3}, "c4", 40, 1), "strides", std::vector<int64_t>{2, 2});
    builder.node("Relu", {"c4"}, {"y"}, "relu4");
    builder.output("y", DataType::kFloat32, Shape{2, 24, 5, 5});
    return builder;
}

TEST(BlockedLayout, ActivationsBetweenConvolutionsStayBlockedAndMatchTheNchwGraph) {
    const ModelBuilder builder = inverted_residual_model();
    const LayoutChoice choice = choose_layouts(builder);
    // The graph output's class (c4, y) stays as declared; everything before it is blocked.
    EXPECT_EQ(choice.blocked, (Names{"c1", "r1", "c2", "r2", "c3", "s"}));
    EXPECT_EQ(choice.flags, (std::map<std::string, std::string>{
                                {"conv_c1", "out"}, {"conv_c2", "in+out"}, {"conv_c3", "in+out"}, {"conv_c4", "in"}}));

    const TensorMap feed{{"x", random_tensor({2, 8, 10, 10}, 3, -2.0f, 2.0f)}};
    EXPECT_EQ(expect_same_values_on(builder, "y", kBlockedLayoutTolerance, feed),
              (Names{"conv_c1", "conv_c2", "conv_c3", "conv_c4"}));
    // The session runs the pass on the folded graph: r1, r2 and s (c3 took the residual Add's name).
    const Severity previous = logger().severity();
    logger().set_severity(Severity::kExtraVerbose);
    ::testing::internal::CaptureStdout();
    SessionOptions options;
    options.num_threads = 2;
    const Session session(*builder.build(), options);
    const std::string log = ::testing::internal::GetCapturedStdout();
    logger().set_severity(previous);
    EXPECT_NE(log.find("3 tensors stay channel-blocked"), std::string::npos) << log;
    // Bit-identical from run to run at a fixed thread count, on more than one thread too.
    const Tensor first = session.run(feed).at("y"), second = session.run(feed).at("y");
    ASSERT_EQ(first.numel(), second.numel());
    for (int64_t i = 0; i < first.numel(); ++i)
        ASSERT_EQ(first.data_as<float>()[i], second.data_as<float>()[i]) << "y[" << i << "]";
}

// ResNet's deep 3x3 convolutions (128 channels at 14x14, a residual, one at stride 2) run on the
// runtime's own kernel (blocked_conv.h) in blocks of 8, also where the graph holds their input or output as NCHW
// (the first reads the graph input; the last one's sum with a residual is the graph output), and
// match the graph as written, at 1 and 2 threads alike.
TEST(BlockedLayout, DeepThreeByThreeConvolutionsRunOnTheOwnKernelAndMatchTheNchwGraph) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 128, 14, 14});
    auto conv = [&](const std::string& x, const Shape& w_shape, const std::string& y, uint32_t seed, int64_t stride) {
        builder.initializer(y + "_w", random_tensor(w_shape, seed, -0.05f, 0.05f));  // values stay ~1
        builder.initializer(y + "_b", random_tensor({w_shape[0]}, seed + 100));
        onnx::NodeProto& node = builder.node("Conv", {x, y + "_w", y + "_b"}, {y}, "conv_" + y);
        const int64_t pad = w_shape[2] / 2;
        set_attr(node, "pads", std::vector<int64_t>{pad, pad, pad, pad});
        set_attr(node, "strides", std::vector<int64_t>{stride, stride});
    };
    conv("x", {128, 128, 3, 3}, "a", 1, 1);
    builder.node("Relu", {"a"}, {"ra"}, "relu_a");
    conv("ra", {128, 128, 3, 3}, "b", 2, 1);
    builder.node("Add", {"b", "ra"}, {"s"}, "add_b");
    builder.node("Relu", {"s"}, {"rs"}, "relu_s");
    conv("rs", {128, 128, 3, 3}, "c", 3, 2);
    builder.node("Relu", {"c"}, {"rc"}, "relu_c");
    conv("rc", {128, 128, 3, 3}, "d", 4, 1);
    conv("rs", {128, 128, 1, 1}, "e", 5, 2);  // the shortcut
    builder.node("Add", {"d", "e"}, {"de"}, "add_d");
    builder.node("Relu", {"de"}, {"y"}, "relu_y");
    builder.output("y", DataType::kFloat32, Shape{2, 128, 7, 7});
    EXPECT_EQ(choose_layouts(builder).flags,
              (std::map<std::string, std::string>{
                  {"conv_a", "out"}, {"conv_b", "in+out"}, {"conv_c", "in+out"}, {"conv_d", "in"}, {"conv_e", "in"}}));
    const TensorMap feed{{"x", random_tensor({2, 128, 14, 14}, 5, -2.0f, 2.0f)}};
    expect_same_values_on(builder, "y", kBlockedLayoutTolerance, feed);

    const Severity previous = logger().severity();
    logger().set_severity(Severity::kSuperVerbose);
    ::testing::internal::CaptureStdout();
    SessionOptions options;
    options.num_threads = 1;
    options.max_channel_block = kNarrowChannelBlock;  // the own kernel's block
    const OnnxModel model = builder.build();
    const Session one(*model, options);
    const Tensor first = one.run(feed).at("y");
    const std::string log = ::testing::internal::GetCapturedStdout();
    logger().set_severity(previous);
    if (blocked_conv::cpu_supported()) {
        for (const std::string node : {"conv_a", "conv_b", "conv_c", "conv_d"})
            EXPECT_NE(log.find("'" + node + "' (Conv): runs on the runtime's own blocked convolution"),
                      std::string::npos)
                << node << "\n" << log;
        EXPECT_EQ(log.find("'conv_e' (Conv): runs on the runtime's own"), std::string::npos) << log;
    }
    options.num_threads = 2;
    const Tensor second = one.run(feed).at("y"), two = Session(*model, options).run(feed).at("y");
    ASSERT_EQ(first.numel(), two.numel());
    for (int64_t i = 0; i < first.numel(); ++i) {
        ASSERT_EQ(first.data_as<float>()[i], second.data_as<float>()[i]) << "y[" << i << "]";
        ASSERT_EQ(first.data_as<float>()[i], two.data_as<float>()[i]) << "y[" << i << "]";
    }
}

// A SiLU or a Clip folded into a convolution on the own kernel: Clip at its store, SiLU by the pass
// after it; both match the nodes as written.
TEST(BlockedLayout, SiluAndClipFoldIntoAConvolutionOnTheOwnKernel) {
    for (const std::string activation : {"Silu", "Clip"}) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1, 128, 7, 7});
        builder.initializer("w", random_tensor({128, 128, 3, 3}, 1, -0.05f, 0.05f));
        builder.initializer("b", random_tensor({128}, 2));
        set_attr(builder.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
        if (activation == "Silu") {
            builder.node("Sigmoid", {"c"}, {"s"}, "sigmoid");
            builder.node("Mul", {"c", "s"}, {"a"}, "mul");
        } else {
            builder.initializer("lo", scalar(-0.5f));
            builder.initializer("hi", scalar(0.5f));
            builder.node("Clip", {"c", "lo", "hi"}, {"a"}, "clip");
        }
        add_conv(builder, "a", {8, 128, 1, 1}, "y", 3);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 7, 7});
        EXPECT_EQ(choose_layouts(builder).flags.at("conv"), "out");
        EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 128, 7, 7}),
                  (Names{"conv", "conv_y"}))
            << activation;
    }
}

TEST(BlockedLayout, TensorsThatOtherOperatorsReadOrThatLackEightChannelMultiplesStayNchw) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 6, 6});
    add_conv(builder, "x", {12, 8, 1, 1}, "a", 1);  // 12 channels: not a multiple of 8
    add_conv(builder, "a", {16, 12, 1, 1}, "b", 2);
    builder.node("Transpose", {"b"}, {"t"}, "transpose");  // another operator reads b
    add_conv(builder, "b", {16, 16, 1, 1}, "c", 3);
    builder.initializer("per_channel", random_tensor({1, 16, 1, 1}, 4));
    builder.node("Add", {"c", "per_channel"}, {"d"}, "add");  // a constant that is not a scalar
    add_conv(builder, "d", {16, 16, 1, 1}, "e", 5);
    builder.initializer("two", scalar(2.0f));
    builder.node("Mul", {"two", "e"}, {"f"}, "mul");  // a scalar constant, in either operand
    add_conv(builder, "f", {8, 16, 1, 1}, "y", 6);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 6, 6});
    builder.output("t", DataType::kFloat32, Shape{6, 6, 16, 1});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"e", "f"}));
    EXPECT_EQ(choice.flags, (std::map<std::string, std::string>{{"conv_e", "out"}, {"conv_y", "in"}}));
    const TensorMap feed{{"x", random_tensor({1, 8, 6, 6}, 7, -2.0f, 2.0f)}};
    expect_same_values_on(builder, "y", kBlockedLayoutTolerance, feed);
    expect_same_values_on(builder, "t", kBlockedLayoutTolerance, feed);

    // A value that a subgraph reads (an implicit input of the node holding it) stays as written.
    const LayoutChoice read_by_subgraph = choose_layouts(builder, {{"mul", {"d"}}});
    EXPECT_EQ(read_by_subgraph.blocked, Names{});
}

TEST(BlockedLayout, SqueezeExciteStaysBlockedThroughGlobalAveragePoolAndTheBroadcastingMul) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 7, 7});
    add_conv(builder, "x", {16, 8, 3, 3}, "c", 1, 1);
    builder.node("Relu", {"c"}, {"r"}, "relu");
    builder.node("GlobalAveragePool", {"r"}, {"p"}, "pool");
    add_conv(builder, "p", {8, 16, 1, 1}, "f", 2);
    builder.node("Relu", {"f"}, {"fr"}, "relu_f");
    add_conv(builder, "fr", {16, 8, 1, 1}, "g", 3);
    builder.node("Sigmoid", {"g"}, {"s"}, "sigmoid");
    builder.node("Mul", {"r", "s"}, {"m"}, "scale");
    add_conv(builder, "m", {8, 16, 1, 1}, "y", 4);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 7, 7});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"c", "r", "p", "f", "fr", "g", "s", "m"}));
    EXPECT_EQ(choice.flags.at("pool"), "in+out");
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 8, 7, 7}),
              (Names{"conv_c", "pool", "conv_f", "conv_g", "sigmoid", "scale", "conv_y"}));
}

// A classifier's tail (ResNet, MobileNetV2): GlobalAveragePool's output goes to Flatten and Gemm,
// which want NCHW; its input, and the convolutions before it, stay blocked, and the pool writes the
// plain [N, C, 1, 1] (the same bytes). A plain input still gives a plain output.
TEST(BlockedLayout, GlobalAveragePoolGivesAPlainOutputFromABlockedInput) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 8, 7, 7});
    add_conv(builder, "x", {16, 8, 3, 3}, "c", 1, 1);
    builder.node("Relu", {"c"}, {"r"}, "relu");
    add_conv(builder, "r", {16, 16, 3, 3}, "d", 2, 1);
    builder.node("GlobalAveragePool", {"d"}, {"p"}, "pool");
    builder.node("Flatten", {"p"}, {"f"}, "flatten");
    builder.initializer("fc_w", random_tensor({10, 16}, 3));
    set_attr(builder.node("Gemm", {"f", "fc_w"}, {"y"}, "fc"), "transB", int64_t{1});
    builder.output("y", DataType::kFloat32, Shape{2, 10});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"c", "r", "d"}));
    EXPECT_EQ(choice.flags.at("pool"), "in");
    EXPECT_EQ(choice.flags.at("conv_d"), "in+out");
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {2, 8, 7, 7}),
              (Names{"conv_c", "conv_d", "pool", "flatten", "fc"}));

    // The pool's input a graph output: plain, so the pool's output is plain and its reader as written.
    ModelBuilder plain_input = builder;
    plain_input.output("d", DataType::kFloat32, Shape{2, 16, 7, 7});
    add_conv(plain_input, "p", {8, 16, 1, 1}, "e", 4);
    plain_input.output("e", DataType::kFloat32, Shape{2, 8, 1, 1});
    const LayoutChoice plain_choice = choose_layouts(plain_input);
    EXPECT_EQ(plain_choice.blocked, (Names{"c", "r"}));
    EXPECT_FALSE(plain_choice.flags.contains("pool"));
}

// SqueezeNet's MaxPool, named "pool": 3x3, stride 2, ceil_mode.
void add_squeezenet_max_pool(ModelBuilder& builder, const std::string& x, const std::string& y) {
    onnx::NodeProto& pool = builder.node("MaxPool", {x}, {y}, "pool");
    set_attr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(pool, "strides", std::vector<int64_t>{2, 2});
    set_attr(pool, "ceil_mode", int64_t{1});
}

// A SqueezeNet fire module after a ceil-mode MaxPool: the pool and the channel Concat keep the
// blocked layout; a MaxPool with Indices and a Concat along another axis do not.
TEST(BlockedLayout, MaxPoolAndChannelConcatStayBlocked) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 9, 9});
    add_conv(builder, "x", {16, 8, 3, 3}, "c", 1, 1);
    add_squeezenet_max_pool(builder, "c", "p");
    add_conv(builder, "p", {8, 16, 1, 1}, "s", 2);
    add_conv(builder, "s", {16, 8, 1, 1}, "e1", 3);
    add_conv(builder, "s", {16, 8, 3, 3}, "e3", 4, 1);
    set_attr(builder.node("Concat", {"e1", "e3"}, {"cat"}, "concat"), "axis", int64_t{1});
    add_conv(builder, "cat", {8, 32, 1, 1}, "y", 5);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 4, 4});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"c", "p", "s", "e1", "e3", "cat"}));
    EXPECT_EQ(choice.flags.at("pool"), "in");
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 8, 9, 9}).size(), 7u);

    ModelBuilder other_axis = builder;
    other_axis.node("MaxPool", {"e1"}, {"q", "q_indices"}, "pool_with_indices");
    set_attr(other_axis.node("Concat", {"e1", "e3"}, {"rows"}, "concat_rows"), "axis", int64_t{2});
    EXPECT_EQ(choose_layouts(other_axis).blocked, (Names{"c", "p", "s"}));
}

// Where oneDNN runs AVX-512 kernels, a class whose convolutions all have 16-channel multiples takes
// blocks of 16 (nChw16c): here a fire module with its pool, its Concat and an Add. A class with
// 8-channel multiples only takes blocks of 8, and the convolutions between the two reorder their
// narrow side.
TEST(BlockedLayout, WideBlocksWhereEveryConvolutionOfAClassTakesThem) {
    auto fire_module = [](int64_t squeeze) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1, 8, 9, 9});
        add_conv(builder, "x", {32, 8, 3, 3}, "c", 1, 1);
        add_squeezenet_max_pool(builder, "c", "p");
        add_conv(builder, "p", {squeeze, 32, 1, 1}, "s", 2);
        builder.node("Relu", {"s"}, {"sr"}, "relu_s");
        add_conv(builder, "sr", {16, squeeze, 1, 1}, "e1", 3);
        add_conv(builder, "sr", {16, squeeze, 3, 3}, "e3", 4, 1);
        set_attr(builder.node("Concat", {"e1", "e3"}, {"cat"}, "concat"), "axis", int64_t{1});
        builder.node("Add", {"cat", "p"}, {"sum"}, "add");
        add_conv(builder, "sum", {8, 32, 1, 1}, "y", 5);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 4, 4});
        return builder;
    };
    using Flags = std::map<std::string, std::string>;
    const Flags narrow_flags{{"conv_c", "out"},     {"pool", "in"},        {"conv_s", "in+out"},
                             {"conv_e1", "in+out"}, {"conv_e3", "in+out"}, {"conv_y", "in"}};
    // A 16-channel squeeze keeps every class at 16; a 24-channel one takes blocks of 8 for its class
    // (s, sr) only.
    const std::pair<int64_t, Flags> cases[] = {{16,
                                                {{"conv_c", "out16"},
                                                 {"pool", "in16"},
                                                 {"conv_s", "in16+out16"},
                                                 {"conv_e1", "in16+out16"},
                                                 {"conv_e3", "in16+out16"},
                                                 {"conv_y", "in16"}}},
                                               {24,
                                                {{"conv_c", "out16"},
                                                 {"pool", "in16"},
                                                 {"conv_s", "in16+out"},
                                                 {"conv_e1", "in+out16"},
                                                 {"conv_e3", "in+out16"},
                                                 {"conv_y", "in16"}}}};
    for (const auto& [squeeze, wide_flags] : cases) {
        const ModelBuilder model = fire_module(squeeze);
        const LayoutChoice wide = choose_layouts(model, {}, kWideChannelBlock);
        EXPECT_EQ(wide.blocked, (Names{"c", "p", "s", "sr", "e1", "e3", "cat", "sum"})) << squeeze;
        EXPECT_EQ(wide.flags, wide_flags) << squeeze;
        EXPECT_EQ(choose_layouts(model, {}, kNarrowChannelBlock).flags, narrow_flags) << squeeze;
        EXPECT_EQ(expect_same_values(model, "y", kBlockedLayoutTolerance, {1, 8, 9, 9}).size(), 8u) << squeeze;
    }

    // An inverted residual block: a 24-channel input, a 48-channel expansion, the projection with
    // the input added. As the fusion pass leaves it (the Add folded into conv_c), only convolutions
    // meet the 24-channel class, all with 24 channels: it takes blocks of 16, the last one padded,
    // as oneDNN and ONNX Runtime pad it. Where another operator reads the sum too (a Mul by 2), the
    // class takes blocks of 8, and conv_b and conv_c run in 16 and reorder their narrow side, conv_c
    // with the residual folded in.
    auto inverted_residual = [](bool shared, bool folded) {
        ModelBuilder block(17);
        block.input("x", DataType::kFloat32, Shape{2, 8, 6, 6});
        add_conv(block, "x", {24, 8, 3, 3}, "a", 11, 1);
        add_conv(block, "a", {48, 24, 1, 1}, "b", 12);
        block.node("Relu", {"b"}, {"br"}, "relu_b");
        onnx::NodeProto& conv_c = add_conv(block, "br", {24, 48, 1, 1}, folded ? "sum" : "c", 13);
        if (folded) {
            conv_c.set_name("conv_c");
            conv_c.add_input("a");
            set_attr(conv_c, std::string(kFusedResidualAttr), int64_t{1});
        } else {
            block.node("Add", {"c", "a"}, {"sum"}, "add");
        }
        if (shared) {
            block.initializer("two", scalar(2.0f));
            block.node("Mul", {"sum", "two"}, {"m"}, "double");
        }
        add_conv(block, shared ? "m" : "sum", {16, 24, 3, 3}, "y", 14, 1);
        block.output("y", DataType::kFloat32, Shape{2, 16, 6, 6});
        return block;
    };
    EXPECT_EQ(choose_layouts(inverted_residual(false, true), {}, kWideChannelBlock).flags,
              (Flags{{"conv_a", "out16"}, {"conv_b", "in16+out16"}, {"conv_c", "in16+out16"}, {"conv_y", "in16"}}));
    EXPECT_EQ(choose_layouts(inverted_residual(true, true), {}, kWideChannelBlock).flags,
              (Flags{{"conv_a", "out"}, {"conv_b", "in+out16"}, {"conv_c", "in16+out"}, {"conv_y", "in"}}));
    for (const bool shared : {false, true}) {
        const ModelBuilder block = inverted_residual(shared, false);
        const Names expected = shared ? Names{"conv_a", "conv_b", "conv_c", "double", "conv_y"}
                                      : Names{"conv_a", "conv_b", "conv_c", "conv_y"};
        EXPECT_EQ(expect_same_values(block, "y", kBlockedLayoutTolerance, {2, 8, 6, 6}), expected);
        // No convolution falls back to oneDNN's reference loop (a residual post-op in the narrow
        // layout of a primitive that writes the wide one did, 1000x slower).
        const Severity previous = logger().severity();
        logger().set_severity(Severity::kSuperVerbose);
        ::testing::internal::CaptureStdout();
        Session(*block.build(), with_fusion(true, kWideChannelBlock)).run({{"x", random_tensor({2, 8, 6, 6}, 3)}});
        const std::string log = ::testing::internal::GetCapturedStdout();
        logger().set_severity(previous);
        EXPECT_NE(log.find("'conv_c' (Conv): input (2, 48, 6, 6) runs on oneDNN"), std::string::npos) << log;
        EXPECT_NE(log.find("'conv_y' (Conv): input (2, 24, 6, 6) runs on oneDNN"), std::string::npos) << log;
        EXPECT_EQ(log.find("runs on oneDNN ref"), std::string::npos) << log;
    }

    // A session takes 0 (the CPU's widest), 8 or 16 only.
    for (const int value : {-1, 4, 32}) {
        try {
            const Session session(*fire_module(16).build(), with_fusion(true, value));
            ADD_FAILURE() << "no error for " << value;
        } catch (const PolygraphyException& error) {
            EXPECT_EQ(std::string(error.what()), "Invalid channel block: " + std::to_string(value) +
                                                     " (expected 0 for the CPU's widest, 8 or 16)");
        }
    }
}

// As written, a NaN anywhere in a MaxPool window gives NaN; the blocked kernel keeps that.
TEST(BlockedLayout, BlockedMaxPoolGivesNaNForAWindowWithANaN) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 6, 6});
    add_conv(builder, "x", {16, 8, 1, 1}, "c", 1);  // 1x1: a NaN stays at its position
    onnx::NodeProto& pool = builder.node("MaxPool", {"c"}, {"p"}, "pool");
    set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(pool, "strides", std::vector<int64_t>{2, 2});
    std::vector<double> eye(16 * 16, 0.0);  // a Conv that copies the pool's output
    for (std::size_t c = 0; c < 16; ++c) eye[c * 16 + c] = 1.0;
    builder.initializer("eye", Tensor::from_doubles(DataType::kFloat32, {16, 16, 1, 1}, eye));
    builder.node("Conv", {"p", "eye"}, {"y"}, "copy");
    builder.output("y", DataType::kFloat32, Shape{1, 16, 3, 3});
    ASSERT_EQ(choose_layouts(builder).flags.at("pool"), "in");

    Tensor x = random_tensor({1, 8, 6, 6}, 2);
    x.data_as<float>()[1 * 6 + 4] = std::numeric_limits<float>::quiet_NaN();  // in pooling window (0, 2)
    const OnnxModel model = builder.build();
    const Tensor fused = Session(*model, with_fusion(true)).run({{"x", x}}).at("y");
    const Tensor written = Session(*model, with_fusion(false)).run({{"x", x}}).at("y");
    ASSERT_EQ(fused.numel(), 16 * 9);
    for (int64_t i = 0; i < fused.numel(); ++i) {
        const float a = fused.data_as<float>()[i], b = written.data_as<float>()[i];
        EXPECT_EQ(std::isnan(a), i % 9 == 2) << "y[" << i << "]";
        EXPECT_EQ(std::isnan(a), std::isnan(b)) << "y[" << i << "]";
        if (!std::isnan(b)) {
            EXPECT_NEAR(a, b, kBlockedLayoutTolerance) << "y[" << i << "]";
        }
    }
}

TEST(BlockedLayout, WeightSharedThroughIdentityIsAConstantAndTheIdentityDoesNotRun) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 5, 5});
    builder.initializer("w", random_tensor({16, 8, 1, 1}, 1));
    builder.node("Identity", {"w"}, {"w_shared"}, "share");  // as torch exports a shared weight
    builder.node("Conv", {"x", "w_shared"}, {"c"}, "conv1");
    add_conv(builder, "c", {8, 16, 1, 1}, "y", 2);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 5, 5});
    EXPECT_EQ(choose_layouts(builder).blocked, Names{"c"});
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 8, 5, 5}), (Names{"conv1", "conv_y"}));
}

TEST(BlockedLayout, BadBlockedAttributesFailWithAClearMessage) {
    for (int64_t value : {int64_t{2}, int64_t{1}, kNarrowChannelBlock, kWideChannelBlock}) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1, 8, 4, 4});
        set_attr(add_conv(builder, "x", {8, 8, 1, 1}, "y", 1), std::string(kBlockedInputAttr), value);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 4, 4});
        const OnnxModel model = builder.build();
        try {
            // 1 and 2 are refused when the session is made; 8 and 16 on a plain NCHW input when it runs.
            const Session session(*model, with_fusion(false));
            session.run({{"x", random_tensor({1, 8, 4, 4}, 2)}});
            ADD_FAILURE() << "no error for " << value;
        } catch (const std::exception& error) {
            const std::string expected = value < kNarrowChannelBlock
                                             ? "must be 0, 8 or 16, but it is " + std::to_string(value)
                                             : "expected a channel-blocked float32 input [N, C/" +
                                                   std::to_string(value) + ", H, W, " + std::to_string(value) + "]";
            EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
        }
    }
}

// The pools take a blocked input only where the pass gives them one: anything else is refused with
// one message naming the node when the session is made.
TEST(BlockedLayout, PoolsThatHaveNoBlockedKernelRefuseTheAttribute) {
    for (const std::string op : {"GlobalMaxPool", "AveragePool"}) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1, 8, 4, 4});
        onnx::NodeProto& pool = builder.node(op, {"x"}, {"y"}, "pool");
        if (op == "AveragePool") set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
        set_attr(pool, std::string(kBlockedInputAttr), kNarrowChannelBlock);
        builder.output("y", DataType::kFloat32, DynShape{});
        try {
            const Session session(*builder.build(), with_fusion(false));
            ADD_FAILURE() << "no error for " << op;
        } catch (const std::exception& error) {
            EXPECT_NE(std::string(error.what()).find("'pool': only"), std::string::npos) << error.what();
        }
    }
    // GlobalAveragePool writes a blocked output from a blocked input only.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 4, 4});
    set_attr(builder.node("GlobalAveragePool", {"x"}, {"y"}, "pool"), std::string(kBlockedOutputAttr),
             kWideChannelBlock);
    builder.output("y", DataType::kFloat32, DynShape{});
    try {
        const Session session(*builder.build(), with_fusion(false));
        ADD_FAILURE() << "no error for a blocked output of a plain input";
    } catch (const std::exception& error) {
        EXPECT_NE(std::string(error.what()).find("'pool': a channel-blocked output needs a channel-blocked input"),
                  std::string::npos)
            << error.what();
    }
}

}  // namespace
}  // namespace polygraphy::ref
