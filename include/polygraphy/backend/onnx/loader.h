// ONNX loaders: OnnxFromPath, OnnxFromBytes, ModifyOutputs, SaveOnnx, BytesFromPath, BytesFromOnnx.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/backend/base/loader.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

/// Models are shared: a loader that modifies a model modifies the object its inner loader returned.
using OnnxModel = std::shared_ptr<onnx::ModelProto>;
using OnnxLoader = Loader<OnnxModel>;

/// Reads a whole file. Throws PolygraphyException naming the path when it cannot be read.
class BytesFromPath {
public:
    /// Loader of the bytes of the file at `path`.
    explicit BytesFromPath(std::string path) : path_(std::move(path)) {}
    /// Reads the file.
    std::string operator()() const;

private:
    std::string path_;
};
std::string bytes_from_path(const std::string& path);

/// Parses a serialized ModelProto (no size limit below protobuf's 2 GiB). FormatError when not ONNX.
class OnnxFromBytes {
public:
    /// Loader parsing the bytes `bytes` returns.
    explicit OnnxFromBytes(Loader<std::string> bytes) : bytes_(std::move(bytes)) {}
    /// Parses the model.
    OnnxModel operator()() const;

private:
    Loader<std::string> bytes_;
};
OnnxModel onnx_from_bytes(const std::string& bytes);

/// Loads a model file and, unless `ignore_external_data`, checks its external data.
/// External data locations are resolved relative to `external_data_dir` (default: the model's
/// folder) and must stay inside it: absolute paths, `..` escapes and symlinks leading outside are
/// rejected, as are offsets/lengths beyond the file or disagreeing with the tensor's shape.
/// The weights stay in their files: each checked tensor keeps data_location EXTERNAL, with the
/// entries location, offset, length and "polygraphy.folder" (the canonical folder, which marks the
/// reference as checked; a file's own "polygraphy.*" entries are removed). tensor_from_proto() maps
/// such a tensor read-only when its values are needed, so loading costs no memory for the weights,
/// and a model over 2 GiB loads like any other. Savers write the weights out again (save_onnx,
/// save_onnx_with_external_data, bytes_from_onnx); ONNX-Runtime reads them from their files.
class OnnxFromPath {
public:
    /// Loader of the model at `path`; see the class for external data.
    explicit OnnxFromPath(std::string path, std::optional<std::string> external_data_dir = std::nullopt,
                          bool ignore_external_data = false)
        : path_(std::move(path)),
          external_data_dir_(std::move(external_data_dir)),
          ignore_external_data_(ignore_external_data) {}
    /// Loads the model.
    OnnxModel operator()() const;

private:
    std::string path_;
    std::optional<std::string> external_data_dir_;
    bool ignore_external_data_;
};
OnnxModel onnx_from_path(const std::string& path, std::optional<std::string> external_data_dir = std::nullopt,
                         bool ignore_external_data = false);

/// Special value for ModifyOutputs: mark every tensor produced by a node (except Constant nodes).
inline const std::vector<std::string> kMarkAll = {"mark", "all"};

/// Re-marks graph outputs. `outputs` empty: keep the current outputs; kMarkAll: every non-Constant
/// node output in node order (replacing the original list); otherwise exactly the named tensors.
/// `exclude_outputs` are then removed. Unknown tensor names -> PolygraphyException (with a
/// did-you-mean hint). Output dtypes/shapes come from value_info when known. A model that calls local
/// functions is inlined first (inline_local_functions(), functions.h, which names the tensors inside
/// them), so that those tensors can be marked too.
class ModifyOutputs {
public:
    /// Loader re-marking the outputs of `model`'s result (see the class).
    ModifyOutputs(OnnxLoader model, std::vector<std::string> outputs, std::vector<std::string> exclude_outputs = {})
        : model_(std::move(model)), outputs_(std::move(outputs)), exclude_outputs_(std::move(exclude_outputs)) {}
    /// Loads the inner model and modifies its outputs (in place).
    OnnxModel operator()() const;

private:
    OnnxLoader model_;
    std::vector<std::string> outputs_;
    std::vector<std::string> exclude_outputs_;
};
OnnxModel modify_outputs(OnnxModel model, const std::vector<std::string>& outputs,
                         const std::vector<std::string>& exclude_outputs = {});

