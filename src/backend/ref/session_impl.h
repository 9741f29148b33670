// Internal to the built-in runtime's session: the prepared graph that session_prepare.cpp builds,
// session_plan.cpp orders and plans buffers for, and session.cpp runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/fused_ops.h"
#include "polygraphy/backend/onnx/functions.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/run_arena.h"

namespace polygraphy::ref {

using OpsetMap = std::unordered_map<std::string, int64_t>;

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
    /// Release points (each intermediate after its last reader), the in-place Concats and the
    /// inputs each step may overwrite (session_plan.cpp).
    void plan_buffer_lifetimes();

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
    bool adaptive_threads = false;                ///< num_threads was 0: each run uses the cores others leave idle
    bool fuse = true;                             // SessionOptions::fuse_activations
    int64_t channel_block = kNarrowChannelBlock;  // SessionOptions::max_channel_block, resolved
    bool profile = false;                         // SessionOptions::profile (top-level graph only)
    struct ProfileTotals {
        std::mutex mutex;
        std::size_t runs_seen = 0;  // the first is not counted
        std::vector<double> step_seconds;
        std::vector<double> step_flops;
        double total_seconds = 0;
        int threads = 1;
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
    /// Takes the nodes of `graph` (or `expanded`) with their inputs and display names; gives the
    /// opset imports each node reads (a function body's own over the model's).
    std::vector<std::shared_ptr<const OpsetMap>> take_nodes(const onnx::GraphProto& graph,
                                                            std::vector<ExpandedNode>* expanded);
    /// Folds activations into their producers and chooses channel-blocked layouts (SessionOptions::
    /// fuse_activations); removes the folded nodes from every per-node vector.
    void rewrite_for_speed(const onnx::GraphProto& graph, std::vector<std::shared_ptr<const OpsetMap>>& opsets_of_node);
    /// The registry entry of each node, and its opset in `node_opsets`; UnsupportedError naming every
    /// node without one.
    std::vector<const OpEntry*> find_kernels(const std::vector<std::shared_ptr<const OpsetMap>>& opsets_of_node,
                                             std::vector<int64_t>& node_opsets) const;
    /// Creates the kernels in execution order; Constant nodes (and with fusion, Identity nodes of
    /// constants) are evaluated now and become constants.
    void build_steps(const std::vector<std::size_t>& sorted, const std::vector<const OpEntry*>& entries,
                     const std::vector<int64_t>& node_opsets,
                     const std::vector<std::shared_ptr<const OpsetMap>>& opsets_of_node);
    /// Execution order of `nodes`, given the values available before any node runs.
    std::vector<std::size_t> topological_order(const std::unordered_set<std::string>& graph_values);
    /// Runs the steps over `values` (graph inputs and outer values already in their slots), the
    /// kernels on `threads` threads.
    void execute(std::vector<Value>& values, RunStats* stats, int threads) const;
    /// Adds one run's per-step times to profile_totals.
    void record_profile(const std::vector<double>& step_seconds, const std::vector<double>& step_flops,
                        double total_seconds, int threads) const;
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

}  // namespace polygraphy::ref
