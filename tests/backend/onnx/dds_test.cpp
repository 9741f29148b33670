// Unbounded data-dependent shapes (backend/onnx/dds.h).
#include "polygraphy/backend/onnx/dds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "parity_models.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> names_of(const TensorMetadata& tensors) {
    std::vector<std::string> names;
    for (const auto& [name, meta] : tensors) names.push_back(name);
    return names;
}

const onnx::NodeProto* producer_of(const onnx::ModelProto& model, const std::string& tensor) {
    for (const auto& node : model.graph().node())
        for (const auto& output : node.output())
            if (output == tensor) return &node;
    return nullptr;
}

TEST(Dds, FindsTheInputsThatSetUnboundedSizes) {
    const OnnxModel model = testing::dds_model().build();
    const TensorMetadata found = find_unbounded_dds_tensors(*model);
    // capped is produced by Min; pads is a graph input.
    EXPECT_THAT(names_of(found), ElementsAre("limit", "shape", "limit_again"));
    EXPECT_EQ(found.at("limit").dtype, DataType::kInt64);
    EXPECT_FALSE(found.at("limit_again").shape.has_value());
}

TEST(Dds, ANodeReusingKnownDimsIsBounded) {
    testing::ModelBuilder builder = testing::dds_model();
    // A graph input now declares the first Range's dim: its output no longer introduces a new one.
    for (auto& info : *builder.proto().mutable_graph()->mutable_value_info())
        if (info.name() == "range")
            info.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("n");
    builder.input("extra", DataType::kFloat32, DynShape{Dim::named("n")});
    EXPECT_THAT(names_of(find_unbounded_dds_tensors(*builder.build())), ElementsAre("shape", "limit_again"));
}

TEST(Dds, UpperBoundsInsertMinNodesThatLimitTheSize) {
    OnnxModel model = testing::dds_model().build();
    const OrderedMap<int64_t> applied = set_unbounded_dds_upper_bounds(*model, {{"", 3}, {"shape", 2}});
    std::vector<std::string> bounded;
    for (const auto& [name, bound] : applied) bounded.push_back(name + "=" + std::to_string(bound));
    EXPECT_THAT(bounded, ElementsAre("limit=3", "shape=2", "limit_again=3"));
    EXPECT_TRUE(find_unbounded_dds_tensors(*model).empty());

    const onnx::NodeProto* min = producer_of(*model, "shape");
    ASSERT_NE(min, nullptr);
    EXPECT_EQ(min->op_type(), "Min");
    EXPECT_THAT(min->input(), ElementsAre("shape_copy", "shape_upper_bound"));
    EXPECT_EQ(producer_of(*model, "shape_copy")->op_type(), "Shape");
    // The Min comes right after the producer, so the graph stays sorted.
    int shape_index = -1, min_index = -1;
    for (int i = 0; i < model->graph().node_size(); ++i) {
        if (&model->graph().node(i) == producer_of(*model, "shape_copy")) shape_index = i;
        if (&model->graph().node(i) == min) min_index = i;
    }
    EXPECT_EQ(min_index, shape_index + 1);

    // x = [9, 1, 2, 3]: the Range would hold 9 values; bounded, it holds 3.
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kInt64, {4}, {9, 1, 2, 3}));
    feed.set("pads", Tensor::from_doubles(DataType::kInt64, {2}, {0, 0}));
    const TensorMap outputs = ref::Session(*model).run(feed);
    EXPECT_EQ(outputs.at("range_again").shape(), Shape({3}));
    EXPECT_EQ(outputs.at("tiled").shape(), Shape({6}));  // 3 values tiled min(4, 2) times
}

TEST(Dds, BoundsMatchTheTensorsTypeAndAvoidTakenNames) {
    testing::ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.initializer("zero", Tensor::from_doubles(DataType::kFloat32, {}, {0}));
    builder.initializer("one", Tensor::from_doubles(DataType::kFloat32, {}, {1}));
    builder.initializer("limit_copy", Tensor::from_doubles(DataType::kFloat32, {}, {5}));  // takes the usual name
    testing::set_attr(builder.node("ReduceMax", {"x"}, {"limit"}), "keepdims", int64_t{0});
    builder.node("Range", {"zero", "limit", "one"}, {"r"});
    builder.node("Add", {"limit", "limit_copy"}, {"s"});
    builder.output("r", DataType::kFloat32, DynShape{Dim::named("len")});
    builder.output("s", DataType::kFloat32, Shape{});
    OnnxModel model = builder.build();
    infer_shapes(*model);
    set_unbounded_dds_upper_bounds(*model, {{"", 10}});
    const onnx::NodeProto* min = producer_of(*model, "limit");
    ASSERT_NE(min, nullptr);
    EXPECT_THAT(min->input(), ElementsAre("limit_copy_1", "limit_upper_bound"));
    for (const auto& initializer : model->graph().initializer())
        if (initializer.name() == "limit_upper_bound") {
            EXPECT_EQ(initializer.data_type(), onnx::TensorProto::FLOAT);
        }
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {4}, {40, 1, 2, 3}));
    EXPECT_EQ(ref::Session(*model).run(feed).at("r").shape(), Shape({10}));
}

TEST(Dds, NamedTensorsAreCheckedFirst) {
    OnnxModel model = testing::dds_model().build();
    const std::string before = model->SerializeAsString();
    try {
        set_unbounded_dds_upper_bounds(*model, {{"nope", 4}});
        FAIL() << "expected an error";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), HasSubstr("Cannot set an upper bound for tensor 'nope': it is not in the model"));
    }
    try {
        set_unbounded_dds_upper_bounds(*model, {{"pads", 4}});
        FAIL() << "expected an error";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), HasSubstr("no node produces it"));
    }
    EXPECT_EQ(model->SerializeAsString(), before);
    // A produced tensor that is bounded already may still be named.
    const auto applied = set_unbounded_dds_upper_bounds(*model, {{"capped", 4}});
    EXPECT_EQ(applied.size(), 1u);
    EXPECT_EQ(producer_of(*model, "capped")->op_type(), "Min");
}

}  // namespace
}  // namespace polygraphy
