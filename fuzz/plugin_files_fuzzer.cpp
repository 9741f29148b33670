// Fuzzes the readers of `polygraphy plugin`'s files: a plugin's pattern.json
// (graph_pattern_from_json, backend/onnx/pattern.h) and the config.yaml that `plugin match` writes and
// `plugin replace` reads (tools/plugin/plugin_config.h). Properties: each refuses only with a
// FormatError; an accepted pattern searches a small graph without any other exception than a
// PolygraphyException; an accepted configuration written again and read back gives the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "fuzz_support.h"
#include "polygraphy/backend/onnx/pattern.h"
#include "polygraphy/common/exception.h"
#include "tools/plugin/plugin_config.h"

namespace {

// x -> Sigmoid -> s; Mul(x, s) -> m; Relu(m) -> y: a graph any simple pattern can meet.
const onnx::ModelProto& small_model() {
    static const onnx::ModelProto model = [] {
        onnx::ModelProto proto;
        proto.set_ir_version(8);
        proto.add_opset_import()->set_version(17);
        onnx::GraphProto& graph = *proto.mutable_graph();
        graph.add_input()->set_name("x");
        graph.add_output()->set_name("y");
        auto add = [&](const char* op, std::initializer_list<const char*> inputs, const char* output) {
            onnx::NodeProto& node = *graph.add_node();
            node.set_op_type(op);
            node.set_name(std::string(op) + "_node");
            for (const char* input : inputs) node.add_input(input);
            node.add_output(output);
            onnx::AttributeProto& attribute = *node.add_attribute();
            attribute.set_name("alpha");
            attribute.set_type(onnx::AttributeProto::FLOAT);
            attribute.set_f(1.5f);
        };
        add("Sigmoid", {"x"}, "s");
        add("Mul", {"x", "s"}, "m");
        add("Relu", {"m"}, "y");
        return proto;
    }();
    return model;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    using namespace polygraphy;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const GraphPattern pattern = graph_pattern_from_json(text, "pattern.json");
        try {
            for (const PatternMatch& match : find_pattern_matches(small_model(), pattern)) {
                FUZZ_CHECK(!match.outputs.empty());
                FUZZ_CHECK(match.nodes.size() == pattern.nodes.size());
            }
        } catch (const FormatError&) {
            FUZZ_CHECK(false);  // a parsed pattern is never a format error when searched
        } catch (const PolygraphyException&) {
        }
    } catch (const FormatError&) {
    }
    std::vector<tools::PluginConfigEntry> entries;
    try {
        entries = tools::plugin_config_from_yaml(text, "config.yaml");
    } catch (const FormatError&) {
        return 0;
    }
    // What the writer writes, the reader reads (an exception here is a finding).
    const std::string written = tools::plugin_config_to_yaml(entries);
    FUZZ_CHECK(tools::plugin_config_to_yaml(tools::plugin_config_from_yaml(written, "again.yaml")) == written);
    return 0;
}
