// Graph surgery on ONNX models (see include/polygraphy/backend/onnx/graph.h).
#include "polygraphy/backend/onnx/graph.h"

#include "backend/onnx/domain.h"

#include "common/toposort.h"

#include <omp.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/data_loader.h"

namespace polygraphy {
namespace fs = std::filesystem;

namespace {

std::string display_name(const onnx::NodeProto& node, std::size_t index) {
    return node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
}

// ---- scopes -------------------------------------------------------------------------------------

void collect_outer_refs(const onnx::GraphProto& graph, std::unordered_set<std::string>& defined_outside,
                        std::vector<std::string>& refs, std::unordered_set<std::string>& seen);

// Names a node's subgraph bodies read from the enclosing scope.
void collect_node_outer_refs(const onnx::NodeProto& node, const std::unordered_set<std::string>& local,
                             std::vector<std::string>& refs, std::unordered_set<std::string>& seen) {
    for (const auto& attribute : node.attribute()) {
        std::vector<const onnx::GraphProto*> bodies;
        if (attribute.has_g()) bodies.push_back(&attribute.g());
        for (const auto& body : attribute.graphs()) bodies.push_back(&body);
        for (const auto* body : bodies) {
            std::unordered_set<std::string> defined = local;
            std::vector<std::string> inner;
            std::unordered_set<std::string> inner_seen;
            collect_outer_refs(*body, defined, inner, inner_seen);
            for (auto& name : inner)
                if (seen.insert(name).second) refs.push_back(name);
        }
    }
}

// Every name `graph` reads that it does not define itself (recursively through nested bodies).
// `defined_outside` holds names already defined in enclosing bodies (not reported).
void collect_outer_refs(const onnx::GraphProto& graph, std::unordered_set<std::string>& defined_outside,
                        std::vector<std::string>& refs, std::unordered_set<std::string>& seen) {
    std::unordered_set<std::string> local = defined_outside;
    for (const auto& input : graph.input()) local.insert(input.name());
    for (const auto& initializer : graph.initializer()) local.insert(initializer.name());
    for (const auto& node : graph.node())
        for (const auto& output : node.output()) local.insert(output);
    for (const auto& node : graph.node()) {
        for (const auto& input : node.input())
            if (!input.empty() && !local.contains(input) && seen.insert(input).second) refs.push_back(input);
        std::vector<std::string> nested;
        std::unordered_set<std::string> nested_seen;
        collect_node_outer_refs(node, local, nested, nested_seen);
        for (auto& name : nested)
            if (seen.insert(name).second) refs.push_back(name);
    }
    for (const auto& output : graph.output())
        if (!local.contains(output.name()) && seen.insert(output.name()).second) refs.push_back(output.name());
}

bool has_subgraph(const onnx::NodeProto& node) {
    for (const auto& attribute : node.attribute())
        if (attribute.has_g() || attribute.graphs_size() > 0) return true;
    return false;
}

// Inputs of a node, including what its bodies read from the outer scope ("" entries skipped).
std::vector<std::string> node_reads(const onnx::NodeProto& node) {
    std::vector<std::string> reads;
    std::unordered_set<std::string> seen;
    for (const auto& input : node.input())
        if (!input.empty() && seen.insert(input).second) reads.push_back(input);
    if (has_subgraph(node)) collect_node_outer_refs(node, {}, reads, seen);
    return reads;
}

// Producer of every node output; ModelError when two nodes produce the same tensor.
std::unordered_map<std::string, std::size_t> producers(const onnx::GraphProto& graph) {
    std::unordered_map<std::string, std::size_t> producer;
    for (int i = 0; i < graph.node_size(); ++i) {
        for (const auto& output : graph.node(i).output()) {
            if (output.empty()) continue;
            auto [found, inserted] = producer.emplace(output, static_cast<std::size_t>(i));
            if (!inserted)
                throw ModelError(fmt::format("Tensor '{}' is produced by both node '{}' and node '{}'", output,
                                             display_name(graph.node(static_cast<int>(found->second)), found->second),
                                             display_name(graph.node(i), static_cast<std::size_t>(i))));
        }
    }
    return producer;
}

// Stable topological order (smallest ready index first). ModelError naming the nodes of a cycle.
std::vector<std::size_t> topological_order(const onnx::GraphProto& graph) {
    const std::size_t count = static_cast<std::size_t>(graph.node_size());
    const auto producer = producers(graph);
    std::vector<std::vector<std::size_t>> predecessors(count);
    for (std::size_t i = 0; i < count; ++i) {
        for (const auto& input : node_reads(graph.node(static_cast<int>(i)))) {
            auto found = producer.find(input);
            if (found == producer.end()) continue;  // graph input, initializer or outer scope
            predecessors[i].push_back(found->second);
        }
    }
    return stable_topological_order(
        predecessors, [&graph](std::size_t index) { return display_name(graph.node(static_cast<int>(index)), index); });
}

// ---- types --------------------------------------------------------------------------------------

void set_value_info_type(onnx::ValueInfoProto& info, std::optional<DataType> dtype, const std::optional<DynShape>& shape) {
    auto* tensor_type = info.mutable_type()->mutable_tensor_type();
    if (dtype) tensor_type->set_elem_type(dtype_to_onnx(*dtype));
    if (shape) {
        auto* proto_shape = tensor_type->mutable_shape();
        proto_shape->clear_dim();
        for (const Dim& dim : *shape) {
            auto* proto_dim = proto_shape->add_dim();
            if (!dim.is_dynamic())
                proto_dim->set_dim_value(dim.value);
            else if (!dim.param.empty())
                proto_dim->set_dim_param(dim.param);
        }
    } else {
        tensor_type->clear_shape();
    }
}

// Declared type of every tensor the graph describes: inputs, value_info, outputs, initializers.
std::unordered_map<std::string, MetadataEntry> known_types(const onnx::GraphProto& graph) {
    std::unordered_map<std::string, MetadataEntry> types;
    auto add_info = [&](const onnx::ValueInfoProto& info) {
        if (!info.has_type() || !info.type().has_tensor_type()) return;
        MetadataEntry entry = metadata_from_value_info(info);
        auto& slot = types[info.name()];
        if (!slot.dtype) slot.dtype = entry.dtype;
        if (!slot.shape) slot.shape = entry.shape;
    };
    for (const auto& initializer : graph.initializer()) {
        MetadataEntry entry;
        DataType dtype = dtype_from_onnx(initializer.data_type());
        if (dtype != DataType::kUndefined) entry.dtype = dtype;
        DynShape shape;
        for (int64_t dim : initializer.dims()) shape.push_back(Dim::fixed(dim));
        entry.shape = shape;
        types[initializer.name()] = entry;
    }
    for (const auto& info : graph.input()) add_info(info);
    for (const auto& info : graph.output()) add_info(info);
    for (const auto& info : graph.value_info()) add_info(info);
    return types;
}

std::optional<Shape> static_shape(const MetadataEntry& entry) {
    if (!entry.shape || is_shape_dynamic(*entry.shape)) return std::nullopt;
    Shape shape;
    for (const Dim& dim : *entry.shape) shape.push_back(dim.value);
    return shape;
}

std::string quoted_list(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "'" : ", '") + name + "'";
    return text;
}

void check_tensor_exists(const std::string& name, const std::unordered_set<std::string>& known,
                         const std::vector<std::string>& ordered, const std::string& role) {
    if (known.contains(name)) return;
    std::string message = fmt::format("Tensor '{}' given as {} does not exist in the model", name, role);
    if (auto match = closest_match(name, ordered)) message += fmt::format(". Did you mean '{}'?", *match);
    throw PolygraphyException(message);
}

bool onnx_inference_applies(const onnx::ModelProto& model);

// A copy to run shape inference on. libonnx needs only the types and dims of large initializers
// (their values matter for small shape tensors only), so those are copied without data; the
// runtime fallback runs the graph and needs everything.
onnx::ModelProto copy_for_inference(const onnx::ModelProto& model) {
    if (!onnx_inference_applies(model)) return model;
    constexpr std::size_t kLargeBytes = 4096;
    onnx::ModelProto copy;
    copy.set_ir_version(model.ir_version());
    *copy.mutable_opset_import() = model.opset_import();
    *copy.mutable_functions() = model.functions();
    const onnx::GraphProto& graph = model.graph();
    onnx::GraphProto& target = *copy.mutable_graph();
    target.set_name(graph.name());
    *target.mutable_node() = graph.node();
    *target.mutable_input() = graph.input();
    *target.mutable_output() = graph.output();
    *target.mutable_value_info() = graph.value_info();
    for (const auto& initializer : graph.initializer()) {
        if (initializer.raw_data().size() <= kLargeBytes && initializer.data_location() != onnx::TensorProto::EXTERNAL) {
            *target.add_initializer() = initializer;
            continue;
        }
        auto& light = *target.add_initializer();
        light.set_name(initializer.name());
        light.set_data_type(initializer.data_type());
        *light.mutable_dims() = initializer.dims();
    }
    return copy;
}

}  // namespace

