// Pairing the tensors of two graphs of one network (comparator/graph_match.h).
#include "polygraphy/comparator/graph_match.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "diff_models.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/proto_fields.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TempDir;
using ::testing::UnorderedElementsAre;

const TensorPair* pair_of_b(const GraphMatching& matching, const std::string& b) {
    for (const TensorPair& pair : matching.pairs)
        if (pair.b == b) return &pair;
    return nullptr;
}

std::vector<std::string> node_names(const onnx::GraphProto& graph, const std::vector<int>& nodes) {
    std::vector<std::string> names;
    for (int n : nodes) names.push_back(node_display_name(graph, n));
    return names;
}

// F23 (structure fuzzing run 17): an Identity that writes the name of the weight it reads sent the
// walk from a weight to its producer round in a circle, forever.
TEST(GraphMatch, ANodeThatWritesTheWeightItReadsEndsTheWalkToTheWeight) {
    testing::ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2}).output("y", DataType::kFloat32, Shape{2});
    builder.initializer("w", testing::random_tensor({2}, 3));
    builder.node("Identity", {"w"}, {"w"}, "shadow");
    builder.node("Mul", {"x", "w"}, {"m"}, "mul");
    builder.node("Relu", {"m"}, {"y"}, "relu");
    const onnx::ModelProto a = builder.proto();
    onnx::ModelProto b = a;
    // B renames Mul's output and the nodes, so that only the structure can pair it.
    b.mutable_graph()->mutable_node(1)->set_output(0, "t1");
    b.mutable_graph()->mutable_node(1)->set_name("n1");
    b.mutable_graph()->mutable_node(2)->set_input(0, "t1");
    b.mutable_graph()->mutable_node(2)->set_name("n2");
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    bool paired = false;
    for (const TensorPair& pair : matching.pairs) paired = paired || (pair.a == "m" && pair.b == "t1");
    EXPECT_TRUE(paired);
}

TEST(GraphMatch, ACopyPairsEveryTensorByNameWithOneNodeGroups) {
    const onnx::ModelProto a = testing::diff_cnn();
    const GraphMatching matching = match_graphs(a.graph(), a.graph());
    ASSERT_EQ(matching.pairs.size(), 9u);
    for (const TensorPair& pair : matching.pairs) {
        EXPECT_EQ(pair.a, pair.b);
        EXPECT_EQ(pair.how, MatchKind::kName);
        EXPECT_EQ(pair.b_nodes.size(), 1u) << pair.b;
    }
    EXPECT_THAT(matching.unmatched_a, IsEmpty());
    EXPECT_THAT(matching.unmatched_b, IsEmpty());
    ASSERT_EQ(matching.inputs.size(), 1u);
    EXPECT_EQ(matching.inputs[0].b, "x");
    EXPECT_THAT(pair_of_b(matching, "add_out")->b_inputs, ElementsAre("branch_a_out", "branch_b_out"));
}

TEST(GraphMatch, Fp16CastsAreTransparent) {
    const onnx::ModelProto a = testing::diff_cnn();
    const onnx::ModelProto b = testing::fp16_version(a);
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    EXPECT_EQ(matching.pairs.size(), 9u);
    EXPECT_THAT(matching.unmatched_a, IsEmpty());
    EXPECT_THAT(matching.unmatched_b, IsEmpty());
    // The first Conv of B reads x through the Cast the conversion put in front of it.
    const TensorPair* conv1 = pair_of_b(matching, "conv1_out");
    ASSERT_NE(conv1, nullptr);
    EXPECT_THAT(conv1->b_inputs, ElementsAre("x"));
    EXPECT_EQ(b.graph().node(conv1->b_nodes.front()).op_type(), "Cast");
}

TEST(GraphMatch, QuantizedLayersAreGroupedWithTheirQdqNodes) {
    const onnx::ModelProto a = testing::diff_cnn();
    const onnx::ModelProto b = testing::qdq_version(a);
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    EXPECT_EQ(matching.pairs.size(), 9u);
    EXPECT_THAT(matching.unmatched_b, IsEmpty());
    const TensorPair* branch_a = pair_of_b(matching, "branch_a_out");
    ASSERT_NE(branch_a, nullptr);
    EXPECT_EQ(branch_a->a, "branch_a_out");
    EXPECT_THAT(node_names(b.graph(), branch_a->b_nodes),
                UnorderedElementsAre("relu1_out_QuantizeLinear", "relu1_out_DequantizeLinear", "w2a_DequantizeLinear",
                                     "/branch_a/Conv"));
    EXPECT_THAT(branch_a->b_inputs, ElementsAre("relu1_out"));
}

