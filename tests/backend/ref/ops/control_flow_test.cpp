// If, Loop, Scan and SequenceMap: subgraphs run by nested sessions, outer-scope values, loop-carried
// values and scan outputs, and the errors for malformed bodies.
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::ref {
namespace {

using polygraphy::testing::ModelBuilder;
using polygraphy::testing::set_attr;
using testing::boolean;
using testing::f32;
using testing::i64;
using testing::tensors_near;
using testing::values_of;

void set_graph(onnx::NodeProto& node, const std::string& name, const onnx::GraphProto& graph) {
    auto* attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    *attribute->mutable_g() = graph;
}

// A branch computing `op(x, c)` of the outer value x and a constant c.
onnx::GraphProto branch(const std::string& op, double constant, const std::string& out) {
    ModelBuilder body(17, op + "_branch");
    body.initializer("c_" + out, f32({}, {constant}));
    body.node(op, {"x", "c_" + out}, {out});
    body.output(out, DataType::kFloat32, Shape{2});
    return body.proto().graph();
}

ModelBuilder if_model(const onnx::GraphProto& then_graph, const onnx::GraphProto& else_graph) {
    ModelBuilder builder(17);
    builder.input("cond", DataType::kBool, Shape{});
    builder.input("x", DataType::kFloat32, Shape{2});
    auto& node = builder.node("If", {"cond"}, {"y"}, "if");
    set_graph(node, "then_branch", then_graph);
    set_graph(node, "else_branch", else_graph);
    builder.output("y", DataType::kFloat32, Shape{2});
    return builder;
}

TEST(IfTest, RunsTheBranchTheConditionSelectsWithOuterValues) {
    Session session(*if_model(branch("Add", 1.0, "t"), branch("Mul", 2.0, "e")).build());
    const Tensor x = f32({2}, {3, -4});
    EXPECT_TRUE(tensors_near(session.run({{"cond", boolean({}, {1})}, {"x", x}}).at("y"), f32({2}, {4, -3})));
    EXPECT_TRUE(tensors_near(session.run({{"cond", boolean({}, {0})}, {"x", x}}).at("y"), f32({2}, {6, -8})));
}

TEST(IfTest, RejectsABranchWithTheWrongNumberOfOutputs) {
    onnx::GraphProto two = branch("Mul", 2.0, "e");
    *two.add_output() = two.output(0);
    two.mutable_output(1)->set_name("x");
    try {
        Session session(*if_model(branch("Add", 1.0, "t"), two).build());
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(), "Node 'if' (If): branch 'else_branch' has 2 outputs, but the node has 1");
    }
}

TEST(IfTest, RejectsAConditionThatIsNotASingleValue) {
    Session session(*if_model(branch("Add", 1.0, "t"), branch("Mul", 2.0, "e")).build());
    try {
        session.run({{"cond", boolean({2}, {1, 0})}, {"x", f32({2}, {1, 2})}});
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(),
                     "Node 'if' (If): condition must be a single bool, but it is a bool tensor of shape (2,)");
    }
}

TEST(IfTest, RejectsAMissingBranch) {
    ModelBuilder builder(17);
    builder.input("cond", DataType::kBool, Shape{});
    builder.input("x", DataType::kFloat32, Shape{2});
    set_graph(builder.node("If", {"cond"}, {"y"}, "if"), "then_branch", branch("Add", 1.0, "t"));
    builder.output("y", DataType::kFloat32, Shape{2});
    EXPECT_THROW(
        {
            try {
                Session session(*builder.build());
            } catch (const ModelError& error) {
                EXPECT_STREQ(error.what(),
                             "Malformed node 'if' (If, ai.onnx opset 17): it lacks the required attribute "
                             "'else_branch' of If");
                throw;
            }
        },
        ModelError);
}

