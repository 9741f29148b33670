// Context-parallel sharding: the hints Polygraphy's `template shard-hints` suggests, its JSON, and the
// DistCollective rewrite of `multi-device shard`, on attention models built in code after
// Polygraphy's test models (attention, attention_same_qkv, multi_attention).
#include "polygraphy/backend/onnx/shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ModelBuilder;

DynShape sequence_shape(bool batch_first) {
    if (batch_first) return {Dim::named("batch"), Dim::named("seq_len"), Dim::fixed(64)};
    return {Dim::named("seq_len"), Dim::named("batch"), Dim::fixed(64)};
}

// One attention layer "attention_<n>": MatMul(q, k) -> Softmax -> MatMul(., v).
void add_attention(ModelBuilder& builder, int n, const std::string& q, const std::string& k, const std::string& v) {
    const std::string prefix = "attention_" + std::to_string(n);
    builder.node("MatMul", {q, k}, {prefix + "_mm1_out"}, "mm1_" + std::to_string(n));
    builder.node("Softmax", {prefix + "_mm1_out"}, {prefix + "_sm_out"}, "sm_" + std::to_string(n));
    builder.node("MatMul", {prefix + "_sm_out", v}, {prefix + "_mm2_out"}, "mm2_" + std::to_string(n));
}

ModelBuilder attention_model(bool batch_first = false) {
    ModelBuilder builder;
    for (const char* name : {"q", "k", "v"}) builder.input(name, DataType::kFloat32, sequence_shape(batch_first));
    builder.output("attention_1_mm2_out", DataType::kFloat32, sequence_shape(batch_first));
    add_attention(builder, 1, "q", "k", "v");
    return builder;
}

ModelBuilder same_qkv_model() {
    ModelBuilder builder;
    builder.input("q", DataType::kFloat32, sequence_shape(false));
    builder.output("attention_1_mm2_out", DataType::kFloat32, sequence_shape(false));
    add_attention(builder, 1, "q", "q", "q");
    return builder;
}

ModelBuilder multi_attention_model() {
    ModelBuilder builder;
    for (const char* name : {"q", "q1", "k", "k2", "v", "v2"})
        builder.input(name, DataType::kFloat32, sequence_shape(false));
    builder.output("attention_1_mm2_out", DataType::kFloat32, sequence_shape(false));
    builder.output("attention_2_mm2_out", DataType::kFloat32, sequence_shape(false));
    add_attention(builder, 1, "q", "k", "v");
    add_attention(builder, 2, "q1", "k2", "v2");
    return builder;
}

std::vector<std::string> names_of(const std::vector<ShardTensor>& tensors) {
    std::vector<std::string> names;
    for (const ShardTensor& tensor : tensors) names.push_back(tensor.name);
    return names;
}

const onnx::NodeProto& node_named(const onnx::ModelProto& model, const std::string& name) {
    for (const auto& node : model.graph().node())
        if (node.name() == name) return node;
    throw std::runtime_error("no node " + name);
}

std::vector<std::string> inputs_of(const onnx::NodeProto& node) {
    return {node.input().begin(), node.input().end()};
}
std::vector<std::string> outputs_of(const onnx::NodeProto& node) {
    return {node.output().begin(), node.output().end()};
}

// collective_operation of every DistCollective, by node name.
std::map<std::string, std::string> collectives(const onnx::ModelProto& model) {
    std::map<std::string, std::string> found;
    for (const auto& node : model.graph().node())
        if (node.op_type() == "DistCollective")
            for (const auto& attribute : node.attribute())
                if (attribute.name() == "collective_operation") found[node.name()] = attribute.s();
    return found;
}

// Every node comes after the producers of its inputs.
bool is_sorted(const onnx::ModelProto& model) {
    std::set<std::string> defined;
    for (const auto& input : model.graph().input()) defined.insert(input.name());
    for (const auto& node : model.graph().node()) {
        for (const auto& input : node.input())
            if (!defined.count(input)) return false;
        for (const auto& output : node.output()) defined.insert(output);
    }
    return true;
}