std::vector<std::string> onnx_tensor_names(const onnx::GraphProto& graph) {
    std::vector<std::string> names;
    std::unordered_set<std::string> seen;
    auto add = [&](const std::string& name) {
        if (!name.empty() && seen.insert(name).second) names.push_back(name);
    };
    for (const auto& input : graph.input()) add(input.name());
    for (const auto& initializer : graph.initializer()) add(initializer.name());
    for (const auto& node : graph.node())
        for (const auto& output : node.output()) add(output);
    return names;
}

// ---- extract ------------------------------------------------------------------------------------

OnnxModel extract_subgraph(const onnx::ModelProto& model, const std::vector<SubgraphTensor>& inputs,
                           const std::vector<SubgraphTensor>& outputs) {
    const onnx::GraphProto& graph = model.graph();
    const std::vector<std::string> ordered = onnx_tensor_names(graph);
    const std::unordered_set<std::string> known(ordered.begin(), ordered.end());
    if (outputs.empty()) throw PolygraphyException("Cannot extract a subgraph without outputs");
    std::unordered_set<std::string> input_names;
    for (const auto& input : inputs) {
        check_tensor_exists(input.name, known, ordered, "a subgraph input");
        if (!input_names.insert(input.name).second)
            throw PolygraphyException(fmt::format("Tensor '{}' is given as a subgraph input more than once", input.name));
    }
    std::unordered_set<std::string> output_names;
    for (const auto& output : outputs) {
        check_tensor_exists(output.name, known, ordered, "a subgraph output");
        if (!output_names.insert(output.name).second)
            throw PolygraphyException(fmt::format("Tensor '{}' is given as a subgraph output more than once", output.name));
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
                display_name(graph.node(static_cast<int>(*consumer)), *consumer),
                graph.node(static_cast<int>(*consumer)).op_type(), name));
        }
        if (initializer_names.contains(name)) {
            needed_initializers.insert(name);
            continue;
        }
        throw ModelError(fmt::format("Node '{}' ({}): input '{}' is not produced by any node, graph input or initializer",
                                     display_name(graph.node(static_cast<int>(*consumer)), *consumer),
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
            throw PolygraphyException(fmt::format(
                "Could not determine the data type of subgraph input '{}'\nNote: Give it explicitly, e.g. {}:auto:float32",
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
                    if (!outputs[i].dtype && entry.dtype) set_value_info_type(info, entry.dtype, entry.shape);
                    else if (entry.shape) set_value_info_type(info, outputs[i].dtype, entry.shape);
                }
            }
            if (found == inferred.end()) continue;
            MetadataEntry current = metadata_from_value_info(info);
            if (!current.dtype && found->second.dtype) set_value_info_type(info, found->second.dtype, current.shape);
        }
        // Outputs are described by graph.output; drop duplicates from value_info.
        auto* value_info = sub.mutable_value_info();
        value_info->erase(std::remove_if(value_info->begin(), value_info->end(),
                                         [&](const onnx::ValueInfoProto& info) { return boundary.contains(info.name()); }),
                          value_info->end());
    }
    for (const auto& info : sub.output())
        if (info.type().tensor_type().elem_type() == 0)
            logger().warning(fmt::format("Could not determine the data type of subgraph output '{}'", info.name()));
    return result;
}

// ---- cleanup / toposort -------------------------------------------------------------------------

