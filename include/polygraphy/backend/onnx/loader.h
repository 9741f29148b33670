// ONNX loaders: OnnxFromPath, OnnxFromBytes, ModifyOutputs, SaveOnnx, BytesFromPath, BytesFromOnnx.
#pragma once

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

/// Loads a model file and, unless `ignore_external_data`, its external data.
/// External data locations are resolved relative to `external_data_dir` (default: the model's
/// folder) and must stay inside it: absolute paths, `..` escapes and symlinks leading outside are
/// rejected, as are offsets/lengths beyond the file or disagreeing with the tensor's shape.
/// Loaded external data is moved into raw_data so the model is self-contained.
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
/// did-you-mean hint). Output dtypes/shapes come from value_info when known.
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

/// Serializes a model to bytes. Throws PolygraphyException for models over 2 GiB.
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
void save_onnx(const onnx::ModelProto& model, const std::string& path);

/// Whether the model file at `path` may refer to external data (or cannot be scanned), found from
/// its wire format without parsing it. False means the file is self-contained, so it may be handed
/// as is to a runtime that reads ONNX files itself. Throws FileError when it cannot be read.
bool onnx_file_may_use_external_data(const std::string& path);

/// Graph inputs that are not initializers, with their declared dtype and shape.
TensorMetadata get_onnx_input_metadata(const onnx::GraphProto& graph);
/// Graph outputs with their declared dtype and shape (if any).
TensorMetadata get_onnx_output_metadata(const onnx::GraphProto& graph);

/// Opset of the default ("" / "ai.onnx") domain; 1 when not imported.
int64_t get_onnx_opset(const onnx::ModelProto& model, const std::string& domain = "");

}  // namespace polygraphy
