#include "polygraphy/backend/onnx/partition.h"

#include <set>

#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

void collect_outer(const onnx::GraphProto& graph, std::set<std::string> defined, std::vector<std::string>& out,
                   std::set<std::string>& seen);

// Names read by `node` (and its subgraphs) that neither `defined` nor the subgraphs define.
void collect_node_reads(const onnx::NodeProto& node, const std::set<std::string>& defined,
                        std::vector<std::string>& out, std::set<std::string>& seen) {
    for (const auto& input : node.input())
        if (!input.empty() && !defined.count(input) && seen.insert(input).second) out.push_back(input);
    for (const auto& attr : node.attribute()) {
        if (attr.has_g()) collect_outer(attr.g(), defined, out, seen);
        for (const auto& graph : attr.graphs()) collect_outer(graph, defined, out, seen);
    }
}

void collect_outer(const onnx::GraphProto& graph, std::set<std::string> defined, std::vector<std::string>& out,
                   std::set<std::string>& seen) {
    for (const auto& input : graph.input()) defined.insert(input.name());
    for (const auto& init : graph.initializer()) defined.insert(init.name());
    for (const auto& init : graph.sparse_initializer()) defined.insert(init.values().name());
    // A subgraph's node outputs are defined for the whole subgraph (order is not checked here).
    for (const auto& node : graph.node())
        for (const auto& output : node.output()) defined.insert(output);
    for (const auto& node : graph.node()) collect_node_reads(node, defined, out, seen);
    for (const auto& output : graph.output())
        if (!defined.count(output.name()) && seen.insert(output.name()).second) out.push_back(output.name());
}

}  // namespace

std::vector<std::string> outer_scope_inputs(const onnx::NodeProto& node) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& attr : node.attribute()) {
        if (attr.has_g()) collect_outer(attr.g(), {}, out, seen);
        for (const auto& graph : attr.graphs()) collect_outer(graph, {}, out, seen);
    }
    return out;
}

std::vector<std::string> node_reads(const onnx::NodeProto& node) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    collect_node_reads(node, {}, out, seen);
    return out;
}

std::map<std::string, onnx::TypeProto> declared_types(const onnx::GraphProto& graph) {
    std::map<std::string, onnx::TypeProto> types;
    for (const auto& value_info : graph.value_info())
        if (value_info.has_type()) types[value_info.name()] = value_info.type();
    for (const auto* list : {&graph.input(), &graph.output()})
        for (const auto& value_info : *list)
            if (value_info.has_type()) types[value_info.name()] = value_info.type();
    for (const auto& init : graph.initializer()) {
        onnx::TypeProto type;
        type.mutable_tensor_type()->set_elem_type(init.data_type());
        auto* shape = type.mutable_tensor_type()->mutable_shape();
        for (int64_t dim : init.dims()) shape->add_dim()->set_dim_value(dim);
        types[init.name()] = type;
    }
    return types;
}

NodeSubsetExtractor::NodeSubsetExtractor(const onnx::ModelProto& model) : model_(model) {
    const auto& graph = model.graph();
    reads_.reserve(static_cast<std::size_t>(graph.node_size()));
    for (int index = 0; index < graph.node_size(); ++index) {
        reads_.push_back(node_reads(graph.node(index)));
        for (const auto& tensor : reads_.back()) readers_[tensor].push_back(index);
    }
    for (const auto& output : graph.output()) graph_outputs_.insert(output.name());
    for (const auto& init : graph.initializer()) initializers_.emplace(init.name(), &init);
    declared_ = declared_types(graph);
}

onnx::ModelProto NodeSubsetExtractor::extract(const std::vector<int>& node_indices, const std::string& name,
                                              const std::map<std::string, onnx::TypeProto>& types) const {
    const auto& graph = model_.graph();
    onnx::ModelProto result;
    result.set_ir_version(model_.ir_version());
    result.set_producer_name(model_.producer_name());
    result.set_producer_version(model_.producer_version());
    *result.mutable_opset_import() = model_.opset_import();
    *result.mutable_functions() = model_.functions();
    auto* sub = result.mutable_graph();
    sub->set_name(name);

    std::set<int> chosen;
    std::set<std::string> produced, read_inside;
    std::vector<std::string> reads;
    std::set<std::string> reads_seen;
    for (int index : node_indices) {
        if (index < 0 || index >= graph.node_size())
            throw InternalError("NodeSubsetExtractor: node index " + std::to_string(index) + " is out of range");
        chosen.insert(index);
        const auto& node = graph.node(index);
        *sub->add_node() = node;
        for (const auto& input : reads_[static_cast<std::size_t>(index)]) {
            read_inside.insert(input);
            if (!produced.count(input) && reads_seen.insert(input).second) reads.push_back(input);
        }
        for (const auto& output : node.output())
            if (!output.empty()) produced.insert(output);
    }

    auto type_of = [&](const std::string& tensor) -> const onnx::TypeProto* {
        if (auto found = types.find(tensor); found != types.end()) return &found->second;
        if (auto found = declared_.find(tensor); found != declared_.end()) return &found->second;
        return nullptr;
    };

    for (const auto& tensor : reads) {
        if (produced.count(tensor)) continue;  // produced by a later chosen node (unsorted input)
        if (auto found = initializers_.find(tensor); found != initializers_.end()) {
            *sub->add_initializer() = *found->second;
            continue;
        }
        auto* input = sub->add_input();
        input->set_name(tensor);
        if (const auto* type = type_of(tensor)) *input->mutable_type() = *type;
    }

    // Outputs: what the rest of the model needs from these nodes.
    auto needed_outside = [&](const std::string& tensor) {
        if (graph_outputs_.count(tensor)) return true;
        if (auto found = readers_.find(tensor); found != readers_.end())
            for (int reader : found->second)
                if (!chosen.count(reader)) return true;
        return false;
    };
    std::vector<std::string> outputs;
    for (const auto& node : sub->node())
        for (const auto& output : node.output())
            if (!output.empty() && needed_outside(output)) outputs.push_back(output);
    if (outputs.empty())
        for (const auto& node : sub->node())
            for (const auto& output : node.output())
                if (!output.empty() && !read_inside.count(output)) outputs.push_back(output);
    std::set<std::string> added;
    for (const auto& tensor : outputs) {
        if (!added.insert(tensor).second) continue;
        auto* output = sub->add_output();
        output->set_name(tensor);
        if (const auto* type = type_of(tensor)) *output->mutable_type() = *type;
    }
    // Keep what is known about the intermediate tensors.
    for (const auto& tensor : produced)
        if (!added.count(tensor))
            if (const auto* type = type_of(tensor)) {
                auto* value_info = sub->add_value_info();
                value_info->set_name(tensor);
                *value_info->mutable_type() = *type;
            }
    return result;
}

}  // namespace polygraphy
