// Removing what no output needs, and sorting nodes: cleanup() and toposort() (see graph.h).
#include "polygraphy/backend/onnx/graph.h"

#include "backend/onnx/graph_internal.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {

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
    sparse->erase(
        std::remove_if(sparse->begin(), sparse->end(),
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

}  // namespace polygraphy
