// External data: checking a model's references to other files when it is loaded, reading the bytes
// of checked references (mapped, not copied), and the traversal of every tensor a model stores
// (internal to the library; see external_data.cpp).
//
// A loaded model keeps its external tensors in their files. OnnxFromPath checks each reference
// (check_external_data) and marks it with kCheckedFolderKey; only marked references are ever read,
// so a file cannot make polygraphy read outside the folder its model was loaded with.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// external_data key of a checked reference: the canonical folder its location is relative to.
inline constexpr const char* kCheckedFolderKey = "polygraphy.folder";

/// Calls `visit` for every tensor `model` stores: initializers (sparse ones too), tensor attributes,
/// in subgraphs and in local functions.
void for_each_tensor(onnx::ModelProto& model, const std::function<void(onnx::TensorProto&)>& visit);
/// The same, read-only.
void for_each_tensor(const onnx::ModelProto& model, const std::function<void(const onnx::TensorProto&)>& visit);

/// Checks every external reference of `model` against `folder` (see OnnxFromPath: the location stays
/// inside the folder, the file exists and holds the bytes the tensor's dims and dtype need) and marks
/// it as checked: its entries become location, offset and length, plus kCheckedFolderKey. Reads no
/// tensor data. Throws as OnnxFromPath documents.
void check_external_data(onnx::ModelProto& model, const std::filesystem::path& folder);

/// The folder external data is resolved in: `external_data_dir`, else the model's folder ("." for a
/// bare file name).
std::filesystem::path external_data_folder(const std::string& model_path,
                                           const std::optional<std::string>& external_data_dir);

/// Removes polygraphy's own keys from every external reference: a model file must not carry them.
void remove_checked_marks(onnx::ModelProto& model);

/// Whether `tensor` is an external reference that check_external_data() checked.
bool is_checked_external(const onnx::TensorProto& tensor);

/// A checked reference: where its bytes are.
struct ExternalReference {
    std::filesystem::path folder;  ///< canonical folder the location is relative to
    std::string location;          ///< as the model gives it, relative to `folder`
    uint64_t offset = 0;           ///< first byte in the file
    uint64_t length = 0;           ///< bytes
};
/// The reference of a checked tensor; InternalError for others.
ExternalReference checked_reference(const onnx::TensorProto& tensor);

/// Bytes of a checked reference, kept alive by `owner`: a read-only mapping of the file (large
/// tensors) or a copy (small ones).
struct ExternalBytes {
    std::shared_ptr<const void> owner;  ///< keeps `bytes` valid
    std::string_view bytes;             ///< exactly the reference's length
};
/// Maps (or, below 64 KiB, reads) the bytes of a checked reference, checking again that the file is
/// inside its folder and long enough (it may have changed since loading): PolygraphyException or
/// FormatError naming the tensor otherwise.
ExternalBytes read_external_bytes(const onnx::TensorProto& tensor);

/// Copies the bytes of a checked reference to `sink` in chunks of at most 1 MiB (for writers: no
/// mapping stays resident). Throws like read_external_bytes().
void copy_external_bytes(const onnx::TensorProto& tensor, const std::function<void(std::string_view)>& sink);

/// Bytes held by the checked references of `model` (the weights left in their files).
uint64_t checked_external_bytes(const onnx::ModelProto& model);

/// Replaces every checked reference of `model` by its bytes in raw_data (for writers that produce a
/// self-contained model).
void load_checked_external_data(onnx::ModelProto& model);

/// A copy of `model` for libonnx's checker, which looks for external files relative to the working
/// folder: checked references of top-level initializers become graph inputs of their dtype and
/// shape (their files were checked already), other checked references are read in.
onnx::ModelProto checker_copy(const onnx::ModelProto& model);

/// `model` without the initializers of its top-level graph, everything else copied.
onnx::ModelProto copy_without_initializers(const onnx::ModelProto& model);

/// Location that weightless_copy() gives initializers whose data the runtime receives from memory.
inline constexpr const char* kInMemoryLocation = "polygraphy-in-memory";

/// A copy of a model for a runtime that receives the weights apart from the graph (ONNX-Runtime):
/// the serialized graph stays small whatever the weights weigh.
struct WeightlessCopy {
    /// The copy. Checked references of top-level initializers stay references (location, offset and
    /// length, relative to `folder`); initializers holding at least `min_bytes` of raw_data, and checked
    /// references in another folder, become references to kInMemoryLocation that the runtime must be
    /// given (`in_memory`, `elsewhere`). Other tensors are copied as they are.
    onnx::ModelProto model;
    /// The folder of the checked references the copy keeps; nullopt when there are none.
    std::optional<std::filesystem::path> folder;
    /// Initializers of the original whose raw_data the runtime receives from memory.
    std::vector<const onnx::TensorProto*> in_memory;
    /// Initializers of the original whose checked reference lies in another folder than `folder`.
    std::vector<const onnx::TensorProto*> elsewhere;
};
/// See WeightlessCopy. Pointers in the result point into `model`, which must outlive their use.
/// UnsupportedError for a checked reference outside `folder` that is not a top-level initializer.
WeightlessCopy weightless_copy(const onnx::ModelProto& model, std::size_t min_bytes);

}  // namespace polygraphy
