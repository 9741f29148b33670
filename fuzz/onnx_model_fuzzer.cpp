// Fuzzes ONNX model loading (include/polygraphy/backend/onnx/loader.h) the way `polygraphy run`
// prepares a model before any inference: parse (onnx_from_bytes), read input/output metadata and
// the opset, decode initializers and Constant tensors, mark every tensor as an output
// (--onnx-outputs mark all), select and exclude named outputs, serialize the result again, and
// prepare a built-in runtime session (include/polygraphy/backend/ref/runner.h) without running it,
// with and without its activation folding. Also what `inspect model --show layers attrs weights`
// prints and what `surgeon sanitize --toposort --cleanup` does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "fuzz_support.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"

namespace {

using namespace polygraphy;

// False when the declared inputs/outputs are refused: ModelError is the documented refusal (e.g. a
// negative dimension: RELIABILITY.md, F3), which `polygraphy run` prints as one line.
bool read_metadata(const onnx::ModelProto& model) {
    try {
        const TensorMetadata inputs = get_onnx_input_metadata(model.graph());
        const TensorMetadata outputs = get_onnx_output_metadata(model.graph());
        (void)get_onnx_opset(model);
        // Printing metadata formats every dtype and dimension.
        (void)inputs.to_string();
        (void)outputs.to_string();
    } catch (const ModelError&) {
        return false;
    }
    return true;
}

void decode_tensors(const onnx::GraphProto& graph) {
    for (const auto& initializer : graph.initializer()) {
        try {
            (void)tensor_from_proto(initializer);
        } catch (const PolygraphyException&) {
        }
    }
    for (const auto& node : graph.node()) {
        for (const auto& attribute : node.attribute()) {
            if (!attribute.has_t()) continue;
            try {
                (void)tensor_from_proto(attribute.t());
            } catch (const PolygraphyException&) {
            }
        }
    }
}

OnnxModel reparse(const onnx::ModelProto& model) {
    return onnx_from_bytes(bytes_from_onnx(model));
}

// `inspect model --show layers attrs weights`, then `surgeon sanitize --toposort --cleanup`.
void inspect_and_tidy(const onnx::ModelProto& model) {
    OnnxSummaryOptions show;
    show.show_layers = show.show_attrs = show.show_weights = true;
    try {
        FUZZ_CHECK(!str_from_onnx(model, show).empty());
    } catch (const PolygraphyException&) {
    }
    onnx::ModelProto tidy = model;
    try {
        toposort(tidy);
    } catch (const ModelError&) {
        return;  // a cycle or a tensor produced twice, named in the message
    }
    FUZZ_CHECK(tidy.graph().node_size() == model.graph().node_size());
    CleanupOptions options;
    options.remove_unused_graph_inputs = true;
    cleanup(tidy, options);  // documented never to throw
    FUZZ_CHECK(tidy.graph().node_size() <= model.graph().node_size());
    (void)reparse(tidy);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    OnnxModel model;
    try {
        model = onnx_from_bytes(bytes);
    } catch (const FormatError&) {
        return 0;
    } catch (const MalformedNodeError&) {
        return 0;  // nodes that do not fit their operators (node_check.h): the onnx_structure target covers them
    }
    FUZZ_CHECK(model && model->has_graph());
    (void)read_metadata(*model);
    decode_tensors(model->graph());
    inspect_and_tidy(*model);

    // --onnx-outputs mark all: every non-Constant node output becomes a graph output.
    OnnxModel marked = modify_outputs(reparse(*model), kMarkAll);
    std::size_t produced = 0;
    for (const auto& node : model->graph().node())
        if (node.op_type() != "Constant")
            for (const auto& output : node.output()) produced += !output.empty();
    FUZZ_CHECK(static_cast<std::size_t>(marked->graph().output_size()) <= produced);
    // value_info entries become outputs here, so their declared shapes are read too.
    const bool marked_metadata_read = read_metadata(*marked);
    (void)reparse(*marked);

    // Named outputs and exclusions, with a name that is missing (the did-you-mean path).
    std::vector<std::string> names;
    for (const auto& node : model->graph().node())
        for (const auto& output : node.output())
            if (!output.empty() && names.size() < 4) names.push_back(output);
    for (const auto& input : model->graph().input())
        if (names.size() < 6) names.push_back(input.name());
    try {
        OnnxModel selected = modify_outputs(reparse(*model), names, {names.empty() ? "" : names.front()});
        (void)read_metadata(*selected);
    } catch (const PolygraphyException&) {
        // Unknown names (an empty or duplicate name) are refused with a message.
    }
    std::unordered_set<std::string> known;
    for (const auto& input : model->graph().input()) known.insert(input.name());
    for (const auto& initializer : model->graph().initializer()) known.insert(initializer.name());
    for (const auto& node : model->graph().node()) known.insert(node.output().begin(), node.output().end());
    std::string missing = names.empty() ? "missing" : names.back() + "_";
    while (known.count(missing)) missing += "_";
    try {
        modify_outputs(reparse(*model), {missing});
        FUZZ_CHECK(!"a tensor name that does not exist was accepted");
    } catch (const PolygraphyException&) {
    }

    // Graph preparation of the built-in runtime: topological sort, slots, initializers, kernel
    // factories (which inspect attributes and constant inputs), Constant nodes evaluated. Never
    // run: a fuzzed shape can ask for terabytes, and kernels are out of this target's scope.
    // ModelError / UnsupportedError are the expected refusals.
    // Folding activations into convolutions only removes nodes; it never decides whether a model prepares.
    ref::SessionOptions as_written;
    as_written.num_threads = 1;
    as_written.fuse_activations = false;
    std::size_t steps = 0;
    try {
        const ref::Session session(*model, ref::SessionOptions{1});
        (void)session.input_metadata().to_string();
        (void)session.output_metadata().to_string();
        steps = session.execution_order().size();
    } catch (const PolygraphyException&) {
        try {
            const ref::Session unfused(*model, as_written);
            FUZZ_CHECK(!"a model that prepares as written failed with activations folded");
        } catch (const PolygraphyException&) {
        }
        return 0;
    }
    const ref::Session unfused(*model, as_written);
    FUZZ_CHECK(unfused.execution_order().size() >= steps);
    FUZZ_CHECK(unfused.output_metadata().keys() == ref::Session(*model, ref::SessionOptions{1}).output_metadata().keys());
    // What `polygraphy run --onnx-outputs mark all` prepares: the same nodes, so it must prepare too,
    // unless an intermediate it now returns declares a shape that is refused.
    if (!marked_metadata_read) return 0;
    const ref::Session all_outputs(*marked, ref::SessionOptions{1});
    FUZZ_CHECK(all_outputs.output_metadata().size() == static_cast<std::size_t>(marked->graph().output_size()));
    return 0;
}
