// `polygraphy plugin list|match|replace` over pattern.json folders, and its config.yaml in
// Polygraphy's (PyYAML's) layout.
#include "tools/plugin/plugin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "test_helpers.h"
#include "tools/plugin/plugin_config.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;
using tools::plugin_config_from_yaml;
using tools::plugin_config_to_yaml;
using tools::PluginConfigEntry;

// What PyYAML's dump_all(default_flow_style=False, sort_keys=False) writes for two plugins.
const char* kPolygraphyConfig = R"(name: toyPlugin
op: CustomToyPlugin
instances:
- inputs:
  - i1
  outputs:
  - o1
  - o2
  attributes:
    ToyX: 2
---
name: other
op: OtherOp
instances:
- inputs:
  - a
  - 'b: c'
  outputs:
  - y
  attributes:
    scales:
    - 0.5
    - 1.0e-05
    names:
    - x
    - 'on'
    mode: fast
- inputs: [p, q]   # flow style and comments are read too
  outputs: [r]
  attributes: {}
)";

TEST(PluginConfig, ReadsPolygraphysLayoutAndWritesItBack) {
    const std::vector<PluginConfigEntry> entries = plugin_config_from_yaml(kPolygraphyConfig, "config.yaml");
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].name, "toyPlugin");
    EXPECT_EQ(entries[0].op, "CustomToyPlugin");
    ASSERT_EQ(entries[0].instances.size(), 1u);
    EXPECT_THAT(entries[0].instances[0].inputs, ElementsAre("i1"));
    EXPECT_THAT(entries[0].instances[0].outputs, ElementsAre("o1", "o2"));
    ASSERT_EQ(entries[0].instances[0].attributes.size(), 1u);
    EXPECT_EQ(entries[0].instances[0].attributes[0].second, PatternValue(int64_t{2}));
    ASSERT_EQ(entries[1].instances.size(), 2u);
    const auto& first = entries[1].instances[0];
    EXPECT_THAT(first.inputs, ElementsAre("a", "b: c"));
    ASSERT_EQ(first.attributes.size(), 3u);
    EXPECT_EQ(first.attributes[0].second, PatternValue(std::vector<double>{0.5, 1e-5}));
    EXPECT_EQ(first.attributes[1].second, PatternValue(std::vector<std::string>{"x", "on"}));
    EXPECT_EQ(first.attributes[2].second, PatternValue(std::string("fast")));
    EXPECT_THAT(entries[1].instances[1].inputs, ElementsAre("p", "q"));
    EXPECT_TRUE(entries[1].instances[1].attributes.empty());

    // Written back, the text reads as the same entries; the first document is PyYAML's text exactly.
    const std::string written = plugin_config_to_yaml(entries);
    EXPECT_EQ(written.substr(0, written.find("---")), std::string(kPolygraphyConfig).substr(0, written.find("---")));
    const std::vector<PluginConfigEntry> again = plugin_config_from_yaml(written, "again.yaml");
    ASSERT_EQ(again.size(), 2u);
    for (std::size_t e = 0; e < 2; ++e) {
        ASSERT_EQ(again[e].instances.size(), entries[e].instances.size());
        for (std::size_t i = 0; i < again[e].instances.size(); ++i) {
            EXPECT_EQ(again[e].instances[i].inputs, entries[e].instances[i].inputs);
            EXPECT_EQ(again[e].instances[i].outputs, entries[e].instances[i].outputs);
            EXPECT_EQ(again[e].instances[i].attributes, entries[e].instances[i].attributes);
        }
    }
    EXPECT_THAT(written, HasSubstr("  - 'b: c'\n"));
    EXPECT_THAT(written, HasSubstr("    - 'on'\n"));  // a plain `on` would read back as a boolean in YAML 1.1
}

