// `polygraphy template shard-hints` and `polygraphy multi-device shard` on the command line, as
// Polygraphy's test_shard.py runs them, and their bad input.
#include "tools/multi_device/multi_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/shard.h"
#include "polygraphy/common/file_io.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;

// Two attention layers over inputs (q, k, v) and (q1, k2, v2), as Polygraphy's multi_attention.onnx.
void save_multi_attention(const std::string& path) {
    ModelBuilder builder;
    const DynShape shape = {Dim::named("seq_len"), Dim::fixed(8), Dim::fixed(16)};
    for (const char* name : {"q", "q1", "k", "k2", "v", "v2"}) builder.input(name, DataType::kFloat32, shape);
    for (int n : {1, 2}) {
        const std::string layer = "attention_" + std::to_string(n);
        const std::string q = n == 1 ? "q" : "q1", k = n == 1 ? "k" : "k2", v = n == 1 ? "v" : "v2";
        builder.output(layer + "_mm2_out", DataType::kFloat32, shape);
        builder.node("MatMul", {q, k}, {layer + "_mm1_out"}, "mm1_" + std::to_string(n));
        builder.node("Softmax", {layer + "_mm1_out"}, {layer + "_sm_out"}, "sm_" + std::to_string(n));
        builder.node("MatMul", {layer + "_sm_out", v}, {layer + "_mm2_out"}, "mm2_" + std::to_string(n));
    }
    builder.save(path);
}

std::size_t count_collectives(const std::string& path, const std::string& operation) {
    std::size_t count = 0;
    const OnnxModel model = onnx_from_path(path);
    for (const auto& node : model->graph().node())
        if (node.op_type() == "DistCollective")
            for (const auto& attribute : node.attribute())
                if (attribute.name() == "collective_operation" && attribute.s() == operation) ++count;
    return count;
}

TEST(MultiDeviceTool, TemplateThenShardAsPolygraphysTestDoes) {
    testing::TempDir dir;
    const std::string model = dir.file("multi_attention.onnx");
    save_multi_attention(model);
    const std::string hints_path = dir.file("hints.json");
    auto result = run_polygraphy({"template", "shard-hints", model, "-o", hints_path});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Found attention layer with Q tensor q\n"));
    EXPECT_THAT(result.output, HasSubstr("Found attention layer with Q tensor q1\n"));

    // The first layer's half of the hints, as test_multi_attention_head_shard edits them.
    ShardHints hints = shard_hints_from_json(read_file(hints_path), hints_path);
    ASSERT_EQ(hints.inputs.size(), 6u);
    EXPECT_EQ(hints.kv_rank, 3);
    hints.inputs.resize(3);
    hints.outputs.resize(1);
    hints.attention_layers.resize(1);
    write_file_atomically(hints_path, shard_hints_to_json(hints));

    const std::string sharded = dir.file("sharded.onnx");
    result = run_polygraphy({"multi-device", "shard", model, "-o", sharded, "-s", hints_path});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Inserted 3 reduce-scatter(s), 3 all-gather(s) and 0 transpose(s)"));
    EXPECT_EQ(count_collectives(sharded, "reduce_scatter"), 3u);
    EXPECT_EQ(count_collectives(sharded, "all_gather"), 3u);

    // Template options reach the file; a dimension other than 0 transposes around the collectives.
    result = run_polygraphy({"template", "shard-hints", model, "-o", hints_path, "--no-suggest-io", "--cp-type",
                             "fused", "--gpus", "4", "--groups", "0", "1", "--k-idx", "1", "--scatter-op", "sum"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    hints = shard_hints_from_json(read_file(hints_path), hints_path);
    EXPECT_TRUE(hints.inputs.empty());
    EXPECT_FALSE(hints.attention_layers[0].gather_kv);
    EXPECT_EQ(hints.group_size, 4);
    EXPECT_EQ(hints.groups, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(hints.k_seq_len_idx, 1);
    EXPECT_EQ(hints.reduce_scatter_reduce_op, "sum");
    hints.attention_layers[0].gather_kv = true;
    hints.inputs = {{"q", 0, 3}, {"k", 1, 3}, {"v", 0, 3}};
    write_file_atomically(hints_path, shard_hints_to_json(hints));
    result = run_polygraphy({"multi-device", "shard", model, "--hint", hints_path, "-o", sharded});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Inserted 3 reduce-scatter(s), 2 all-gather(s) and 4 transpose(s)"));
}

TEST(MultiDeviceTool, BadInputIsOneLineAndWritesNothing) {
    testing::TempDir dir;
    const std::string model = dir.file("model.onnx");
    save_multi_attention(model);
    const std::string out = dir.file("out.onnx");
    const auto expect_one_line = [](const testing::CommandResult& result, int exit_code, const std::string& expected) {
        EXPECT_EQ(result.exit_code, exit_code) << result.output;
        EXPECT_THAT(result.output, HasSubstr(expected));
        EXPECT_THAT(result.output, Not(HasSubstr("terminate")));
    };

    expect_one_line(run_polygraphy({"template", "shard-hints", model, "-o", dir.file("hints.txt")}), 1,
                    "[!] -o/--output: the hints file must be a .json file, got '" + dir.file("hints.txt") + "'");
    EXPECT_FALSE(fs::exists(dir.file("hints.txt")));
    expect_one_line(run_polygraphy({"template", "shard-hints", model, "-o", dir.file("h.json"), "--root", "-1"}), 1,
                    "--root: expected a whole number of 0 or more, got '-1'");
    expect_one_line(run_polygraphy({"template", "shard-hints", model, "-o", dir.file("h.json"), "--cp-type", "x"}), 2,
                    "argument --cp-type: invalid choice: 'x'");
    expect_one_line(run_polygraphy({"template", "shard-hints", model}), 2,
                    "the following arguments are required: -o/--output");
    EXPECT_FALSE(fs::exists(dir.file("h.json")));

    expect_one_line(run_polygraphy({"multi-device", "shard", model, "-o", out}), 2,
                    "the following arguments are required: -s/--hint");
    expect_one_line(run_polygraphy({"multi-device", "shard", model, "-o", out, "-s", dir.file("missing.json")}), 1,
                    dir.file("missing.json"));
    write_file_atomically(dir.file("bad.json"), "{\"parallelism\": \"CP\"");
    expect_one_line(run_polygraphy({"multi-device", "shard", model, "-o", out, "-s", dir.file("bad.json")}), 1,
                    "[!] " + dir.file("bad.json") + ": ");
    // A hints file for another model.
    ShardHints hints;
    hints.attention_layers = {{"query", true, false}};
    write_file_atomically(dir.file("other.json"), shard_hints_to_json(hints));
    expect_one_line(run_polygraphy({"multi-device", "shard", model, "-o", out, "-s", dir.file("other.json")}), 1,
                    "[!] " + dir.file("other.json") +
                        ": the hints name q 'query', which no attention layer (MatMul -> Softmax -> MatMul) reads as "
                        "its Q");
    hints.attention_layers.clear();
    hints.inputs = {{"input", 0, 3}};
    write_file_atomically(dir.file("other.json"), shard_hints_to_json(hints));
    expect_one_line(run_polygraphy({"multi-device", "shard", model, "-o", out, "-s", dir.file("other.json")}), 1,
                    "the hints name 'input' in \"inputs\", which is not a tensor of the model");
    EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace polygraphy
