// onnx_structure_from_path without its "Loading model:" line, for probes that only look at a
// file's structure before the real load (which prints the line once).
#pragma once

#include <string>

#include "polygraphy/backend/onnx/loader.h"

namespace polygraphy {

/// onnx_structure_from_path() (structure.h), logging nothing.
OnnxModel onnx_structure_from_path_unlogged(const std::string& path);

}  // namespace polygraphy