// Loop body: sum_out = sum_in + i; cond_out = i < limit (outer value); scan output = sum_out.
onnx::GraphProto sum_body() {
    ModelBuilder body(17, "loop_body");
    body.input("i", DataType::kInt64, Shape{});
    body.input("cond_in", DataType::kBool, Shape{});
    body.input("sum_in", DataType::kInt64, Shape{});
    body.node("Add", {"sum_in", "i"}, {"sum_out"});
    body.node("Less", {"i", "limit"}, {"cond_out"});
    body.node("Identity", {"sum_out"}, {"scan_out"});
    body.output("cond_out", DataType::kBool, Shape{});
    body.output("sum_out", DataType::kInt64, Shape{});
    body.output("scan_out", DataType::kInt64, Shape{});
    return body.proto().graph();
}

ModelBuilder loop_model(const onnx::GraphProto& body) {
    ModelBuilder builder(17);
    builder.input("M", DataType::kInt64, Shape{});
    builder.input("limit", DataType::kInt64, Shape{});
    builder.input("start", DataType::kInt64, Shape{});
    builder.initializer("true", boolean({}, {1}));
    set_graph(builder.node("Loop", {"M", "true", "start"}, {"sum", "partials"}, "loop"), "body", body);
    builder.output("sum", DataType::kInt64, Shape{});
    builder.output("partials", DataType::kInt64, Shape{}, false);
    return builder;
}

TEST(LoopTest, CarriesValuesAndStacksScanOutputsUntilTheTripCount) {
    Session session(*loop_model(sum_body()).build());
    const TensorMap out = session.run({{"M", i64({}, {5})}, {"limit", i64({}, {100})}, {"start", i64({}, {0})}});
    EXPECT_EQ(values_of(out.at("sum")), (std::vector<double>{10}));
    EXPECT_EQ(out.at("partials").shape(), (Shape{5}));
    EXPECT_EQ(values_of(out.at("partials")), (std::vector<double>{0, 1, 3, 6, 10}));
}

TEST(LoopTest, StopsWhenTheBodyConditionTurnsFalse) {
    Session session(*loop_model(sum_body()).build());
    // cond_out = i < 2 is false after iteration i = 2: three iterations.
    const TensorMap out = session.run({{"M", i64({}, {50})}, {"limit", i64({}, {2})}, {"start", i64({}, {7})}});
    EXPECT_EQ(values_of(out.at("sum")), (std::vector<double>{10}));
    EXPECT_EQ(values_of(out.at("partials")), (std::vector<double>{7, 8, 10}));
}

TEST(LoopTest, ZeroIterationsGiveTheInitialValuesAndEmptyScanOutputs) {
    Session session(*loop_model(sum_body()).build());
    const TensorMap out = session.run({{"M", i64({}, {0})}, {"limit", i64({}, {2})}, {"start", i64({}, {7})}});
    EXPECT_EQ(values_of(out.at("sum")), (std::vector<double>{7}));
    EXPECT_EQ(out.at("partials").shape(), (Shape{0}));
    EXPECT_EQ(out.at("partials").dtype(), DataType::kInt64);
}

TEST(LoopTest, RejectsABodyWithTheWrongNumberOfInputs) {
    onnx::GraphProto body = sum_body();
    *body.add_input() = body.input(2);
    body.mutable_input(3)->set_name("unused");
    try {
        Session session(*loop_model(body).build());
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(),
                     "Node 'loop' (Loop): body must take 3 inputs (iteration_num, cond and 1 loop-carried values), "
                     "but it takes 4");
    }
}

