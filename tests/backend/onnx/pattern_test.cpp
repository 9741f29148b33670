#include "polygraphy/backend/onnx/pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using testing::set_attr;

// Polygraphy's toy plugin example in code: O -> (A, B) -> C(x) -> (D, E), with ops of a custom domain.
ModelBuilder toy_builder(int64_t x = 1) {
    ModelBuilder builder(17);
    builder.opset_import("toy", 1);
    builder.input("i0", DataType::kFloat32, Shape{});
    builder.output("o1", DataType::kFloat32, Shape{});
    builder.output("o2", DataType::kFloat32, Shape{});
    builder.node("O", {"i0"}, {"i1"}, "n1", "toy");
    builder.node("A", {"i1"}, {"i2"}, "n2", "toy");
    builder.node("B", {"i1"}, {"i3"}, "n3", "toy");
    set_attr(builder.node("C", {"i2", "i3"}, {"i4"}, "n4", "toy"), "x", x);
    builder.node("D", {"i4"}, {"o1"}, "n5", "toy");
    builder.node("E", {"i4"}, {"o2"}, "n6", "toy");
    return builder;
}

const char* kToyPattern = R"({
  "name": "toyPlugin", "op": "CustomToyPlugin",
  "inputs": ["x0", "x1"], "outputs": ["d", "e"],
  "nodes": [{"name": "Anode", "op": "A", "domain": "toy", "inputs": ["x0"], "outputs": ["a"]},
            {"name": "Bnode", "op": "B", "domain": "toy", "inputs": ["x1"], "outputs": ["b"]},
            {"name": "Cnode", "op": "C", "domain": "toy", "inputs": ["a", "b"], "outputs": ["c"],
             "attributes": {"x": {"less": 2.0}}},
            {"name": "Dnode", "op": "D", "domain": "toy", "inputs": ["c"], "outputs": ["d"]},
            {"name": "Enode", "op": "E", "domain": "toy", "inputs": ["c"], "outputs": ["e"]}],
  "attributes": {"ToyX": {"from": "Cnode.x"}, "mode": "fast", "scales": [0.5, 2], "axes": [0, 1]}
})";

TEST(GraphPattern, TheToyPluginMatchesOnceWithItsBoundaryAndAttributes) {
    const GraphPattern pattern = graph_pattern_from_json(kToyPattern, "toy/pattern.json");
    EXPECT_EQ(pattern.name, "toyPlugin");
    EXPECT_EQ(pattern.op, "CustomToyPlugin");
    ASSERT_EQ(pattern.nodes.size(), 5u);

    const OnnxModel model = toy_builder(1).build();
    const std::vector<PatternMatch> matches = find_pattern_matches(*model, pattern);
    ASSERT_EQ(matches.size(), 1u);
    EXPECT_THAT(matches[0].inputs, ElementsAre("i1"));  // both variables bind i1: listed once
    EXPECT_THAT(matches[0].outputs, ElementsAre("o1", "o2"));
    EXPECT_THAT(matches[0].nodes, ElementsAre(1u, 2u, 3u, 4u, 5u));
    ASSERT_EQ(matches[0].attributes.size(), 4u);
    EXPECT_EQ(matches[0].attributes[0], (std::pair<std::string, PatternValue>("ToyX", int64_t{1})));
    EXPECT_EQ(matches[0].attributes[1], (std::pair<std::string, PatternValue>("mode", std::string("fast"))));
    EXPECT_EQ(matches[0].attributes[2],
              (std::pair<std::string, PatternValue>("scales", std::vector<double>{0.5, 2.0})));
    EXPECT_EQ(matches[0].attributes[3], (std::pair<std::string, PatternValue>("axes", std::vector<int64_t>{0, 1})));
}

TEST(GraphPattern, ConditionsOpsDomainsAndAritiesDecide) {
    const GraphPattern pattern = graph_pattern_from_json(kToyPattern, "pattern.json");
    EXPECT_TRUE(find_pattern_matches(*toy_builder(2).build(), pattern).empty());  // x < 2.0 fails

    ModelBuilder other_domain = toy_builder(1);
    other_domain.proto().mutable_graph()->mutable_node(3)->set_domain("other");
    EXPECT_TRUE(find_pattern_matches(*other_domain.build(), pattern).empty());

    ModelBuilder extra_input = toy_builder(1);
    extra_input.proto().mutable_graph()->mutable_node(1)->add_input("i0");  // A reads two tensors
    EXPECT_TRUE(find_pattern_matches(*extra_input.build(), pattern).empty());

    ModelBuilder other_op = toy_builder(1);
    other_op.proto().mutable_graph()->mutable_node(5)->set_op_type("F");
    EXPECT_TRUE(find_pattern_matches(*other_op.build(), pattern).empty());
}

TEST(GraphPattern, AnInnerTensorReadOutsideOrAGraphOutputPreventsTheMatch) {
    const GraphPattern pattern = graph_pattern_from_json(kToyPattern, "pattern.json");
    ModelBuilder read_outside = toy_builder(1);
    read_outside.node("Identity", {"i4"}, {"o3"}, "reads_c");
    read_outside.output("o3", DataType::kFloat32, Shape{});
    EXPECT_TRUE(find_pattern_matches(*read_outside.build(), pattern).empty());

    ModelBuilder graph_output = toy_builder(1);
    graph_output.output("i2", DataType::kFloat32, Shape{});
    EXPECT_TRUE(find_pattern_matches(*graph_output.build(), pattern).empty());
}