CleanupStats cleanup(onnx::ModelProto& model, const CleanupOptions& options) {
    onnx::GraphProto& graph = *model.mutable_graph();
    CleanupStats stats;
    std::unordered_map<std::string, std::size_t> producer;
    for (int i = 0; i < graph.node_size(); ++i)
        for (const auto& output : graph.node(i).output())
            if (!output.empty()) producer.emplace(output, static_cast<std::size_t>(i));

    std::vector<char> keep(static_cast<std::size_t>(graph.node_size()), 0);
    std::unordered_set<std::string> used;
    std::vector<std::string> stack;
    for (const auto& output : graph.output()) stack.push_back(output.name());
    while (!stack.empty()) {
        std::string name = std::move(stack.back());
        stack.pop_back();
        if (!used.insert(name).second) continue;
        auto found = producer.find(name);
        if (found == producer.end() || keep[found->second]) continue;
        keep[found->second] = 1;
        for (auto& read : node_reads(graph.node(static_cast<int>(found->second)))) stack.push_back(std::move(read));
    }

    auto* nodes = graph.mutable_node();
    int write = 0;
    for (int i = 0; i < nodes->size(); ++i) {
        if (!keep[static_cast<std::size_t>(i)]) continue;
        if (write != i) nodes->SwapElements(write, i);
        ++write;
    }
    stats.nodes_removed = static_cast<std::size_t>(nodes->size() - write);
    nodes->DeleteSubrange(write, nodes->size() - write);

    std::unordered_set<std::string> output_names;
    for (const auto& output : graph.output()) output_names.insert(output.name());
    std::unordered_set<std::string> removed_inputs;
    if (options.remove_unused_graph_inputs) {
        auto* inputs = graph.mutable_input();
        const auto before = inputs->size();
        inputs->erase(std::remove_if(inputs->begin(), inputs->end(),
                                     [&](const onnx::ValueInfoProto& info) {
                                         if (used.contains(info.name())) return false;
                                         removed_inputs.insert(info.name());
                                         return true;
                                     }),
                      inputs->end());
        stats.inputs_removed = static_cast<std::size_t>(before - inputs->size());
    }
    auto* initializers = graph.mutable_initializer();
    const auto initializers_before = initializers->size();
    initializers->erase(std::remove_if(initializers->begin(), initializers->end(),
                                       [&](const onnx::TensorProto& tensor) { return !used.contains(tensor.name()); }),
                        initializers->end());
    stats.initializers_removed = static_cast<std::size_t>(initializers_before - initializers->size());
    auto* sparse = graph.mutable_sparse_initializer();
    sparse->erase(std::remove_if(sparse->begin(), sparse->end(),
                                 [&](const onnx::SparseTensorProto& tensor) { return !used.contains(tensor.values().name()); }),
                  sparse->end());

    std::unordered_set<std::string> existing;
    for (const auto& node : graph.node())
        for (const auto& output : node.output()) existing.insert(output);
    std::unordered_set<std::string> io;
    for (const auto& input : graph.input()) io.insert(input.name());
    for (const auto& output : graph.output()) io.insert(output.name());
    auto* value_info = graph.mutable_value_info();
    const auto value_info_before = value_info->size();
    value_info->erase(std::remove_if(value_info->begin(), value_info->end(),
                                     [&](const onnx::ValueInfoProto& info) {
                                         return !existing.contains(info.name()) || io.contains(info.name());
                                     }),
                      value_info->end());
    stats.value_infos_removed = static_cast<std::size_t>(value_info_before - value_info->size());
    if (stats.nodes_removed + stats.initializers_removed + stats.inputs_removed > 0)
        logger().verbose(fmt::format("Cleanup removed {} node(s), {} initializer(s), {} graph input(s)",
                                     stats.nodes_removed, stats.initializers_removed, stats.inputs_removed));
    return stats;
}

void toposort(onnx::ModelProto& model) {
    onnx::GraphProto& graph = *model.mutable_graph();
    const std::vector<std::size_t> order = topological_order(graph);
    bool sorted = true;
    for (std::size_t i = 0; i < order.size(); ++i) sorted = sorted && order[i] == i;
    if (sorted) return;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(graph.mutable_node());
    std::vector<onnx::NodeProto*> released(order.size());
    for (int i = nodes.size() - 1; i >= 0; --i) released[static_cast<std::size_t>(i)] = nodes.ReleaseLast();
    for (std::size_t index : order) graph.mutable_node()->AddAllocated(released[index]);
}

// ---- shape inference ----------------------------------------------------------------------------

