// Session preparation: the graph's nodes, the rewrites for speed, kernels and constants.
#include <omp.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "backend/onnx/domain.h"
#include "backend/ref/blocked_layout.h"
#include "backend/ref/fusion.h"
#include "backend/ref/custom_kernel_registry.h"
#include "backend/ref/session_impl.h"
#include "backend/ref/thread_budget.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::ref {
namespace {

// Names a graph reads without defining them (its nested subgraphs' reads included): the values of
// enclosing graphs it needs. Sorted, so that implicit inputs have a stable order.
void collect_free_names(const onnx::GraphProto& graph, std::set<std::string>& free) {
    std::unordered_set<std::string> defined;
    for (const auto& input : graph.input()) defined.insert(input.name());
    for (const auto& initializer : graph.initializer()) defined.insert(initializer.name());
    for (const auto& node : graph.node())
        for (const auto& output : node.output())
            if (!output.empty()) defined.insert(output);
    auto use = [&](const std::string& name) {
        if (!name.empty() && !defined.contains(name)) free.insert(name);
    };
    for (const auto& node : graph.node()) {
        for (const auto& input : node.input()) use(input);
        for (const auto& attribute : node.attribute()) {
            std::set<std::string> nested;
            if (attribute.has_g()) collect_free_names(attribute.g(), nested);
            for (const auto& sub : attribute.graphs()) collect_free_names(sub, nested);
            for (const auto& name : nested) use(name);
        }
    }
    for (const auto& output : graph.output()) use(output.name());
}

// Outer-scope names a node's graph attributes read (its implicit inputs).
std::vector<std::string> implicit_inputs(const onnx::NodeProto& node) {
    std::set<std::string> free;
    for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) collect_free_names(attribute.g(), free);
        for (const auto& sub : attribute.graphs()) collect_free_names(sub, free);
    }
    return {free.begin(), free.end()};
}

// A graph attribute run by a nested session.
class SubgraphSession final : public Subgraph {
public:
    SubgraphSession(const onnx::GraphProto& graph, std::shared_ptr<const OpsetMap> opsets, int num_threads, bool fuse,
                    int64_t channel_block)
        : impl_(std::make_unique<Session::Impl>()) {
        impl_->opsets = std::move(opsets);
        impl_->num_threads = num_threads;
        impl_->fuse = fuse;
        impl_->channel_block = channel_block;
        std::set<std::string> free;
        collect_free_names(graph, free);
        impl_->prepare_graph(graph, free);
        for (const auto& input : graph.input()) input_names_.push_back(input.name());
        for (const auto& output : graph.output()) output_names_.push_back(output.name());
        graph_name_ = graph.name().empty() ? "subgraph" : graph.name();
    }

    const std::vector<std::string>& input_names() const override { return input_names_; }
    const std::vector<std::string>& output_names() const override { return output_names_; }

    std::vector<Value> run(const std::vector<Value>& inputs, const KernelContext& context) const override {
        const Session::Impl& impl = *impl_;
        if (inputs.size() > impl.inputs.size())
            throw ModelError(fmt::format("subgraph '{}' takes {} inputs, but {} were given", graph_name_,
                                         impl.inputs.size(), inputs.size()));
        std::vector<Value> values(impl.slot_names.size());
        for (std::size_t i = 0; i < impl.inputs.size(); ++i) {
            const int index = impl.inputs[i].second;
            if (i < inputs.size() && inputs[i].defined())
                values[index] = inputs[i];
            else if (impl.defaults[index].defined())
                values[index] = impl.defaults[index];
            else
                throw ModelError(
                    fmt::format("subgraph '{}' input '{}' has no value", graph_name_, impl.inputs[i].first));
        }
        for (const auto& [name, index] : impl.outer) {
            const Value* outer = context.outer_value(name);
            if (!outer || !outer->defined())
                throw ModelError(
                    fmt::format("subgraph '{}' reads '{}', which no enclosing graph defines", graph_name_, name));
            values[index] = *outer;
        }
        impl.execute(values, nullptr, context.num_threads());
        std::vector<Value> results;
        results.reserve(impl.outputs.size());
        for (const auto& output : impl.outputs) results.push_back(impl.value_at(values, output.second));
        return results;
    }

private:
    std::unique_ptr<Session::Impl> impl_;
    std::vector<std::string> input_names_, output_names_;
    std::string graph_name_;
};

}  // namespace

