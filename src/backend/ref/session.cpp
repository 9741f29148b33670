// Session: prepares an ONNX graph for the built-in CPU runtime and runs it.
#include <omp.h>

#include "backend/onnx/domain.h"
#include "backend/ref/blocked_layout.h"
#include "backend/ref/fused_attributes.h"
#include "backend/ref/fusion.h"
#include "backend/ref/thread_budget.h"
#include "common/toposort.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/functions.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_arena.h"

namespace polygraphy::ref {
namespace {

// Runs `body`, giving exceptions that do not name the node yet the prefix "Node '<name>' (<op>): ".
template <typename Body>
void with_node_context(const NodeInfo& info, Body&& body) {
    // The prefix is built only for an error: formatting it for every node cost a string per step.
    auto prefix = [&] { return fmt::format("Node '{}' ({}): ", info.name(), info.op_type()); };
    auto named = [&](const std::exception& error) { return std::string_view(error.what()).starts_with(prefix()); };
    try {
        body();
    } catch (const UnsupportedError& error) {
        if (named(error)) throw;
        throw UnsupportedError(prefix() + error.what());
    } catch (const ModelError& error) {
        if (named(error)) throw;
        throw ModelError(prefix() + error.what());
    } catch (const PolygraphyException& error) {
        throw ModelError(prefix() + error.what());
    } catch (const std::bad_alloc&) {
        throw ModelError(prefix() + "out of memory");
    } catch (const std::length_error&) {
        throw ModelError(prefix() + "out of memory (size too large)");
    }
}

using OpsetMap = std::unordered_map<std::string, int64_t>;

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

}  // namespace

struct Session::Impl {
    struct Step {
        std::size_t node_index = 0;
        std::unique_ptr<NodeInfo> info;
        std::unique_ptr<Kernel> kernel;
        std::vector<int> inputs;               // slot per node input, -1 when omitted, then the implicit inputs
        std::vector<std::string> outer_names;  // implicit inputs: enclosing values the subgraphs read
        std::vector<int> outputs;              // slot per node output, -1 when omitted
        std::vector<int> release;              // intermediate slots whose last consumer is this step
        std::vector<bool> donatable;           // per input: an intermediate read once here, for the last time
        int concat_in_place = -1;              // a Concat: its entry in concats_in_place
        int feeds_concat = -1;                 // a producer of such a Concat's input: that entry
        std::size_t concat_input = 0;          // ... and which input
    };

    /// A Concat whose inputs only it reads, each output 0 of a Conv: those write their outputs into
    /// slices of the Concat's output, allocated before the first of them runs, and the Concat then
    /// copies nothing (squeezenet1_1's fire modules: 5.8 MB of copies per run). The slices come from
    /// the shapes of the run before; a run whose shapes differ copies as before. Top-level graph with
    /// buffer planning only (SessionOptions::plan_buffers).
    struct ConcatInPlace {
        int64_t axis = 1;
        // The last run's shapes when its dims before the axis were 1; input_shapes empty: no slices.
        mutable std::mutex mutex;
        mutable DataType dtype = DataType::kUndefined;
        mutable Shape output;
        mutable std::vector<Shape> input_shapes;
    };
    std::vector<std::unique_ptr<ConcatInPlace>> concats_in_place;
    /// Finds the Concats of ConcatInPlace (after the release points are known).
    void plan_concats_in_place(const std::unordered_set<int>& graph_outputs);

    std::vector<onnx::NodeProto> nodes;  // owned copies: NodeInfo refers to them
    std::vector<std::string> display_names;
    std::vector<std::string> slot_names;
    std::unordered_map<std::string, int> slot_of;
    std::vector<Value> constants;                      // by slot: initializers and Constant outputs
    std::vector<std::pair<std::string, int>> inputs;   // every graph input (with or without default)
    std::vector<std::pair<std::string, int>> outer;    // enclosing-graph values a subgraph reads
    std::vector<Tensor> defaults;                      // by slot: initializers that are also graph inputs
    std::vector<std::pair<std::string, int>> outputs;  // graph outputs in order
    std::vector<Step> steps;
    std::vector<std::string> order;  // display names in execution order
    TensorMetadata input_metadata;
    TensorMetadata output_metadata;
    int num_threads = 1;
    bool adaptive_threads = false;  ///< num_threads was 0: each run uses the cores others leave idle
    bool fuse = true;      // SessionOptions::fuse_activations
    int64_t channel_block = kNarrowChannelBlock;  // SessionOptions::max_channel_block, resolved
    bool profile = false;  // SessionOptions::profile (top-level graph only)
    struct ProfileTotals {
        std::mutex mutex;
        std::size_t runs_seen = 0;  // the first is not counted
        std::vector<double> step_seconds;
        double total_seconds = 0;
    };
    mutable ProfileTotals profile_totals;
    std::unique_ptr<RunArena> arena;  // top-level graph only; null: SessionOptions::plan_buffers off
    std::shared_ptr<const OpsetMap> opsets;
    std::vector<std::vector<std::string>> node_inputs;  // per node: declared inputs, then implicit ones

