// ONNX-Runtime's answer to `inspect capability` (see polygraphy/backend/onnx/capability.h).
#pragma once

#include "polygraphy/backend/onnx/capability.h"

namespace polygraphy {

/// ONNX-Runtime: a CPU session can be created for the node (quietly: no per-node log lines).
/// Throws UnsupportedError / PolygraphyException when ONNX-Runtime itself is not available.
NodeChecker onnxrt_node_checker();

}  // namespace polygraphy