void Session::Impl::prepare(const onnx::ModelProto& model, const SessionOptions& options,
                            const TensorMap& given_constants) {
    check_nodes(model);  // the passes and kernel factories below read nodes by position
    if (options.num_threads < 0)
        throw PolygraphyException(
            fmt::format("Invalid number of threads: {} (expected 0 for all cores, or more)", options.num_threads));
    num_threads = options.num_threads > 0 ? options.num_threads : std::max(1, omp_get_num_procs());
    adaptive_threads = options.num_threads == 0;
    fuse = options.fuse_activations;
    if (options.max_channel_block != 0 && options.max_channel_block != kNarrowChannelBlock &&
        options.max_channel_block != kWideChannelBlock)
        throw PolygraphyException(fmt::format("Invalid channel block: {} (expected 0 for the CPU's widest, {} or {})",
                                              options.max_channel_block, kNarrowChannelBlock, kWideChannelBlock));
    channel_block = options.max_channel_block != 0 ? options.max_channel_block : widest_channel_block();
    profile = options.profile;
    if (options.plan_buffers) arena = std::make_unique<RunArena>();

    auto imported = std::make_shared<OpsetMap>();
    for (const auto& import : model.opset_import())
        (*imported)[std::string(canonical_domain(import.domain()))] = import.version();
    opsets = std::move(imported);
    if (!calls_local_functions(model)) {
        prepare_graph(model.graph(), {}, given_constants);
        return;
    }
    std::vector<ExpandedNode> expanded = expand_function_calls(model, model.graph());
    prepare_graph(model.graph(), {}, given_constants, &expanded);
}

std::vector<std::shared_ptr<const OpsetMap>> Session::Impl::take_nodes(const onnx::GraphProto& graph,
                                                                       std::vector<ExpandedNode>* expanded) {
    // A node from a function body uses the function's opset imports, over the model's.
    std::unordered_map<const onnx::FunctionProto*, std::shared_ptr<const OpsetMap>> function_opsets;
    std::vector<std::shared_ptr<const OpsetMap>> opsets_of_node;
    if (expanded) {
        nodes.clear();
        for (ExpandedNode& node : *expanded) {
            std::shared_ptr<const OpsetMap>& own = function_opsets[node.function];
            if (!own && node.function) {
                auto merged = std::make_shared<OpsetMap>(*opsets);
                for (const auto& import : node.function->opset_import())
                    (*merged)[std::string(canonical_domain(import.domain()))] = import.version();
                own = std::move(merged);
            }
            opsets_of_node.push_back(own ? own : opsets);
            nodes.push_back(std::move(node.node));
        }
    } else {
        nodes.assign(graph.node().begin(), graph.node().end());
        opsets_of_node.assign(nodes.size(), opsets);
    }
    node_inputs.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        node_inputs[i].assign(nodes[i].input().begin(), nodes[i].input().end());
        for (auto& name : implicit_inputs(nodes[i])) node_inputs[i].push_back(std::move(name));
    }
    // Display names first, so that an unnamed node keeps the index it has in the model.
    for (std::size_t i = 0; i < nodes.size(); ++i)
        display_names.push_back(nodes[i].name().empty() ? fmt::format("{}_{}", nodes[i].op_type(), i)
                                                        : nodes[i].name());
    return opsets_of_node;
}

void Session::Impl::rewrite_for_speed(const onnx::GraphProto& graph,
                                      std::vector<std::shared_ptr<const OpsetMap>>& opsets_of_node) {
    const auto onnx_opset = opsets->find("");
    const std::vector<bool> folded = fuse_activations(
        nodes, node_inputs, graph, onnx_opset != opsets->end() ? onnx_opset->second : kOpsetOfUnimportedDomain);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (folded[i]) continue;
        if (kept != i) {
            nodes[kept] = std::move(nodes[i]);
            node_inputs[kept] = std::move(node_inputs[i]);
            display_names[kept] = std::move(display_names[i]);
            opsets_of_node[kept] = std::move(opsets_of_node[i]);
        }
        ++kept;
    }
    nodes.resize(kept);
    node_inputs.resize(kept);
    display_names.resize(kept);
    opsets_of_node.resize(kept);
    const std::vector<std::string> blocked = choose_blocked_layouts(nodes, node_inputs, graph, channel_block);
    if (!blocked.empty())
        logger().extra_verbose(
            fmt::format("{} tensors stay channel-blocked between convolutions (blocks of {} "
                        "channels at most)",
                        blocked.size(), channel_block));
}

