// Loading a model without the node check (node_check.h), for `check lint`, which reports the nodes
// that do not fit their operators as findings and then goes on linting the rest.
#pragma once

#include <optional>
#include <string>

#include "polygraphy/backend/onnx/loader.h"

namespace polygraphy {

/// onnx_from_path() without the node check. The model must go to lint_onnx(), which checks the
/// nodes itself and runs none that fail, and to nothing else.
OnnxModel onnx_from_path_unchecked(const std::string& path, const std::optional<std::string>& external_data_dir,
                                   bool ignore_external_data);

}  // namespace polygraphy
