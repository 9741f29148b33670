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

#include "../onnxrt/onnxrt_test_util.h"
#include "backend/ref/blocked_layout.h"
#include "backend/ref/compute/blocked_conv.h"
#include "backend/ref/fused_ops.h"
#include "backend/ref/fusion.h"
#include "model_builder.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "rewrite_test_util.h"

namespace polygraphy::ref {
namespace {

using namespace rewrite_testing;

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

/// The graph fuse_activations() leaves of `builder`'s model: its nodes as "domain.op_type" (the
/// default domain as ""), and the model with those nodes.
std::pair<Names, onnx::ModelProto> fused_graph(const ModelBuilder& builder, int64_t opset = 17) {
    const OnnxModel model = builder.build();
    std::vector<onnx::NodeProto> nodes(model->graph().node().begin(), model->graph().node().end());
    std::vector<std::vector<std::string>> node_inputs;
    for (const auto& node : nodes) node_inputs.emplace_back(node.input().begin(), node.input().end());
    const std::vector<bool> removed = fuse_activations(nodes, node_inputs, model->graph(), opset);
    onnx::ModelProto fused = *model;
    fused.mutable_graph()->clear_node();
    Names ops;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (removed[i]) continue;
        ops.push_back(nodes[i].domain() + "." + nodes[i].op_type());
        *fused.mutable_graph()->add_node() = nodes[i];
    }
    auto* import = fused.add_opset_import();
    import->set_domain("com.microsoft");
    import->set_version(1);
    return {ops, fused};
}

// What the passes fold makes a node a fused operator with a kernel of its own, never a standard
// node with private attributes: ONNX Runtime's where it has one of that meaning, and then the graph
// the runtime runs is one ONNX Runtime runs too, with the same values; the runtime's own operators
// (fused_ops.h) for the rest.
TEST(Fusion, FoldedNodesBecomeFusedOperatorsAndThoseOfOnnxRuntimeRunThere) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    auto conv_then = [](const std::string& activation) {
        ModelBuilder builder = conv_model();
        if (activation == "Clip") {
            builder.initializer("lo", scalar(0.0f));
            builder.initializer("hi", scalar(0.5f));
            builder.node("Clip", {"c", "lo", "hi"}, {"y"}, "clip");
        } else {
            builder.node(activation, {"c"}, {"y"}, "act");
        }
        builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
        return builder;
    };
    ModelBuilder gemm(17);
    gemm.input("x", DataType::kFloat32, Shape{3, 16});
    gemm.initializer("w", random_tensor({24, 16}, 1));
    gemm.initializer("c", random_tensor({24}, 2));
    set_attr(gemm.node("Gemm", {"x", "w", "c"}, {"g"}, "gemm"), "transB", int64_t{1});
    gemm.node("Relu", {"g"}, {"y"}, "relu");
    gemm.output("y", DataType::kFloat32, Shape{3, 24});
    ModelBuilder scaled(17);  // attention's scores: a product of two computed tensors, divided
    scaled.input("x", DataType::kFloat32, Shape{2, 5, 8});
    scaled.input("k", DataType::kFloat32, Shape{2, 8, 5});
    scaled.initializer("d", scalar(8.0f));
    scaled.node("MatMul", {"x", "k"}, {"s"}, "scores");
    scaled.node("Div", {"s", "d"}, {"y"}, "scale");
    scaled.output("y", DataType::kFloat32, Shape{2, 5, 5});

    const std::vector<std::pair<ModelBuilder, std::string>> onnxruntime_forms = {
        {conv_then("Relu"), "com.microsoft.FusedConv"},
        {conv_then("Clip"), "com.microsoft.FusedConv"},
        {gemm, "com.microsoft.FusedGemm"},
        {scaled, "com.microsoft.FusedMatMul"}};
    for (const auto& [builder, op] : onnxruntime_forms) {
        SCOPED_TRACE(op);
        const auto [ops, fused] = fused_graph(builder);
        EXPECT_EQ(ops, (Names{op}));
        TensorMap feed;
        for (const auto& input : fused.graph().input()) {
            Shape shape;
            for (const auto& dim : input.type().tensor_type().shape().dim()) shape.push_back(dim.dim_value());
            feed.set(input.name(), random_tensor(shape, 7, -2.0f, 2.0f));
        }
        const TensorMap theirs = onnxrt::session_from_onnx(fused)->run(feed);
        const Tensor ours = Session(*builder.build(), with_fusion(true)).run(feed).at("y").cast(DataType::kFloat64);
        const Tensor expected = theirs.at("y").cast(DataType::kFloat64);
        ASSERT_EQ(ours.shape(), expected.shape());
        for (int64_t i = 0; i < ours.numel(); ++i)
            ASSERT_NEAR(ours.data_as<double>()[i], expected.data_as<double>()[i], 1e-5) << i;
    }

    // The rest is the runtime's own: GELU and SiLU, residuals, Linear layers' biases.
    ModelBuilder gelu = conv_model(20);
    gelu.node("Gelu", {"c"}, {"y"}, "gelu");
    gelu.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    EXPECT_EQ(fused_graph(gelu, 20).first, (Names{"ai.polygraphy.ref.FusedConv"}));
    ModelBuilder residual = conv_model();
    residual.node("Add", {"x2", "c"}, {"y"}, "add");
    residual.input("x2", DataType::kFloat32, Shape{1, 8, 8, 8});
    residual.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    EXPECT_EQ(fused_graph(residual).first, (Names{"ai.polygraphy.ref.FusedConv"}));
    ModelBuilder linear(17);
    linear.input("x", DataType::kFloat32, Shape{3, 16});
    linear.initializer("w", random_tensor({16, 24}, 1));
    linear.initializer("b", random_tensor({24}, 2));
    linear.node("MatMul", {"x", "w"}, {"m"}, "matmul");
    linear.node("Add", {"m", "b"}, {"y"}, "bias");
    linear.output("y", DataType::kFloat32, Shape{3, 24});
    EXPECT_EQ(fused_graph(linear).first, (Names{"ai.polygraphy.ref.FusedMatMul"}));
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

}  // namespace
}  // namespace polygraphy::ref
