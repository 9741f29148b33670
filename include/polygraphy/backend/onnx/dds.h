// Unbounded data-dependent shapes (DDS): tensors whose size follows from runtime values with no
// upper bound, and bounding them with a Min node (`inspect model --list-unbounded-dds`,
// `surgeon sanitize --set-unbounded-dds-upper-bound`; Polygraphy's get_unbounded_dds_tensors and
// SetUpperBound). Both expect a constant-folded model with inferred shapes, as Polygraphy's do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/ordered_map.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

/// The tensors that give a node's output an unbounded data-dependent shape, in topological order,
/// each once: input 1 of Range (limit), Pad (pads), Tile (repeats) and Expand (shape), and input 3
/// of Resize (sizes), when that input is produced by a node other than Min and is not an
/// initializer. Only nodes that introduce a new named dimension (a dim_param no graph input or
/// earlier tensor has) or whose output has no known shape are considered. Top-level graph only.
/// Each comes with its declared dtype and shape (value_info), when known.
TensorMetadata find_unbounded_dds_tensors(const onnx::ModelProto& model);

/// Bounds tensors: each gets a `Min(<name>_copy, <name>_upper_bound)` node right after its producer
/// (the producer now writes `<name>_copy`; a name already taken gets a `_1`, `_2`... suffix); the bound is an
/// initializer of the tensor's type (int64 when unknown), a scalar for a scalar or unknown shape and else one value per
/// dimension of its rank, as Polygraphy writes it. `upper_bounds` maps tensor names to bounds; the key "" is the
/// default for the unbounded DDS tensors not named. Named tensors that are not unbounded DDS tensors
/// are bounded too, with a warning. The graph is sorted topologically first and cleaned up after.
/// Returns the bounds applied, in the order the tensors were bounded. Throws
/// PolygraphyException, with the model unchanged, for a name that is not a tensor of the graph or
/// that no node produces (a graph input or initializer).
OrderedMap<int64_t> set_unbounded_dds_upper_bounds(onnx::ModelProto& model, const OrderedMap<int64_t>& upper_bounds);

}  // namespace polygraphy
