// Cutting a graph into consecutive slices of nodes that run one after the other, each as a model of
// its own: what a layer-wise comparison in bounded memory runs (`--onnx-outputs mark all` under
// `--compare-memory-budget`).
//
// The nodes are taken in topological order and split into consecutive slices. Slice k reads the
// graph inputs and initializers its nodes use plus the "cut" tensors that earlier slices produced;
// it yields the marked tensors it produces plus the cut tensors later slices read. Between two
// slices only the cut tensors need to be kept. A node's reads include the outer-scope names its
// If/Loop/Scan bodies capture (node_reads()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// One slice of a graph (plan_graph_slices()).
struct GraphSlice {
    std::vector<std::size_t> nodes;         ///< indices of the graph's nodes, in topological order
    std::vector<std::string> graph_inputs;  ///< graph inputs the nodes read, in graph order
    std::vector<std::string> initializers;  ///< initializers the nodes read, in graph order
    std::vector<std::string> cut_inputs;    ///< tensors of earlier slices the nodes read
    std::vector<std::string> marked;        ///< marked tensors this slice yields, in the marked order
    std::vector<std::string> cut_outputs;   ///< unmarked tensors it produces that later slices read
    /// Tensors produced by this slice or earlier ones that later slices read: what to keep once it ran.
    std::vector<std::string> kept;
    /// Estimated bytes held while it runs, per runner and iteration: the cut tensors kept from earlier
    /// slices, plus what it yields (a tensor counted once).
    std::size_t bytes = 0;
};

/// Splits the nodes of `graph`, in topological order, into consecutive slices whose `bytes` stay
/// within `max_bytes`, each as long as fits. `marked`: the tensors to yield (graph outputs to
/// compare); those that no node produces (graph inputs, initializers) go to the first slice.
/// `tensor_bytes`: the estimated size of each tensor; a tensor missing there counts as the largest
/// one given. A node that alone exceeds `max_bytes` gets a slice of its own, whose `bytes` say so: the
/// caller decides. ModelError for a cycle or a tensor produced twice.
/// `weight_bytes` (the size of each initializer; others count 0) and `max_weight_bytes` bound the
/// weights a slice reads too, each counted once (a slice that runs as a session of its own holds
/// them): a slice grows only while both bounds hold.
std::vector<GraphSlice> plan_graph_slices(const onnx::GraphProto& graph, const std::vector<std::string>& marked,
                                          const std::unordered_map<std::string, std::size_t>& tensor_bytes,
                                          std::size_t max_bytes,
                                          const std::unordered_map<std::string, std::size_t>& weight_bytes = {},
                                          std::size_t max_weight_bytes = SIZE_MAX);

/// Shows one slice at a time of a model as the model itself, in place: its graph holds only the
/// slice's nodes and initializers (moved, never copied: external data references and weights in
/// memory stay where they are), its inputs are the slice's graph inputs and cut inputs, its outputs
/// the marked and cut outputs. The destructor puts the whole graph back as it was. Runtimes that
/// load the model while a slice is shown run that slice alone. The model must outlive the view and
/// not be changed by others meanwhile.
class SliceView {
public:
    /// Takes the graph of `model` apart (it is empty until show()).
    explicit SliceView(onnx::ModelProto& model);
    ~SliceView();
    SliceView(const SliceView&) = delete;
    SliceView& operator=(const SliceView&) = delete;

    /// Makes `slice` (planned on this model's graph) the model's graph. The cut inputs are declared
    /// with the types in `cut_input_types` (by name; a missing one is left untyped); the outputs keep
    /// the types the graph declared for them.
    void show(const GraphSlice& slice, const std::unordered_map<std::string, onnx::ValueInfoProto>& cut_input_types);

private:
    struct Parts;
    void take_back();
    onnx::GraphProto& graph_;
    std::unique_ptr<Parts> parts_;
};

}  // namespace polygraphy
