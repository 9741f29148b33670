// Cutting a graph into slices that run one after the other (plan_graph_slices, SliceView): where the
// cuts fall, and that running the slices in turn, each fed with the cut tensors of the earlier ones,
// yields exactly what one whole run yields.
#include "polygraphy/backend/onnx/slices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::ModelBuilder;

const Shape kRow{1, 4};

// Every tensor the runtime yields for `model` (whose outputs are the tensors to compare).
TensorMap run_model(const OnnxModel& model, const TensorMap& feed) {
    ref::RefRunner runner(ref::SessionFromOnnx([model] { return model; }));
    RunnerActivation activation(runner);
    return clone(runner.infer(feed));
}

// Runs `slices` of `model` in turn on the built-in runtime, each fed with the graph inputs and the
// cut tensors kept from the earlier slices; returns every slice's marked outputs.
TensorMap run_slices(const OnnxModel& model, const std::vector<GraphSlice>& slices, const TensorMap& feed) {
    const std::string before = model->SerializeAsString();
    TensorMap yielded, kept;
    {
        SliceView view(*model);
        for (const GraphSlice& slice : slices) {
            std::unordered_map<std::string, onnx::ValueInfoProto> types;
            for (const auto& name : slice.cut_inputs) {
                onnx::ValueInfoProto& info = types[name];
                auto& tensor_type = *info.mutable_type()->mutable_tensor_type();
                tensor_type.set_elem_type(dtype_to_onnx(kept.at(name).dtype()));
                for (int64_t dim : kept.at(name).shape()) tensor_type.mutable_shape()->add_dim()->set_dim_value(dim);
            }
            view.show(slice, types);
            EXPECT_EQ(model->graph().node_size(), static_cast<int>(slice.nodes.size()));
            TensorMap slice_feed;
            for (const auto& name : slice.graph_inputs) slice_feed.set(name, feed.at(name));
            for (const auto& name : slice.cut_inputs) slice_feed.set(name, kept.at(name));
            const TensorMap outputs = run_model(model, slice_feed);
            for (const auto& name : slice.marked) yielded.set(name, outputs.at(name));
            TensorMap next;
            for (const auto& name : slice.kept) next.set(name, kept.contains(name) ? kept.at(name) : outputs.at(name));
            kept = std::move(next);
        }
    }
    EXPECT_EQ(model->SerializeAsString(), before) << "the view did not put the graph back";
    return yielded;
}

void expect_same_as_whole_run(const OnnxModel& model, const std::vector<GraphSlice>& slices, const TensorMap& feed) {
    const TensorMap whole = run_model(model, feed);
    const TensorMap sliced = run_slices(model, slices, feed);
    ASSERT_EQ(sliced.keys(), whole.keys());
    for (const auto& [name, tensor] : whole) EXPECT_TRUE(sliced.at(name).equals(tensor)) << name;
}

std::vector<std::string> graph_outputs(const OnnxModel& model) {
    std::vector<std::string> names;
    for (const auto& output : model->graph().output()) names.push_back(output.name());
    return names;
}

std::unordered_map<std::string, std::size_t> sizes(const std::vector<std::string>& names, std::size_t bytes) {
    std::unordered_map<std::string, std::size_t> result;
    for (const auto& name : names) result[name] = bytes;
    return result;
}

TensorMap row_feed() {
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, kRow, {-1.5, -0.25, 0.5, 2.0}));
    return feed;
}

std::vector<std::vector<std::string>> nodes_of(const onnx::GraphProto& graph, const std::vector<GraphSlice>& slices) {
    std::vector<std::vector<std::string>> names;
    for (const auto& slice : slices) {
        names.emplace_back();
        for (std::size_t index : slice.nodes) names.back().push_back(graph.node(static_cast<int>(index)).name());
    }
    return names;
}

