// Activation folding (src/backend/ref/fusion.cpp): which patterns fold into the convolution, which
// must not, and that folded and unfolded sessions compute the same values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"

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

SessionOptions with_fusion(bool fuse) {
    SessionOptions options;
    options.num_threads = 1;
    options.fuse_activations = fuse;
    return options;
}

// Runs the model folded and as written on an input x of `x_shape`; returns the folded session's
// execution order after checking that both give `output` within `tolerance` (0: bit-identical).
Names expect_same_values(const ModelBuilder& builder, const std::string& output, double tolerance = 0.0,
                         const Shape& x_shape = {1, 4, 8, 8}) {
    const OnnxModel model = builder.build();
    const Session folded(*model, with_fusion(true));
    const Session written(*model, with_fusion(false));
    const TensorMap feed{{"x", random_tensor(x_shape, 3, -2.0f, 2.0f)}};
    const Tensor a = folded.run(feed).at(output), b = written.run(feed).at(output);
    EXPECT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.numel(); ++i)
        EXPECT_NEAR(a.data_as<float>()[i], b.data_as<float>()[i], tolerance) << output << "[" << i << "]";
    std::size_t runnable = 0;  // Constant nodes are evaluated while preparing, so they never run
    for (const auto& node : model->graph().node()) runnable += node.op_type() != "Constant";
    EXPECT_EQ(written.execution_order().size(), runnable);
    return folded.execution_order();
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

TEST(Fusion, ConsecutiveConvolutionsEachTakeTheirActivation) {
    ModelBuilder builder = conv_model();
    builder.node("Relu", {"c"}, {"r"}, "relu");
    builder.initializer("w2", random_tensor({8, 8, 1, 1}, 4));
    builder.node("Conv", {"r", "w2"}, {"c2"}, "conv2");
    builder.node("Relu", {"c2"}, {"y"}, "relu2");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    EXPECT_EQ(expect_same_values(builder, "y"), (Names{"conv", "conv2"}));
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

}  // namespace
}  // namespace polygraphy::ref