TEST(PluginConfig, StringsThatNeedQuotesOrEscapesRoundTrip) {
    PluginConfigEntry entry{"p", "q", {}};
    entry.instances.push_back({{"a\x01"
                                "b",
                                "tab\there", "1", "", " lead", "-x", "k: v",
                                // F24 (fuzzing): an escaped quote before " #" in double quotes read as a comment
                                "q\x01\"x\", #y\"",
                                // F25 (fuzzing): the same after '' inside single quotes
                                "t[p, 'q: #r]' c"},
                               {"out\n"},
                               {{"e", std::string("caf\xc3\xa9")}, {"null", std::string("null")}}});
    const std::string text = plugin_config_to_yaml({entry});
    EXPECT_THAT(text, HasSubstr("  - \"a\\x01b\"\n"));
    EXPECT_THAT(text, HasSubstr("  - '1'\n"));
    EXPECT_THAT(text, HasSubstr("    'null': 'null'\n"));
    const std::vector<PluginConfigEntry> read = plugin_config_from_yaml(text, "c.yaml");
    ASSERT_EQ(read.size(), 1u);
    ASSERT_EQ(read[0].instances.size(), 1u);
    EXPECT_EQ(read[0].instances[0].inputs, entry.instances[0].inputs);
    EXPECT_EQ(read[0].instances[0].outputs, entry.instances[0].outputs);
    EXPECT_EQ(read[0].instances[0].attributes, entry.instances[0].attributes);
    // An apostrophe inside a plain scalar opens no quote: the comment after it is still one.
    EXPECT_EQ(plugin_config_from_yaml("name: it's # a comment\n", "c.yaml")[0].name, "it's");
    // PyYAML escapes non-ASCII text by default: "\u00e9".
    EXPECT_EQ(plugin_config_from_yaml("name: \"caf\\u00e9\"\n", "c.yaml")[0].name, "caf\xc3\xa9");
}

TEST(PluginConfig, BadYamlIsOneLineWithItsLineNumber) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"name: p\ninstances:\n- inputs: [a\n", "config.yaml:3: expected ',' or ']'"},
        {"name: p\n  op: q\n", "config.yaml:2: unexpected indentation"},
        {"name: p\nname: q\n", "config.yaml:2: key 'name' appears twice"},
        {"- a\n- b\n", "config.yaml:1: a plugin entry must be a mapping"},
        {"op: q\n", "a plugin entry without a 'name'"},
        {"name: p\ninstances:\n- inputs: [a]\n", "config.yaml:3: an instance without outputs"},
        {"name: p\ninstances:\n- outputs: [a]\n  attributes:\n    k: {x: 1}\n",
         "config.yaml:5: attribute 'k' must be a number, a string or a list of them"},
        {"name: p\nwhat: 1\n", "unknown key 'what' in a plugin entry"},
        {"name: &anchor p\n", "anchors, aliases, tags and block scalars are not supported"},
        {"name: p\n\top: q\n", "config.yaml:2: a tab in indentation"},
        {"name: 'p\n", "config.yaml:1: unterminated quoted string"},
        {"name: p\ninstances: " + std::string(100, '[') + "\n", "config.yaml:2: nesting deeper than 64 levels"},
    };
    for (const auto& item : cases) {
        const std::string &text = item.first, &expected = item.second;
        const std::string message =
            testing::error_message<FormatError>([&] { plugin_config_from_yaml(text, "config.yaml"); });
        EXPECT_THAT(message, HasSubstr(expected)) << text;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

// x -> SiLU -> Relu -> SiLU -> y, each SiLU written as Mul(x, Sigmoid(x)).
void save_silu_model(const std::string& path) {
    testing::ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.output("y", DataType::kFloat32, Shape{4});
    builder.node("Sigmoid", {"x"}, {"s1"}, "sig1");
    builder.node("Mul", {"x", "s1"}, {"m1"}, "mul1");
    builder.node("Relu", {"m1"}, {"r"}, "relu");
    builder.node("Sigmoid", {"r"}, {"s2"}, "sig2");
    builder.node("Mul", {"r", "s2"}, {"y"}, "mul2");
    builder.save(path);
}

const char* kSiluPattern = R"({"name": "SiLUPlugin", "op": "SiLU", "inputs": ["x"], "outputs": ["y"],
  "nodes": [{"op": "Sigmoid", "inputs": ["x"], "outputs": ["s"]}, {"op": "Mul", "inputs": ["x", "s"], "outputs": ["y"]}],
  "attributes": {"alpha": 1.0}})";