// x * Sigmoid(x): one variable read by two nodes must be one tensor.
const char* kSiluPattern = R"({
  "name": "SiLU", "inputs": ["x"], "outputs": ["y"],
  "nodes": [{"op": "Sigmoid", "inputs": ["x"], "outputs": ["s"]},
            {"op": "Mul", "inputs": ["x", "s"], "outputs": ["y"]}]
})";

TEST(GraphPattern, OccurrencesDoNotOverlapAndAVariableBindsOneTensor) {
    const GraphPattern pattern = graph_pattern_from_json(kSiluPattern, "silu.json");
    EXPECT_EQ(pattern.op, "SiLU");  // defaults to the name
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.input("z", DataType::kFloat32, Shape{4});
    builder.output("y", DataType::kFloat32, Shape{4});
    builder.output("w", DataType::kFloat32, Shape{4});
    builder.node("Sigmoid", {"x"}, {"s1"}, "sig1");
    builder.node("Mul", {"x", "s1"}, {"m1"}, "mul1");
    builder.node("Relu", {"m1"}, {"r"}, "relu");
    builder.node("Sigmoid", {"r"}, {"s2"}, "sig2");
    builder.node("Mul", {"r", "s2"}, {"y"}, "mul2");
    builder.node("Sigmoid", {"z"}, {"s3"}, "sig3");
    builder.node("Mul", {"x", "s3"}, {"w"}, "mul3");  // x * Sigmoid(z): no SiLU
    const std::vector<PatternMatch> matches = find_pattern_matches(*builder.build(), pattern);
    ASSERT_EQ(matches.size(), 2u);
    EXPECT_THAT(matches[0].inputs, ElementsAre("x"));
    EXPECT_THAT(matches[0].outputs, ElementsAre("m1"));
    EXPECT_THAT(matches[0].nodes, ElementsAre(0u, 1u));
    EXPECT_THAT(matches[1].inputs, ElementsAre("r"));
    EXPECT_THAT(matches[1].outputs, ElementsAre("y"));
}

TEST(GraphPattern, ACopiedAttributeTheNodeLacksIsOneLine) {
    GraphPattern pattern = graph_pattern_from_json(kToyPattern, "pattern.json");
    pattern.attributes = {{"ToyY", {}, "Cnode", "y"}};
    const std::string message =
        testing::error_message<PolygraphyException>([&] { find_pattern_matches(*toy_builder(1).build(), pattern); });
    EXPECT_THAT(message, HasSubstr("copies attribute 'y' of node 'n4' (pattern node 'Cnode'), which that node"));
}

TEST(GraphPattern, BadPatternFilesAreFormatErrorsNamingTheFile) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"[]", "expected an object"},
        {R"({"inputs": ["x"], "outputs": ["y"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
         "no \"name\""},
        {R"({"name": "p", "outputs": ["y"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
         "no \"inputs\""},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": []})", "no \"nodes\""},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": [{"inputs": ["x"], "outputs": ["y"]}]})",
         "node 'node0' has no \"op\""},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]},
             {"op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
         "tensor 'y' is produced by nodes 'node0' and 'node1'"},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["z"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
         "output 'z' is produced by no node"},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": [{"op": "Add", "inputs": ["x", "q"], "outputs": ["y"]}]})",
         "reads 'q', which is neither a pattern input nor produced by a node"},
        {R"({"name": "p", "inputs": ["x", "z"], "outputs": ["y", "w"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]},
             {"op": "Relu", "inputs": ["z"], "outputs": ["w"]}]})",
         "node 'node1' is not connected to node 'node0'"},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"],
             "attributes": {"alpha": {"around": 1}}}]})",
         "unknown condition 'around' on attribute 'alpha'"},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}],
             "attributes": {"k": {"from": "Other.k"}}})",
         "copies from node 'Other', which the pattern does not have"},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}],
             "attributes": {"k": {"from": "nodot"}}})",
         "expected \"<pattern node>.<attribute>\""},
        {R"({"name": "p", "inputs": ["x"], "outputs": ["y"], "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}],
             "extra": 1})",
         "unknown field 'extra'"},
        {R"({"name": "p", "inputs": "x"})", "\"inputs\" must be a list, not a string"},
    };
    for (const auto& item : cases) {
        const std::string &text = item.first, &expected = item.second;
        const std::string message =
            testing::error_message<FormatError>([&] { graph_pattern_from_json(text, "plugins/p/pattern.json"); });
        EXPECT_THAT(message, HasSubstr("plugins/p/pattern.json")) << text;
        EXPECT_THAT(message, HasSubstr(expected)) << text;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

TEST(GraphPattern, AttributeValuesRoundTrip) {
    for (const PatternValue& value :
         {PatternValue(int64_t{-3}), PatternValue(0.25), PatternValue(std::string("s")),
          PatternValue(std::vector<int64_t>{1, 2}), PatternValue(std::vector<double>{0.5, -1.5}),
          PatternValue(std::vector<std::string>{"a", "b"})})
        EXPECT_EQ(pattern_value_of(attribute_from_pattern_value("v", value)), value);
    onnx::AttributeProto tensor;
    tensor.set_name("t");
    tensor.set_type(onnx::AttributeProto::TENSOR);
    EXPECT_THAT(testing::error_message<UnsupportedError>([&] { pattern_value_of(tensor); }),
                HasSubstr("attribute 't' is of type TENSOR"));
}

}  // namespace
}  // namespace polygraphy