TEST(GraphMatch, QdqNameConventionsPairTensorsWhoseOwnNamesDiffer) {
    // B keeps only the quantizer's names: its Relu writes `r_QuantizeLinear_Input`.
    testing::ModelBuilder a_builder;
    a_builder.input("x", DataType::kFloat32, Shape{1, 4});
    a_builder.node("Relu", {"x"}, {"r"}, "relu");
    a_builder.node("Neg", {"r"}, {"y"}, "neg");
    a_builder.output("y", DataType::kFloat32, Shape{1, 4});
    testing::ModelBuilder b_builder;
    b_builder.input("x", DataType::kFloat32, Shape{1, 4});
    b_builder.node("Relu", {"x"}, {"r_QuantizeLinear_Input"}, "relu_q");
    b_builder.node("Neg", {"r_QuantizeLinear_Input"}, {"y"}, "neg_q");
    b_builder.output("y", DataType::kFloat32, Shape{1, 4});
    const GraphMatching matching = match_graphs(a_builder.proto().graph(), b_builder.proto().graph());
    const TensorPair* relu = pair_of_b(matching, "r_QuantizeLinear_Input");
    ASSERT_NE(relu, nullptr);
    EXPECT_EQ(relu->a, "r");
    EXPECT_EQ(relu->how, MatchKind::kConvention);
    EXPECT_THAT(relu->detail, HasSubstr("QDQ"));
}

TEST(GraphMatch, AFusedNodeIsPairedNToOneWithTheNodesItReplaced) {
    const onnx::ModelProto a = testing::diff_cnn();
    const onnx::ModelProto b = testing::fused_version(a);
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    const TensorPair* fused = pair_of_b(matching, "relu1_out");
    ASSERT_NE(fused, nullptr);
    EXPECT_THAT(node_names(a.graph(), fused->a_nodes), ElementsAre("/conv1/Conv", "/relu1/Relu"));
    EXPECT_THAT(node_names(b.graph(), fused->b_nodes), ElementsAre("/conv1/Conv"));
    // The Conv's own output has no counterpart in B.
    EXPECT_THAT(matching.unmatched_a, ElementsAre("conv1_out"));
    EXPECT_THAT(matching.unmatched_b, IsEmpty());
}

TEST(GraphMatch, ADecomposedLayerNormalizationIsOneGroupAgainstTheFusedOne) {
    const onnx::ModelProto a = testing::layer_norm_model();
    const onnx::ModelProto b = testing::decomposed_layer_norm_model();
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    const TensorPair* norm = pair_of_b(matching, "ln_out");
    ASSERT_NE(norm, nullptr);
    EXPECT_THAT(node_names(a.graph(), norm->a_nodes), ElementsAre("/ln/LayerNormalization"));
    EXPECT_EQ(norm->b_nodes.size(), 9u);
    EXPECT_THAT(norm->b_inputs, ElementsAre("fc1_out"));
    EXPECT_EQ(matching.unmatched_b.size(), 8u);  // the decomposition's intermediates
}

TEST(GraphMatch, ARenamedAndReorderedCopyIsPairedByStructure) {
    const onnx::ModelProto a = testing::diff_cnn();
    const onnx::ModelProto b = testing::renamed_reordered_version(a);
    // What each tensor of A was renamed to, by its producer's position.
    std::map<std::string, std::string> renamed;
    for (int n = 0; n < a.graph().node_size(); ++n) {
        int m = n;
        const std::string& name = a.graph().node(n).name();
        if (name == "/branch_a/Conv") m = n + 1;
        if (name == "/branch_b/Conv") m = n - 1;
        renamed[a.graph().node(n).output(0)] = b.graph().node(m).output(0);
    }
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    ASSERT_EQ(matching.pairs.size(), 9u);
    for (const TensorPair& pair : matching.pairs) {
        EXPECT_EQ(renamed.at(pair.a), pair.b) << pair.a;
        EXPECT_EQ(pair.how, MatchKind::kStructure) << pair.a;
        EXPECT_LT(pair.confidence, 1.0);
    }
}

