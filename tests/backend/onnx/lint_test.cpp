// lint_onnx: every independent problem of a model, with its node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/evaluator.h"
#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/data_loader.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using testing::ModelBuilder;

class Lint : public ::testing::Test {
protected:
    void SetUp() override { logger().set_severity(Severity::kCritical); }
    void TearDown() override { logger().reset(); }

    static LintOptions generated_inputs() {
        LintOptions options;
        options.make_feed = [](const TensorMetadata& metadata) { return DataLoader().generate(0, metadata); };
        return options;
    }

    static std::vector<std::string> messages(const LintReport& report, LintLevel level) {
        std::vector<std::string> out;
        for (const auto& entry : report.entries())
            if (entry.level == level) out.push_back(entry.message);
        return out;
    }

    static const LintEntry* find(const LintReport& report, const std::string& text) {
        for (const auto& entry : report.entries())
            if (entry.message.find(text) != std::string::npos) return &entry;
        return nullptr;
    }
};

TEST_F(Lint, ValidModelPasses) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.initializer("b", Tensor::from_doubles(DataType::kFloat32, {3}, {1, 2, 3}));
    builder.node("Relu", {"x"}, {"r"}, "relu");
    builder.node("Add", {"r", "b"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    const LintReport report = lint_onnx(*builder.build(), generated_inputs());
    EXPECT_TRUE(report.valid());
    EXPECT_TRUE(report.entries().empty()) << report.to_json();
    EXPECT_THAT(report.passing(), ElementsAre("relu", "polygraphy_unnamed_node_1"));
    EXPECT_TRUE(report.failing().empty());
    EXPECT_EQ(report.to_json(),
              "{\n"
              "    \"summary\": {\n"
              "        \"passing\": [\n"
              "            \"relu\",\n"
              "            \"polygraphy_unnamed_node_1\"\n"
              "        ],\n"
              "        \"failing\": []\n"
              "    },\n"
              "    \"lint_entries\": []\n"
              "}");
}

// F22 (structure fuzzing run 15): a sparse tensor attribute whose int64 indices hold a few raw bytes
// made libonnx 1.12's checker copy them into an empty vector (SIGSEGV through `check lint`). The
// lint reports it itself and keeps such tensors away from the checker, in a node's attributes and
// in the graph's sparse initializers alike; one that fits its shape still reaches the checker.
TEST_F(Lint, MalformedSparseTensorsAreReportedWithoutTheOnnxChecker) {
    auto with_sparse_attribute = [](const std::string& raw_indices, int64_t nnz) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{2, 3});
        onnx::NodeProto& relu = builder.node("Relu", {"x"}, {"y"}, "relu");
        onnx::AttributeProto& attr = *relu.add_attribute();
        attr.set_name("stray");
        attr.set_type(onnx::AttributeProto::SPARSE_TENSOR);
        onnx::SparseTensorProto& sparse = *attr.mutable_sparse_tensor();
        sparse.add_dims(8);
        sparse.mutable_values()->set_data_type(onnx::TensorProto::FLOAT);
        sparse.mutable_values()->add_dims(nnz);
        for (int64_t i = 0; i < nnz; ++i) sparse.mutable_values()->add_float_data(1.0f);
        sparse.mutable_indices()->set_data_type(onnx::TensorProto::INT64);
        sparse.mutable_indices()->add_dims(nnz);
        sparse.mutable_indices()->set_raw_data(raw_indices);
        builder.output("y", DataType::kFloat32, Shape{2, 3});
        return builder.build();
    };
    const LintReport bad = lint_onnx(*with_sparse_attribute("abc", 1), generated_inputs());
    EXPECT_FALSE(bad.valid());
    const LintEntry* entry = find(bad, "Malformed sparse tensor attribute 'stray'");
    ASSERT_NE(entry, nullptr) << bad.to_json();
    EXPECT_EQ(entry->level, LintLevel::kException);
    EXPECT_NE(find(bad, "its indices hold another number of values than their shape"), nullptr);

    // Two whole int64 indices for nnz 2 are well-formed: the checker sees them and says what it says
    // of a stray attribute, nothing about sparse tensors.
    std::string two(16, '\0');
    two[8] = 3;
    const LintReport fitting = lint_onnx(*with_sparse_attribute(two, 2), generated_inputs());
    EXPECT_EQ(find(fitting, "Malformed sparse tensor"), nullptr) << fitting.to_json();
    EXPECT_NE(find(fitting, "Unrecognized attribute: stray"), nullptr) << fitting.to_json();
}