namespace {

bool onnx_inference_applies(const onnx::ModelProto& model) {
    if (model.ir_version() > 8) return false;
    for (const auto& import : model.opset_import()) {
        if (is_default_domain(import.domain()) && import.version() > 17) return false;
        if (import.domain() == "ai.onnx.ml" && import.version() > 3) return false;
    }
    return true;
}

void put_value_info(onnx::GraphProto& graph, const std::unordered_map<std::string, MetadataEntry>& inferred,
                    const std::vector<std::string>& order) {
    std::unordered_set<std::string> io;
    for (const auto& input : graph.input()) io.insert(input.name());
    std::unordered_map<std::string, int> existing;
    for (int i = 0; i < graph.value_info_size(); ++i) existing.emplace(graph.value_info(i).name(), i);
    for (auto& output : *graph.mutable_output()) {
        auto found = inferred.find(output.name());
        if (found == inferred.end()) continue;
        MetadataEntry declared = metadata_from_value_info(output);
        set_value_info_type(output, declared.dtype ? declared.dtype : found->second.dtype,
                            declared.shape ? declared.shape : found->second.shape);
        io.insert(output.name());
    }
    for (const auto& name : order) {
        if (io.contains(name)) continue;
        const auto& entry = inferred.at(name);
        auto at = existing.find(name);
        onnx::ValueInfoProto* info = nullptr;
        if (at != existing.end()) {
            info = graph.mutable_value_info(at->second);
        } else {
            info = graph.add_value_info();
            info->set_name(name);
        }
        set_value_info_type(*info, entry.dtype, entry.shape);
    }
}

Tensor filled_input(DataType dtype, const Shape& shape, bool ones) {
    Tensor tensor(dtype, shape);
    if (!ones || dtype == DataType::kString) return tensor;
    Tensor truth(DataType::kBool, shape);
    std::fill(truth.data_as<uint8_t>(), truth.data_as<uint8_t>() + truth.numel(), uint8_t{1});
    return truth.cast(dtype);
}

ShapeInferenceMethod infer_with_runtime(onnx::ModelProto& model) {
    onnx::GraphProto& graph = *model.mutable_graph();
    std::unordered_set<std::string> initializers;
    for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
    TensorMap feeds[2];
    for (const auto& input : graph.input()) {
        if (initializers.contains(input.name())) continue;
        MetadataEntry entry = metadata_from_value_info(input);
        auto shape = static_shape(entry);
        if (!entry.dtype || !shape) {
            logger().warning(fmt::format(
                "Cannot infer shapes with the built-in runtime: input '{}' has no static shape or known data type "
                "(shape: {})",
                input.name(), entry.shape ? dyn_shape_to_string(*entry.shape) : "unknown"));
            return ShapeInferenceMethod::kNone;
        }
        feeds[0].set(input.name(), filled_input(*entry.dtype, *shape, false));
        feeds[1].set(input.name(), filled_input(*entry.dtype, *shape, true));
    }

    // Mark every node output for the session, restoring the real outputs afterwards.
    std::vector<std::string> order;
    {
        std::unordered_set<std::string> seen;
        for (const auto& node : graph.node())
            for (const auto& output : node.output())
                if (!output.empty() && seen.insert(output).second) order.push_back(output);
    }
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> saved;
    saved.Swap(graph.mutable_output());
    for (const auto& name : order) graph.add_output()->set_name(name);
    std::unique_ptr<ref::Session> session;
    try {
        session = std::make_unique<ref::Session>(model);
    } catch (const std::exception& error) {
        graph.mutable_output()->Swap(&saved);
        logger().warning(fmt::format("Cannot infer shapes with the built-in runtime: {}", error.what()));
        return ShapeInferenceMethod::kNone;
    }
    graph.mutable_output()->Swap(&saved);

    TensorMap results[2];
    try {
        results[0] = session->run(feeds[0]);
    } catch (const std::exception& error) {
        logger().warning(fmt::format("Cannot infer shapes with the built-in runtime: {}", error.what()));
        return ShapeInferenceMethod::kNone;
    }
    bool have_second = true;
    try {
        results[1] = session->run(feeds[1]);
    } catch (const std::exception&) {
        have_second = false;
    }

    std::unordered_map<std::string, MetadataEntry> inferred;
    for (const auto& name : order) {
        const Tensor* first = results[0].find(name);
        if (!first || !first->defined()) continue;
        MetadataEntry entry;
        entry.dtype = first->dtype();
        const Tensor* second = have_second ? results[1].find(name) : nullptr;
        if (!second || second->rank() == first->rank()) {
            DynShape shape;
            for (int64_t d = 0; d < first->rank(); ++d) {
                const int64_t dim = first->shape()[static_cast<std::size_t>(d)];
                shape.push_back(second && second->shape()[static_cast<std::size_t>(d)] != dim ? Dim::unknown()
                                                                                              : Dim::fixed(dim));
            }
            entry.shape = shape;
        }
        inferred.emplace(name, entry);
    }
    put_value_info(graph, inferred, order);
    return ShapeInferenceMethod::kRuntime;
}

}  // namespace

ShapeInferenceMethod infer_shapes(onnx::ModelProto& model, bool force_runtime) {
    if (force_runtime) {
        logger().verbose("Forcing shape inference with the built-in runtime");
    } else if (onnx_inference_applies(model)) {
        try {
            onnx::ShapeInferenceOptions options(false, 0, true);
            onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
            logger().verbose("Inferred shapes with ONNX shape inference");
            return ShapeInferenceMethod::kOnnx;
        } catch (const std::exception& error) {
            logger().verbose(
                fmt::format("ONNX shape inference failed ({}); falling back to the built-in runtime", error.what()));
        }
    } else {
        logger().verbose(fmt::format(
            "ONNX shape inference does not support IR version {} / this opset; using the built-in runtime",
            model.ir_version()));
    }
    ShapeInferenceMethod method = infer_with_runtime(model);
    if (method == ShapeInferenceMethod::kRuntime) logger().verbose("Inferred shapes with the built-in runtime");
    return method;
}

void override_input_shapes(onnx::ModelProto& model, const OrderedMap<DynShape>& shapes) {
    onnx::GraphProto& graph = *model.mutable_graph();
    std::unordered_set<std::string> initializers;
    for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
    std::vector<std::string> input_names;
    for (const auto& input : graph.input())
        if (!initializers.contains(input.name())) input_names.push_back(input.name());
    for (const auto& [name, shape] : shapes) {
        onnx::ValueInfoProto* target = nullptr;
        for (auto& input : *graph.mutable_input())
            if (input.name() == name && !initializers.contains(name)) target = &input;
        if (!target) {
            std::string message = fmt::format("Cannot override the shape of '{}': it is not an input of the model", name);
            if (auto match = closest_match(name, input_names)) message += fmt::format(". Did you mean '{}'?", *match);
            message += "\nNote: Inputs are: " + quoted_list(input_names);
            throw PolygraphyException(message);
        }
        MetadataEntry declared = metadata_from_value_info(*target);
        if (declared.shape && declared.shape->size() != shape.size())
            throw PolygraphyException(fmt::format(
                "Cannot override the shape of input '{}' with {}: it has rank {}, not {}\nNote: Declared shape: {}", name,
                dyn_shape_to_string(shape), declared.shape->size(), shape.size(), dyn_shape_to_string(*declared.shape)));
        set_value_info_type(*target, declared.dtype, shape);
    }
    graph.clear_value_info();
    for (auto& output : *graph.mutable_output()) {
        MetadataEntry declared = metadata_from_value_info(output);
        set_value_info_type(output, declared.dtype, std::nullopt);
    }
    infer_shapes(model);
}

// ---- constant folding ---------------------------------------------------------------------------

namespace {

bool is_random_op(const onnx::NodeProto& node) {
    static const std::unordered_set<std::string> kRandom = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                                                            "RandomUniformLike", "Multinomial", "Bernoulli"};
    return is_default_domain(node.domain()) && kRandom.contains(node.op_type());
}

bool is_shape_op(const onnx::NodeProto& node) {
    return is_default_domain(node.domain()) && (node.op_type() == "Shape" || node.op_type() == "Size");
}

int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
    for (const auto& attribute : node.attribute())
        if (attribute.name() == name) return attribute.i();
    return fallback;
}

