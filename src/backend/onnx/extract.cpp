// Cutting and splicing graphs: extract_subgraph() and insert_node() (see graph.h).
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/node_check.h"

#include "backend/onnx/graph_internal.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/name_match.h"

namespace polygraphy {
namespace {

void check_tensor_exists(const std::string& name, const std::unordered_set<std::string>& known,
                         const std::vector<std::string>& ordered, const std::string& role) {
    if (known.contains(name)) return;
    std::string message = fmt::format("Tensor '{}' given as {} does not exist in the model", name, role);
    if (auto match = closest_match(name, ordered)) message += fmt::format(". Did you mean '{}'?", *match);
    throw PolygraphyException(message);
}

}  // namespace

OnnxModel extract_subgraph(const onnx::ModelProto& model, const std::vector<SubgraphTensor>& inputs,
                           const std::vector<SubgraphTensor>& outputs) {
    check_nodes(model);
    const onnx::GraphProto& graph = model.graph();
    const std::vector<std::string> ordered = onnx_tensor_names(graph);
    const std::unordered_set<std::string> known(ordered.begin(), ordered.end());
    if (outputs.empty()) throw PolygraphyException("Cannot extract a subgraph without outputs");
    std::unordered_set<std::string> input_names;
    for (const auto& input : inputs) {
        check_tensor_exists(input.name, known, ordered, "a subgraph input");
        if (!input_names.insert(input.name).second)
            throw PolygraphyException(
                fmt::format("Tensor '{}' is given as a subgraph input more than once", input.name));
    }
    std::unordered_set<std::string> output_names;
    for (const auto& output : outputs) {
        check_tensor_exists(output.name, known, ordered, "a subgraph output");
        if (!output_names.insert(output.name).second)
            throw PolygraphyException(
                fmt::format("Tensor '{}' is given as a subgraph output more than once", output.name));
    }

    const auto producer = producers(graph);
    std::unordered_set<std::string> initializer_names;
    for (const auto& initializer : graph.initializer()) initializer_names.insert(initializer.name());
    std::unordered_set<std::string> graph_inputs;
    for (const auto& input : graph.input()) graph_inputs.insert(input.name());

    // Walk back from the outputs, stopping at the new inputs.
    std::vector<char> needed_node(static_cast<std::size_t>(graph.node_size()), 0);
    std::unordered_set<std::string> needed_initializers;
    std::unordered_set<std::string> visited;
    std::vector<std::pair<std::string, std::optional<std::size_t>>> stack;  // tensor, consuming node
    for (const auto& output : outputs) stack.emplace_back(output.name, std::nullopt);
    while (!stack.empty()) {
        auto [name, consumer] = stack.back();
        stack.pop_back();
        if (input_names.contains(name) || !visited.insert(name).second) continue;
        auto found = producer.find(name);
        if (found != producer.end()) {
            const std::size_t index = found->second;
            if (needed_node[index]) continue;
            needed_node[index] = 1;
            for (auto& read : node_reads(graph.node(static_cast<int>(index)))) stack.emplace_back(read, index);
            continue;
        }
        if (graph_inputs.contains(name)) {
            if (!consumer)
                throw ModelError(fmt::format(
                    "The subgraph inputs do not cut the graph: output '{}' is a graph input that is not among the "
                    "subgraph inputs",
                    name));
            throw ModelError(fmt::format(
                "The subgraph inputs do not cut the graph: node '{}' ({}) needs graph input '{}', which is not among "
                "the subgraph inputs",
                node_display_name(graph.node(static_cast<int>(*consumer)), *consumer),
                graph.node(static_cast<int>(*consumer)).op_type(), name));
        }
        if (initializer_names.contains(name)) {
            needed_initializers.insert(name);
            continue;
        }
        throw ModelError(
            fmt::format("Node '{}' ({}): input '{}' is not produced by any node, graph input or initializer",
                        node_display_name(graph.node(static_cast<int>(*consumer)), *consumer),
                        graph.node(static_cast<int>(*consumer)).op_type(), name));
    }

    // Types of the boundary tensors: given, declared, or inferred on demand.
    auto types = known_types(graph);
    bool inputs_need_inference = false;
    for (const auto& input : inputs) {
        auto found = types.find(input.name);
        if (!input.dtype && (found == types.end() || !found->second.dtype)) inputs_need_inference = true;
        if (!input.shape && (found == types.end() || !found->second.shape)) inputs_need_inference = true;
    }
    if (inputs_need_inference) {
        logger().info(
            "Running shape inference to derive shapes and/or data types for `auto` arguments.\n"
            "To avoid this, you can specify the shapes and data types explicitly.");
        onnx::ModelProto copy = copy_for_inference(model);
        infer_shapes(copy);
        types = known_types(copy.graph());
    }

    auto result = std::make_shared<onnx::ModelProto>();
    // Everything but the graph (which is rebuilt from the needed parts only).
    result->set_ir_version(model.ir_version());
    *result->mutable_opset_import() = model.opset_import();
    result->set_producer_name(model.producer_name());
    result->set_producer_version(model.producer_version());
    result->set_domain(model.domain());
    result->set_model_version(model.model_version());
    result->set_doc_string(model.doc_string());
    *result->mutable_metadata_props() = model.metadata_props();
    *result->mutable_functions() = model.functions();
    onnx::GraphProto& sub = *result->mutable_graph();
    sub.set_name(graph.name());
    sub.set_doc_string(graph.doc_string());
    bool shapes_changed = false;
    std::unordered_set<std::string> boundary;
    for (const auto& input : inputs) {
        boundary.insert(input.name);
        auto& info = *sub.add_input();
        info.set_name(input.name);
        auto found = types.find(input.name);
        std::optional<DataType> dtype = input.dtype;
        if (!dtype && found != types.end()) dtype = found->second.dtype;
        if (!dtype)
            throw PolygraphyException(
                fmt::format("Could not determine the data type of subgraph input '{}'\nNote: Give it explicitly, e.g. "
                            "{}:auto:float32",
                            input.name, input.name));
        std::optional<DynShape> shape = input.shape;
        if (input.shape && found != types.end() && found->second.shape && !(*found->second.shape == *input.shape))
            shapes_changed = true;
        if (!shape && found != types.end()) shape = found->second.shape;
        set_value_info_type(info, dtype, shape);
    }
    for (const auto& output : outputs) {
        boundary.insert(output.name);
        auto& info = *sub.add_output();
        info.set_name(output.name);
        auto found = types.find(output.name);
        std::optional<DataType> dtype = output.dtype;
        if (!dtype && found != types.end()) dtype = found->second.dtype;
        std::optional<DynShape> shape = output.shape;
        if (!shape && !shapes_changed && found != types.end()) shape = found->second.shape;
        set_value_info_type(info, dtype, shape);
    }
    for (int i = 0; i < graph.node_size(); ++i) {
        if (!needed_node[static_cast<std::size_t>(i)]) continue;
        onnx::NodeProto& node = *sub.add_node();
        node = graph.node(i);
        // A needed node that also produces one of the new inputs must not define it a second time.
        for (auto& output : *node.mutable_output())
            if (input_names.contains(output)) output += "_polygraphy_extract_unused";
    }
    for (const auto& initializer : graph.initializer())
        if (needed_initializers.contains(initializer.name()) && !input_names.contains(initializer.name()))
            *sub.add_initializer() = initializer;
    for (const auto& sparse : graph.sparse_initializer())
        if (needed_initializers.contains(sparse.values().name())) *sub.add_sparse_initializer() = sparse;
    std::unordered_set<std::string> produced;
    for (const auto& node : sub.node())
        for (const auto& output : node.output()) produced.insert(output);
    if (!shapes_changed)
        for (const auto& info : graph.value_info())
            if (produced.contains(info.name()) && !boundary.contains(info.name())) *sub.add_value_info() = info;
    for (const auto& annotation : graph.quantization_annotation())
        if (produced.contains(annotation.tensor_name()) || needed_initializers.contains(annotation.tensor_name()))
            *sub.add_quantization_annotation() = annotation;

    // Output types still unknown (or stale after an input shape change): infer on the small model.
    bool outputs_need_inference = shapes_changed;
    for (const auto& info : sub.output()) {
        const auto& tensor_type = info.type().tensor_type();
        if (tensor_type.elem_type() == 0 || !tensor_type.has_shape()) outputs_need_inference = true;
    }
    if (outputs_need_inference) {
        const ShapeInferenceMethod method = infer_shapes(*result);
        auto inferred = known_types(result->graph());
        // As Polygraphy falls back to running the model when dtypes are still missing.
        bool dtype_missing = false;
        for (const auto& output : outputs) {
            auto found = inferred.find(output.name);
            dtype_missing = dtype_missing || (!output.dtype && (found == inferred.end() || !found->second.dtype));
        }
        if (dtype_missing && method != ShapeInferenceMethod::kRuntime) {
            logger().warning(
                "Some output data types are missing in the model; running the built-in runtime to determine them");
            infer_shapes(*result, true);
            inferred = known_types(result->graph());
        }
        for (std::size_t i = 0; i < outputs.size(); ++i) {
            auto& info = *sub.mutable_output(static_cast<int>(i));
            auto found = inferred.find(outputs[i].name);
            // value_info entries win over the (possibly stale) declared output.
            for (const auto& value_info : sub.value_info()) {
                if (value_info.name() == outputs[i].name) {
                    MetadataEntry entry = metadata_from_value_info(value_info);
                    if (!outputs[i].dtype && entry.dtype)
                        set_value_info_type(info, entry.dtype, entry.shape);
                    else if (entry.shape)
                        set_value_info_type(info, outputs[i].dtype, entry.shape);
                }
            }
            if (found == inferred.end()) continue;
            MetadataEntry current = metadata_from_value_info(info);
            if (!current.dtype && found->second.dtype) set_value_info_type(info, found->second.dtype, current.shape);
        }
        // Outputs are described by graph.output; drop duplicates from value_info.
        auto* value_info = sub.mutable_value_info();
        value_info->erase(
            std::remove_if(value_info->begin(), value_info->end(),
                           [&](const onnx::ValueInfoProto& info) { return boundary.contains(info.name()); }),
            value_info->end());
    }
    for (const auto& info : sub.output())
        if (info.type().tensor_type().elem_type() == 0)
            logger().warning(fmt::format("Could not determine the data type of subgraph output '{}'", info.name()));
    return result;
}

void insert_node(onnx::ModelProto& model, onnx::NodeProto node) {
    onnx::GraphProto& graph = *model.mutable_graph();
    const std::vector<std::string> names = onnx_tensor_names(graph);
    const std::unordered_set<std::string> known(names.begin(), names.end());
    for (const auto* list : {&node.input(), &node.output()})
        for (const auto& name : *list)
            if (!known.contains(name)) {
                std::string message = fmt::format("Tensor: {} does not exist in the model.", name);
                if (auto match = closest_match(name, names)) message += fmt::format(" Did you mean '{}'?", *match);
                throw PolygraphyException(message);
            }
    const std::vector<std::string> inputs(node.input().begin(), node.input().end());
    const std::vector<std::string> outputs(node.output().begin(), node.output().end());

    constexpr const char* kSuffix = "_polygraphy_surgeon_insert_output";
    std::unordered_set<std::string> graph_outputs;
    for (const auto& output : graph.output()) graph_outputs.insert(output.name());
    node.clear_output();
    for (const auto& name : outputs) {
        if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) {
            // The new node produces this tensor: its old producer loses it.
            for (auto& other : *graph.mutable_node())
                for (auto& output : *other.mutable_output())
                    if (output == name) output = name + "_polygraphy_surgeon_insert_replaced";
            node.add_output(name);
            continue;
        }
        // Output == input: the new node writes a new tensor. A graph output keeps its name (the
        // input is renamed); otherwise the new tensor gets the suffix and consumers are rewired.
        if (graph_outputs.contains(name)) {
            const std::string renamed = name + kSuffix;
            // Consumers keep reading `name`, now the new node's output.
            for (auto& other : *graph.mutable_node())
                for (auto& output : *other.mutable_output())
                    if (output == name) output = renamed;
            for (auto& input : *graph.mutable_input())
                if (input.name() == name) input.set_name(renamed);
            for (auto& initializer : *graph.mutable_initializer())
                if (initializer.name() == name) initializer.set_name(renamed);
            for (auto& info : *graph.mutable_value_info())
                if (info.name() == name) info.set_name(renamed);
            node.add_output(name);
        } else {
            const std::string fresh = name + kSuffix;
            for (auto& other : *graph.mutable_node())
                for (auto& input : *other.mutable_input())
                    if (input == name) input = fresh;
            node.add_output(fresh);
        }
    }
    for (auto& input : *node.mutable_input())
        if (graph_outputs.contains(input) && std::find(outputs.begin(), outputs.end(), input) != outputs.end())
            input += kSuffix;
    logger().verbose(fmt::format("Generated new node: {} ({})", node.name(), node.op_type()));

    // After the last producer of its inputs, so a sorted graph stays sorted.
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < graph.node_size(); ++i)
        for (const auto& output : graph.node(i).output()) producer[output] = i;
    int insert_index = 0;
    for (const auto& input : node.input())
        if (auto found = producer.find(input); found != producer.end())
            insert_index = std::max(insert_index, found->second + 1);
    graph.mutable_node()->Add(std::move(node));
    for (int i = graph.node_size() - 1; i > insert_index; --i) graph.mutable_node()->SwapElements(i, i - 1);

    cleanup(model);
    toposort(model);
}

}  // namespace polygraphy