TEST_F(Lint, DuplicateNodeNamesAsPolygraphy) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"a"}, "identical");
    builder.node("Relu", {"a"}, {"y"}, "identical");
    builder.output("y", DataType::kFloat32, Shape{2});
    const LintReport report = lint_onnx(*builder.build(), generated_inputs());
    EXPECT_FALSE(report.valid());
    ASSERT_FALSE(report.entries().empty());
    const LintEntry& entry = report.entries()[0];
    EXPECT_EQ(entry.level, LintLevel::kException);
    EXPECT_EQ(entry.source, "onnx_graphsurgeon");
    EXPECT_EQ(entry.message, "Duplicate node name: 'identical' for nodes with topological IDs: [0, 1] found.");
    EXPECT_EQ(entry.node, "identical");
    EXPECT_THAT(report.failing(), ElementsAre("identical"));
    EXPECT_THAT(report.to_json(), HasSubstr("\"nodes\": [\n                \"identical\"\n            ]"));
}

TEST_F(Lint, EveryIndependentRuntimeFailureIsReported) {
    // MatMul_0 and Add_0 fail on their own; MatMul_2 (fed by both) is skipped; MatMul_1 passes.
    ModelBuilder builder(17);
    builder.input("A", DataType::kFloat32, Shape{2, 3});
    builder.input("B", DataType::kFloat32, Shape{4, 5});
    builder.input("C", DataType::kFloat32, Shape{2, 3});
    builder.input("D", DataType::kFloat32, Shape{4, 5});
    builder.input("E", DataType::kFloat32, Shape{3, 3});
    builder.node("MatMul", {"A", "B"}, {"m0"}, "MatMul_0");
    builder.node("Add", {"C", "D"}, {"a0"}, "Add_0");
    builder.node("MatMul", {"E", "E"}, {"m1"}, "MatMul_1");
    builder.node("MatMul", {"m0", "a0"}, {"m2"}, "MatMul_2");
    builder.node("Add", {"m2", "m1"}, {"out"}, "Add_1");
    builder.output("out", DataType::kFloat32, Shape{3, 3});
    const LintReport report = lint_onnx(*builder.build(), generated_inputs());
    EXPECT_FALSE(report.valid());
    EXPECT_THAT(report.failing(), UnorderedElementsAre("MatMul_0", "Add_0"));
    EXPECT_THAT(report.passing(), ElementsAre("MatMul_1"));
    const LintEntry* matmul = find(report, "MatMul");
    for (const auto& entry : report.entries())
        if (entry.node == std::optional<std::string>("MatMul_0")) matmul = &entry;
    ASSERT_NE(matmul, nullptr);
    EXPECT_EQ(matmul->source, "ref_runtime");
    EXPECT_EQ(matmul->level, LintLevel::kException);
}

TEST_F(Lint, DataDependentFailuresFollowTheInputs) {
    // y = MatMul(x, Reshape(w, shape)): only some values of `shape` make the MatMul valid.
    ModelBuilder builder(17);
    builder.input("shape", DataType::kInt64, Shape{2});
    builder.initializer("x", Tensor::from_doubles(DataType::kFloat32, {1, 2}, {1, 2}));
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {2}, {3, 4}));
    builder.node("Reshape", {"w", "shape"}, {"r"}, "Reshape");
    builder.node("MatMul", {"x", "r"}, {"y"}, "MatMul");
    builder.output("y", DataType::kFloat32, Shape{1, 1});
    const OnnxModel model = builder.build();

    for (bool good : {true, false}) {
        LintOptions options;
        options.make_feed = [good](const TensorMetadata&) {
            TensorMap feed;
            feed.set("shape", Tensor::from_doubles(DataType::kInt64, {2}, {good ? 2.0 : 1.0, good ? 1.0 : 2.0}));
            return feed;
        };
        const LintReport report = lint_onnx(*model, options);
        EXPECT_EQ(report.valid(), good) << report.to_json();
        if (good) {
            EXPECT_THAT(report.passing(), UnorderedElementsAre("Reshape", "MatMul"));
        } else {
            EXPECT_THAT(report.passing(), ElementsAre("Reshape"));
            EXPECT_THAT(report.failing(), ElementsAre("MatMul"));
        }
    }
}

