// Constant folding: every node whose inputs are constant is evaluated (on a GraphEvaluator) and
// replaced by initializers; Shape/Size of static shapes are folded here (see graph.h).
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/proto_fields.h"

#include "backend/onnx/domain.h"
#include "backend/onnx/graph_internal.h"
#include "backend/onnx/messages.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/evaluator.h"
#include "polygraphy/backend/onnx/functions.h"
#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

bool is_random_op(const onnx::NodeProto& node) {
    static const std::unordered_set<std::string> kRandom = {"RandomNormal",      "RandomNormalLike", "RandomUniform",
                                                            "RandomUniformLike", "Multinomial",      "Bernoulli"};
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
std::size_t fold_pass(onnx::ModelProto& model, const FoldConstantsOptions& options, const GraphEvaluator& evaluator) {
    onnx::GraphProto& graph = *model.mutable_graph();

    std::unordered_set<std::string> graph_inputs;
    for (const auto& input : graph.input()) graph_inputs.insert(input.name());
    std::unordered_map<std::string, const onnx::TensorProto*> initializer_protos;
    for (const auto& initializer : graph.initializer())
        if (!graph_inputs.contains(initializer.name())) initializer_protos.emplace(initializer.name(), &initializer);
    const auto types = options.fold_shapes ? known_types(graph) : std::unordered_map<std::string, MetadataEntry>{};

    std::unordered_map<std::string, Tensor> values;          // constant values loaded or computed so far
    std::unordered_map<std::string, Tensor> partial_shapes;  // Shape outputs with dynamic dims as -1
    std::unordered_set<std::string> unavailable;             // initializers that cannot be loaded (external data)
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

    std::vector<char> folded(static_cast<std::size_t>(graph.node_size()), 0);
    std::size_t count = 0;
    for (std::size_t index : topological_order(graph)) {
        const onnx::NodeProto& node = graph.node(static_cast<int>(index));
        const std::string name = node_display_name(node, index);
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
                if (index < 0 || index >= dims.numel())
                    all_static = false;
                else
                    gathered.data_as<int64_t>()[i] = dims.data_as<int64_t>()[index];
                all_static = all_static && gathered.data_as<int64_t>()[i] >= 0;
            }
            if (!all_static) continue;
            results.push_back(std::move(gathered));
        } else {
            bool all_constant = true;
            for (const auto& input : node.input())
                if (!input.empty() && !is_constant(input)) all_constant = false;
            if (!all_constant) continue;
            if (!evaluator.supports(node.domain(), node.op_type(), opset_of_domain(model, node.domain()))) {
                logger().verbose(fmt::format("Not folding node '{}' ({}): {} does not support it", name, node.op_type(),
                                             evaluator.name()));
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
                results = evaluate_node(evaluator, model, node, name, inputs);
            } catch (const std::exception& error) {
                if (!options.error_ok) throw;
                logger().warning(fmt::format("Failed to fold node '{}' ({}): {}", name, node.op_type(),
                                             without_node_prefix(error.what())));
                continue;
            }
        }
        if (options.size_threshold) {
            bool too_big = false;
            for (const auto& result : results)
                if (result.defined() && result.nbytes() > *options.size_threshold) too_big = true;
            if (too_big) {
                logger().verbose(
                    fmt::format("Not folding node '{}' ({}): its output exceeds the size threshold of {} bytes", name,
                                node.op_type(), *options.size_threshold));
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
    check_nodes(model);
    if (options.num_passes && *options.num_passes < 1)
        throw PolygraphyException(
            fmt::format("Invalid number of constant folding passes: {} (expected 1 or more)", *options.num_passes));
    const GraphEvaluator& evaluator = options.evaluator ? *options.evaluator : default_graph_evaluator();
    if (calls_local_functions(model)) {
        // Values inside function bodies fold like any other once the calls are expanded.
        logger().verbose("Inlining local functions before constant folding");
        inline_local_functions(model);
    }
    tag_node_origins(*model.mutable_graph());
    FoldConstantsStats stats;
    const std::size_t nodes_before = static_cast<std::size_t>(model.graph().node_size());
    while (true) {
        // Shape inference only matters for Shape/Size nodes whose input shape may have become known.
        if (options.infer_shapes && options.fold_shapes && has_unfolded_shape_ops(model.graph()) &&
            (stats.passes > 0 || options.infer_shapes_before_first_pass))
            infer_shapes(model, false, &evaluator);
        ++stats.passes;
        const std::size_t folded = fold_pass(model, options, evaluator);
        stats.nodes_folded += folded;
        logger().verbose(fmt::format("Constant folding pass {}: folded {} node(s)", stats.passes, folded));
        if (folded == 0) break;
        if (options.num_passes && stats.passes >= *options.num_passes) break;
        // Another pass can only fold more when new shapes may make Shape/Size nodes static.
        if (!options.fold_shapes || !has_unfolded_shape_ops(model.graph())) break;
    }
    cleanup(model);
    logger().info(fmt::format("Folded {} of {} node(s) into constants in {} pass(es)", stats.nodes_folded, nodes_before,
                              stats.passes));
    return stats;
}

}  // namespace polygraphy
