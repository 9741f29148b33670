// Internals shared by the graph passes of include/polygraphy/backend/onnx/graph.h: node names,
// producers and order (graph_scope.cpp), declared types (value_types.cpp), and the model copy that
// shape inference works on (shape_inference.cpp). Scopes of subgraph bodies (which names a node's
// bodies read from outside) are node_reads() and outer_scope_inputs() of partition.h.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

// ---- scope (graph_scope.cpp) --------------------------------------------------------------------

/// The node's name, or "<op_type>_<index>" when it has none (as the runtime names it).
std::string node_display_name(const onnx::NodeProto& node, std::size_t index);
/// Whether the node has graph attributes (If/Loop/Scan bodies).
bool has_subgraph(const onnx::NodeProto& node);
/// Producer of every node output; ModelError when two nodes produce the same tensor.
std::unordered_map<std::string, std::size_t> producers(const onnx::GraphProto& graph);
/// Stable topological order of the nodes (smallest ready index first); ModelError naming the nodes
/// of a cycle. Inputs nothing produces count as available (graph inputs, outer scope).
std::vector<std::size_t> topological_order(const onnx::GraphProto& graph);

// ---- types (value_types.cpp) --------------------------------------------------------------------

/// Sets the dtype (when given) and the shape (cleared when nullopt) of a tensor's value info.
void set_value_info_type(onnx::ValueInfoProto& info, std::optional<DataType> dtype,
                         const std::optional<DynShape>& shape);
/// Declared type of every tensor the graph describes: initializers, inputs, outputs, value_info.
std::unordered_map<std::string, MetadataEntry> known_types(const onnx::GraphProto& graph);
/// The entry's shape when every dim is known.
std::optional<Shape> static_shape(const MetadataEntry& entry);

// ---- shape inference (shape_inference.cpp) ------------------------------------------------------

/// A copy of `model` to infer shapes on without changing it: without the data of large
/// initializers when libonnx's inference applies (it reads only their types), whole otherwise.
onnx::ModelProto copy_for_inference(const onnx::ModelProto& model);

/// Whether libonnx's shape inference may be given `model`: its nodes fit their operators
/// (node_check.h) and every node input, in graph order, names a tensor already defined (a graph
/// input, an initializer, an earlier node's output, or a name of an enclosing graph defined before
/// the node holding the subgraph), every declared tensor type has its element type, and no graph
/// input is also a graph output. libonnx 1.12's inference dereferences the type of an input it has
/// not seen (a dangling or out-of-order input), or one it merged with an incomplete type, and crashes.
bool libonnx_inference_is_safe(const onnx::ModelProto& model);

// ---- libonnx (libonnx_inference.cpp) ------------------------------------------------------------

/// libonnx's shape inference (no type checks, node errors recorded, not thrown), with no
/// operator's inference run on a required input that has no type: such a node is left uninferred.
/// Give it only models that pass libonnx_inference_is_safe.
void run_libonnx_inference(onnx::ModelProto& model, bool data_propagation);

}  // namespace polygraphy