// Shape/Size of a tensor of static `shape`.
Tensor shape_op_value(const onnx::NodeProto& node, const Shape& shape) {
    if (node.op_type() == "Size") {
        Tensor size(DataType::kInt64, {});
        *size.data_as<int64_t>() = shape_volume(shape);
        return size;
    }
    const int64_t rank = static_cast<int64_t>(shape.size());
    auto clamp = [rank](int64_t index) {
        if (index < 0) index += rank;
        return std::clamp<int64_t>(index, 0, rank);
    };
    const int64_t start = clamp(attr_int(node, "start", 0));
    const int64_t end = clamp(attr_int(node, "end", rank));
    const int64_t count = std::max<int64_t>(0, end - start);
    Tensor value(DataType::kInt64, {count});
    for (int64_t i = 0; i < count; ++i) value.data_as<int64_t>()[i] = shape[static_cast<std::size_t>(start + i)];
    return value;
}

// One pass: folds every node it can, in topological order. Returns the number of nodes folded.
std::size_t fold_pass(onnx::ModelProto& model, const FoldConstantsOptions& options) {
    onnx::GraphProto& graph = *model.mutable_graph();
    std::unordered_map<std::string, int64_t> opsets;
    for (const auto& import : model.opset_import())
        opsets[is_default_domain(import.domain()) ? std::string{} : import.domain()] = import.version();

    std::unordered_set<std::string> graph_inputs;
    for (const auto& input : graph.input()) graph_inputs.insert(input.name());
    std::unordered_map<std::string, const onnx::TensorProto*> initializer_protos;
    for (const auto& initializer : graph.initializer())
        if (!graph_inputs.contains(initializer.name())) initializer_protos.emplace(initializer.name(), &initializer);
    const auto types = options.fold_shapes ? known_types(graph) : std::unordered_map<std::string, MetadataEntry>{};

    std::unordered_map<std::string, Tensor> values;  // constant values loaded or computed so far
    std::unordered_map<std::string, Tensor> partial_shapes;  // Shape outputs with dynamic dims as -1
    std::unordered_set<std::string> unavailable;     // initializers that cannot be loaded (external data)
    auto constant = [&](const std::string& name) -> const Tensor* {
        auto found = values.find(name);
        if (found != values.end()) return &found->second;
        if (unavailable.contains(name)) return nullptr;
        auto proto = initializer_protos.find(name);
        if (proto == initializer_protos.end()) return nullptr;
        try {
            return &values.emplace(name, tensor_from_proto(*proto->second)).first->second;
        } catch (const PolygraphyException& error) {
            logger().verbose(fmt::format("Not folding through initializer '{}': {}", name, error.what()));
            unavailable.insert(name);
            return nullptr;
        }
    };
    auto is_constant = [&](const std::string& name) {
        return values.contains(name) || (initializer_protos.contains(name) && !unavailable.contains(name));
    };
    auto known_static_shape = [&](const std::string& name) -> std::optional<Shape> {
        auto found = values.find(name);
        if (found != values.end()) return found->second.shape();
        auto type = types.find(name);
        if (type == types.end()) return std::nullopt;
        return static_shape(type->second);
    };

    const ref::OpRegistry& registry = ref::OpRegistry::builtin();
    const int threads = std::max(1, omp_get_num_procs());
    std::vector<char> folded(static_cast<std::size_t>(graph.node_size()), 0);
    std::size_t count = 0;
    for (std::size_t index : topological_order(graph)) {
        const onnx::NodeProto& node = graph.node(static_cast<int>(index));
        const std::string name = display_name(node, index);
        if (node.output_size() == 0 || has_subgraph(node) || is_random_op(node)) continue;

        std::vector<Tensor> results;
        if (options.fold_shapes && is_shape_op(node) && node.input_size() >= 1) {
            auto shape = known_static_shape(node.input(0));
            if (!shape) {
                // Dynamic: remember the dims that are known, for Gathers of static dims below.
                if (node.op_type() == "Shape") {
                    auto type = types.find(node.input(0));
                    if (type != types.end() && type->second.shape) {
                        Shape dims;
                        for (const Dim& dim : *type->second.shape) dims.push_back(dim.value);
                        partial_shapes[node.output(0)] = shape_op_value(node, dims);
                    }
                }
                continue;
            }
            results.push_back(shape_op_value(node, *shape));
        } else if (options.fold_shapes && is_default_domain(node.domain()) && node.op_type() == "Gather" &&
                   node.input_size() == 2 && partial_shapes.contains(node.input(0)) && is_constant(node.input(1)) &&
                   (attr_int(node, "axis", 0) == 0 || attr_int(node, "axis", 0) == -1)) {
            // Gather of static dims from a partly dynamic shape (-1 marks the dynamic dims).
            const Tensor& dims = partial_shapes.at(node.input(0));
            const Tensor* indices = constant(node.input(1));
            if (!indices || (indices->dtype() != DataType::kInt64 && indices->dtype() != DataType::kInt32)) continue;
            Tensor gathered(DataType::kInt64, indices->shape());
            bool all_static = true;
            for (int64_t i = 0; i < indices->numel() && all_static; ++i) {
                int64_t index = static_cast<int64_t>(indices->value_as_double(i));
                if (index < 0) index += dims.numel();
                if (index < 0 || index >= dims.numel()) all_static = false;
                else gathered.data_as<int64_t>()[i] = dims.data_as<int64_t>()[index];
                all_static = all_static && gathered.data_as<int64_t>()[i] >= 0;
            }
            if (!all_static) continue;
            results.push_back(std::move(gathered));
        } else {
            bool all_constant = true;
            for (const auto& input : node.input())
                if (!input.empty() && !is_constant(input)) all_constant = false;
            if (!all_constant) continue;
            const std::string domain = is_default_domain(node.domain()) ? std::string{} : node.domain();
            auto opset = opsets.find(domain);
            const int64_t version = opset != opsets.end() ? opset->second : 1;
            const ref::OpEntry* entry = registry.find(domain, node.op_type(), version);
            if (!entry) {
                logger().verbose(fmt::format("Not folding node '{}' ({}): the built-in runtime does not support it",
                                             name, node.op_type()));
                continue;
            }
            std::vector<const Tensor*> inputs;
            bool loaded = true;
            for (const auto& input : node.input()) {
                const Tensor* value = input.empty() ? nullptr : constant(input);
                if (!input.empty() && !value) loaded = false;
                inputs.push_back(value);
            }
            if (!loaded) continue;
            try {
                ref::NodeInfo info(node, version, name, inputs);
                auto kernel = entry->factory(info);
                ref::KernelContext context(info, inputs, static_cast<std::size_t>(node.output_size()), threads);
                kernel->compute(context);
                for (int j = 0; j < node.output_size(); ++j) {
                    if (node.output(j).empty()) {
                        results.emplace_back();
                        continue;
                    }
                    if (!context.output(static_cast<std::size_t>(j)).defined())
                        throw ModelError(fmt::format("produced no value for output '{}'", node.output(j)));
                    results.push_back(std::move(context.output(static_cast<std::size_t>(j))));
                }
            } catch (const std::exception& error) {
                if (!options.error_ok) throw;
                const std::string what = error.what();
                logger().warning(fmt::format("Failed to fold node '{}' ({}): {}", name, node.op_type(),
                                             what.starts_with("Node '") ? what.substr(what.find(": ") + 2) : what));
                continue;
            }
        }
        if (options.size_threshold) {
            bool too_big = false;
            for (const auto& result : results)
                if (result.defined() && result.nbytes() > *options.size_threshold) too_big = true;
            if (too_big) {
                logger().verbose(fmt::format("Not folding node '{}' ({}): its output exceeds the size threshold of {} bytes",
                                             name, node.op_type(), *options.size_threshold));
                continue;
            }
        }
        for (int j = 0; j < node.output_size(); ++j)
            if (!node.output(j).empty()) values[node.output(j)] = std::move(results[static_cast<std::size_t>(j)]);
        folded[index] = 1;
        ++count;
        logger().extra_verbose(fmt::format("Folded node '{}' ({})", name, node.op_type()));
    }
    if (count == 0) return 0;

    // Replace folded nodes by initializers for the outputs something still reads.
    std::unordered_set<std::string> still_read;
    for (int i = 0; i < graph.node_size(); ++i)
        if (!folded[static_cast<std::size_t>(i)])
            for (auto& read : node_reads(graph.node(i))) still_read.insert(std::move(read));
    for (const auto& output : graph.output()) still_read.insert(output.name());
    std::vector<onnx::TensorProto> new_initializers;
    for (int i = 0; i < graph.node_size(); ++i) {
        if (!folded[static_cast<std::size_t>(i)]) continue;
        for (const auto& output : graph.node(i).output())
            if (!output.empty() && still_read.contains(output))
                new_initializers.push_back(tensor_to_proto(values.at(output), output));
    }
    auto* nodes = graph.mutable_node();
    int write = 0;
    for (int i = 0; i < nodes->size(); ++i) {
        if (folded[static_cast<std::size_t>(i)]) continue;
        if (write != i) nodes->SwapElements(write, i);
        ++write;
    }
    nodes->DeleteSubrange(write, nodes->size() - write);
    for (auto& initializer : new_initializers) graph.add_initializer()->Swap(&initializer);
    return count;
}