struct PluginDir {
    testing::TempDir dir;
    PluginDir() {
        save_silu_model(dir.file("model.onnx"));
        fs::create_directories(dir.file("plugins/silu"));
        fs::create_directories(dir.file("plugins/unused"));
        fs::create_directories(dir.file("plugins/not_a_plugin"));
        write_file_atomically(dir.file("plugins/silu/pattern.json"), kSiluPattern);
        write_file_atomically(dir.file("plugins/unused/pattern.json"),
                              R"({"name": "unused", "inputs": ["a"], "outputs": ["b"],
                                  "nodes": [{"op": "Tanh", "inputs": ["a"], "outputs": ["b"]}]})");
    }
};

TEST(PluginTool, ListMatchAndReplaceAsPolygraphysExampleRunsThem) {
    PluginDir plugins;
    const std::string model = plugins.dir.file("model.onnx");
    const std::string plugin_dir = plugins.dir.file("plugins");

    auto result = run_polygraphy({"plugin", "list", model, "--plugin-dir", plugin_dir});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] checking silu in model\n[I] checking unused in model\n"
                                         "[I] the following plugins matched:\n[I] {'silu': 2, 'unused': 0}"));
    EXPECT_FALSE(fs::exists(plugins.dir.file("config.yaml")));

    result = run_polygraphy({"plugin", "match", model, "--plugin-dir", plugin_dir, "--exclude", "unused"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("{'silu': 2}"));
    EXPECT_THAT(result.output, HasSubstr("Matching subgraphs saved to " + plugins.dir.file("config.yaml")));
    EXPECT_EQ(read_file(plugins.dir.file("config.yaml")),
              "name: SiLUPlugin\nop: SiLU\ninstances:\n"
              "- inputs:\n  - x\n  outputs:\n  - m1\n  attributes:\n    alpha: 1.0\n"
              "- inputs:\n  - r\n  outputs:\n  - y\n  attributes:\n    alpha: 1.0\n");

    result = run_polygraphy(
        {"plugin", "replace", model, "--plugin-dir", plugin_dir, "-o", plugins.dir.file("replaced.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Replaced 2 subgraph(s) with plugin nodes"));
    OnnxModel replaced = onnx_from_path(plugins.dir.file("replaced.onnx"));
    const auto& graph = replaced->graph();
    ASSERT_EQ(graph.node_size(), 3);
    EXPECT_EQ(graph.node(0).op_type(), "SiLUPlugin");
    EXPECT_THAT(std::vector<std::string>(graph.node(0).input().begin(), graph.node(0).input().end()), ElementsAre("x"));
    EXPECT_THAT(std::vector<std::string>(graph.node(0).output().begin(), graph.node(0).output().end()),
                ElementsAre("m1"));
    ASSERT_EQ(graph.node(0).attribute_size(), 1);
    EXPECT_EQ(graph.node(0).attribute(0).type(), onnx::AttributeProto::FLOAT);
    EXPECT_EQ(graph.node(1).op_type(), "Relu");
    EXPECT_EQ(graph.node(2).op_type(), "SiLUPlugin");
    EXPECT_NE(graph.node(0).name(), graph.node(2).name());
    EXPECT_EQ(graph.output(0).name(), "y");
    EXPECT_EQ(graph.node(2).output(0), "y");

    // An edited configuration: the user deleted the second instance.
    write_file_atomically(
        plugins.dir.file("edited.yaml"),
        "name: SiLUPlugin\nop: SiLU\ninstances:\n- inputs:\n  - x\n  outputs:\n  - m1\n  attributes: {}\n");
    result = run_polygraphy(
        {"plugin", "replace", model, "--config", plugins.dir.file("edited.yaml"), "-o", plugins.dir.file("one.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(onnx_from_path(plugins.dir.file("one.onnx"))->graph().node_size(), 4);
}

TEST(PluginTool, BadInputIsOneLineAndWritesNothing) {
    PluginDir plugins;
    const std::string model = plugins.dir.file("model.onnx");
    const std::string plugin_dir = plugins.dir.file("plugins");
    auto expect_one_line = [](const testing::CommandResult& result, int exit_code, const std::string& expected) {
        EXPECT_EQ(result.exit_code, exit_code) << result.output;
        EXPECT_THAT(result.output, HasSubstr(expected));
        EXPECT_THAT(result.output, Not(HasSubstr("Traceback")));
        EXPECT_THAT(result.output, Not(HasSubstr("terminate")));
    };

    // An ONNX-GraphSurgeon pattern: refused, unless excluded.
    fs::create_directories(plugins.dir.file("plugins/toyPlugin"));
    write_file_atomically(plugins.dir.file("plugins/toyPlugin/pattern.py"),
                          "from polygraphy import mod\ngs = mod.lazy_import(\"onnx_graphsurgeon>=0.5.0\")\n");
    auto result = run_polygraphy({"plugin", "match", model, "--plugin-dir", plugin_dir});
    expect_one_line(result, 1,
                    "[!] " + plugins.dir.file("plugins/toyPlugin/pattern.py") +
                        " is an ONNX-GraphSurgeon pattern, which this build cannot run: describe the subgraph in "
                        "pattern.json beside it");
    EXPECT_FALSE(fs::exists(plugins.dir.file("config.yaml")));
    result = run_polygraphy({"plugin", "list", model, "--plugin-dir", plugin_dir, "--exclude", "toyPlugin"});
    EXPECT_EQ(result.exit_code, 0) << result.output;

    // A broken pattern.json names its file.
    write_file_atomically(plugins.dir.file("plugins/unused/pattern.json"), R"({"name": "unused", "inputs": ["a"]})");
    result = run_polygraphy({"plugin", "list", model, "--plugin-dir", plugin_dir, "--include", "unused"});
    expect_one_line(result, 1, plugins.dir.file("plugins/unused/pattern.json") + ": no \"outputs\"");

    result =
        run_polygraphy({"plugin", "list", model, "--plugin-dir", plugin_dir, "--include", "silu", "--exclude", "x"});
    expect_one_line(result, 2, "argument --exclude: not allowed with argument --include");
    result = run_polygraphy({"plugin", "match", model});
    expect_one_line(result, 2, "the following arguments are required: --plugin-dir");
    result = run_polygraphy({"plugin", "list", model, "--plugin-dir", plugins.dir.file("missing")});
    expect_one_line(result, 1, "--plugin-dir '" + plugins.dir.file("missing") + "' is not a folder");
    result =
        run_polygraphy({"plugin", "match", model, "--plugin-dir", plugin_dir, "--include", "silu", "-o", plugin_dir});
    expect_one_line(result, 1, "is a folder; give a file path");

    // replace: no configuration, a bad one, one naming a tensor the model lacks.
    result = run_polygraphy({"plugin", "replace", model, "-o", plugins.dir.file("out.onnx")});
    expect_one_line(result, 1,
                    "No plugin configuration at " + plugins.dir.file("config.yaml") +
                        " (write one with `polygraphy plugin match`, or give --config)");
    write_file_atomically(plugins.dir.file("bad.yaml"), "name: p\ninstances:\n- inputs: [x\n");
    result = run_polygraphy(
        {"plugin", "replace", model, "--config", plugins.dir.file("bad.yaml"), "-o", plugins.dir.file("out.onnx")});
    expect_one_line(result, 1, plugins.dir.file("bad.yaml") + ":3: expected ',' or ']'");
    write_file_atomically(plugins.dir.file("unknown.yaml"),
                          "name: p\ninstances:\n- inputs:\n  - x\n  outputs:\n  - no_such_tensor\n");
    result = run_polygraphy(
        {"plugin", "replace", model, "--config", plugins.dir.file("unknown.yaml"), "-o", plugins.dir.file("out.onnx")});
    expect_one_line(result, 1, "Tensor: no_such_tensor does not exist in the model.");
    EXPECT_FALSE(fs::exists(plugins.dir.file("out.onnx")));
}

}  // namespace
}  // namespace polygraphy