TEST(LoopTest, NestedIfReadsValuesOfEveryEnclosingGraph) {
    // Loop body: If(i < 1) then acc + x else acc - x, where x is a value of the top graph.
    ModelBuilder then_graph(17, "then");
    then_graph.node("Add", {"acc", "x"}, {"t"});
    then_graph.output("t", DataType::kFloat32, Shape{2});
    ModelBuilder else_graph(17, "else");
    else_graph.node("Sub", {"acc", "x"}, {"e"});
    else_graph.output("e", DataType::kFloat32, Shape{2});
    ModelBuilder body(17, "body");
    body.input("i", DataType::kInt64, Shape{});
    body.input("c", DataType::kBool, Shape{});
    body.input("acc", DataType::kFloat32, Shape{2});
    body.initializer("one", i64({}, {1}));
    body.node("Less", {"i", "one"}, {"first"});
    auto& branch_node = body.node("If", {"first"}, {"acc_out"}, "inner_if");
    set_graph(branch_node, "then_branch", then_graph.proto().graph());
    set_graph(branch_node, "else_branch", else_graph.proto().graph());
    body.node("Identity", {"c"}, {"c_out"});
    body.output("c_out", DataType::kBool, Shape{});
    body.output("acc_out", DataType::kFloat32, Shape{2});

    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("M", i64({}, {3}));
    builder.initializer("zeros", f32({2}, {0, 0}));
    set_graph(builder.node("Loop", {"M", "", "zeros"}, {"y"}, "loop"), "body", body.proto().graph());
    builder.output("y", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    // 0 + x - x - x = -x
    EXPECT_TRUE(tensors_near(session.run({{"x", f32({2}, {1.5, -2})}}).at("y"), f32({2}, {-1.5, 2})));
}

// Scan body: state += row; the scan output is the new state.
onnx::GraphProto running_sum_body() {
    ModelBuilder body(17, "scan_body");
    body.input("state", DataType::kFloat32, Shape{2});
    body.input("row", DataType::kFloat32, Shape{2});
    body.node("Add", {"state", "row"}, {"state_out"});
    body.node("Identity", {"state_out"}, {"scan_out"});
    body.output("state_out", DataType::kFloat32, Shape{2});
    body.output("scan_out", DataType::kFloat32, Shape{2});
    return body.proto().graph();
}

TEST(ScanTest, Opset9ScansForwardAndBackwardAlongTheGivenAxes) {
    ModelBuilder builder(17);
    builder.input("init", DataType::kFloat32, Shape{2});
    builder.input("xs", DataType::kFloat32, Shape{3, 2});
    auto& node = builder.node("Scan", {"init", "xs"}, {"final", "partials"}, "scan");
    set_graph(node, "body", running_sum_body());
    set_attr(node, "num_scan_inputs", int64_t{1});
    set_attr(node, "scan_input_directions", std::vector<int64_t>{1});
    set_attr(node, "scan_output_axes", std::vector<int64_t>{1});
    builder.output("final", DataType::kFloat32, Shape{2});
    builder.output("partials", DataType::kFloat32, Shape{2, 3});
    Session session(*builder.build());
    const TensorMap out = session.run({{"init", f32({2}, {0, 0})}, {"xs", f32({3, 2}, {1, 2, 3, 4, 5, 6})}});
    EXPECT_TRUE(tensors_near(out.at("final"), f32({2}, {9, 12})));
    // Rows visited in reverse: (5,6), (3,4), (1,2); partial sums stacked along axis 1.
    EXPECT_TRUE(tensors_near(out.at("partials"), f32({2, 3}, {5, 8, 9, 6, 10, 12})));
}

TEST(ScanTest, Opset8ScansEachBatchRow) {
    ModelBuilder builder(8);
    builder.input("init", DataType::kFloat32, Shape{2, 2});
    builder.input("xs", DataType::kFloat32, Shape{2, 2, 2});
    auto& node = builder.node("Scan", {"", "init", "xs"}, {"final", "partials"}, "scan");
    set_graph(node, "body", running_sum_body());
    set_attr(node, "num_scan_inputs", int64_t{1});
    builder.output("final", DataType::kFloat32, Shape{2, 2});
    builder.output("partials", DataType::kFloat32, Shape{2, 2, 2});
    Session session(*builder.build());
    const TensorMap out =
        session.run({{"init", f32({2, 2}, {0, 0, 10, 10})}, {"xs", f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}});
    EXPECT_TRUE(tensors_near(out.at("final"), f32({2, 2}, {4, 6, 22, 24})));
    EXPECT_TRUE(tensors_near(out.at("partials"), f32({2, 2, 2}, {1, 2, 4, 6, 15, 16, 22, 24})));
}

TEST(ScanTest, RejectsABadNumberOfScanInputs) {
    ModelBuilder builder(17);
    builder.input("init", DataType::kFloat32, Shape{2});
    builder.input("xs", DataType::kFloat32, Shape{3, 2});
    auto& node = builder.node("Scan", {"init", "xs"}, {"final", "partials"}, "scan");
    set_graph(node, "body", running_sum_body());
    set_attr(node, "num_scan_inputs", int64_t{0});
    builder.output("final", DataType::kFloat32, Shape{2});
    try {
        Session session(*builder.build());
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(), "Node 'scan' (Scan): attribute 'num_scan_inputs' must be in [1, 2], but it is 0");
    }
}