bool has_unfolded_shape_ops(const onnx::GraphProto& graph) {
    for (const auto& node : graph.node())
        if (is_shape_op(node)) return true;
    return false;
}

}  // namespace

FoldConstantsStats fold_constants(onnx::ModelProto& model, const FoldConstantsOptions& options) {
    if (options.num_passes && *options.num_passes < 1)
        throw PolygraphyException(
            fmt::format("Invalid number of constant folding passes: {} (expected 1 or more)", *options.num_passes));
    FoldConstantsStats stats;
    const std::size_t nodes_before = static_cast<std::size_t>(model.graph().node_size());
    while (true) {
        // Shape inference only matters for Shape/Size nodes whose input shape may have become known.
        if (options.infer_shapes && options.fold_shapes && has_unfolded_shape_ops(model.graph()) &&
            (stats.passes > 0 || options.infer_shapes_before_first_pass))
            infer_shapes(model);
        ++stats.passes;
        const std::size_t folded = fold_pass(model, options);
        stats.nodes_folded += folded;
        logger().verbose(fmt::format("Constant folding pass {}: folded {} node(s)", stats.passes, folded));
        if (folded == 0) break;
        if (options.num_passes && stats.passes >= *options.num_passes) break;
        // Another pass can only fold more when new shapes may make Shape/Size nodes static.
        if (!options.fold_shapes || !has_unfolded_shape_ops(model.graph())) break;
    }
    cleanup(model);
    logger().info(fmt::format("Folded {} of {} node(s) into constants in {} pass(es)", stats.nodes_folded,
                              nodes_before, stats.passes));
    return stats;
}

// ---- fp16 ------------------------------------------------------------------------------------

const std::vector<std::string> kFp16DefaultBlockList = {
    "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
    "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
    "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap",
    "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Upsample", "Range", "CumSum", "Min", "Max",
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "EyeLike"};

namespace {

constexpr int32_t kOnnxFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kOnnxHalf = onnx::TensorProto::FLOAT16;

void tensor_proto_to_fp16(onnx::TensorProto& proto) {
    if (proto.data_type() != kOnnxFloat) return;
    Tensor half = tensor_from_proto(proto).cast(DataType::kFloat16);
    onnx::TensorProto converted = tensor_to_proto(half, proto.name());
    converted.set_doc_string(proto.doc_string());
    proto.Swap(&converted);
}

}  // namespace

