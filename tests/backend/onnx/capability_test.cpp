// check_capability, its summary and partitions, and NodeSubsetExtractor.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/ref/evaluator.h"
#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ModelBuilder;

std::vector<std::string> names(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& list) {
    std::vector<std::string> out;
    for (const auto& value : list) out.push_back(value.name());
    return out;
}

// x -> Relu -> Bad -> Relu -> Relu -> y, with a bias initializer on the last.
OnnxModel chain() {
    ModelBuilder builder(17, "chain");
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("bias", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    builder.node("Relu", {"x"}, {"a"}, "r0");
    builder.node("Bad", {"a"}, {"b"}, "bad");
    builder.node("Relu", {"b"}, {"c"}, "r1");
    builder.node("Add", {"c", "bias"}, {"y"}, "add");
    builder.output("y", DataType::kFloat32, Shape{2});
    return builder.build();
}

NodeChecker fake_checker(int* calls = nullptr) {
    return [calls](const onnx::ModelProto&, const onnx::NodeProto& node) -> NodeVerdict {
        if (calls) ++*calls;
        if (node.op_type() == "Bad") return {false, "no kernel for Bad"};
        return {};
    };
}

TEST(Capability, PartitionsAndSummary) {
    const OnnxModel model = chain();
    const CapabilityReport report = check_capability(*model, fake_checker(), "fake");
    EXPECT_FALSE(report.fully_supported());
    ASSERT_EQ(report.partitions.size(), 3u);
    EXPECT_TRUE(report.partitions[0].supported);
    EXPECT_EQ(report.partitions[0].begin, 0);
    EXPECT_EQ(report.partitions[0].end, 1);
    EXPECT_FALSE(report.partitions[1].supported);
    EXPECT_EQ(report.partitions[2].begin, 2);
    EXPECT_EQ(report.partitions[2].end, 4);
    EXPECT_EQ(report.summary(),
              "===== Summary =====\n"
              "Operator | Count   | Reason            | Nodes\n"
              "-----------------------------------------------\n"  // len(header), newline included
              "Bad      |       1 | no kernel for Bad | [[1, 2]]\n");
}

TEST(Capability, LikeNodesAreAskedOnce) {
    ModelBuilder builder(17, "same");
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"a"});
    builder.node("Relu", {"a"}, {"b"});
    builder.node("Relu", {"b"}, {"c"});
    auto& leaky = builder.node("LeakyRelu", {"c"}, {"d"});
    testing::set_attr(leaky, "alpha", 0.5f);
    auto& other = builder.node("LeakyRelu", {"d"}, {"y"});
    testing::set_attr(other, "alpha", 0.25f);
    builder.output("y", DataType::kFloat32, Shape{2});
    for (const char* name : {"a", "b", "c", "d"}) {
        auto* value_info = builder.proto().mutable_graph()->add_value_info();
        value_info->set_name(name);
        value_info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        value_info->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
    }
    int calls = 0;
    const CapabilityReport report = check_capability(*builder.build(), fake_checker(&calls), "fake");
    EXPECT_TRUE(report.fully_supported());
    EXPECT_EQ(calls, 3);  // Relu once (same input types), each LeakyRelu (different alpha)
}

TEST(Capability, RefCheckerUsesTheRegistry) {
    const OnnxModel model = chain();
    const CapabilityReport report = check_capability(*model, ref_node_checker(), "ref");
    ASSERT_EQ(report.nodes.size(), 4u);
    EXPECT_TRUE(report.nodes[0].supported);
    EXPECT_FALSE(report.nodes[1].supported);
    EXPECT_EQ(report.nodes[1].reason, "The built-in runtime has no kernel for Bad (domain 'ai.onnx', opset 17)");
    EXPECT_TRUE(report.nodes[3].supported);
}

