// Sequence and optional operators, and sequence/optional values through Session::run_values.
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::ref {
namespace {

using polygraphy::testing::ModelBuilder;
using polygraphy::testing::set_attr;
using testing::f32;
using testing::i64;
using testing::tensors_near;
using testing::values_of;

std::string error_of(const Session& session, const TensorMap& feed) {
    try {
        session.run(feed);
    } catch (const std::exception& error) {
        return error.what();
    }
    return "no error";
}

TEST(SequenceTest, ConstructInsertEraseAtAndLength) {
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{1});
    builder.input("b", DataType::kFloat32, Shape{2});
    builder.initializer("front", i64({}, {0}));
    builder.initializer("last", i64({}, {-1}));
    builder.node("SequenceConstruct", {"a", "b"}, {"s1"});         // [a, b]
    builder.node("SequenceInsert", {"s1", "b", "front"}, {"s2"});  // [b, a, b]
    builder.node("SequenceErase", {"s2", "last"}, {"s3"});         // [b, a]
    builder.node("SequenceAt", {"s3", "last"}, {"at"});            // a
    builder.node("SequenceLength", {"s3"}, {"n"});
    builder.output("at", DataType::kFloat32, Shape{1});
    builder.output("n", DataType::kInt64, Shape{});
    builder.output("s3", DataType::kFloat32, Shape{}, false);
    Session session(*builder.build());
    const Session::ValueMap out = session.run_values({{"a", Value(f32({1}, {5}))}, {"b", Value(f32({2}, {1, 2}))}});
    EXPECT_TRUE(tensors_near(out.at("at").tensor(), f32({1}, {5})));
    EXPECT_EQ(values_of(out.at("n").tensor()), (std::vector<double>{2}));
    ASSERT_TRUE(out.at("s3").is_sequence());
    EXPECT_EQ(out.at("s3").elements().size(), 2u);
    EXPECT_TRUE(tensors_near(out.at("s3").elements()[0], f32({2}, {1, 2})));
    // run() cannot return a sequence.
    try {
        session.run({{"a", f32({1}, {5})}, {"b", f32({2}, {1, 2})}});
        FAIL() << "expected an UnsupportedError";
    } catch (const UnsupportedError& error) {
        EXPECT_STREQ(error.what(), "Graph output 's3' is a sequence, but this runner returns tensors only");
    }
}

TEST(SequenceTest, PositionOutOfRangeIsAnError) {
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{1});
    builder.initializer("pos", i64({}, {2}));
    builder.node("SequenceConstruct", {"a", "a"}, {"s"});
    builder.node("SequenceAt", {"s", "pos"}, {"y"}, "at");
    builder.output("y", DataType::kFloat32, Shape{1});
    Session session(*builder.build());
    EXPECT_EQ(error_of(session, {{"a", f32({1}, {1})}}),
              "Node 'at' (SequenceAt): position 2 is out of range for a sequence of length 2 (expected a value in "
              "[-2, 1])");
}

TEST(SequenceTest, InsertRejectsAnotherDataType) {
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{1});
    builder.input("i", DataType::kInt64, Shape{1});
    builder.node("SequenceConstruct", {"a"}, {"s"});
    builder.node("SequenceInsert", {"s", "i"}, {"t"}, "insert");
    builder.node("SequenceLength", {"t"}, {"n"});
    builder.output("n", DataType::kInt64, Shape{});
    Session session(*builder.build());
    EXPECT_EQ(error_of(session, {{"a", f32({1}, {1})}, {"i", i64({1}, {1})}}),
              "Node 'insert' (SequenceInsert): tensor of data type int64 cannot join a sequence of float32");
}

TEST(SequenceTest, SplitToSequenceAndConcatFromSequenceRoundTrip) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.initializer("sizes", i64({2}, {1, 2}));
    set_attr(builder.node("SplitToSequence", {"x", "sizes"}, {"parts"}), "axis", int64_t{1});
    set_attr(builder.node("ConcatFromSequence", {"parts"}, {"y"}), "axis", int64_t{1});
    builder.node("SequenceAt", {"parts", "one"}, {"second"});
    builder.initializer("one", i64({}, {1}));
    auto& squeeze = builder.node("SplitToSequence", {"x"}, {"rows"});
    set_attr(squeeze, "keepdims", int64_t{0});
    auto& stack = builder.node("ConcatFromSequence", {"rows"}, {"stacked"});
    set_attr(stack, "axis", int64_t{-1});
    set_attr(stack, "new_axis", int64_t{1});
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    builder.output("second", DataType::kFloat32, Shape{2, 2});
    builder.output("stacked", DataType::kFloat32, Shape{3, 2});
    Session session(*builder.build());
    const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    const TensorMap out = session.run({{"x", x}});
    EXPECT_TRUE(tensors_near(out.at("y"), x));
    EXPECT_TRUE(tensors_near(out.at("second"), f32({2, 2}, {2, 3, 5, 6})));
    // Rows (1,2,3) and (4,5,6) stacked on a new last axis: the transpose.
    EXPECT_TRUE(tensors_near(out.at("stacked"), f32({3, 2}, {1, 4, 2, 5, 3, 6})));
}

TEST(SequenceTest, SplitSizesMustAddUpToTheAxis) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.initializer("sizes", i64({2}, {1, 2}));
    builder.node("SplitToSequence", {"x", "sizes"}, {"parts"}, "split");
    builder.node("SequenceLength", {"parts"}, {"n"});
    builder.output("n", DataType::kInt64, Shape{});
    Session session(*builder.build());
    EXPECT_EQ(error_of(session, {{"x", f32({4}, {1, 2, 3, 4})}}),
              "Node 'split' (SplitToSequence): split sizes add up to 3, but axis 0 has size 4");
}