Fp16Stats convert_to_fp16(onnx::ModelProto& model, const Fp16Options& options) {
    infer_shapes(model);
    onnx::GraphProto& graph = *model.mutable_graph();
    const auto types = known_types(graph);
    auto is_float32 = [&](const std::string& name) {
        auto found = types.find(name);
        return found != types.end() && found->second.dtype == DataType::kFloat32;
    };
    std::unordered_set<std::string> blocked_ops(kFp16DefaultBlockList.begin(), kFp16DefaultBlockList.end());
    blocked_ops.insert(options.op_block_list.begin(), options.op_block_list.end());
    auto blocked = [&](const onnx::NodeProto& node) {
        if (!is_default_domain(node.domain()) || has_subgraph(node) || blocked_ops.contains(node.op_type())) return true;
        // value_float(s) Constants produce float32 whatever happens: compute them in float32.
        if (node.op_type() == "Constant")
            for (const auto& attribute : node.attribute())
                if (attribute.name() != "value") return true;
        return false;
    };

    Fp16Stats stats;
    enum class Home { kFp32, kFp16 };
    std::unordered_map<std::string, Home> home;  // precision each float32 tensor has after conversion

    // Graph inputs and initializers.
    std::unordered_set<std::string> graph_inputs;
    for (auto& input : *graph.mutable_input()) {
        graph_inputs.insert(input.name());
        if (!is_float32(input.name())) continue;
        if (options.keep_io_types) {
            home[input.name()] = Home::kFp32;
        } else {
            input.mutable_type()->mutable_tensor_type()->set_elem_type(kOnnxHalf);
            home[input.name()] = Home::kFp16;
        }
    }
    std::unordered_map<std::string, std::size_t> fp16_consumers;
    for (const auto& node : graph.node())
        if (!blocked(node))
            for (const auto& input : node.input()) ++fp16_consumers[input];
    for (auto& initializer : *graph.mutable_initializer()) {
        if (initializer.data_type() != kOnnxFloat || graph_inputs.contains(initializer.name())) continue;
        if (fp16_consumers[initializer.name()] == 0) {
            home[initializer.name()] = Home::kFp32;
            continue;
        }
        if (initializer.data_location() == onnx::TensorProto::EXTERNAL) {
            home[initializer.name()] = Home::kFp32;  // data not loaded: leave it, cast at run time
            continue;
        }
        tensor_proto_to_fp16(initializer);
        home[initializer.name()] = Home::kFp16;
        ++stats.initializers_converted;
    }

    // Tensors that must keep their name in float32: graph outputs (when I/O types are kept) and
    // outer-scope reads of subgraph bodies. Their fp16 producer writes "<name>_fp16" and a Cast
    // restores the original name.
    std::unordered_set<std::string> pinned;
    if (options.keep_io_types)
        for (const auto& output : graph.output()) pinned.insert(output.name());
    for (const auto& node : graph.node()) {
        if (!has_subgraph(node)) continue;
        std::vector<std::string> refs;
        std::unordered_set<std::string> seen;
        collect_node_outer_refs(node, {}, refs, seen);
        pinned.insert(refs.begin(), refs.end());
    }

    const std::vector<std::string> names = onnx_tensor_names(graph);
    std::unordered_set<std::string> taken(names.begin(), names.end());
    auto fresh_name = [&](const std::string& base) {
        std::string name = base;
        for (int i = 1; taken.contains(name); ++i) name = fmt::format("{}_{}", base, i);
        taken.insert(name);
        return name;
    };
    auto make_cast = [&](const std::string& from, const std::string& to, int32_t type) {
        onnx::NodeProto cast;
        cast.set_op_type("Cast");
        cast.set_name(fresh_name(to + "_cast"));
        cast.add_input(from);
        cast.add_output(to);
        auto* attribute = cast.add_attribute();
        attribute->set_name("to");
        attribute->set_type(onnx::AttributeProto::INT);
        attribute->set_i(type);
        ++stats.casts_inserted;
        return cast;
    };

    std::unordered_map<std::string, std::string> renamed;       // pinned fp16 tensor -> its fp16 name
    std::unordered_map<std::string, std::string> cast_of[2];    // tensor -> its cast to fp32 [0] / fp16 [1]
    google::protobuf::RepeatedPtrField<onnx::NodeProto> old_nodes;
    old_nodes.Swap(graph.mutable_node());
    for (auto& node : old_nodes) {
        const bool keep_fp32 = blocked(node);
        if (keep_fp32) ++stats.nodes_in_fp32;
        const Home want = keep_fp32 ? Home::kFp32 : Home::kFp16;
        for (auto& input : *node.mutable_input()) {
            if (input.empty()) continue;
            auto alias = renamed.find(input);
            const std::string source = alias != renamed.end() && want == Home::kFp16 ? alias->second : input;
            if (source != input) {
                input = source;
                continue;
            }
            auto found = home.find(input);
            if (found == home.end() || found->second == want) continue;
            auto& casts = cast_of[want == Home::kFp16 ? 1 : 0];
            auto existing = casts.find(input);
            if (existing == casts.end()) {
                const std::string name = fresh_name(input + (want == Home::kFp16 ? "_to_fp16" : "_to_fp32"));
                *graph.add_node() = make_cast(input, name, want == Home::kFp16 ? kOnnxHalf : kOnnxFloat);
                existing = casts.emplace(input, name).first;
            }
            input = existing->second;
        }
        if (!keep_fp32) {
            const bool is_default = is_default_domain(node.domain());
            for (auto& attribute : *node.mutable_attribute()) {
                if (is_default && node.op_type() == "Cast" && attribute.name() == "to" && attribute.i() == kOnnxFloat)
                    attribute.set_i(kOnnxHalf);
                if (is_default && (node.op_type() == "Constant" || node.op_type() == "ConstantOfShape") &&
                    attribute.has_t())
                    tensor_proto_to_fp16(*attribute.mutable_t());
            }
        }
        std::vector<std::pair<std::string, std::string>> restore;  // fp16 name -> pinned name
        for (auto& output : *node.mutable_output()) {
            if (output.empty() || !is_float32(output)) continue;
            home[output] = want;
            if (want == Home::kFp16 && pinned.contains(output)) {
                const std::string half = fresh_name(output + "_fp16");
                renamed[output] = half;
                restore.emplace_back(half, output);
                home[half] = Home::kFp16;
                home[output] = Home::kFp32;
                output = half;
            }
        }
        graph.mutable_node()->Add(std::move(node));
        for (const auto& [half, name] : restore) *graph.add_node() = make_cast(half, name, kOnnxFloat);
    }
    // Graph outputs that are graph inputs or initializers converted to fp16 (no producer node).
    if (options.keep_io_types) {
        for (auto& output : *graph.mutable_output()) {
            auto found = home.find(output.name());
            if (found == home.end() || found->second != Home::kFp16 || renamed.contains(output.name())) continue;
            for (auto& initializer : *graph.mutable_initializer()) {
                if (initializer.name() != output.name()) continue;
                const std::string half = fresh_name(output.name() + "_fp16");
                initializer.set_name(half);
                *graph.add_node() = make_cast(half, output.name(), kOnnxFloat);
                for (auto& node : *graph.mutable_node())
                    for (auto& input : *node.mutable_input())
                        if (input == output.name() && node.op_type() != "Cast") input = half;
            }
        }
    } else {
        for (auto& output : *graph.mutable_output()) {
            auto found = home.find(output.name());
            if (found != home.end() && found->second == Home::kFp16)
                output.mutable_type()->mutable_tensor_type()->set_elem_type(kOnnxHalf);
        }
    }
    for (auto& info : *graph.mutable_value_info()) {
        auto found = home.find(info.name());
        if (found != home.end() && found->second == Home::kFp16 && info.type().tensor_type().elem_type() == kOnnxFloat)
            info.mutable_type()->mutable_tensor_type()->set_elem_type(kOnnxHalf);
    }
    toposort(model);
    logger().info(fmt::format("Converted to float16: {} initializer(s), {} node(s) kept in float32, {} Cast(s) inserted",
                              stats.initializers_converted, stats.nodes_in_fp32, stats.casts_inserted));
    return stats;
}

