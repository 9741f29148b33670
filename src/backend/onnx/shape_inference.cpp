// Shape inference: libonnx's where it applies, else running the graph on a GraphEvaluator (see graph.h).
#include "polygraphy/backend/onnx/graph.h"

#include "backend/onnx/domain.h"
#include "backend/onnx/graph_internal.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/evaluator.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/name_match.h"

namespace polygraphy {
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

ShapeInferenceMethod infer_with_runtime(onnx::ModelProto& model, const GraphEvaluator& evaluator) {
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
                "Cannot infer shapes with {}: input '{}' has no static shape or known data type (shape: {})",
                evaluator.name(), input.name(), entry.shape ? dyn_shape_to_string(*entry.shape) : "unknown"));
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
    std::unique_ptr<PreparedGraph> session;
    try {
        session = evaluator.prepare(model, {}, 0);
    } catch (const std::exception& error) {
        graph.mutable_output()->Swap(&saved);
        logger().warning(fmt::format("Cannot infer shapes with {}: {}", evaluator.name(), error.what()));
        return ShapeInferenceMethod::kNone;
    }
    graph.mutable_output()->Swap(&saved);

    TensorMap results[2];
    try {
        results[0] = session->run(feeds[0]);
    } catch (const std::exception& error) {
        logger().warning(fmt::format("Cannot infer shapes with {}: {}", evaluator.name(), error.what()));
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

std::string quoted_list(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "'" : ", '") + name + "'";
    return text;
}

}  // namespace

// libonnx needs only the types and dims of large initializers (their values matter for small shape
// tensors only), so those are copied without data; the runtime fallback runs the graph and needs
// everything.
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
        if (initializer.raw_data().size() <= kLargeBytes &&
            initializer.data_location() != onnx::TensorProto::EXTERNAL) {
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

namespace {

// A declared tensor type without its element type: libonnx 1.12 dereferences it while merging.
bool lacks_element_type(const onnx::ValueInfoProto& info) {
    return info.type().has_tensor_type() && info.type().tensor_type().elem_type() == onnx::TensorProto::UNDEFINED;
}

// `initializers_define`: before IR version 4 an initializer is only a graph input's value, so libonnx
// knows no type for one that is not also a graph input.
bool inputs_defined_in_order(const onnx::GraphProto& graph, std::unordered_set<std::string> known, int depth,
                             bool initializers_define) {
    if (depth > 64) return false;
    std::unordered_set<std::string> graph_inputs;
    for (const auto& input : graph.input()) {
        if (lacks_element_type(input)) return false;
        graph_inputs.insert(input.name());
    }
    for (const auto& output : graph.output())
        if (lacks_element_type(output) || graph_inputs.count(output.name())) return false;  // an input as output too
    for (const auto& info : graph.value_info())
        if (lacks_element_type(info)) return false;
    for (const auto& input : graph.input()) known.insert(input.name());
    if (initializers_define)
        for (const auto& initializer : graph.initializer()) known.insert(initializer.name());
    for (const auto& node : graph.node()) {
        for (const auto& input : node.input())
            if (!input.empty() && !known.count(input)) return false;
        for (const auto& attribute : node.attribute()) {
            if (attribute.has_g() && !inputs_defined_in_order(attribute.g(), known, depth + 1, initializers_define))
                return false;
            for (const auto& subgraph : attribute.graphs())
                if (!inputs_defined_in_order(subgraph, known, depth + 1, initializers_define)) return false;
        }
        for (const auto& output : node.output()) known.insert(output);
    }
    return true;
}

}  // namespace

bool libonnx_inference_is_safe(const onnx::ModelProto& model) {
    // Also: declared types with their element types, and no graph input that is an output too.
    return find_node_problems(model).empty() && inputs_defined_in_order(model.graph(), {}, 0, model.ir_version() >= 4);
}

ShapeInferenceMethod infer_shapes(onnx::ModelProto& model, bool force_runtime, const GraphEvaluator* evaluator) {
    const GraphEvaluator& runtime = evaluator ? *evaluator : default_graph_evaluator();
    check_nodes(model);  // libonnx's inference functions crash on malformed nodes
    if (force_runtime) {
        logger().verbose("Forcing shape inference with " + runtime.name());
    } else if (!libonnx_inference_is_safe(model)) {
        logger().verbose(
            "ONNX shape inference cannot take a graph whose nodes read tensors not defined before "
            "them; using " +
            runtime.name());
    } else if (onnx_inference_applies(model)) {
        try {
            run_libonnx_inference(model, /*data_propagation=*/true);
            logger().verbose("Inferred shapes with ONNX shape inference");
            return ShapeInferenceMethod::kOnnx;
        } catch (const std::exception& error) {
            logger().verbose(
                fmt::format("ONNX shape inference failed ({}); falling back to {}", error.what(), runtime.name()));
        }
    } else {
        logger().verbose(fmt::format("ONNX shape inference does not support IR version {} / this opset; using {}",
                                     model.ir_version(), runtime.name()));
    }
    ShapeInferenceMethod method = infer_with_runtime(model, runtime);
    if (method == ShapeInferenceMethod::kRuntime) logger().verbose("Inferred shapes with " + runtime.name());
    return method;
}

TensorMetadata infer_output_metadata(const onnx::ModelProto& model, const OrderedMap<Shape>& input_shapes) {
    TensorMetadata outputs;
    for (const auto& output : model.graph().output()) outputs.add(output.name(), std::nullopt, std::nullopt);
    if (!onnx_inference_applies(model) || !libonnx_inference_is_safe(model)) return outputs;
    onnx::ModelProto copy = copy_for_inference(model);
    onnx::GraphProto& graph = *copy.mutable_graph();
    for (auto& input : *graph.mutable_input())
        if (const Shape* shape = input_shapes.find(input.name()))
            set_value_info_type(input, metadata_from_value_info(input).dtype, to_dyn_shape(*shape));
    // Shapes declared for other input shapes would contradict the inferred ones.
    graph.clear_value_info();
    for (auto& output : *graph.mutable_output())
        set_value_info_type(output, metadata_from_value_info(output).dtype, std::nullopt);
    try {
        run_libonnx_inference(copy, /*data_propagation=*/true);
    } catch (const std::exception& error) {
        logger().verbose(fmt::format("ONNX shape inference failed ({}); output sizes are unknown", error.what()));
        return outputs;
    }
    const std::unordered_map<std::string, MetadataEntry> inferred = known_types(graph);
    for (auto& [name, entry] : outputs)
        if (auto found = inferred.find(name); found != inferred.end()) entry = found->second;
    return outputs;
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
            std::string message =
                fmt::format("Cannot override the shape of '{}': it is not an input of the model", name);
            if (auto match = closest_match(name, input_names)) message += fmt::format(". Did you mean '{}'?", *match);
            message += "\nNote: Inputs are: " + quoted_list(input_names);
            throw PolygraphyException(message);
        }
        MetadataEntry declared = metadata_from_value_info(*target);
        if (declared.shape && declared.shape->size() != shape.size())
            throw PolygraphyException(fmt::format(
                "Cannot override the shape of input '{}' with {}: it has rank {}, not {}\nNote: Declared shape: {}",
                name, dyn_shape_to_string(shape), declared.shape->size(), shape.size(),
                dyn_shape_to_string(*declared.shape)));
        set_value_info_type(*target, declared.dtype, shape);
    }
    graph.clear_value_info();
    for (auto& output : *graph.mutable_output()) {
        MetadataEntry declared = metadata_from_value_info(output);
        set_value_info_type(output, declared.dtype, std::nullopt);
    }
    infer_shapes(model);
}

}  // namespace polygraphy