TEST(SequenceTest, ConcatFromSequenceNeedsAnAxisAndAValidNewAxis) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.node("SplitToSequence", {"x"}, {"parts"});
    builder.node("ConcatFromSequence", {"parts"}, {"y"}, "concat");
    builder.output("y", DataType::kFloat32, Shape{4});
    try {
        Session session(*builder.build());
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(),
                     "Malformed node 'concat' (ConcatFromSequence, ai.onnx opset 17): it lacks the required "
                     "attribute 'axis' of ConcatFromSequence");
    }
    set_attr(*builder.proto().mutable_graph()->mutable_node(1), "axis", int64_t{0});
    set_attr(*builder.proto().mutable_graph()->mutable_node(1), "new_axis", int64_t{2});
    try {
        Session session(*builder.build());
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(),
                     "Node 'concat' (ConcatFromSequence): attribute 'new_axis' must be 0 or 1, but it is 2");
    }
}

TEST(SequenceTest, ConcatFromSequenceRejectsAnAxisOutOfRange) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.node("SplitToSequence", {"x"}, {"parts"});
    set_attr(builder.node("ConcatFromSequence", {"parts"}, {"y"}, "concat"), "axis", int64_t{3});
    builder.output("y", DataType::kFloat32, Shape{4});
    Session session(*builder.build());
    EXPECT_EQ(error_of(session, {{"x", f32({4}, {1, 2, 3, 4})}}),
              "Node 'concat' (ConcatFromSequence): axis 3 is out of range for a tensor of rank 1 (expected a value "
              "in [-1, 0])");
}

TEST(SequenceTest, AnEmptySequenceKeepsItsDataType) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kInt32, Shape{1});
    set_attr(builder.node("SequenceEmpty", {}, {"empty"}), "dtype", int64_t{6});  // INT32
    builder.node("SequenceInsert", {"empty", "x"}, {"one"});
    builder.node("SequenceLength", {"one"}, {"n"});
    builder.output("n", DataType::kInt64, Shape{});
    Session session(*builder.build());
    EXPECT_EQ(values_of(session.run({{"x", testing::i32({1}, {3})}}).at("n")), (std::vector<double>{1}));
}

TEST(OptionalTest, HasElementAndGetElement) {
    ModelBuilder builder(18);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Optional", {"x"}, {"full"});
    auto& empty = builder.node("Optional", {}, {"none"});
    auto* type = empty.add_attribute();
    type->set_name("type");
    type->set_type(onnx::AttributeProto::TYPE_PROTO);
    type->mutable_tp()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    builder.node("OptionalHasElement", {"full"}, {"has_full"});
    builder.node("OptionalHasElement", {"none"}, {"has_none"});
    builder.node("OptionalGetElement", {"full"}, {"y"});
    builder.output("has_full", DataType::kBool, Shape{});
    builder.output("has_none", DataType::kBool, Shape{});
    builder.output("y", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    const TensorMap out = session.run({{"x", f32({2}, {1, 2})}});
    EXPECT_EQ(values_of(out.at("has_full")), (std::vector<double>{1}));
    EXPECT_EQ(values_of(out.at("has_none")), (std::vector<double>{0}));
    EXPECT_TRUE(tensors_near(out.at("y"), f32({2}, {1, 2})));
}

TEST(OptionalTest, GetElementOfAnEmptyOptionalIsAnError) {
    ModelBuilder builder(18);
    builder.input("x", DataType::kFloat32, Shape{2});
    auto& empty = builder.node("Optional", {}, {"none"});
    auto* type = empty.add_attribute();
    type->set_name("type");
    type->set_type(onnx::AttributeProto::TYPE_PROTO);
    type->mutable_tp()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    builder.node("OptionalGetElement", {"none"}, {"y"}, "get");
    builder.output("y", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    EXPECT_EQ(error_of(session, {{"x", f32({2}, {1, 2})}}),
              "Node 'get' (OptionalGetElement): the optional input holds no element");
}

TEST(OptionalTest, OptionalWithoutInputNeedsAType) {
    ModelBuilder builder(18);
    builder.node("Optional", {}, {"none"}, "opt");
    builder.node("OptionalHasElement", {"none"}, {"has"});
    builder.output("has", DataType::kBool, Shape{});
    try {
        Session session(*builder.build());
        FAIL() << "expected a ModelError";
    } catch (const ModelError& error) {
        EXPECT_STREQ(error.what(), "Node 'opt' (Optional): attribute 'type' is required when the input is omitted");
    }
}

TEST(OptionalTest, EmptyOptionalFlowsThroughRunValues) {
    ModelBuilder builder(18);
    builder.input("maybe", DataType::kFloat32, Shape{2});
    builder.node("Identity", {"maybe"}, {"same"});
    builder.node("OptionalHasElement", {"maybe"}, {"has"});
    builder.output("same", DataType::kFloat32, Shape{2});
    builder.output("has", DataType::kBool, Shape{});
    Session session(*builder.build());
    const Session::ValueMap out = session.run_values({{"maybe", Value::empty_optional()}});
    EXPECT_TRUE(out.at("same").is_empty_optional());
    EXPECT_EQ(values_of(out.at("has").tensor()), (std::vector<double>{0}));
}

}  // namespace
}  // namespace polygraphy::ref