// ---- external data ------------------------------------------------------------------------------

void save_onnx_with_external_data(const onnx::ModelProto& model, const std::string& path,
                                  const ExternalDataOptions& options) {
    const fs::path model_path(path);
    std::string location = options.location.empty() ? model_path.filename().string() + ".data" : options.location;
    const fs::path location_path(location);
    if (location_path.is_absolute() || location_path.lexically_normal().string().starts_with(".."))
        throw PolygraphyException(fmt::format(
            "External data path '{}' must be relative to the model's folder and stay inside it", location));
    const fs::path data_path = model_path.parent_path() / location_path;

    // The copy leaves out the top-level initializers: large ones are written to the data file
    // straight from `model`, so a multi-GB model is not held twice in memory.
    onnx::ModelProto copy;
    copy.set_ir_version(model.ir_version());
    *copy.mutable_opset_import() = model.opset_import();
    copy.set_producer_name(model.producer_name());
    copy.set_producer_version(model.producer_version());
    copy.set_domain(model.domain());
    copy.set_model_version(model.model_version());
    copy.set_doc_string(model.doc_string());
    *copy.mutable_metadata_props() = model.metadata_props();
    *copy.mutable_training_info() = model.training_info();
    *copy.mutable_functions() = model.functions();
    const onnx::GraphProto& graph = model.graph();
    onnx::GraphProto& target = *copy.mutable_graph();
    target.set_name(graph.name());
    target.set_doc_string(graph.doc_string());
    *target.mutable_node() = graph.node();
    *target.mutable_input() = graph.input();
    *target.mutable_output() = graph.output();
    *target.mutable_value_info() = graph.value_info();
    *target.mutable_sparse_initializer() = graph.sparse_initializer();
    *target.mutable_quantization_annotation() = graph.quantization_annotation();

    std::vector<std::string_view> chunks;  // in file order
    std::deque<std::string> owned;         // data converted from typed fields or moved out of the copy
    uint64_t offset = 0;
    auto point_to_file = [&](onnx::TensorProto& tensor, std::string_view data) {
        tensor.clear_raw_data();
        tensor.set_data_location(onnx::TensorProto::EXTERNAL);
        tensor.clear_external_data();
        auto add = [&](const std::string& key, const std::string& value) {
            auto* entry = tensor.add_external_data();
            entry->set_key(key);
            entry->set_value(value);
        };
        add("location", location);
        add("offset", std::to_string(offset));
        add("length", std::to_string(data.size()));
        offset += data.size();
        chunks.push_back(data);
    };
    auto externalize = [&](onnx::TensorProto& tensor) {
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL) return;
        if (tensor.data_type() == onnx::TensorProto::STRING) return;
        if (!tensor.has_raw_data()) {
            Tensor value = tensor_from_proto(tensor);
            if (value.nbytes() < options.size_threshold || value.nbytes() == 0) return;
            onnx::TensorProto raw = tensor_to_proto(value, tensor.name());
            tensor.clear_float_data();
            tensor.clear_int32_data();
            tensor.clear_int64_data();
            tensor.clear_double_data();
            tensor.clear_uint64_data();
            tensor.set_raw_data(std::move(*raw.mutable_raw_data()));
        }
        if (tensor.raw_data().size() < options.size_threshold || tensor.raw_data().empty()) return;
        owned.emplace_back();
        owned.back().swap(*tensor.mutable_raw_data());
        point_to_file(tensor, owned.back());
    };
    for (const auto& initializer : graph.initializer()) {
        const bool large_raw = initializer.data_location() != onnx::TensorProto::EXTERNAL &&
                               initializer.data_type() != onnx::TensorProto::STRING && initializer.has_raw_data() &&
                               !initializer.raw_data().empty() && initializer.raw_data().size() >= options.size_threshold;
        onnx::TensorProto& tensor = *target.add_initializer();
        if (!large_raw) {
            tensor = initializer;
            externalize(tensor);
            continue;
        }
        tensor.set_name(initializer.name());
        tensor.set_data_type(initializer.data_type());
        *tensor.mutable_dims() = initializer.dims();
        tensor.set_doc_string(initializer.doc_string());
        point_to_file(tensor, initializer.raw_data());
    }
    std::function<void(onnx::GraphProto&, bool)> visit_graph = [&](onnx::GraphProto& body, bool top_level) {
        if (!top_level)
            for (auto& tensor : *body.mutable_initializer()) externalize(tensor);
        for (auto& node : *body.mutable_node()) {
            for (auto& attribute : *node.mutable_attribute()) {
                if (attribute.has_t()) externalize(*attribute.mutable_t());
                for (auto& tensor : *attribute.mutable_tensors()) externalize(tensor);
                if (attribute.has_g()) visit_graph(*attribute.mutable_g(), false);
                for (auto& nested : *attribute.mutable_graphs()) visit_graph(nested, false);
            }
        }
    };
    visit_graph(target, true);

    const std::string bytes = bytes_from_onnx(copy);  // checks the size before anything is written
    logger().info(fmt::format("Saving ONNX model to: {}", path));
    logger().verbose(fmt::format("Writing {} tensor(s) ({} bytes) to external data file: {}", chunks.size(), offset,
                                 data_path.string()));
    write_file_atomically(data_path.string(), [&](std::FILE* out) {
        for (const auto& chunk : chunks)
            if (!chunk.empty() && std::fwrite(chunk.data(), 1, chunk.size(), out) != chunk.size())
                throw PolygraphyException(fmt::format("Failed to write external data to '{}'", data_path.string()));
    });
    write_file_atomically(path, bytes);
}

}  // namespace polygraphy
