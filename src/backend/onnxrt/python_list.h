// Internal: Python's repr of a list of strings, as Polygraphy's ONNX-Runtime messages print them.
#pragma once

#include <string>
#include <vector>

namespace polygraphy::onnxrt::detail {

/// ['CPUExecutionProvider', 'CUDAExecutionProvider']
std::string python_list(const std::vector<std::string>& items);

}  // namespace polygraphy::onnxrt::detail