TEST(GraphMatch, AConvertedModelRenamedByAnotherToolPairsThroughItsOriginTags) {
    const onnx::ModelProto a = testing::diff_cnn();
    // convert_to_fp16 tags each node with its name; another tool then renames every node and tensor.
    const onnx::ModelProto b = testing::renamed_reordered_version(testing::fp16_version(a));
    std::map<std::string, std::string> output_of_a;  // A's node -> its output
    for (const auto& node : a.graph().node()) output_of_a[node.name()] = node.output(0);
    std::map<std::string, std::string> expected;  // B's tensor -> A's, by the tag of its producer
    for (const auto& node : b.graph().node())
        if (const auto tag = node_metadata_prop(node, kNodeOriginKey)) expected[node.output(0)] = output_of_a.at(*tag);
    ASSERT_EQ(expected.size(), 9u);
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    ASSERT_EQ(matching.pairs.size(), 9u);
    for (const TensorPair& pair : matching.pairs) {
        ASSERT_TRUE(expected.contains(pair.b)) << pair.b;
        EXPECT_EQ(expected.at(pair.b), pair.a) << pair.b;
        EXPECT_EQ(pair.how, MatchKind::kProvenance) << pair.b;
        EXPECT_THAT(pair.detail, HasSubstr("origin tag '"));
    }
}

TEST(GraphMatch, RenamedInputsPairThroughTheInputMap) {
    const onnx::ModelProto a = testing::diff_cnn();
    const onnx::ModelProto b = testing::renamed_reordered_version(a, true);
    const std::string message = testing::error_message<UsageError>([&] { match_graphs(a.graph(), b.graph()); });
    EXPECT_THAT(message, HasSubstr("Graph input 'in0' of B has no counterpart"));
    EXPECT_THAT(message, HasSubstr("--input-map"));
    GraphMatchOptions options;
    options.input_map = {{"x", "in0"}};
    const GraphMatching matching = match_graphs(a.graph(), b.graph(), options);
    EXPECT_EQ(matching.inputs.at(0).how, MatchKind::kUser);
    EXPECT_EQ(matching.pairs.size(), 9u);
}

TEST(GraphMatch, ATensorOneGraphComputesAndTheOtherHoldsAsAWeightIsNotPaired) {
    // The structure fuzzer's first finding against the matcher: B's "c" is a Constant's output.
    testing::ModelBuilder a_builder, b_builder;
    a_builder.input("x", DataType::kFloat32, Shape{1, 4});
    a_builder.node("Relu", {"x"}, {"c"}, "relu");
    a_builder.node("Add", {"x", "c"}, {"y"}, "add");
    a_builder.output("y", DataType::kFloat32, Shape{1, 4});
    b_builder.input("x", DataType::kFloat32, Shape{1, 4});
    testing::set_attr(b_builder.node("Constant", {}, {"c"}, "constant"), "value",
                      Tensor::from_doubles(DataType::kFloat32, {1, 4}, {1, 2, 3, 4}));
    b_builder.node("Add", {"x", "c"}, {"y"}, "add");
    b_builder.output("y", DataType::kFloat32, Shape{1, 4});
    const GraphMatching matching = match_graphs(a_builder.proto().graph(), b_builder.proto().graph());
    ASSERT_EQ(matching.pairs.size(), 1u);
    EXPECT_EQ(matching.pairs[0].b, "y");
    EXPECT_THAT(matching.unmatched_a, ElementsAre("c"));
    EXPECT_THAT(matching.pairs[0].b_inputs, ElementsAre("x"));
}

TEST(GraphMatch, ACastOfATensorNothingDefinesDoesNotStopTheStructureStage) {
    // F21: the Cast's output is a chain head of its own, which the forward pass gives no colour.
    testing::ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 4});
    builder.node("Cast", {"undefined"}, {"c"}, "cast");
    builder.node("Relu", {"x"}, {"r"}, "relu");
    builder.node("Add", {"r", "c"}, {"y"}, "add");
    builder.output("y", DataType::kFloat32, Shape{1, 4});
    const onnx::ModelProto a = builder.proto();
    const onnx::ModelProto b = testing::renamed_reordered_version(a);
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    EXPECT_FALSE(matching.pairs.empty());
}