// x -> a = Relu(x), b = Sigmoid(x); c = a + b; d = c * a; e = -b; f = d + e. Every tensor 16 bytes.
TEST(PlanGraphSlices, ABranchyGraphIsCutWhereTheTensorsHeldFit) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, kRow);
    builder.node("Relu", {"x"}, {"a"}, "a");
    builder.node("Sigmoid", {"x"}, {"b"}, "b");
    builder.node("Add", {"a", "b"}, {"c"}, "c");
    builder.node("Mul", {"c", "a"}, {"d"}, "d");
    builder.node("Neg", {"b"}, {"e"}, "e");
    builder.node("Add", {"d", "e"}, {"f"}, "f");
    for (const char* name : {"a", "b", "c", "d", "e", "f"}) builder.output(name, DataType::kFloat32, kRow);
    const OnnxModel model = builder.build();

    // 64 bytes: a to d (4 x 16); then b and d are kept for e and f, which fit beside them.
    const auto slices = plan_graph_slices(model->graph(), graph_outputs(model), sizes(graph_outputs(model), 16), 64);
    ASSERT_EQ(slices.size(), 2u);
    EXPECT_THAT(nodes_of(model->graph(), slices), ElementsAre(ElementsAre("a", "b", "c", "d"), ElementsAre("e", "f")));
    EXPECT_THAT(slices[0].graph_inputs, ElementsAre("x"));
    EXPECT_THAT(slices[0].cut_inputs, IsEmpty());
    EXPECT_THAT(slices[0].marked, ElementsAre("a", "b", "c", "d"));
    EXPECT_THAT(slices[0].kept, ElementsAre("b", "d"));
    EXPECT_EQ(slices[0].bytes, 64u);
    EXPECT_THAT(slices[1].graph_inputs, IsEmpty());
    EXPECT_THAT(slices[1].cut_inputs, ElementsAre("b", "d"));
    EXPECT_THAT(slices[1].marked, ElementsAre("e", "f"));
    EXPECT_THAT(slices[1].kept, IsEmpty());
    EXPECT_EQ(slices[1].bytes, 64u);  // b and d kept, e and f yielded
    expect_same_as_whole_run(model, slices, row_feed());

    // All at once when the whole graph fits.
    EXPECT_EQ(plan_graph_slices(model->graph(), graph_outputs(model), sizes(graph_outputs(model), 16), 96).size(), 1u);
}

// t0 = Relu(x) is read by the first and by the last node of a chain; it is not compared.
TEST(PlanGraphSlices, ATensorReadMuchLaterIsKeptThroughTheSlicesBetween) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, kRow);
    builder.node("Relu", {"x"}, {"t0"}, "t0");
    builder.node("Neg", {"t0"}, {"n1"}, "n1");
    builder.node("Sigmoid", {"n1"}, {"n2"}, "n2");
    builder.node("Neg", {"n2"}, {"n3"}, "n3");
    builder.node("Sigmoid", {"n3"}, {"n4"}, "n4");
    builder.node("Add", {"n4", "t0"}, {"out"}, "out");
    for (const char* name : {"n1", "n2", "n3", "n4", "out"}) builder.output(name, DataType::kFloat32, kRow);
    const OnnxModel model = builder.build();

    const auto slices =
        plan_graph_slices(model->graph(), graph_outputs(model), sizes({"t0", "n1", "n2", "n3", "n4", "out"}, 16), 48);
    EXPECT_THAT(nodes_of(model->graph(), slices),
                ElementsAre(ElementsAre("t0", "n1", "n2"), ElementsAre("n3"), ElementsAre("n4"), ElementsAre("out")));
    ASSERT_EQ(slices.size(), 4u);
    EXPECT_THAT(slices[0].cut_outputs, ElementsAre("t0"));  // not compared, but read later
    EXPECT_THAT(slices[0].marked, ElementsAre("n1", "n2"));
    for (std::size_t i = 0; i < 3; ++i) EXPECT_THAT(slices[i].kept, ::testing::Contains("t0")) << i;
    EXPECT_THAT(slices[1].cut_inputs, ElementsAre("n2"));
    EXPECT_THAT(slices[2].cut_inputs, ElementsAre("n3"));
    EXPECT_THAT(slices[3].cut_inputs, ElementsAre("n4", "t0"));
    for (const auto& slice : slices) EXPECT_LE(slice.bytes, 48u);
    expect_same_as_whole_run(model, slices, row_feed());
}