TEST(ShardHints, SuggestedFromTheAttentionLayersAndTheirDependencies) {
    const OnnxModel model = multi_attention_model().build();
    const std::vector<AttentionLayer> layers = find_attention_layers(*model);
    ASSERT_EQ(layers.size(), 2u);
    EXPECT_EQ(layers[1].q, "q1");
    EXPECT_EQ(layers[1].k, "k2");
    EXPECT_EQ(layers[1].v, "v2");
    EXPECT_EQ(layers[1].second_matmul, 5u);

    const ShardHints hints = suggest_shard_hints(*model, {});
    ASSERT_EQ(hints.attention_layers.size(), 2u);
    EXPECT_EQ(hints.attention_layers[0].q, "q");
    EXPECT_TRUE(hints.attention_layers[0].gather_kv);
    EXPECT_FALSE(hints.attention_layers[0].gather_q);
    // Each layer's graph inputs in graph order, then the next layer's: the first half is the first layer's.
    EXPECT_THAT(names_of(hints.inputs), ElementsAre("q", "k", "v", "q1", "k2", "v2"));
    EXPECT_THAT(names_of(hints.outputs), ElementsAre("attention_1_mm2_out", "attention_2_mm2_out"));
    EXPECT_EQ(hints.inputs[0].seq_len_idx, 0);  // the dim named seq_len
    EXPECT_EQ(hints.inputs[0].rank, 3);
    EXPECT_EQ(hints.kv_rank, 3);
    EXPECT_EQ(hints.reduce_scatter_reduce_op, "max");

    ShardHintOptions options;
    options.cp_type = "ring_attention";
    options.suggest_io = false;
    options.k_seq_len_idx = 2;
    options.gpus = 4;
    options.groups = {0, 1};
    const ShardHints bare = suggest_shard_hints(*model, options);
    EXPECT_FALSE(bare.attention_layers[0].gather_kv);
    EXPECT_TRUE(bare.inputs.empty());
    EXPECT_TRUE(bare.outputs.empty());
    EXPECT_EQ(bare.k_seq_len_idx, 2);
    EXPECT_EQ(bare.group_size, 4);
    EXPECT_THAT(bare.groups, ElementsAre(0, 1));

    // The sequence index is found by the dim's name; the option is the fallback.
    const ShardHints batch_first = suggest_shard_hints(*attention_model(true).build(), {});
    EXPECT_EQ(batch_first.inputs[0].seq_len_idx, 1);
    ModelBuilder unnamed;
    unnamed.input("q", DataType::kFloat32, Shape{8, 64});
    unnamed.input("k", DataType::kFloat32, Shape{64, 8});
    unnamed.input("v", DataType::kFloat32, Shape{8, 64});
    unnamed.output("attention_1_mm2_out", DataType::kFloat32, Shape{8, 64});
    add_attention(unnamed, 1, "q", "k", "v");
    options = {};
    options.input_seq_len_idx = 1;
    EXPECT_EQ(suggest_shard_hints(*unnamed.build(), options).inputs[0].seq_len_idx, 1);

    options = {};
    options.scatter_op = "median";
    EXPECT_THROW(suggest_shard_hints(*model, options), UsageError);
}

TEST(ShardHints, PatternWhoseInnerTensorsLeakIsNoAttentionLayer) {
    ModelBuilder builder = attention_model();
    builder.output("attention_1_sm_out", DataType::kFloat32, sequence_shape(false));  // Softmax read outside
    EXPECT_TRUE(find_attention_layers(*builder.build()).empty());
    ModelBuilder scaled;
    for (const char* name : {"q", "k", "v"}) scaled.input(name, DataType::kFloat32, sequence_shape(false));
    scaled.output("y", DataType::kFloat32, sequence_shape(false));
    scaled.node("MatMul", {"q", "k"}, {"s"});
    scaled.node("Relu", {"s"}, {"r"});
    scaled.node("Softmax", {"r"}, {"p"});
    scaled.node("MatMul", {"p", "v"}, {"y"});
    EXPECT_TRUE(find_attention_layers(*scaled.build()).empty());
}