/// The largest model polygraphy serializes as one message (a file or bytes): protobuf's limit,
/// 2 GiB - 1 bytes. save_onnx() writes larger models with external data, and ONNX-Runtime receives
/// their weights apart from the graph. A lower limit sends small models down those paths (tests do
/// this): set_onnx_size_limit(), else the environment variable POLYGRAPHY_ONNX_SIZE_LIMIT (a number of
/// bytes, read on each call; PolygraphyException when it is not one from 1 to 2 GiB - 1).
std::size_t onnx_size_limit();
/// Sets what onnx_size_limit() returns; 0 goes back to the default. PolygraphyException above 2 GiB - 1.
void set_onnx_size_limit(std::size_t bytes);

/// Bytes of the model serialized with its weights inside: the message plus the data of its checked
/// external references (see OnnxFromPath).
uint64_t onnx_serialized_size(const onnx::ModelProto& model);

/// Serializes a model to bytes, with the weights of checked external references read in (see
/// OnnxFromPath). Throws PolygraphyException for models over onnx_size_limit().
std::string bytes_from_onnx(const onnx::ModelProto& model);

/// Loader serializing the model `model` returns (Polygraphy's BytesFromOnnx), e.g. for
/// `onnxrt::SessionFromOnnx::from_bytes(BytesFromOnnx(...))`.
class BytesFromOnnx {
public:
    /// Loader of the bytes of `model`'s result.
    explicit BytesFromOnnx(OnnxLoader model) : model_(std::move(model)) {}
    /// Loads and serializes the model.
    std::string operator()() const;

private:
    OnnxLoader model_;
};

/// Saves the model (atomically: temp file + rename) and returns it, so it can sit in a loader chain.
/// See save_onnx() for models whose weights are in external files or that are over 2 GiB.
class SaveOnnx {
public:
    /// Loader saving `model`'s result to `path`.
    SaveOnnx(OnnxLoader model, std::string path) : model_(std::move(model)), path_(std::move(path)) {}
    /// Loads, saves and returns the model.
    OnnxModel operator()() const;

private:
    OnnxLoader model_;
    std::string path_;
};
/// Saves `model` to `path` atomically. The weights of checked external references (see OnnxFromPath)
/// are written into the file. A model over onnx_size_limit() is saved with
/// save_onnx_with_external_data() and default options ("<file name>.data" beside it), with a warning.
/// PolygraphyException naming the path on failure (the weights' files included).
void save_onnx(const onnx::ModelProto& model, const std::string& path);

/// Whether the model file at `path` may refer to external data (or cannot be scanned), found from
/// its structure (tensor values skipped unread). False means the file is self-contained, so it may be handed
/// as is to a runtime that reads ONNX files itself. PolygraphyException when it cannot be read.
bool onnx_file_may_use_external_data(const std::string& path);

/// Checks the external data references of the model file at `path` exactly as OnnxFromPath does
/// (against `external_data_dir`, or the model's folder), reading only the model's structure: for a
/// runtime that reads the file itself. Returns whether the model has external data; throws what
/// OnnxFromPath throws for a bad reference.
bool check_onnx_file_external_data(const std::string& path,
                                   const std::optional<std::string>& external_data_dir = std::nullopt);

/// Graph inputs that are not initializers, with their declared dtype and shape.
TensorMetadata get_onnx_input_metadata(const onnx::GraphProto& graph);
/// Graph outputs with their declared dtype and shape (if any).
TensorMetadata get_onnx_output_metadata(const onnx::GraphProto& graph);

/// Opset of the default ("" / "ai.onnx") domain; 1 when not imported.
int64_t get_onnx_opset(const onnx::ModelProto& model, const std::string& domain = "");

}  // namespace polygraphy