    int slot(const std::string& name) {
        auto found = slot_of.find(name);
        if (found != slot_of.end()) return found->second;
        const int index = static_cast<int>(slot_names.size());
        slot_of.emplace(name, index);
        slot_names.push_back(name);
        return index;
    }

    void prepare(const onnx::ModelProto& model, const SessionOptions& options, const TensorMap& given_constants);
    /// Prepares `graph`; `outer_names` are values of enclosing graphs it may read (subgraphs only),
    /// `given_constants` values it reads as initializers (the top-level graph only).
    /// `expanded`: the graph's nodes with their calls to local functions expanded, for a graph that
    /// has some (nullptr: the graph's own nodes).
    void prepare_graph(const onnx::GraphProto& graph, const std::set<std::string>& outer_names,
                       const TensorMap& given_constants = {}, std::vector<ExpandedNode>* expanded = nullptr);
    std::vector<std::size_t> topological_order(const std::unordered_set<std::string>& graph_values);
    /// Runs the steps over `values` (graph inputs and outer values already in their slots), the
    /// kernels on `threads` threads.
    void execute(std::vector<Value>& values, RunStats* stats, int threads) const;
    /// Adds one run's per-step times to profile_totals.
    void record_profile(const std::vector<double>& step_seconds, double total_seconds) const;
    /// Offers a producer of a ConcatInPlace input its slice of the Concat's output (allocated by the
    /// first producer that runs), when the run before recorded the shapes.
    void offer_concat_slice(const Step& step, std::vector<Tensor>& concat_outputs, KernelContext& context) const;
    /// Records the shapes of a ConcatInPlace's run for the next run's slices.
    void record_concat_shapes(const ConcatInPlace& plan, const std::vector<const Tensor*>& inputs,
                              const Tensor& output) const;
    const Value& value_at(const std::vector<Value>& values, int index) const {
        return constants[index].defined() ? constants[index] : values[index];
    }
};

namespace {

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

void Session::Impl::prepare_graph(const onnx::GraphProto& graph, const std::set<std::string>& outer_names,
                                  const TensorMap& given_constants, std::vector<ExpandedNode>* expanded) {
    if (graph.sparse_initializer_size() > 0)
        throw UnsupportedError(fmt::format("Sparse initializers are not supported (first: '{}')",
                                           graph.sparse_initializer(0).values().name()));

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
    if (fuse) {
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

    std::vector<int64_t> node_opsets(nodes.size());
    std::vector<const OpEntry*> entries(nodes.size());
    std::vector<std::string> unsupported;
    const OpRegistry& registry = OpRegistry::builtin();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const onnx::NodeProto& node = nodes[i];
        const std::string domain(canonical_domain(node.domain()));
        auto imported = opsets_of_node[i]->find(domain);
        node_opsets[i] = imported != opsets_of_node[i]->end() ? imported->second : kOpsetOfUnimportedDomain;
        entries[i] = registry.find(domain, node.op_type(), node_opsets[i]);
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

    // Kernels, in execution order; Constant nodes (and with fusion, Identity nodes of constants) are
    // evaluated now and become constants.
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

    // Release points: after its last consumer, or right away when nothing consumes it.
    std::unordered_set<int> kept;
    for (const auto& output : outputs) kept.insert(output.second);
    std::vector<int> last_use(slot_names.size(), -1);
    for (std::size_t s = 0; s < steps.size(); ++s) {
        for (int input : steps[s].inputs)
            if (input >= 0) last_use[input] = static_cast<int>(s);
        for (int output : steps[s].outputs)
            if (output >= 0) last_use[output] = std::max(last_use[output], static_cast<int>(s));
    }
    for (std::size_t s = 0; s < steps.size(); ++s)
        for (int output : steps[s].outputs)
            if (output >= 0 && !kept.contains(output) &&
                std::find(steps[last_use[output]].release.begin(), steps[last_use[output]].release.end(), output) ==
                    steps[last_use[output]].release.end())
                steps[last_use[output]].release.push_back(output);
    if (arena) plan_concats_in_place(kept);
    for (Step& step : steps) {
        const std::size_t declared = step.info->proto().input_size();
        step.donatable.assign(std::min(declared, step.inputs.size()), false);
        for (std::size_t i = 0; i < step.donatable.size(); ++i) {
            const int slot = step.inputs[i];
            step.donatable[i] = slot >= 0 && std::count(step.inputs.begin(), step.inputs.end(), slot) == 1 &&
                                std::find(step.release.begin(), step.release.end(), slot) != step.release.end();
        }
    }

    for (const auto& input : graph.input())
        if (!initializer_names.contains(input.name()))
            input_metadata.set(input.name(), metadata_from_value_info(input));
    for (const auto& output : graph.output()) output_metadata.set(output.name(), metadata_from_value_info(output));

    logger().extra_verbose(fmt::format(
        "Prepared reference session: {} nodes to run, {} constants, {} threads", steps.size(),
        std::count_if(constants.begin(), constants.end(), [](const Value& v) { return v.defined(); }), num_threads));
}

void Session::Impl::plan_concats_in_place(const std::unordered_set<int>& graph_outputs) {
    std::vector<int> readers(slot_names.size(), 0);
    std::vector<std::pair<int, std::size_t>> producer(slot_names.size(), {-1, 0});  // step, output
    for (std::size_t s = 0; s < steps.size(); ++s) {
        for (int input : steps[s].inputs)
            if (input >= 0) ++readers[input];
        for (std::size_t j = 0; j < steps[s].outputs.size(); ++j)
            if (steps[s].outputs[j] >= 0) producer[steps[s].outputs[j]] = {static_cast<int>(s), j};
    }
    for (std::size_t c = 0; c < steps.size(); ++c) {
        const Step& concat = steps[c];
        const onnx::NodeProto& node = concat.info->proto();
        if (!is_default_domain(node.domain()) || node.op_type() != "Concat" || node.input_size() < 2) continue;
        bool eligible = true;
        for (int input : concat.inputs) {
            const int p = input >= 0 ? producer[input].first : -1;
            eligible = eligible && p >= 0 && readers[input] == 1 && !graph_outputs.contains(input) &&
                       !constants[input].defined() && producer[input].second == 0 &&
                       is_default_domain(steps[p].info->proto().domain()) && steps[p].info->proto().op_type() == "Conv";
        }
        if (!eligible) continue;
        const int entry = static_cast<int>(concats_in_place.size());
        concats_in_place.push_back(std::make_unique<ConcatInPlace>());
        concats_in_place.back()->axis = concat.info->attr_int("axis", 1);
        steps[c].concat_in_place = entry;
        for (std::size_t i = 0; i < concat.inputs.size(); ++i) {
            Step& p = steps[producer[concat.inputs[i]].first];
            p.feeds_concat = entry;
            p.concat_input = i;
        }
    }
    if (!concats_in_place.empty())
        logger().extra_verbose(fmt::format("{} Concat nodes take their inputs in place", concats_in_place.size()));
}

std::vector<std::size_t> Session::Impl::topological_order(const std::unordered_set<std::string>& graph_values) {
    const std::size_t count = nodes.size();
    std::unordered_map<std::string, std::size_t> producer;
    for (std::size_t i = 0; i < count; ++i) {
        for (const auto& output : nodes[i].output()) {
            if (output.empty()) continue;
            if (graph_values.contains(output))
                throw ModelError(fmt::format("Node '{}' ({}): output '{}' has the name of a graph input or initializer",
                                             display_names[i], nodes[i].op_type(), output));
            auto [found, inserted] = producer.emplace(output, i);
            if (!inserted)
                throw ModelError(fmt::format("Tensor '{}' is produced by both node '{}' and node '{}'", output,
                                             display_names[found->second], display_names[i]));
        }
    }

    std::vector<std::vector<std::size_t>> predecessors(count);
    for (std::size_t i = 0; i < count; ++i) {
        for (const auto& input : node_inputs[i]) {
            if (input.empty()) continue;
            auto found = producer.find(input);
            if (found == producer.end()) {
                if (graph_values.contains(input)) continue;
                throw ModelError(
                    fmt::format("Node '{}' ({}): input '{}' is not produced by any node, graph input or initializer",
                                display_names[i], nodes[i].op_type(), input));
            }
            predecessors[i].push_back(found->second);
        }
    }
    return stable_topological_order(predecessors, [this](std::size_t index) { return display_names[index]; });
}

Session::Session(const onnx::ModelProto& model, SessionOptions options, const TensorMap& constants)
    : impl_(std::make_unique<Impl>()) {
    impl_->prepare(model, options, constants);
}

Session::~Session() = default;

const TensorMetadata& Session::input_metadata() const {
    return impl_->input_metadata;
}
const TensorMetadata& Session::output_metadata() const {
    return impl_->output_metadata;
}
const std::vector<std::string>& Session::execution_order() const {
    return impl_->order;
}
int Session::num_threads() const {
    return impl_->num_threads;
}

std::optional<SessionProfile> Session::profile() const {
    const Impl& impl = *impl_;
    if (!impl.profile) return std::nullopt;
    std::lock_guard<std::mutex> lock(impl.profile_totals.mutex);
    SessionProfile result;
    result.runs = impl.profile_totals.runs_seen > 0 ? impl.profile_totals.runs_seen - 1 : 0;
    result.total_seconds = impl.profile_totals.total_seconds;
    for (std::size_t i = 0; i < impl.steps.size(); ++i) {
        const NodeInfo& info = *impl.steps[i].info;
        std::string op_type = info.op_type();
        if (info.attr_int(kFusedBiasAttr, 0) != 0 || info.attr_int(kFusedResidualAttr, 0) != 0) op_type += "+Add";
        if (const std::string folded = info.attr_string(kFusedActivationAttr, ""); !folded.empty())
            op_type += "+" + folded;
        const auto& seconds = impl.profile_totals.step_seconds;
        result.nodes.push_back({impl.order[i], std::move(op_type), i < seconds.size() ? seconds[i] : 0.0});
    }
    return result;
}

std::string format_profile(const SessionProfile& profile, std::size_t max_nodes) {
    if (profile.runs == 0) return "Profile: no run counted (the first run, which prepares the kernels, is not)";
    const double runs = static_cast<double>(profile.runs);
    double nodes_total = 0;
    for (const auto& node : profile.nodes) nodes_total += node.seconds;
    auto percent = [&](double seconds) { return nodes_total > 0 ? 100.0 * seconds / nodes_total : 0.0; };
    std::string text = fmt::format(
        "Profile of {} run(s) (the first run is not counted): {:.3f} ms per run, {:.3f} ms of it in {} nodes\n",
        profile.runs, profile.total_seconds / runs * 1e3, nodes_total / runs * 1e3, profile.nodes.size());

    struct OpTotal {
        std::size_t nodes = 0;
        double seconds = 0;
    };
    std::map<std::string, OpTotal> by_op;
    for (const auto& node : profile.nodes) {
        OpTotal& total = by_op[node.op_type];
        ++total.nodes;
        total.seconds += node.seconds;
    }
    std::vector<std::pair<std::string, OpTotal>> ops(by_op.begin(), by_op.end());
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    std::size_t op_width = 7;
    for (const auto& [op, total] : ops) op_width = std::max(op_width, op.size());
    text += fmt::format("  By op type:\n    {:<{}}  {:>5}  {:>11}  {:>6}\n", "op type", op_width, "nodes", "ms per run",
                        "share");
    for (const auto& [op, total] : ops)
        text += fmt::format("    {:<{}}  {:>5}  {:>11.3f}  {:>5.1f}%\n", op, op_width, total.nodes,
                            total.seconds / runs * 1e3, percent(total.seconds));

    std::vector<const SessionProfile::Node*> slowest;
    for (const auto& node : profile.nodes) slowest.push_back(&node);
    std::stable_sort(slowest.begin(), slowest.end(),
                     [](const auto* a, const auto* b) { return a->seconds > b->seconds; });
    if (slowest.size() > max_nodes) slowest.resize(max_nodes);
    std::size_t name_width = 4, type_width = 7;
    for (const auto* node : slowest) {
        name_width = std::max(name_width, node->name.size());
        type_width = std::max(type_width, node->op_type.size());
    }
    text += fmt::format("  Slowest nodes ({} of {}):\n    {:<{}}  {:<{}}  {:>11}  {:>6}", slowest.size(),
                        profile.nodes.size(), "node", name_width, "op type", type_width, "ms per run", "share");
    for (const auto* node : slowest)
        text += fmt::format("\n    {:<{}}  {:<{}}  {:>11.3f}  {:>5.1f}%", node->name, name_width, node->op_type,
                            type_width, node->seconds / runs * 1e3, percent(node->seconds));
    return text;
}

TensorMap Session::run(const TensorMap& feed) const {
    return run(feed, nullptr);
}

TensorMap Session::run(const TensorMap& feed, RunStats* stats) const {
    ValueMap values;
    for (const auto& [name, tensor] : feed) values.set(name, Value(tensor));
    ValueMap results = run_values(values, stats);
    TensorMap tensors;
    for (auto& [name, value] : results) {
        if (!value.is_tensor())
            throw UnsupportedError(fmt::format("Graph output '{}' is a {}, but this runner returns tensors only", name,
                                               value.kind_name()));
        tensors.set(name, value.tensor());
    }
    return tensors;
}

Session::ValueMap Session::run_values(const ValueMap& feed, RunStats* stats) const {
    const Impl& impl = *impl_;
    const int threads = impl.adaptive_threads ? threads_for_current_load(impl.num_threads) : impl.num_threads;
    omp_set_num_threads(threads);

    std::vector<Value> values(impl.slot_names.size());
    for (const auto& [name, index] : impl.inputs) {
        if (const Value* given = feed.find(name); given && given->defined())
            values[index] = *given;
        else if (impl.defaults[index].defined())
            values[index] = impl.defaults[index];
        else
            throw InputError(fmt::format("Input '{}' is missing from the feed", name));
    }
    {
        std::optional<RunArena::Scope> planned;
        if (impl.arena) planned.emplace(*impl.arena);
        impl.execute(values, stats, threads);
    }
    ValueMap result;
    for (const auto& [name, index] : impl.outputs) result.set(name, impl.value_at(values, index));
    return result;
}

void Session::Impl::execute(std::vector<Value>& values, RunStats* stats, int threads) const {
    using Clock = std::chrono::steady_clock;
    RunStats local;
    std::size_t live = 0;
    std::vector<double> step_seconds(profile ? steps.size() : 0);
    const Clock::time_point run_start = profile ? Clock::now() : Clock::time_point();
    std::vector<const Tensor*> inputs;
    std::vector<const Value*> input_values;
    std::vector<Tensor> concat_outputs(concats_in_place.size());  // allocated by the first producer's step
    for (std::size_t step_index = 0; step_index < steps.size(); ++step_index) {
        const Step& step = steps[step_index];
        inputs.clear();
        input_values.clear();
        for (int index : step.inputs) {
            if (index < 0) {
                inputs.push_back(nullptr);
                input_values.push_back(nullptr);
                continue;
            }
            const Value& input = value_at(values, index);
            input_values.push_back(&input);
            inputs.push_back(input.is_tensor() ? &input.tensor() : nullptr);
        }
        KernelContext context(*step.info, inputs, step.outputs.size(), threads);
        context.attach_values(&input_values, &step.outer_names);
        context.attach_donatable(&step.donatable);
        if (step.feeds_concat >= 0) offer_concat_slice(step, concat_outputs, context);
        if (step.concat_in_place >= 0 && concat_outputs[step.concat_in_place].defined())
            context.offer_output(0, concat_outputs[step.concat_in_place]);
        if (logger().enabled(Severity::kUltraVerbose))
            logger().ultra_verbose(fmt::format("Running node '{}' ({})", step.info->name(), step.info->op_type()));
        const Clock::time_point step_start = profile ? Clock::now() : Clock::time_point();
        with_node_context(*step.info, [&] { step.kernel->compute(context); });
        if (profile) step_seconds[step_index] = std::chrono::duration<double>(Clock::now() - step_start).count();
        if (step.concat_in_place >= 0) {
            Tensor& offered = concat_outputs[step.concat_in_place];
            const Tensor& result = context.output(0);
            if (offered.defined() && result.defined() && result.data() == offered.data()) ++local.concats_in_place;
            offered = Tensor();  // the output holds it now, if it took it
            record_concat_shapes(*concats_in_place[step.concat_in_place], inputs, result);
        }
        for (std::size_t j = 0; j < step.outputs.size(); ++j) {
            const int index = step.outputs[j];
            if (index < 0) continue;
            Value produced = context.take_output_value(j);
            if (!produced.defined())
                step.info->fail(fmt::format("produced no value for output '{}'", slot_names[index]));
            values[index] = std::move(produced);
            ++live;
        }
        local.peak_live_intermediates = std::max(local.peak_live_intermediates, live);
        ++local.nodes_executed;
        for (int index : step.release) {
            values[index] = Value();
            --live;
        }
    }
    if (stats) *stats = local;
    if (profile) record_profile(step_seconds, std::chrono::duration<double>(Clock::now() - run_start).count());
}

void Session::Impl::offer_concat_slice(const Step& step, std::vector<Tensor>& concat_outputs,
                                       KernelContext& context) const {
    const ConcatInPlace& plan = *concats_in_place[step.feeds_concat];
    DataType dtype;
    Shape output, slice;
    std::size_t offset = 0;  // bytes
    {
        std::lock_guard<std::mutex> lock(plan.mutex);
        if (plan.input_shapes.empty()) return;
        dtype = plan.dtype;
        output = plan.output;
        slice = plan.input_shapes[step.concat_input];
        for (std::size_t i = 0; i < step.concat_input; ++i)
            offset += shape_volume(plan.input_shapes[i]) * dtype_size(dtype);
    }
    Tensor& whole = concat_outputs[step.feeds_concat];
    if (!whole.defined()) whole = Tensor::uninitialized(dtype, output);
    auto holder = std::make_shared<Tensor>(whole);
    std::shared_ptr<void> owner(holder, holder->data());
    context.offer_output(0, Tensor::wrap(dtype, slice, owner, static_cast<uint8_t*>(holder->data()) + offset));
}

void Session::Impl::record_concat_shapes(const ConcatInPlace& plan, const std::vector<const Tensor*>& inputs,
                                         const Tensor& output) const {
    bool usable = output.defined() && output.dtype() != DataType::kString;
    if (usable) {  // one slice per input: the dims before the axis are 1
        const int64_t rank = output.rank();
        const int64_t axis = plan.axis < 0 ? plan.axis + rank : plan.axis;
        for (int64_t d = 0; d < axis && d < rank; ++d) usable = usable && output.shape()[d] == 1;
    }
    std::lock_guard<std::mutex> lock(plan.mutex);
    plan.input_shapes.clear();
    if (!usable) return;
    for (const Tensor* input : inputs) {
        if (input == nullptr || !input->defined()) {
            plan.input_shapes.clear();
            return;
        }
        plan.input_shapes.push_back(input->shape());
    }
    plan.dtype = output.dtype();
    plan.output = output.shape();
}

void Session::Impl::record_profile(const std::vector<double>& step_seconds, double total_seconds) const {
    std::lock_guard<std::mutex> lock(profile_totals.mutex);
    if (profile_totals.runs_seen++ == 0) return;
    if (profile_totals.step_seconds.empty()) profile_totals.step_seconds.assign(step_seconds.size(), 0.0);
    for (std::size_t i = 0; i < step_seconds.size(); ++i) profile_totals.step_seconds[i] += step_seconds[i];
    profile_totals.total_seconds += total_seconds;
}

std::shared_ptr<Session> SessionFromOnnx::operator()() const {
    OnnxModel model = model_();
    if (!model) throw PolygraphyException("SessionFromOnnx: the model loader returned no model");
    return std::make_shared<Session>(*model, options_);
}

std::shared_ptr<Session> session_from_onnx(const onnx::ModelProto& model, SessionOptions options) {
    return std::make_shared<Session>(model, options);
}

}  // namespace polygraphy::ref
