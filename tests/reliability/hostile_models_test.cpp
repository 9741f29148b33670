// Hostile models through the CLI (issue 9): absurd shapes, deep nesting, huge graphs, cycles and
// duplicate names. Each gets one clear error line and a non-zero exit, before anything absurd is
// allocated; none crashes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "model_builder.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::CommandResult;
using testing::ModelBuilder;
using testing::run_polygraphy;
using testing::TempDir;

// A clean refusal: non-zero exit, an error line, no crash and no stack trace.
void expect_refused(const CommandResult& result, const std::string& message) {
    EXPECT_NE(result.exit_code, 0) << result.output;
    EXPECT_LT(result.exit_code, 128) << "killed by a signal:\n" << result.output;  // no crash
    EXPECT_THAT(result.output, HasSubstr(message));
    EXPECT_THAT(result.output, ::testing::ContainsRegex("\\[(E|!)\\] "));
    EXPECT_THAT(result.output, Not(HasSubstr("terminate called")));
    EXPECT_THAT(result.output, Not(HasSubstr("Segmentation")));
}

CommandResult run_ref(const ModelBuilder& builder, const TempDir& dir) {
    builder.save(dir.file("model.onnx"));
    return run_polygraphy({"run", dir.file("model.onnx"), "--ref"});
}

TEST(HostileModels, InputOfATrillionElementsIsRefusedBeforeAllocating) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1000000, 1000000});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1000000, 1000000});
    expect_refused(run_ref(builder, dir), "too large to allocate");
}

TEST(HostileModels, ShapeProductsThatOverflowInt64AreRefused) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{int64_t{1} << 40, int64_t{1} << 40});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1, 1});
    expect_refused(run_ref(builder, dir), "overflow");
}

TEST(HostileModels, NegativeDeclaredDimensionsAreRefused) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(1)->set_dim_value(-7);
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    expect_refused(run_ref(builder, dir), "-7");

    // The same on a graph output (fuzzing finding F3, RELIABILITY.md).
    ModelBuilder output_builder;
    output_builder.input("x", DataType::kFloat32, Shape{2, 3});
    output_builder.node("Relu", {"x"}, {"y"});
    output_builder.output("y", DataType::kFloat32, Shape{2, 3});
    output_builder.proto().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()
        ->mutable_shape()->mutable_dim(0)->set_dim_value(-5);
    expect_refused(run_ref(output_builder, dir), "Tensor 'y' declares a negative dimension (-5)");
}

TEST(HostileModels, InitializerDeclaringMoreElementsThanItHoldsIsRefused) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    onnx::TensorProto* weight = builder.proto().mutable_graph()->add_initializer();
    weight->set_name("w");
    weight->set_data_type(onnx::TensorProto::FLOAT);
    weight->add_dims(1000000000000);  // 10^12 elements declared, 8 bytes stored
    weight->set_raw_data(std::string(8, '\0'));
    builder.node("Add", {"x", "w"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2});
    expect_refused(run_ref(builder, dir), "w");
}

TEST(HostileModels, RuntimeShapesAskingForAbsurdMemoryAreRefused) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.initializer("shape", Tensor::from_doubles(DataType::kInt64, {2}, {1e6, 1e6}));
    builder.node("ConstantOfShape", {"shape"}, {"big"});
    builder.node("Add", {"x", "big"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1000000, 1000000});
    expect_refused(run_ref(builder, dir), "too large to allocate");
}

TEST(HostileModels, DeeplyNestedSubgraphsAreRefusedWithoutExhaustingTheStack) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("c", DataType::kBool, Shape{});
    // 5000 Ifs, each the only node of its parent's then_branch, built from the inside out.
    const onnx::NodeProto leaf = builder.node("If", {"c"}, {"y"});
    onnx::AttributeProto branch_template;
    branch_template.set_name("then_branch");
    branch_template.set_type(onnx::AttributeProto::GRAPH);
    onnx::NodeProto current = leaf;
    for (int depth = 0; depth < 5000; ++depth) {
        onnx::NodeProto parent = leaf;
        onnx::AttributeProto* branch = parent.add_attribute();
        *branch = branch_template;
        *branch->mutable_g()->add_node() = std::move(current);
        current = std::move(parent);
    }
    *builder.proto().mutable_graph()->mutable_node(0) = std::move(current);
    builder.output("y", DataType::kFloat32, Shape{1});
    expect_refused(run_ref(builder, dir), "model.onnx");
}

TEST(HostileModels, CyclesAreNamed) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Add", {"x", "b"}, {"a"}, "first");
    builder.node("Relu", {"a"}, {"b"}, "second");
    builder.output("b", DataType::kFloat32, Shape{2});
    expect_refused(run_ref(builder, dir), "cycle");
}

TEST(HostileModels, TensorsProducedTwiceAreNamed) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"}, "one");
    builder.node("Neg", {"x"}, {"y"}, "two");
    builder.output("y", DataType::kFloat32, Shape{2});
    expect_refused(run_ref(builder, dir), "'y'");
}

TEST(HostileModels, HundredThousandNodeChainsRunWithoutRecursion) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1});
    std::string previous = "x";
    for (int i = 0; i < 100000; ++i) {
        std::string next = "t";  // built in steps: GCC 12 warns falsely about "t" + string in loops
        next += std::to_string(i);
        builder.node("Identity", {previous}, {next});
        previous = next;
    }
    builder.output(previous, DataType::kFloat32, Shape{1});
    const CommandResult result = run_ref(builder, dir);
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

}  // namespace
}  // namespace polygraphy
