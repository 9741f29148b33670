// ONNX-Runtime's answer to `inspect capability` (see polygraphy/backend/onnx/capability.h).
#pragma once

#include <string>
#include <vector>

#include "polygraphy/backend/onnx/capability.h"

namespace polygraphy {

/// ONNX-Runtime: a CPU session can be created for the node (quietly: no per-node log lines), with the
/// custom-op libraries `custom_op_libraries` loaded. Throws UnsupportedError / PolygraphyException
/// when ONNX-Runtime itself is not available.
NodeChecker onnxrt_node_checker(std::vector<std::string> custom_op_libraries = {});

}  // namespace polygraphy
