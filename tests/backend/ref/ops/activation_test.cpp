// Activations (src/backend/ref/ops/activation.cpp). Expected values carry the numpy expression.
#include <cmath>
#include <functional>
#include <limits>

#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

TEST(ActivationOps, Activations) {
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

TEST(ActivationOps, ActivationsWithAttributes) {
    // 0.5 * x * (1 + erf(x / sqrt(2))) and the tanh form, at x = 1
    EXPECT_TRUE(tensors_near(OpTester("Gelu", 20).input(f32({1}, {1})).run(), f32({1}, {0.841344746})));
    EXPECT_TRUE(tensors_near(OpTester("Gelu", 20).input(f32({1}, {1})).attr("approximate", "tanh").run(),
                             f32({1}, {0.841191990})));
    // x * np.tanh(np.log1p(np.exp(x))) at x = 1: 0.865098388
    EXPECT_TRUE(tensors_near(OpTester("Mish", 18).input(f32({1}, {1})).run(), f32({1}, {0.865098388})));
    // celu(-1, alpha=2) = 2 * (np.exp(-0.5) - 1) = -0.786938681
    EXPECT_TRUE(tensors_near(OpTester("Celu", 12).input(f32({2}, {-1, 3})).attr("alpha", 2.0).run(),
                             f32({2}, {-0.786938681, 3})));
    // np.where(x > 1.5, x, 0)
    EXPECT_TRUE(tensors_near(OpTester("ThresholdedRelu", 10).input(f32({3}, {1, 1.5, 2})).attr("alpha", 1.5).run(),
                             f32({3}, {0, 0, 2})));
    EXPECT_THROW_MESSAGE(OpTester("Gelu", 20).input(f32({1}, {1})).attr("approximate", "fast").run(), ModelError,
                         "attribute 'approximate' must be 'none' or 'tanh', but it is 'fast'");
}

TEST(ActivationOps, PRelu) {
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

TEST(ActivationOps, Shrink) {
    // np.where(x < -1.5, x + 1.5, np.where(x > 1.5, x - 1.5, 0)) for x = [-2, -1, 0, 1, 2]
    EXPECT_TRUE(tensors_near(
        OpTester("Shrink", 9).input(f32({5}, {-2, -1, 0, 1, 2})).attr("lambd", 1.5).attr("bias", 1.5).run(),
        f32({5}, {-0.5, 0, 0, 0, 0.5})));
    EXPECT_THROW_MESSAGE(OpTester("Shrink", 9).input(f32({1}, {0})).attr("lambd", -1.0).run(), ModelError,
                         "attribute 'lambd' must be non-negative");
}

TEST(ActivationOps, ClipByOpset) {
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

// ---- com.microsoft activations, against ONNX Runtime's CPU kernels ----------------------------------

// A model of one com.microsoft node reading `inputs` (float32, their shapes) and giving "y".
ModelBuilder contrib_model(const std::string& op, const std::vector<std::pair<std::string, Shape>>& inputs,
                           const Shape& output_shape) {
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    std::vector<std::string> names;
    for (const auto& [name, shape] : inputs) {
        builder.input(name, DataType::kFloat32, shape);
        names.push_back(name);
    }
    builder.node(op, names, {"y"}, "contrib", "com.microsoft");
    builder.output("y", DataType::kFloat32, output_shape);
    return builder;
}

TensorMap contrib_feed(const std::vector<std::pair<std::string, Shape>>& inputs) {
    TensorMap feed;
    uint32_t seed = 11;
    for (const auto& [name, shape] : inputs) feed.set(name, random_tensor(shape, seed++, -5.0f, 5.0f));
    return feed;
}

void expect_contrib_matches_onnxrt(const std::string& op, const std::vector<std::pair<std::string, Shape>>& inputs,
                                   const std::function<void(onnx::NodeProto&)>& attributes = {}) {
    ModelBuilder builder = contrib_model(op, inputs, inputs.front().second);
    if (attributes) attributes(*builder.proto().mutable_graph()->mutable_node(0));
    expect_matches_onnxrt(builder, contrib_feed(inputs));
}

const Shape kTokens = {2, 3, 16};  // batch, sequence, hidden

TEST(ContribActivations, GeluAndQuickGeluMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    expect_contrib_matches_onnxrt("Gelu", {{"x", kTokens}});
    expect_contrib_matches_onnxrt("QuickGelu", {{"x", kTokens}});
    expect_contrib_matches_onnxrt("QuickGelu", {{"x", kTokens}},
                                  [](onnx::NodeProto& node) { set_attr(node, "alpha", 1.25f); });
}

TEST(ContribActivations, FastGeluWithAndWithoutBiasAndBiasGeluMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    expect_contrib_matches_onnxrt("FastGelu", {{"x", kTokens}});
    expect_contrib_matches_onnxrt("FastGelu", {{"x", kTokens}, {"bias", {16}}});
    expect_contrib_matches_onnxrt("BiasGelu", {{"a", kTokens}, {"b", {16}}});
}

TEST(ContribActivations, ABiasThatIsNotOneRowOfTheLastDimensionIsOneLine) {
    const ModelBuilder builder = contrib_model("BiasGelu", {{"a", kTokens}, {"b", {3}}}, kTokens);
    const OnnxModel model = builder.build();
    EXPECT_EQ(error_message<ModelError>([&] {
                  ref::Session(*model).run(contrib_feed({{"a", kTokens}, {"b", {3}}}));
              }),
              "Node 'contrib' (BiasGelu): the bias must be 1-D with the size of the input's last dimension (16), "
              "but it has shape (3,)");
}

TEST(ContribActivations, TheNodeCheckKnowsTheirArity) {
    ModelBuilder builder = contrib_model("FastGelu", {{"x", kTokens}, {"bias", {16}}, {"extra", {16}}}, kTokens);
    const std::vector<NodeProblem> problems = find_node_problems(builder.proto());
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0].message(),
              "Malformed node 'contrib' (FastGelu, com.microsoft opset 1): it has 3 inputs, but FastGelu "
              "takes 1 to 2");
}

}  // namespace
}  // namespace polygraphy::testing