TEST(Capability, SavedPartitionsAreStandaloneModels) {
    logger().set_severity(Severity::kWarning);
    testing::TempDir dir;
    OnnxModel model = chain();
    infer_value_info(*model);  // gives 'a', 'b', 'c' their types where libonnx can
    const CapabilityReport report = check_capability(*model, fake_checker(), "fake");
    save_capability_results(*model, report, dir.file("out"));
    logger().reset();
    EXPECT_TRUE(std::filesystem::exists(dir.file("out/supported_subgraph-nodes-0-0.onnx")));
    EXPECT_TRUE(std::filesystem::exists(dir.file("out/unsupported_subgraph-nodes-1-1.onnx")));
    EXPECT_TRUE(std::filesystem::exists(dir.file("out/results.txt")));
    const OnnxModel last = onnx_from_path(dir.file("out/supported_subgraph-nodes-2-3.onnx"));
    EXPECT_EQ(last->graph().name(), "supported_subgraph-nodes-2-3");
    EXPECT_THAT(names(last->graph().input()), ElementsAre("b"));
    EXPECT_THAT(names(last->graph().output()), ElementsAre("y"));
    ASSERT_EQ(last->graph().initializer_size(), 1);
    EXPECT_EQ(last->graph().initializer(0).name(), "bias");

    std::ofstream(dir.file("file")) << "x";
    EXPECT_THAT(testing::error_message<PolygraphyException>(
                    [&] { save_capability_results(*model, report, dir.file("file")); }),
                HasSubstr("it is not a folder"));
}

TEST(NodeSubsetExtractor, InputsOutputsAndOuterScope) {
    ModelBuilder builder(17, "g");
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.input("cond", DataType::kBool, Shape{});
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    builder.node("Add", {"x", "w"}, {"a"}, "add");
    auto& node = builder.node("If", {"cond"}, {"b"}, "if");
    onnx::GraphProto branch;
    auto* inner = branch.add_node();
    inner->set_op_type("Mul");
    inner->add_input("a");  // from the enclosing graph
    inner->add_input("local");
    inner->add_output("o");
    auto* local = branch.add_node();
    local->set_op_type("Identity");
    local->add_input("x");
    local->add_output("local");
    branch.add_output()->set_name("o");
    auto* attr = node.add_attribute();
    attr->set_name("then_branch");
    attr->set_type(onnx::AttributeProto::GRAPH);
    *attr->mutable_g() = branch;
    builder.node("Relu", {"a"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.output("b", DataType::kFloat32, Shape{2});
    const OnnxModel model = builder.build();

    EXPECT_THAT(outer_scope_inputs(model->graph().node(1)), ElementsAre("a", "x"));
    EXPECT_THAT(node_reads(model->graph().node(1)), ElementsAre("cond", "a", "x"));

    const NodeSubsetExtractor extractor(*model);
    const onnx::ModelProto first = extractor.extract({0}, "first");
    EXPECT_THAT(names(first.graph().input()), ElementsAre("x"));
    EXPECT_EQ(first.graph().initializer_size(), 1);
    EXPECT_THAT(names(first.graph().output()), ElementsAre("a"));
    EXPECT_EQ(first.opset_import(0).version(), 17);

    const onnx::ModelProto second = extractor.extract({1}, "second");
    EXPECT_THAT(names(second.graph().input()), ElementsAre("cond", "a", "x"));
    EXPECT_THAT(names(second.graph().output()), ElementsAre("b"));
    EXPECT_EQ(second.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::BOOL);

    // 'a' is read by node 2 outside the subset, so it is an output with 'b'.
    const onnx::ModelProto both = extractor.extract({0, 1}, "both");
    EXPECT_THAT(names(both.graph().input()), ElementsAre("x", "cond"));
    EXPECT_THAT(names(both.graph().output()), ElementsAre("a", "b"));

    EXPECT_THROW(extractor.extract({7}, "bad"), InternalError);
}

}  // namespace
}  // namespace polygraphy