TEST(ShardHints, JsonIsPolygraphysLayoutAndReadsBack) {
    ShardHints hints;
    hints.group_size = 2;
    hints.attention_layers = {{"q", true, false}};
    hints.inputs = {{"input", 0, 3}};
    hints.outputs = {{"output", 1, std::nullopt}};
    const std::string text = shard_hints_to_json(hints);
    EXPECT_EQ(text, R"({
    "parallelism": "CP",
    "group_size": 2,
    "root": 0,
    "groups": [],
    "attention_layers": [
        {
            "q": "q",
            "gather_kv": true,
            "gather_q": false,
            "polygraphy_class": "AttentionLayerHint"
        }
    ],
    "inputs": [
        {
            "name": "input",
            "seq_len_idx": 0,
            "rank": 3,
            "polygraphy_class": "ShardTensor"
        }
    ],
    "outputs": [
        {
            "name": "output",
            "seq_len_idx": 1,
            "rank": null,
            "polygraphy_class": "ShardTensor"
        }
    ],
    "k_seq_len_idx": 0,
    "v_seq_len_idx": 0,
    "kv_rank": null,
    "reduce_scatter_reduce_op": "max",
    "polygraphy_class": "ShardHints"
})");
    const ShardHints read = shard_hints_from_json(text, "hints.json");
    EXPECT_EQ(shard_hints_to_json(read), text);
    EXPECT_EQ(read.outputs[0].seq_len_idx, 1);
    EXPECT_FALSE(read.outputs[0].rank);

    // Markers are optional, a tensor's rank may be left out, groups and kv_rank are read.
    const ShardHints bare = shard_hints_from_json(
        R"({"parallelism": "CP", "group_size": 0, "root": 1, "groups": [2, 3], "attention_layers": [],
            "inputs": [{"name": "x", "seq_len_idx": 2}], "outputs": [], "k_seq_len_idx": 1, "v_seq_len_idx": 2,
            "kv_rank": 4, "reduce_scatter_reduce_op": "sum"})",
        "h.json");
    EXPECT_EQ(bare.root, 1);
    EXPECT_THAT(bare.groups, ElementsAre(2, 3));
    EXPECT_FALSE(bare.inputs[0].rank);
    EXPECT_EQ(bare.kv_rank, 4);
    EXPECT_EQ(bare.v_seq_len_idx, 2);
}

TEST(ShardHints, BadHintsFilesAreOneLineNamingTheFile) {
    const std::string valid =
        R"({"parallelism": "CP", "group_size": 0, "root": 0, "groups": [], "attention_layers": [],
            "inputs": [], "outputs": [], "k_seq_len_idx": 0, "v_seq_len_idx": 0, "kv_rank": null,
            "reduce_scatter_reduce_op": "max"})";
    ASSERT_NO_THROW(shard_hints_from_json(valid, "h.json"));
    const auto replaced = [&](const std::string& from, const std::string& to) {
        std::string text = valid;
        text.replace(text.find(from), from.size(), to);
        return text;
    };
    const std::vector<std::pair<std::string, std::string>> cases = {
        {replaced("\"root\": 0, ", ""), "ShardHints has no \"root\""},
        {replaced("\"CP\"", "\"TP\""), "parallelism \"TP\" is not supported"},
        {replaced("\"max\"", "\"median\""), "\"median\" is not one of sum, prod, min, max, avg"},
        {replaced("\"k_seq_len_idx\": 0", "\"k_seq_len_idx\": -1"), "\"k_seq_len_idx\" must be a whole number"},
        {replaced("\"group_size\": 0", "\"group_size\": 1.5"), "\"group_size\" must be a whole number"},
        {replaced("\"groups\": []", "\"groups\": [\"a\"]"), "must be a number, not a string"},
        {replaced("\"root\": 0", "\"root\": 0, \"dist_collectives\": []"), "unknown field \"dist_collectives\""},
        {replaced("\"reduce_scatter_reduce_op\": \"max\"",
                  "\"reduce_scatter_reduce_op\": \"max\", \"polygraphy_class\": \"RunResults\""),
         "polygraphy_class \"RunResults\" where a ShardHints is expected"},
        {replaced("\"attention_layers\": []", "\"attention_layers\": [{\"q\": \"q\", \"gather_kv\": true}]"),
         "an AttentionLayerHint has no \"gather_q\""},
        {replaced("\"attention_layers\": []",
                  "\"attention_layers\": [{\"q\": \"q\", \"gather_kv\": 1, "
                  "\"gather_q\": false}]"),
         "\"gather_kv\" must be a boolean"},
        {replaced("\"inputs\": []", "\"inputs\": [{\"seq_len_idx\": 0}]"),
         "a ShardTensor of \"inputs\" has no \"name\""},
        {replaced("\"inputs\": []", "\"inputs\": [\"x\"]"), "each of \"inputs\" must be an object (a ShardTensor)"},
        {"[]", "the hints file must be an object (a ShardHints)"},
        {valid.substr(0, 40), "h.json: "},
    };
    for (const auto& [text, expected] : cases) {
        try {
            shard_hints_from_json(text, "h.json");
            ADD_FAILURE() << "accepted: " << text;
        } catch (const FormatError& error) {
            const std::string message = error.what();
            EXPECT_THAT(message, HasSubstr(expected)) << text;
            EXPECT_EQ(message.rfind("h.json: ", 0), 0u) << message;
            EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        }
    }
}

