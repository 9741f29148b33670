// The parts of the extension module polygraphy._core, one function per binding file.
#pragma once

#include <pybind11/pybind11.h>

namespace polygraphy::python {

/// Exceptions (polygraphy.exception), the logger, TensorMetadata and JSON files (common.cpp).
void bind_common(pybind11::module_& module);
/// ONNX loaders, sessions and runners (backend.cpp).
void bind_backend(pybind11::module_& module);
/// Comparator, CompareFunc, DataLoader, RunResults (comparator.cpp).
void bind_comparator(pybind11::module_& module);
/// match_graphs, diff_graphs and convert_to_fp16 (diff.cpp).
void bind_diff(pybind11::module_& module);
/// Node views and the graph edits as methods of ModelProto (graph.cpp); after bind_backend.
void bind_graph(pybind11::module_& module);

}  // namespace polygraphy::python
