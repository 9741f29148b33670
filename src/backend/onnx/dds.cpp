#include "polygraphy/backend/onnx/dds.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

// The input of each op whose runtime value sets the size of its output.
const std::map<std::string, int> kSizeInputs = {{"Range", 1}, {"Pad", 1}, {"Resize", 3}, {"Tile", 1}, {"Expand", 1}};

// Declared types of the graph's tensors: value_info, then graph inputs and outputs (which win).
std::unordered_map<std::string, MetadataEntry> declared_metadata(const onnx::GraphProto& graph) {
    std::unordered_map<std::string, MetadataEntry> metadata;
    for (const auto* infos : {&graph.value_info(), &graph.input(), &graph.output()})
        for (const auto& info : *infos)
            if (info.has_type()) metadata[info.name()] = metadata_from_value_info(info);
    return metadata;
}

}  // namespace

TensorMetadata find_unbounded_dds_tensors(const onnx::ModelProto& model) {
    onnx::ModelProto sorted = model;
    toposort(sorted);
    const onnx::GraphProto& graph = sorted.graph();
    const auto metadata = declared_metadata(graph);
    std::set<std::string> initializers;
    for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
    std::unordered_map<std::string, const onnx::NodeProto*> producers;
    for (const auto& node : graph.node())
        for (const auto& output : node.output()) producers[output] = &node;

    // Named dims already seen: a node whose outputs only reuse them has shapes bounded by its inputs.
    std::set<std::string> known_dims;
    for (const auto& input : graph.input())
        if (const auto found = metadata.find(input.name()); found != metadata.end() && found->second.shape)
            for (const Dim& dim : *found->second.shape)
                if (!dim.param.empty()) known_dims.insert(dim.param);

    TensorMetadata targets;
    for (const auto& node : graph.node()) {
        bool introduces_dims = false;
        for (const auto& output : node.output()) {
            const auto found = metadata.find(output);
            if (found == metadata.end() || !found->second.shape) {
                introduces_dims = true;  // unknown shape: always checked
                continue;
            }
            for (const Dim& dim : *found->second.shape)
                if (!dim.param.empty() && known_dims.insert(dim.param).second) introduces_dims = true;
        }
        const auto size_input = kSizeInputs.find(node.op_type());
        if (!introduces_dims || size_input == kSizeInputs.end() || size_input->second >= node.input_size()) continue;
        const std::string& tensor = node.input(size_input->second);
        const auto producer = producers.find(tensor);
        if (initializers.contains(tensor) || producer == producers.end() || producer->second->op_type() == "Min" ||
            targets.contains(tensor))
            continue;
        const auto declared = metadata.find(tensor);
        targets.set(tensor, declared == metadata.end() ? MetadataEntry{} : declared->second);
    }
    return targets;
}

OrderedMap<int64_t> set_unbounded_dds_upper_bounds(onnx::ModelProto& model, const OrderedMap<int64_t>& upper_bounds) {
    const TensorMetadata unbounded = find_unbounded_dds_tensors(model);
    const std::vector<std::string> names = onnx_tensor_names(model.graph());
    std::set<std::string> produced;
    for (const auto& node : model.graph().node())
        for (const auto& output : node.output()) produced.insert(output);

    OrderedMap<int64_t> applied;
    const int64_t* default_bound = upper_bounds.find("");
    for (const auto& [name, meta] : unbounded)
        if (const int64_t* bound = upper_bounds.find(name) ? upper_bounds.find(name) : default_bound)
            applied.set(name, *bound);
    for (const auto& [name, bound] : upper_bounds) {
        if (name.empty() || unbounded.contains(name)) continue;
        if (std::find(names.begin(), names.end(), name) == names.end())
            throw PolygraphyException(
                fmt::format("Cannot set an upper bound for tensor '{}': it is not in the model", name));
        if (!produced.contains(name))
            throw PolygraphyException(
                fmt::format("Cannot set an upper bound for tensor '{}': no node produces it (it is a graph input or an "
                            "initializer)",
                            name));
        logger().warning(
            fmt::format("Tensor '{}' does not have an unbounded data-dependent shape; its upper bound is "
                        "set anyway",
                        name));
        applied.set(name, bound);
    }

    toposort(model);
    onnx::GraphProto& graph = *model.mutable_graph();
    const auto metadata = declared_metadata(graph);
    std::set<std::string> taken(names.begin(), names.end());
    // Polygraphy's names, made unique: "<name>_copy" may already be a tensor of the graph.
    auto unique_name = [&taken](const std::string& base) {
        std::string name = base;
        for (int suffix = 1; taken.contains(name); ++suffix) name = base + "_" + std::to_string(suffix);
        taken.insert(name);
        return name;
    };
    for (const auto& [name, bound] : applied) {
        const std::string copy = unique_name(name + "_copy");
        const std::string bound_name = unique_name(name + "_upper_bound");
        const auto declared = metadata.find(name);
        const MetadataEntry meta = declared == metadata.end() ? MetadataEntry{} : declared->second;
        // Min needs both inputs of one type; Polygraphy's int64 bound only fits int64 tensors.
        const bool numeric = meta.dtype && (dtype_is_integer(*meta.dtype) || dtype_is_floating(*meta.dtype));
        const DataType dtype = numeric ? *meta.dtype : DataType::kInt64;
        // Polygraphy's shape: a scalar, or as many values as the tensor has dimensions.
        const std::size_t count = meta.shape ? meta.shape->size() : 0;
        const Shape bound_shape = count ? Shape{static_cast<int64_t>(count)} : Shape{};
        const Tensor bound_values = Tensor::from_doubles(
            dtype, bound_shape, std::vector<double>(std::max<std::size_t>(count, 1), double(bound)));
        *graph.add_initializer() = tensor_to_proto(bound_values, bound_name);

        int producer_index = 0;
        for (int i = 0; i < graph.node_size(); ++i)
            for (auto& output : *graph.mutable_node(i)->mutable_output())
                if (output == name) {
                    output = copy;
                    producer_index = i;
                }
        if (declared != metadata.end()) {
            onnx::ValueInfoProto* info = graph.add_value_info();
            for (const auto* infos : {&graph.value_info(), &graph.input(), &graph.output()})
                for (const auto& existing : *infos)
                    if (existing.name() == name) *info = existing;
            info->set_name(copy);
        }
        onnx::NodeProto min;
        min.set_op_type("Min");
        min.add_input(copy);
        min.add_input(bound_name);
        min.add_output(name);
        graph.mutable_node()->Add(std::move(min));
        for (int i = graph.node_size() - 1; i > producer_index + 1; --i) graph.mutable_node()->SwapElements(i, i - 1);
    }
    cleanup(model);
    return applied;
}

}  // namespace polygraphy
