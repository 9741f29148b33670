// GraphEvaluator: the seam through which graph passes run models (folding, shape inference, lint,
// capability), the default registration of the built-in runtime, and evaluate_node().
#include "polygraphy/backend/onnx/evaluator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "model_builder.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/backend/ref/evaluator.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using testing::error_message;
using ::testing::HasSubstr;
using testing::ModelBuilder;

// The built-in runtime restricted to some operators (the others cannot be prepared), counting the
// models it prepares.
class CountingEvaluator final : public GraphEvaluator {
public:
    explicit CountingEvaluator(std::vector<std::string> ops) {
        for (const SupportedOp& op : ref::graph_evaluator().supported_ops())
            if (std::find(ops.begin(), ops.end(), op.op_type) != ops.end()) ops_.push_back(op);
    }
    std::string name() const override { return "the counting runtime"; }
    const std::vector<SupportedOp>& supported_ops() const override { return ops_; }
    std::unique_ptr<PreparedGraph> prepare(const onnx::ModelProto& model, const TensorMap& constants,
                                           int num_threads) const override {
        ++prepared;
        for (const auto& node : model.graph().node())
            if (!supports(node.domain(), node.op_type(), get_onnx_opset(model, node.domain())))
                throw UnsupportedError("no kernel for " + node.op_type());
        return ref::graph_evaluator().prepare(model, constants, num_threads);
    }
    mutable std::atomic<int> prepared{0};

private:
    std::vector<SupportedOp> ops_;
};

std::vector<std::string> op_types(const onnx::ModelProto& model) {
    std::vector<std::string> ops;
    for (const auto& node : model.graph().node()) ops.push_back(node.op_type());
    return ops;
}

TEST(GraphEvaluatorTest, TheBuiltInRuntimeIsTheDefault) {
    const GraphEvaluator& evaluator = default_graph_evaluator();
    EXPECT_EQ(&evaluator, &ref::graph_evaluator());
    EXPECT_EQ(evaluator.name(), "the built-in runtime");
    EXPECT_TRUE(evaluator.supports("", "Relu", 14));
    EXPECT_TRUE(evaluator.supports("ai.onnx", "Relu", 14));
    EXPECT_FALSE(evaluator.supports("", "NoSuchOp", 17));
    // GroupNormalization exists from opset 18 only. (LayerNormalization runs below its opset 17 too,
    // as ONNX Runtime registers it there.)
    EXPECT_FALSE(evaluator.supports("", "GroupNormalization", 17));
    EXPECT_TRUE(evaluator.supports_some_opset("", "GroupNormalization"));
    EXPECT_TRUE(evaluator.supports("", "LayerNormalization", 16));
    EXPECT_TRUE(evaluator.supports("ai.onnx.ml", "LabelEncoder", 2));
}

TEST(GraphEvaluatorTest, WithoutADefaultPassesFailClearly) {
    set_default_graph_evaluator(nullptr);
    EXPECT_THAT(error_message<UnsupportedError>([] { default_graph_evaluator(); }),
                HasSubstr("No runtime is registered to evaluate graphs"));
    set_default_graph_evaluator(&ref::graph_evaluator());
}

TEST(GraphEvaluatorTest, EvaluateNodeRunsOneNodeOnConstants) {
    ModelBuilder builder(17);
    onnx::NodeProto& add = builder.node("Add", {"a", "b"}, {"c"});
    const onnx::NodeProto node = add;
    OnnxModel model = builder.build();
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2});
    const Tensor b = Tensor::from_doubles(DataType::kFloat32, {2}, {10, 20});
    const std::vector<Tensor> outputs = evaluate_node(default_graph_evaluator(), *model, node, "Add_3", {&a, &b});
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_THAT(testing::elements_of<float>(outputs[0]), ElementsAre(11, 22));
    // An unnamed node is called by its display name in errors.
    const Tensor c = Tensor::from_doubles(DataType::kFloat32, {3}, {1, 2, 3});
    EXPECT_THAT(error_message<PolygraphyException>([&] {
                    evaluate_node(default_graph_evaluator(), *model, node, "Add_3", {&a, &c});
                }),
                HasSubstr("Node 'Add_3' (Add)"));
}

TEST(GraphEvaluatorTest, FoldingRunsOnTheGivenEvaluatorAndSkipsWhatItLacks) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {2}, {1, -2}));
    builder.initializer("two", Tensor::from_doubles(DataType::kFloat32, {2}, {2, 2}));
    builder.node("Mul", {"w", "two"}, {"w2"}, "mul");
    builder.node("Neg", {"w"}, {"nw"}, "neg");
    builder.node("Add", {"x", "w2"}, {"s"}, "add");
    builder.node("Add", {"s", "nw"}, {"y"}, "add2");
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    CountingEvaluator only_mul({"Mul"});
    FoldConstantsOptions options;
    options.evaluator = &only_mul;
    EXPECT_EQ(fold_constants(*model, options).nodes_folded, 1u);
    EXPECT_THAT(op_types(*model), ElementsAre("Neg", "Add", "Add"));
    EXPECT_EQ(only_mul.prepared, 1);
}

TEST(GraphEvaluatorTest, ShapeInferenceFallsBackToTheGivenEvaluator) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.node("Relu", {"x"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{}, false);
    OnnxModel model = builder.build();
    CountingEvaluator relu({"Relu"});
    EXPECT_EQ(infer_shapes(*model, true, &relu), ShapeInferenceMethod::kRuntime);
    EXPECT_EQ(relu.prepared, 1);
    EXPECT_EQ(model->graph().output(0).type().tensor_type().shape().dim_size(), 2);
    // A runtime that cannot run the model leaves the shapes unknown.
    OnnxModel other = builder.build();
    CountingEvaluator none({});
    EXPECT_EQ(infer_shapes(*other, true, &none), ShapeInferenceMethod::kNone);
}

TEST(GraphEvaluatorTest, LintTestInferenceRunsOnTheGivenEvaluator) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"r"}, "relu");
    builder.node("Neg", {"r"}, {"y"}, "neg");
    builder.output("y", DataType::kFloat32, Shape{2});
    CountingEvaluator relu_only({"Relu"});
    LintOptions options;
    options.evaluator = &relu_only;
    options.make_feed = [](const TensorMetadata&) {
        TensorMap feed;
        feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {-1, 1}));
        return feed;
    };
    const LintReport report = lint_onnx(*builder.build(), options);
    // The whole model cannot be prepared, then each node is tried: Neg is noted as unchecked.
    bool noted = false;
    for (const LintEntry& entry : report.entries())
        noted = noted || entry.message.find("The counting runtime has no kernel for Neg") != std::string::npos;
    EXPECT_TRUE(noted);
    EXPECT_GE(relu_only.prepared, 2);
}

TEST(RefSessionTest, ConstantsAreInitializersGivenAsTensors) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Add", {"x", "c"}, {"y"}, "add");
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    TensorMap constants;
    constants.set("c", Tensor::from_doubles(DataType::kFloat32, {2}, {10, 20}));
    ref::Session session(*model, {}, constants);
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    EXPECT_THAT(testing::elements_of<float>(session.run(feed).at("y")), ElementsAre(11, 22));
    TensorMap clash;
    clash.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    EXPECT_THAT(error_message<ModelError>([&] { ref::Session bad(*model, {}, clash); }),
                HasSubstr("Constant 'x' is also a graph input or initializer"));
}

}  // namespace
}  // namespace polygraphy
