// Fields of newer IR versions that libonnx 1.12 keeps as unknown fields (backend/onnx/proto_fields.h):
// node metadata_props, read and written, and the origin tags of polygraphy's own passes.
#include "polygraphy/backend/onnx/proto_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diff_models.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(NodeMetadataProps, SetReplacesOnlyItsKeyAndSurvivesSavingAndLoading) {
    onnx::NodeProto node;
    node.set_op_type("Relu");
    node.mutable_unknown_fields()->AddVarint(kNodeOverloadField + 100, 7);  // an unrelated unknown field
    set_node_metadata_prop(node, "a", "1");
    set_node_metadata_prop(node, "b", "2");
    set_node_metadata_prop(node, "a", "3");
    EXPECT_THAT(node_metadata_props(node), ElementsAre(Pair("b", "2"), Pair("a", "3")));
    EXPECT_EQ(node_metadata_prop(node, "a"), "3");
    EXPECT_EQ(node_metadata_prop(node, "c"), std::nullopt);
    EXPECT_EQ(node.unknown_fields().field(0).number(), kNodeOverloadField + 100);

    testing::TempDir dir;
    onnx::ModelProto model = testing::diff_cnn();
    set_node_metadata_prop(*model.mutable_graph()->mutable_node(0), "pkg.example", "value");
    save_onnx(model, dir.file("tagged.onnx"));
    const OnnxModel loaded = onnx_from_path(dir.file("tagged.onnx"));
    EXPECT_EQ(node_metadata_prop(loaded->graph().node(0), "pkg.example"), "value");
}

TEST(NodeOrigins, PassesTagTheNodesTheyKeepAndAFirstTagStays) {
    onnx::ModelProto model = testing::diff_cnn();
    set_node_metadata_prop(*model.mutable_graph()->mutable_node(1), kNodeOriginKey, "/older/Relu");
    convert_to_fp16(model);
    int tagged = 0, casts = 0;
    for (const auto& node : model.graph().node()) {
        const auto origin = node_metadata_prop(node, kNodeOriginKey);
        if (node.op_type() == "Cast") {
            ++casts;
            EXPECT_EQ(origin, std::nullopt) << node.name();  // inserted: no node of the model
            continue;
        }
        ++tagged;
        EXPECT_EQ(origin, node.name() == "/relu1/Relu" ? "/older/Relu" : node.name());
    }
    EXPECT_EQ(tagged, 9);
    EXPECT_GT(casts, 0);

    // Constant folding tags the nodes that stay.
    testing::ModelBuilder builder(17, "fold");
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("c", testing::random_tensor({2}, 1));
    builder.node("Neg", {"c"}, {"negated"}, "fold_me");
    builder.node("Add", {"x", "negated"}, {"y"}, "stays");
    builder.output("y", DataType::kFloat32, Shape{2});
    onnx::ModelProto folded = builder.proto();
    fold_constants(folded);
    ASSERT_EQ(folded.graph().node_size(), 1);
    EXPECT_EQ(node_metadata_prop(folded.graph().node(0), kNodeOriginKey), "stays");
}

}  // namespace
}  // namespace polygraphy
