// Loading a model's structure without its weights, and Polygraphy's text summary of a model.
#pragma once

#include <functional>
#include <string>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/tensor.h"

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

/// external_data keys with which OnnxFileModel notes where a tensor's raw_data lies in the file.
inline constexpr const char* kMappedOffsetKey = "polygraphy.file_offset";
inline constexpr const char* kMappedLengthKey = "polygraphy.file_length";

/// A model whose weights stay in its file until asked for: loaded like onnx_structure_from_path(),
/// except that each raw_data is replaced by a note of where it lies in the file (kMappedOffsetKey /
/// kMappedLengthKey external_data entries) and the typed data fields are kept. decode_tensor()
/// reads one tensor's bytes when needed, so showing every weight of a model costs about one tensor
/// of memory, not the model. Meant for files that hold their own weights (see
/// onnx_file_may_use_external_data()); tensors stored in external files are not resolved here.
class OnnxFileModel {
public:
    /// Logs `Loading model: <path>`; throws like onnx_structure_from_path().
    explicit OnnxFileModel(std::string path);

    /// The model's structure (tensor data may stay in the file).
    const OnnxModel& model() const { return model_; }
    /// The values of `tensor` (one of model()'s), read from the file when its data lies there.
    /// FormatError when the noted range is outside the file or disagrees with the dims.
    Tensor decode_tensor(const onnx::TensorProto& tensor) const;

private:
    std::string path_;
    std::size_t file_size_ = 0;
    OnnxModel model_;
};

/// What str_from_onnx() shows besides the summary (`inspect model --show layers attrs weights`).
struct OnnxSummaryOptions {
    bool show_layers = false;   ///< each node with its inputs and outputs (dtype, shape when known)
    bool show_attrs = false;    ///< node attributes, subgraph bodies, doc strings (with show_layers)
    bool show_weights = false;  ///< initializer values (and Constant values with show_attrs)
    /// How tensor values are obtained; tensor_from_proto() when empty (OnnxFileModel::decode_tensor
    /// for a model whose weights stayed in its file).
    std::function<Tensor(const onnx::TensorProto&)> decode;
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
