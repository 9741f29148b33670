// The line `inspect model --list-unbounded-dds` prints.
#pragma once

#include <string>

#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy::tools {

/// Polygraphy's rendering of the tensors find_unbounded_dds_tensors() returns (a Python list of
/// ONNX-GraphSurgeon variables): `[Variable (n): (shape=['k'], dtype=int64)]`, None when unknown.
std::string unbounded_dds_str(const TensorMetadata& tensors);

}  // namespace polygraphy::tools