std::vector<const OpEntry*> Session::Impl::find_kernels(
    const std::vector<std::shared_ptr<const OpsetMap>>& opsets_of_node, std::vector<int64_t>& node_opsets) const {
    node_opsets.assign(nodes.size(), 0);
    std::vector<const OpEntry*> entries(nodes.size());
    std::vector<std::string> unsupported;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const onnx::NodeProto& node = nodes[i];
        const std::string domain(canonical_domain(node.domain()));
        // The runtime's own operators read their standard operator's attributes at the ai.onnx opset.
        auto imported = opsets_of_node[i]->find(domain == kRuntimeDomain ? std::string() : domain);
        node_opsets[i] = imported != opsets_of_node[i]->end() ? imported->second : kOpsetOfUnimportedDomain;
        entries[i] = find_kernel(domain, node.op_type(), node_opsets[i]);
        if (!entries[i])
            unsupported.push_back(fmt::format("node '{}' ({}, domain '{}', opset {})", display_names[i], node.op_type(),
                                              display_domain(domain), node_opsets[i]));
    }
    if (!unsupported.empty()) {
        std::string message = "Unsupported operators: ";
        for (std::size_t i = 0; i < unsupported.size(); ++i) {
            if (i > 0) message += ", ";
            message += unsupported[i];
        }
        throw UnsupportedError(message);
    }
    return entries;
}

void Session::Impl::build_steps(const std::vector<std::size_t>& sorted, const std::vector<const OpEntry*>& entries,
                                const std::vector<int64_t>& node_opsets,
                                const std::vector<std::shared_ptr<const OpsetMap>>& opsets_of_node) {
    for (std::size_t index : sorted) {
        const onnx::NodeProto& node = nodes[index];
        Step step;
        step.node_index = index;
        std::vector<const Tensor*> constant_inputs;
        for (const auto& input : node.input()) {
            const int input_slot = input.empty() ? -1 : slot_of.at(input);
            step.inputs.push_back(input_slot);
            constant_inputs.push_back(
                input_slot >= 0 && constants[input_slot].is_tensor() ? &constants[input_slot].tensor() : nullptr);
        }
        for (std::size_t k = static_cast<std::size_t>(node.input_size()); k < node_inputs[index].size(); ++k) {
            step.outer_names.push_back(node_inputs[index][k]);
            step.inputs.push_back(slot_of.at(node_inputs[index][k]));
        }
        for (const auto& output : node.output()) step.outputs.push_back(output.empty() ? -1 : slot_of.at(output));
        step.info = std::make_unique<NodeInfo>(node, node_opsets[index], display_names[index], constant_inputs);
        step.info->set_subgraph_builder([opsets = opsets_of_node[index], threads = num_threads, fuse = fuse,
                                         block = channel_block](const onnx::GraphProto& body) {
            return std::unique_ptr<Subgraph>(std::make_unique<SubgraphSession>(body, opsets, threads, fuse, block));
        });
        with_node_context(*step.info, [&] { step.kernel = entries[index]->factory(*step.info); });
        if (!step.kernel) throw InternalError(fmt::format("factory of {} returned no kernel", node.op_type()));

        if (is_default_domain(node.domain()) && node.op_type() == "Constant") {
            KernelContext context(*step.info, {}, node.output_size(), num_threads);
            with_node_context(*step.info, [&] { step.kernel->compute(context); });
            for (std::size_t j = 0; j < step.outputs.size(); ++j) {
                if (step.outputs[j] < 0) continue;
                Value produced_value = context.take_output_value(j);
                if (!produced_value.defined()) step.info->fail("produced no value");
                constants[step.outputs[j]] = std::move(produced_value);
            }
            continue;
        }
        // An Identity of a constant (how torch shares a weight between layers) is that constant, so
        // that the kernels reading it see a constant weight (packed once, blocked layouts).
        if (fuse && is_default_domain(node.domain()) && node.op_type() == "Identity" && node.input_size() == 1 &&
            step.outputs.size() == 1 && step.outputs[0] >= 0 && constant_inputs[0] != nullptr) {
            constants[step.outputs[0]] = constants[step.inputs[0]];
            continue;
        }
        order.push_back(display_names[index]);
        steps.push_back(std::move(step));
    }
}