TEST(GraphMatch, AnInputWithoutCounterpartGetsADidYouMeanHint) {
    testing::ModelBuilder a_builder, b_builder;
    a_builder.input("images", DataType::kFloat32, Shape{1, 4});
    a_builder.node("Relu", {"images"}, {"y"});
    a_builder.output("y", DataType::kFloat32, Shape{1, 4});
    b_builder.input("image", DataType::kFloat32, Shape{1, 4});
    b_builder.node("Relu", {"image"}, {"y"});
    b_builder.output("y", DataType::kFloat32, Shape{1, 4});
    const std::string message =
        testing::error_message<UsageError>([&] { match_graphs(a_builder.proto().graph(), b_builder.proto().graph()); });
    EXPECT_THAT(message, HasSubstr("did you mean 'images'?"));
}

TEST(GraphMatch, UserPairsOverrideTheRestAndMustNameRealTensors) {
    const onnx::ModelProto a = testing::diff_cnn();
    GraphMatchOptions options;
    options.user = {{"branch_a_out", "branch_b_out"}, {"branch_b_out", "branch_a_out"}};
    const GraphMatching matching = match_graphs(a.graph(), a.graph(), options);
    EXPECT_EQ(pair_of_b(matching, "branch_b_out")->a, "branch_a_out");
    EXPECT_EQ(pair_of_b(matching, "branch_b_out")->how, MatchKind::kUser);

    options.user = {{"branch_a_ou", "branch_a_out"}};
    EXPECT_THAT(testing::error_message<UsageError>([&] { match_graphs(a.graph(), a.graph(), options); }),
                HasSubstr("'branch_a_ou' is not a tensor a node of A computes (did you mean 'branch_a_out'?)"));
    options.user = {{"branch_a_out", "branch_a_out"}, {"branch_a_out", "branch_b_out"}};
    EXPECT_THAT(testing::error_message<UsageError>([&] { match_graphs(a.graph(), a.graph(), options); }),
                HasSubstr("in two pairs"));
}

TEST(GraphMatch, TheSavedMatchFileReadsBackAsThePairsFound) {
    TempDir dir;
    const onnx::ModelProto a = testing::diff_cnn();
    const onnx::ModelProto b = testing::fused_version(a);
    const GraphMatching matching = match_graphs(a.graph(), b.graph());
    save_match_file(matching, a.graph(), b.graph(), dir.file("matches.json"));
    const std::string text = read_file(dir.file("matches.json"));
    EXPECT_THAT(text, HasSubstr("\"a_nodes\": [\n                \"/conv1/Conv\",\n                \"/relu1/Relu\"\n"));
    const std::vector<UserMatch> read = read_match_file(dir.file("matches.json"));
    ASSERT_EQ(read.size(), matching.inputs.size() + matching.pairs.size());
    EXPECT_EQ(read.back().a, matching.pairs.back().a);
    GraphMatchOptions options;
    options.user = read;
    const GraphMatching again = match_graphs(a.graph(), b.graph(), options);
    ASSERT_EQ(again.pairs.size(), matching.pairs.size());
    for (std::size_t i = 0; i < again.pairs.size(); ++i) {
        EXPECT_EQ(again.pairs[i].a, matching.pairs[i].a);
        EXPECT_EQ(again.pairs[i].b, matching.pairs[i].b);
        EXPECT_EQ(again.pairs[i].how, MatchKind::kUser);
    }
}

TEST(GraphMatch, AMalformedMatchFileIsAFormatError) {
    TempDir dir;
    write_file_atomically(dir.file("bad.json"), "{\"pairs\": [{\"a\": \"x\"}]}");
    EXPECT_THROW(read_match_file(dir.file("bad.json")), FormatError);
    write_file_atomically(dir.file("other.json"), "{\"matches\": []}");
    EXPECT_THAT(testing::error_message<FormatError>([&] { read_match_file(dir.file("other.json")); }),
                HasSubstr("needs a \"pairs\" list"));
    write_file_atomically(dir.file("list.json"), "[{\"a\": \"x\", \"b\": \"y\"}]");
    EXPECT_EQ(read_match_file(dir.file("list.json")).size(), 1u);
}

}  // namespace
}  // namespace polygraphy
