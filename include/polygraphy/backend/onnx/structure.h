// Loading a model's structure without its weights, and Polygraphy's text summary of a model.
#pragma once

#include <string>

#include "polygraphy/backend/onnx/loader.h"

namespace polygraphy {

/// Loads the model at `path` without the values of its tensors: the file is mapped and its wire
/// format is filtered so that every TensorProto (initializers, Constant values, sparse tensors, in
/// subgraphs and functions too) keeps its name, dtype, dims and external-data fields but loses its
/// data fields (raw_data and the typed *_data lists), which are skipped unread. External data is
/// never loaded. Costs little more time and memory than the graph structure itself, and works on
/// files over protobuf's 2 GiB limit. The tensors of the result have no values: do not decode them.
/// Logs `Loading model: <path>`. Throws PolygraphyException when the file cannot be read and
/// FormatError naming the file when it is not an ONNX model.
OnnxModel onnx_structure_from_path(const std::string& path);

/// What str_from_onnx() shows besides the summary (`inspect model --show layers attrs weights`).
struct OnnxSummaryOptions {
    bool show_layers = false;   ///< each node with its inputs and outputs (dtype, shape when known)
    bool show_attrs = false;    ///< node attributes, subgraph bodies, doc strings (with show_layers)
    bool show_weights = false;  ///< initializer values (and Constant values with show_attrs)
};

/// Polygraphy's `str_from_onnx` text: `Name: <graph> | ONNX Opset: <n>[ | Other Opsets: {...}]`,
/// then (beyond Polygraphy) `IR Version: <n> | Producer: <name> <version>`, then the graph:
/// `---- N Graph Input(s) ----` (initializers left out), outputs, initializers, `---- N Node(s) ----`
/// with the nodes (show_layers), their attributes and subgraph bodies nested (show_attrs), and
/// (beyond Polygraphy) `---- N Local Function(s) ----` with each function's nodes. Tensor values
/// that cannot be decoded (external data not loaded, stripped by onnx_structure_from_path) print
/// `<error: failed to load weights>` and log one error. No trailing newline.
std::string str_from_onnx(const onnx::ModelProto& model, const OnnxSummaryOptions& options = {});

}  // namespace polygraphy