TEST(ShardModel, AttentionGetsAScatterPerInputAndGathersForKVAndTheOutput) {
    OnnxModel model = attention_model().build();
    const ShardHints hints = suggest_shard_hints(*model, {});
    const ShardStats stats = shard_model(*model, hints);
    EXPECT_EQ(stats.reduce_scatters, 3u);
    EXPECT_EQ(stats.all_gathers, 3u);
    EXPECT_EQ(stats.transposes, 0u);
    EXPECT_EQ(collectives(*model), (std::map<std::string, std::string>{{"DistCollective_0", "reduce_scatter"},
                                                                       {"DistCollective_1", "reduce_scatter"},
                                                                       {"DistCollective_2", "reduce_scatter"},
                                                                       {"DistCollective_3", "all_gather"},
                                                                       {"DistCollective_4", "all_gather"},
                                                                       {"DistCollective_5", "all_gather"}}));
    // q -> RS -> q_md; k -> RS -> k_md_md -> AG -> k_md; the output is gathered back under its name.
    EXPECT_THAT(inputs_of(node_named(*model, "DistCollective_0")), ElementsAre("q"));
    EXPECT_THAT(outputs_of(node_named(*model, "DistCollective_0")), ElementsAre("q_md"));
    EXPECT_THAT(outputs_of(node_named(*model, "DistCollective_1")), ElementsAre("k_md_md"));
    EXPECT_THAT(inputs_of(node_named(*model, "DistCollective_3")), ElementsAre("k_md_md"));
    EXPECT_THAT(outputs_of(node_named(*model, "DistCollective_3")), ElementsAre("k_md"));
    EXPECT_THAT(inputs_of(node_named(*model, "mm1_1")), ElementsAre("q_md", "k_md"));
    EXPECT_THAT(inputs_of(node_named(*model, "mm2_1")), ElementsAre("attention_1_sm_out", "v_md"));
    EXPECT_THAT(outputs_of(node_named(*model, "mm2_1")), ElementsAre("attention_1_mm2_out_md"));
    EXPECT_THAT(inputs_of(node_named(*model, "DistCollective_5")), ElementsAre("attention_1_mm2_out_md"));
    EXPECT_THAT(outputs_of(node_named(*model, "DistCollective_5")), ElementsAre("attention_1_mm2_out"));
    EXPECT_EQ(model->graph().output(0).name(), "attention_1_mm2_out");
    EXPECT_TRUE(is_sorted(*model));

    // Attributes as Polygraphy writes them, groups always an INTS.
    const onnx::NodeProto& scatter = node_named(*model, "DistCollective_0");
    ASSERT_EQ(scatter.attribute_size(), 5);
    EXPECT_EQ(scatter.domain(), "");
    EXPECT_EQ(scatter.attribute(0).name(), "collective_operation");
    EXPECT_EQ(scatter.attribute(1).name(), "reduce_op");
    EXPECT_EQ(scatter.attribute(1).s(), "max");
    EXPECT_EQ(scatter.attribute(2).name(), "root");
    EXPECT_EQ(scatter.attribute(3).name(), "group_size");
    EXPECT_EQ(scatter.attribute(4).name(), "groups");
    EXPECT_EQ(scatter.attribute(4).type(), onnx::AttributeProto::INTS);
    EXPECT_EQ(scatter.attribute(4).ints_size(), 0);
    EXPECT_EQ(node_named(*model, "DistCollective_5").attribute(1).s(), "sum");
}

TEST(ShardModel, SameQKVIsGatheredOnceAndTheOutputStaysUngathered) {
    OnnxModel model = same_qkv_model().build();
    const ShardStats stats = shard_model(*model, suggest_shard_hints(*model, {}));
    EXPECT_EQ(stats.reduce_scatters, 1u);
    EXPECT_EQ(stats.all_gathers, 1u);  // Q gathered as K: no gather at the output
    EXPECT_THAT(inputs_of(node_named(*model, "mm1_1")), ElementsAre("q_md", "q_md"));
    EXPECT_TRUE(is_sorted(*model));
}

TEST(ShardModel, OnlyTheHintedLayersOfAMultiAttentionModel) {
    OnnxModel model = multi_attention_model().build();
    ShardHints hints = suggest_shard_hints(*model, {});
    hints.inputs.resize(hints.inputs.size() / 2);
    hints.outputs.resize(hints.outputs.size() / 2);
    hints.attention_layers.resize(hints.attention_layers.size() / 2);
    const ShardStats stats = shard_model(*model, hints);
    EXPECT_EQ(stats.reduce_scatters, 3u);
    EXPECT_EQ(stats.all_gathers, 3u);
    EXPECT_THAT(inputs_of(node_named(*model, "mm1_2")), ElementsAre("q1", "k2"));  // untouched

    // gather_q: the model is single-device at its outputs, so they are not gathered.
    model = attention_model().build();
    hints = suggest_shard_hints(*model, {});
    hints.attention_layers[0].gather_q = true;
    const ShardStats gathered_q = shard_model(*model, hints);
    EXPECT_EQ(gathered_q.all_gathers, 3u);  // q, k, v
    EXPECT_THAT(outputs_of(node_named(*model, "mm2_1")), ElementsAre("attention_1_mm2_out"));
}