/// The default evaluator without one operator: what a runtime that lacks a kernel looks like to
/// lint (the built-in runtime now has every operator this test could name).
class EvaluatorWithout final : public GraphEvaluator {
public:
    explicit EvaluatorWithout(std::string op_type) : op_type_(std::move(op_type)) {
        for (const SupportedOp& op : default_graph_evaluator().supported_ops())
            if (op.op_type != op_type_) ops_.push_back(op);
    }
    std::string name() const override { return default_graph_evaluator().name(); }
    const std::vector<SupportedOp>& supported_ops() const override { return ops_; }
    std::unique_ptr<PreparedGraph> prepare(const onnx::ModelProto& model, const TensorMap& constants,
                                           int num_threads) const override {
        for (const auto& node : model.graph().node())
            if (node.op_type() == op_type_) throw UnsupportedError("no kernel for " + op_type_);
        return default_graph_evaluator().prepare(model, constants, num_threads);
    }

private:
    std::string op_type_;
    std::vector<SupportedOp> ops_;
};

TEST_F(Lint, OperatorsTheRuntimeLacksAreNotedAndSkipped) {
    // A valid ONNX operator the runtime lacks: noted, and what follows it is skipped.
    const EvaluatorWithout without_det("Det");
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 2});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Det", {"a"}, {"b"}, "det");
    builder.node("Neg", {"b"}, {"c"}, "neg");
    builder.output("c", DataType::kFloat32, Shape{});
    LintOptions options = generated_inputs();
    options.evaluator = &without_det;
    const LintReport report = lint_onnx(*builder.build(), options);
    EXPECT_TRUE(report.valid()) << report.to_json();
    const LintEntry* note = find(report, "The built-in runtime has no kernel for Det");
    ASSERT_NE(note, nullptr) << report.to_json();
    EXPECT_EQ(note->level, LintLevel::kInfo);
    EXPECT_THAT(report.passing(), ElementsAre("relu", "det"));
    // With every kernel, the same model runs through without a note.
    EXPECT_EQ(find(lint_onnx(*builder.build(), generated_inputs()), "has no kernel"), nullptr);
}

TEST_F(Lint, GraphProblemsAreAllReported) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.input("unused", DataType::kFloat32, Shape{2});
    builder.initializer("spare", Tensor::from_doubles(DataType::kFloat32, {1}, {0}));
    builder.node("Add", {"x", "ghost"}, {"a"}, "reads_ghost");
    builder.node("Relu", {"x"}, {"a"}, "writes_a_again");
    builder.node("Relu", {"x"}, {"dead"}, "dead_end");
    builder.node("Relu", {"a"}, {"y"}, "last");
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.output("never", DataType::kFloat32, Shape{2});
    const LintReport report = lint_onnx(*builder.build(), generated_inputs());
    EXPECT_FALSE(report.valid());
    const auto exceptions = messages(report, LintLevel::kException);
    EXPECT_THAT(exceptions, ::testing::Contains(HasSubstr("Input 'ghost' is not produced by any node")));
    EXPECT_THAT(exceptions, ::testing::Contains(HasSubstr("Tensor 'a' is also produced by node 'reads_ghost'")));
    EXPECT_THAT(exceptions, ::testing::Contains(HasSubstr("Graph output 'never' is not produced by any node")));
    const auto warnings = messages(report, LintLevel::kWarning);
    EXPECT_THAT(warnings, ::testing::Contains("Input: 'unused' does not affect outputs, can be removed."));
    EXPECT_THAT(warnings, ::testing::Contains("Initializer: 'spare' is not used by any node, can be removed."));
    const LintEntry* dead = nullptr;
    for (const auto& entry : report.entries())
        if (entry.node == std::optional<std::string>("dead_end")) dead = &entry;
    ASSERT_NE(dead, nullptr);
    EXPECT_EQ(dead->message, "Does not affect outputs, can be removed.");
    EXPECT_THAT(report.failing(), ::testing::IsSupersetOf({"reads_ghost", "writes_a_again"}));
}

