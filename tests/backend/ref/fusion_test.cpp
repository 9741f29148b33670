// Activation folding (src/backend/ref/fusion.cpp): which patterns fold into the convolution, which
// must not, and that folded and unfolded sessions compute the same values.
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

// Runs the model folded and as written; returns the folded session's execution order after
// checking that both give `output` within `tolerance` (0: bit-identical).
Names expect_same_values(const ModelBuilder& builder, const std::string& output, double tolerance = 0.0) {
    const OnnxModel model = builder.build();
    const Session folded(*model, with_fusion(true));
    const Session written(*model, with_fusion(false));
    const TensorMap feed{{"x", random_tensor({1, 4, 8, 8}, 3, -2.0f, 2.0f)}};
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
            if (activation == "Relu") builder.node("Relu", {"c"}, {"y"}, "act");
            else builder.node("Clip", {"c", "lo", "hi"}, {"y"}, "act");
            builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
            const OnnxModel model = builder.build();
            Tensor x = random_tensor({1, 4, 8, 8}, 5);
            x.data_as<float>()[0] = std::numeric_limits<float>::quiet_NaN();
            const Session folded(*model, with_fusion(true));
            ASSERT_EQ(folded.execution_order(), (Names{"conv"}));
            const Tensor y = folded.run({{"x", x}}).at("y");
            const Tensor written = Session(*model, with_fusion(false)).run({{"x", x}}).at("y");
            const float expected = activation == "Relu" ? 0.0f : -0.5f;
            EXPECT_EQ(y.data_as<float>()[0], expected) << activation << " after a " << kernel << "x" << kernel << " conv";
            EXPECT_TRUE(std::isnan(written.data_as<float>()[0])) << activation;
        }
    }
}

}  // namespace
}  // namespace polygraphy::ref