TEST(ShardModel, ASequenceIndexPutsTransposesAroundTheCollective) {
    OnnxModel model = attention_model(true).build();
    ShardHints hints = suggest_shard_hints(*model, {});
    ASSERT_EQ(hints.inputs[1].seq_len_idx, 1);
    hints.k_seq_len_idx = 2;
    const ShardStats stats = shard_model(*model, hints);
    // Three scatters and the output gather on dim 1, K's gather on dim 2; V's gather stays on dim 0.
    EXPECT_EQ(stats.transposes, 10u);
    const onnx::NodeProto& pre = node_named(*model, "TransposePre_DistCollective_0");
    EXPECT_THAT(inputs_of(pre), ElementsAre("q"));
    EXPECT_THAT(outputs_of(pre), ElementsAre("TensorPre_DistCollective_0"));
    ASSERT_EQ(pre.attribute_size(), 1);
    EXPECT_THAT(std::vector<int64_t>(pre.attribute(0).ints().begin(), pre.attribute(0).ints().end()),
                ElementsAre(1, 0, 2));
    EXPECT_THAT(inputs_of(node_named(*model, "DistCollective_0")), ElementsAre("TensorPre_DistCollective_0"));
    EXPECT_THAT(outputs_of(node_named(*model, "TransposePost_DistCollective_0")), ElementsAre("q_md"));
    const onnx::NodeProto& k_gather = node_named(*model, "TransposePre_DistCollective_3");
    EXPECT_THAT(inputs_of(k_gather), ElementsAre("k_md_md"));
    EXPECT_THAT(std::vector<int64_t>(k_gather.attribute(0).ints().begin(), k_gather.attribute(0).ints().end()),
                ElementsAre(2, 1, 0));
    EXPECT_TRUE(is_sorted(*model));
}

TEST(ShardModel, HintsThatDoNotFitTheModelAreOneLine) {
    const auto message = [](ShardHints hints, ModelBuilder builder) {
        OnnxModel model = builder.build();
        try {
            shard_model(*model, hints);
        } catch (const ModelError& error) {
            return std::string(error.what());
        }
        return std::string("accepted");
    };
    const ShardHints good = suggest_shard_hints(*attention_model().build(), {});
    ShardHints hints = good;
    hints.inputs[0].name = "qq";
    EXPECT_EQ(message(hints, attention_model()),
              "the hints name 'qq' in \"inputs\", which is not a tensor of the model (did you mean 'q'?)");
    hints = good;
    hints.outputs.push_back(hints.outputs[0]);
    EXPECT_THAT(message(hints, attention_model()), HasSubstr("twice in \"outputs\""));
    hints = good;
    hints.attention_layers[0].q = "k";
    EXPECT_THAT(message(hints, attention_model()), HasSubstr("the hints name q 'k', which no attention layer"));
    hints = good;
    hints.inputs.erase(hints.inputs.begin() + 1);  // K is not scattered: nothing computes it
    EXPECT_THAT(message(hints, attention_model()), HasSubstr("the hints all-gather 'k', which no node computes"));
    hints = good;
    hints.k_seq_len_idx = 3;
    EXPECT_THAT(message(hints, attention_model()),
                HasSubstr("the hints give 'k_md' sequence index 3, out of range for its rank 3"));
    // No declared rank and no rank hint.
    ModelBuilder untyped;
    for (const char* name : {"q", "k", "v"}) untyped.input(name, DataType::kFloat32, DynShape{});
    untyped.proto().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->clear_shape();
    untyped.output("attention_1_mm2_out", DataType::kFloat32, DynShape{});
    add_attention(untyped, 1, "q", "k", "v");
    hints = good;
    hints.inputs[1].seq_len_idx = 1;
    hints.inputs[1].rank = std::nullopt;
    EXPECT_THAT(message(hints, untyped), HasSubstr("the hints give 'k' sequence index 1, but its rank is unknown"));
    hints.inputs[1].rank = 2;
    EXPECT_EQ(message(hints, untyped), "accepted");
}

}  // namespace
}  // namespace polygraphy
