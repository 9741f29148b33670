// Names, producers and order of the nodes of a graph (see src/backend/onnx/graph_internal.h).
#include "backend/onnx/graph_internal.h"
#include "common/toposort.h"

#include <unordered_set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {

std::string node_display_name(const onnx::NodeProto& node, std::size_t index) {
    return node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
}

bool has_subgraph(const onnx::NodeProto& node) {
    for (const auto& attribute : node.attribute())
        if (attribute.has_g() || attribute.graphs_size() > 0) return true;
    return false;
}

std::unordered_map<std::string, std::size_t> producers(const onnx::GraphProto& graph) {
    std::unordered_map<std::string, std::size_t> producer;
    for (int i = 0; i < graph.node_size(); ++i) {
        for (const auto& output : graph.node(i).output()) {
            if (output.empty()) continue;
            auto [found, inserted] = producer.emplace(output, static_cast<std::size_t>(i));
            if (!inserted)
                throw ModelError(
                    fmt::format("Tensor '{}' is produced by both node '{}' and node '{}'", output,
                                node_display_name(graph.node(static_cast<int>(found->second)), found->second),
                                node_display_name(graph.node(i), static_cast<std::size_t>(i))));
        }
    }
    return producer;
}

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
    return stable_topological_order(predecessors, [&graph](std::size_t index) {
        return node_display_name(graph.node(static_cast<int>(index)), index);
    });
}

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

}  // namespace polygraphy
