#include "backend/loader.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/logger.h"

namespace polygraphy_reshape_destroyer {
namespace {

using polygraphy::DataType;
using polygraphy::OnnxModel;

using StaticShape = std::vector<int64_t>;

// A shape is static when its rank and every dimension are known numbers.
std::optional<StaticShape> static_shape(const onnx::ValueInfoProto& value_info) {
    const polygraphy::MetadataEntry entry = polygraphy::metadata_from_value_info(value_info);
    if (!entry.shape) return std::nullopt;
    StaticShape shape;
    for (const auto& dim : *entry.shape) {
        if (dim.value < 0) return std::nullopt;  // symbolic or unknown
        shape.push_back(dim.value);
    }
    return shape;
}

// The int64 values of a constant tensor: an initializer, or the `value` of a Constant node.
std::optional<StaticShape> constant_int64(const onnx::GraphProto& graph, const std::string& name) {
    auto decode = [](const onnx::TensorProto& proto) -> std::optional<StaticShape> {
        if (proto.data_type() != onnx::TensorProto::INT64) return std::nullopt;
        const polygraphy::Tensor tensor = polygraphy::tensor_from_proto(proto);
        const int64_t* values = tensor.data_as<int64_t>();
        return StaticShape(values, values + tensor.numel());
    };
    for (const auto& initializer : graph.initializer())
        if (initializer.name() == name) return decode(initializer);
    for (const auto& node : graph.node())
        if (node.op_type() == "Constant" && node.output_size() == 1 && node.output(0) == name)
            for (const auto& attribute : node.attribute())
                if (attribute.name() == "value" && attribute.has_t()) return decode(attribute.t());
    return std::nullopt;  // computed at inference time: we cannot tell whether it is a no-op
}

bool has_subgraphs(const onnx::GraphProto& graph) {
    for (const auto& node : graph.node())
        for (const auto& attribute : node.attribute())
            if (attribute.has_g() || attribute.graphs_size() > 0) return true;
    return false;
}

// Removes the shape constants we detached, unless something else still reads them (Polygraphy's
// example calls graph.cleanup() for this).
void remove_unused(onnx::GraphProto& graph, const std::set<std::string>& candidates) {
    if (candidates.empty() || has_subgraphs(graph)) return;  // subgraphs may read outer names: keep all
    std::set<std::string> used;
    for (const auto& node : graph.node())
        for (const auto& input : node.input()) used.insert(input);
    for (const auto& output : graph.output()) used.insert(output.name());
    auto unused = [&](const std::string& name) { return candidates.count(name) && !used.count(name); };

    auto* initializers = graph.mutable_initializer();
    for (int i = initializers->size() - 1; i >= 0; --i)
        if (unused(initializers->Get(i).name())) initializers->DeleteSubrange(i, 1);
    auto* nodes = graph.mutable_node();
    for (int i = nodes->size() - 1; i >= 0; --i) {
        const auto& node = nodes->Get(i);
        if (node.op_type() == "Constant" && node.output_size() == 1 && unused(node.output(0)))
            nodes->DeleteSubrange(i, 1);
    }
}

}  // namespace

OnnxModel replace_reshapes(OnnxModel model, bool rename_nodes) {
    onnx::GraphProto& graph = *model->mutable_graph();

    // Shapes we know before inference: declared ones, then those of Reshape outputs as we go.
    std::map<std::string, StaticShape> shapes;
    for (const auto* list : {&graph.input(), &graph.value_info(), &graph.output()})
        for (const auto& value_info : *list)
            if (auto shape = static_shape(value_info)) shapes.emplace(value_info.name(), *shape);

    std::set<std::string> detached;
    for (auto& node : *graph.mutable_node()) {
        if (node.op_type() != "Reshape" || !(node.domain().empty() || node.domain() == "ai.onnx")) continue;
        if (node.input_size() < 2 || node.output_size() < 1) continue;

        // We can't tell that a Reshape is a no-op unless the new shape is a constant...
        const std::optional<StaticShape> new_shape = constant_int64(graph, node.input(1));
        if (!new_shape) continue;
        const auto old_shape = shapes.find(node.input(0));
        const bool no_zero_or_minus_one =
            std::all_of(new_shape->begin(), new_shape->end(), [](int64_t d) { return d > 0; });
        if (no_zero_or_minus_one) shapes[node.output(0)] = *new_shape;  // lets chains of Reshapes be found
        // ...and the same as the shape of the input, dimension by dimension.
        if (old_shape == shapes.end() || old_shape->second != *new_shape) continue;

        polygraphy::logger().info("Replacing no-op reshape: " + node.name() + " with an Identity node");
        if (rename_nodes) {
            node.set_name(node.name() + "_destroyed");
            polygraphy::logger().info("Renamed Identity node to: " + node.name());
        }
        detached.insert(node.input(1));
        node.set_op_type("Identity");
        node.clear_attribute();  // Reshape's `allowzero` means nothing to Identity
        node.mutable_input()->RemoveLast();
        shapes[node.output(0)] = old_shape->second;
    }
    remove_unused(graph, detached);
    return model;
}

OnnxModel ReplaceReshapes::operator()() const {
    // The inner loader may be any Polygraphy ONNX loader (or another ReplaceReshapes).
    return replace_reshapes(model_(), rename_nodes_);
}

}  // namespace polygraphy_reshape_destroyer