TEST_F(Lint, CheckerFindsBadAttributesAndUnknownOps) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    auto& relu = builder.node("Relu", {"x"}, {"a"}, "relu");
    testing::set_attr(relu, "bogus", int64_t{1});
    builder.node("FooBar", {"a"}, {"b"}, "foo");
    builder.node("Relu", {"x"}, {"y"}, "fine");
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.output("b", DataType::kFloat32, Shape{2});
    const LintReport report = lint_onnx(*builder.build(), generated_inputs());
    EXPECT_FALSE(report.valid());
    bool relu_flagged = false, foo_flagged = false;
    for (const auto& entry : report.entries()) {
        if (entry.source != "onnx_checker" || entry.level != LintLevel::kException) continue;
        if (entry.node == std::optional<std::string>("relu")) relu_flagged = entry.message.find("bogus") != std::string::npos;
        if (entry.node == std::optional<std::string>("foo")) foo_flagged = entry.message.find("FooBar") != std::string::npos;
    }
    EXPECT_TRUE(relu_flagged) << report.to_json();
    EXPECT_TRUE(foo_flagged) << report.to_json();
    EXPECT_THAT(report.failing(), UnorderedElementsAre("relu", "foo"));
    EXPECT_THAT(report.passing(), ::testing::Contains("fine"));
}

TEST_F(Lint, NewIrVersionsSkipTheCheckerButNotTheGraphChecks) {
    ModelBuilder builder(21);
    builder.ir_version(10);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("FooBar", {"a"}, {"b"}, "foo");
    builder.node("Relu", {"a"}, {"c"}, "custom_domain_missing", "nowhere");
    builder.output("b", DataType::kFloat32, Shape{2});
    builder.output("c", DataType::kFloat32, Shape{2});
    const LintReport report = lint_onnx(*builder.build(), generated_inputs());
    const LintEntry* note = find(report, "The ONNX checker was not run");
    ASSERT_NE(note, nullptr) << report.to_json();
    EXPECT_EQ(note->level, LintLevel::kWarning);
    EXPECT_THAT(note->message, HasSubstr("IR version 10 and opset 21"));
    EXPECT_NE(find(report, "Unknown operator FooBar in domain 'ai.onnx'"), nullptr) << report.to_json();
    EXPECT_NE(find(report, "No opset import for domain 'nowhere'"), nullptr) << report.to_json();
    EXPECT_THAT(report.passing(), ::testing::Contains("relu"));
}

TEST_F(Lint, LaterIrVersionsWithoutTheirTypesAreCheckedAsIr8) {
    ModelBuilder builder(11, "");  // no graph name: the checker's finding
    builder.ir_version(9);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{}, false);  // no shape: tolerated as by Polygraphy
    LintReport report = lint_onnx(*builder.build(), generated_inputs());
    const LintEntry* note = find(report, "The ONNX checker ran as for IR version 8");
    ASSERT_NE(note, nullptr) << report.to_json();
    EXPECT_EQ(note->level, LintLevel::kInfo);
    const LintEntry* name = find(report, "name");
    ASSERT_NE(name, nullptr) << report.to_json();
    EXPECT_EQ(name->source, "onnx_checker");
    EXPECT_EQ(name->level, LintLevel::kException);
    EXPECT_EQ(find(report, "shape"), nullptr) << report.to_json();

    // float8 needs IR 9: the checker cannot check it, and says so.
    builder.proto().mutable_graph()->set_name("g");
    builder.initializer("f8", Tensor(DataType::kFloat8E4M3FN, {1}));
    report = lint_onnx(*builder.build(), generated_inputs());
    EXPECT_NE(find(report, "uses data types of a later IR version"), nullptr) << report.to_json();
}

TEST_F(Lint, CustomOpsAreWarnings) {
    ModelBuilder builder(17);
    builder.opset_import("com.example", 1);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("MyOp", {"x"}, {"y"}, "custom", "com.example");
    builder.output("y", DataType::kFloat32, Shape{2});
    const LintReport report = lint_onnx(*builder.build(), generated_inputs());
    EXPECT_TRUE(report.valid()) << report.to_json();
    const LintEntry* entry = find(report, "is not a registered function/op");
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->level, LintLevel::kWarning);
    EXPECT_THAT(report.passing(), ElementsAre("custom"));
}

TEST_F(Lint, EmptyGraphAndUngeneratableInputs) {
    ModelBuilder empty(17);
    const LintReport report = lint_onnx(*empty.build(), generated_inputs());
    EXPECT_TRUE(report.valid());
    ASSERT_EQ(report.entries().size(), 1u);
    EXPECT_EQ(report.entries()[0].message, "ONNX model has no nodes");

    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{2});
    LintOptions options;
    options.make_feed = [](const TensorMetadata&) -> TensorMap { throw UnsupportedError("no data for you"); };
    const LintReport skipped = lint_onnx(*builder.build(), options);
    EXPECT_TRUE(skipped.valid());
    EXPECT_NE(find(skipped, "The test inference was skipped"), nullptr);
}

}  // namespace
}  // namespace polygraphy