void Session::Impl::prepare_graph(const onnx::GraphProto& graph, const std::set<std::string>& outer_names,
                                  const TensorMap& given_constants, std::vector<ExpandedNode>* expanded) {
    if (graph.sparse_initializer_size() > 0)
        throw UnsupportedError(fmt::format("Sparse initializers are not supported (first: '{}')",
                                           graph.sparse_initializer(0).values().name()));

    std::vector<std::shared_ptr<const OpsetMap>> opsets_of_node = take_nodes(graph, expanded);
    if (fuse) rewrite_for_speed(graph, opsets_of_node);
    std::vector<int64_t> node_opsets;
    const std::vector<const OpEntry*> entries = find_kernels(opsets_of_node, node_opsets);

    // Values available before any node runs.
    std::unordered_set<std::string> graph_values;
    std::unordered_set<std::string> initializer_names;
    for (const auto& initializer : graph.initializer()) {
        if (!initializer_names.insert(initializer.name()).second)
            throw ModelError(fmt::format("Initializer '{}' is defined more than once", initializer.name()));
        graph_values.insert(initializer.name());
    }
    std::unordered_set<std::string> input_names;
    for (const auto& input : graph.input()) {
        if (!input_names.insert(input.name()).second)
            throw ModelError(fmt::format("Graph input '{}' is listed more than once", input.name()));
        graph_values.insert(input.name());
    }
    for (const auto& [name, tensor] : given_constants) {
        if (initializer_names.contains(name) || input_names.contains(name))
            throw ModelError(fmt::format("Constant '{}' is also a graph input or initializer", name));
        graph_values.insert(name);
    }
    for (const auto& name : outer_names) graph_values.insert(name);

    const std::vector<std::size_t> sorted = topological_order(graph_values);

    // Slots: graph values first, then node outputs in execution order.
    for (const auto& input : graph.input()) inputs.emplace_back(input.name(), slot(input.name()));
    for (const auto& name : outer_names) outer.emplace_back(name, slot(name));
    for (const auto& initializer : graph.initializer()) slot(initializer.name());
    for (const auto& [name, tensor] : given_constants) slot(name);
    for (std::size_t index : sorted)
        for (const auto& output : nodes[index].output())
            if (!output.empty()) slot(output);
    std::unordered_set<std::string> produced;  // node outputs (incl. Constant nodes)
    for (const auto& node : nodes)
        for (const auto& output : node.output())
            if (!output.empty()) produced.insert(output);
    for (const auto& output : graph.output()) {
        if (!graph_values.contains(output.name()) && !produced.contains(output.name()))
            throw ModelError(fmt::format("Graph output '{}' is not produced by any node, graph input or initializer",
                                         output.name()));
        outputs.emplace_back(output.name(), slot(output.name()));
    }

    constants.resize(slot_names.size());
    defaults.resize(slot_names.size());
    for (const auto& initializer : graph.initializer()) {
        Tensor value;
        try {
            value = tensor_from_proto(initializer);
        } catch (const PolygraphyException& error) {
            throw ModelError(fmt::format("Initializer '{}' cannot be loaded: {}", initializer.name(), error.what()));
        }
        const int index = slot_of.at(initializer.name());
        if (input_names.contains(initializer.name()))
            defaults[index] = std::move(value);
        else
            constants[index] = Value(std::move(value));
    }
    for (const auto& [name, tensor] : given_constants) constants[slot_of.at(name)] = Value(tensor);

    build_steps(sorted, entries, node_opsets, opsets_of_node);
    plan_buffer_lifetimes();

    for (const auto& input : graph.input())
        if (!initializer_names.contains(input.name()))
            input_metadata.set(input.name(), metadata_from_value_info(input));
    for (const auto& output : graph.output()) output_metadata.set(output.name(), metadata_from_value_info(output));

    logger().extra_verbose(fmt::format(
        "Prepared reference session: {} nodes to run, {} constants, {} threads", steps.size(),
        std::count_if(constants.begin(), constants.end(), [](const Value& v) { return v.defined(); }), num_threads));
}

}  // namespace polygraphy::ref