TEST(ScanTest, RejectsScanInputsOfDifferentLengths) {
    ModelBuilder body(17, "scan_body");
    body.input("state", DataType::kFloat32, Shape{2});
    body.input("a", DataType::kFloat32, Shape{2});
    body.input("b", DataType::kFloat32, Shape{2});
    body.node("Add", {"a", "b"}, {"s"});
    body.node("Add", {"state", "s"}, {"state_out"});
    body.output("state_out", DataType::kFloat32, Shape{2});
    ModelBuilder builder(17);
    builder.input("init", DataType::kFloat32, Shape{2});
    builder.input("a", DataType::kFloat32, Shape{3, 2});
    builder.input("b", DataType::kFloat32, Shape{2, 2});
    auto& node = builder.node("Scan", {"init", "a", "b"}, {"final"}, "scan");
    set_graph(node, "body", body.proto().graph());
    set_attr(node, "num_scan_inputs", int64_t{2});
    builder.output("final", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    try {
        session.run(
            {{"init", f32({2}, {0, 0})}, {"a", f32({3, 2}, {1, 2, 3, 4, 5, 6})}, {"b", f32({2, 2}, {1, 2, 3, 4})}});
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(), "Node 'scan' (Scan): scan inputs have different sequence lengths (3 and 2)");
    }
}

TEST(SequenceMapTest, AppliesTheBodyToEachElementWithATensorInput) {
    ModelBuilder body(17, "map_body");
    body.input("element", DataType::kFloat32, Shape{2});
    body.input("offset", DataType::kFloat32, Shape{2});
    body.node("Add", {"element", "offset"}, {"out"});
    body.output("out", DataType::kFloat32, Shape{2});
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{2});
    builder.input("b", DataType::kFloat32, Shape{2});
    builder.node("SequenceConstruct", {"a", "b"}, {"seq"});
    set_graph(builder.node("SequenceMap", {"seq", "a"}, {"mapped"}, "map"), "body", body.proto().graph());
    set_attr(builder.node("ConcatFromSequence", {"mapped"}, {"y"}), "axis", int64_t{0});
    builder.output("y", DataType::kFloat32, Shape{4});
    Session session(*builder.build());
    const TensorMap out = session.run({{"a", f32({2}, {1, 2})}, {"b", f32({2}, {10, 20})}});
    EXPECT_TRUE(tensors_near(out.at("y"), f32({4}, {2, 4, 11, 22})));
}

TEST(SequenceMapTest, RejectsSequencesOfDifferentLengths) {
    ModelBuilder body(17, "map_body");
    body.input("p", DataType::kFloat32, Shape{2});
    body.input("q", DataType::kFloat32, Shape{2});
    body.node("Add", {"p", "q"}, {"out"});
    body.output("out", DataType::kFloat32, Shape{2});
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{2});
    builder.node("SequenceConstruct", {"a", "a"}, {"two"});
    builder.node("SequenceConstruct", {"a"}, {"one"});
    set_graph(builder.node("SequenceMap", {"two", "one"}, {"mapped"}, "map"), "body", body.proto().graph());
    builder.node("SequenceLength", {"mapped"}, {"n"});
    builder.output("n", DataType::kInt64, Shape{});
    Session session(*builder.build());
    try {
        session.run({{"a", f32({2}, {1, 2})}});
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(),
                     "Node 'map' (SequenceMap): input 1 is a sequence of length 1, but input 0 has length 2");
    }
}

}  // namespace
}  // namespace polygraphy::ref