// Two Constants first: the first slice has neither inputs nor initializers.
TEST(PlanGraphSlices, ASliceOfConstantsAloneRunsWithoutInputs) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, kRow);
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, kRow, {1, 2, 3, 4}));
    testing::set_attr(builder.node("Constant", {}, {"k1"}, "k1"), "value",
                      Tensor::from_doubles(DataType::kFloat32, kRow, {0.5, 0.5, 0.5, 0.5}));
    testing::set_attr(builder.node("Constant", {}, {"k2"}, "k2"), "value",
                      Tensor::from_doubles(DataType::kFloat32, kRow, {3, 3, 3, 3}));
    builder.node("Mul", {"x", "w"}, {"s"}, "s");
    builder.node("Add", {"s", "k1"}, {"p"}, "p");
    for (const char* name : {"k1", "k2", "s", "p"}) builder.output(name, DataType::kFloat32, kRow);
    const OnnxModel model = builder.build();

    auto bytes = sizes(graph_outputs(model), 16);
    bytes["p"] = 8;
    const auto slices = plan_graph_slices(model->graph(), graph_outputs(model), bytes, 40);
    EXPECT_THAT(nodes_of(model->graph(), slices), ElementsAre(ElementsAre("k1", "k2"), ElementsAre("s", "p")));
    ASSERT_EQ(slices.size(), 2u);
    EXPECT_THAT(slices[0].graph_inputs, IsEmpty());
    EXPECT_THAT(slices[0].cut_inputs, IsEmpty());
    EXPECT_THAT(slices[0].initializers, IsEmpty());
    EXPECT_THAT(slices[0].kept, ElementsAre("k1"));
    EXPECT_THAT(slices[1].graph_inputs, ElementsAre("x"));
    EXPECT_THAT(slices[1].initializers, ElementsAre("w"));
    EXPECT_THAT(slices[1].cut_inputs, ElementsAre("k1"));
    expect_same_as_whole_run(model, slices, row_feed());
}

// An If whose branches read t0 from the enclosing graph: t0 is a cut input of the If's slice.
TEST(PlanGraphSlices, TensorsASubgraphCapturesAreReadByItsNode) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, kRow);
    builder.input("flag", DataType::kBool, Shape{});
    builder.node("Relu", {"x"}, {"t0"}, "t0");
    builder.node("Sigmoid", {"x"}, {"m"}, "m");
    builder.node("Neg", {"x"}, {"n1"}, "n1");
    onnx::NodeProto& branchy = builder.node("If", {"flag"}, {"chosen"}, "if");
    for (const auto& [branch, op] : {std::pair{"then_branch", "Identity"}, std::pair{"else_branch", "Neg"}}) {
        onnx::AttributeProto& attribute = *branchy.add_attribute();
        attribute.set_name(branch);
        attribute.set_type(onnx::AttributeProto::GRAPH);
        onnx::GraphProto& body = *attribute.mutable_g();
        body.set_name(branch);
        onnx::NodeProto& node = *body.add_node();
        node.set_op_type(op);
        node.add_input("t0");
        node.add_output(std::string(branch) + "_out");
        onnx::ValueInfoProto& output = *body.add_output();
        output.set_name(std::string(branch) + "_out");
        output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    }
    builder.node("Add", {"chosen", "n1"}, {"y"}, "y");
    for (const char* name : {"t0", "m", "n1", "chosen", "y"}) builder.output(name, DataType::kFloat32, kRow);
    const OnnxModel model = builder.build();

    const auto slices = plan_graph_slices(model->graph(), graph_outputs(model), sizes(graph_outputs(model), 16), 48);
    EXPECT_THAT(nodes_of(model->graph(), slices),
                ElementsAre(ElementsAre("t0", "m", "n1"), ElementsAre("if"), ElementsAre("y")));
    ASSERT_EQ(slices.size(), 3u);
    EXPECT_THAT(slices[1].cut_inputs, ElementsAre("t0"));
    EXPECT_THAT(slices[1].graph_inputs, ElementsAre("flag"));
    TensorMap feed = row_feed();
    for (bool flag : {true, false}) {
        feed.set("flag", Tensor::from_doubles(DataType::kBool, {}, {flag ? 1.0 : 0.0}));
        expect_same_as_whole_run(model, slices, feed);
    }
}

TEST(PlanGraphSlices, ANodeTooLargeAloneGetsASliceWhoseBytesSaySo) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, kRow);
    builder.node("Relu", {"x"}, {"small"}, "small");
    builder.node("Neg", {"small"}, {"big"}, "big");
    builder.output("small", DataType::kFloat32, kRow);
    builder.output("big", DataType::kFloat32, kRow);
    const OnnxModel model = builder.build();
    const auto slices = plan_graph_slices(model->graph(), graph_outputs(model), {{"small", 16}, {"big", 100}}, 50);
    ASSERT_EQ(slices.size(), 2u);
    EXPECT_EQ(slices[0].bytes, 16u);
    EXPECT_EQ(slices[1].bytes, 116u);  // small is still held while big is made
}

}  // namespace
}  // namespace polygraphy
