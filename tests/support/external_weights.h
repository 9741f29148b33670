// Weights of generated models, written either into the model or streamed to an external data file as
// they are produced, so that a generator of a multi-gigabyte model never holds its weights in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/datatype.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::testing {

/// Produces elements [first, first + count) of a tensor into `out` (`count` elements of the tensor's
/// dtype). A writer calls it with consecutive ranges, in order, so a fill may keep a running state.
using ElementFill = std::function<void(void* out, int64_t first, int64_t count)>;

/// A fill of float32 values uniform in [lo, hi) from a fast deterministic stream (splitmix64) seeded
/// with `seed`: the same seed gives the same values whatever the chunk sizes.
ElementFill uniform_fill(uint64_t seed, float lo, float hi);

/// A seed for the tensor `name` of a model generated with `model_seed`: tensors draw independent streams
/// that do not shift when other tensors are added.
uint64_t tensor_seed(uint64_t model_seed, const std::string& name);

/// Writes the weights of a model being generated. Inline writers put every tensor's bytes in its
/// TensorProto (raw_data). External writers stream each tensor of at least `size_threshold` bytes to
/// an open file in chunks, at an offset aligned to `alignment`, and return a TensorProto that refers
/// to it (data_location EXTERNAL, external_data location/offset/length), as onnx's
/// convert_model_to_external_data does; smaller tensors stay inline.
class WeightWriter {
public:
    /// Layout of the external data file.
    struct Layout {
        uint64_t alignment = 4096;          ///< every external tensor starts at a multiple of this (a page)
        uint64_t size_threshold = 1024;     ///< tensors smaller than this many bytes stay inline
        std::size_t chunk_bytes = 1 << 20;  ///< bytes generated and written at a time
    };

    /// A writer that keeps every tensor inside the model.
    WeightWriter() = default;
    /// A writer that streams tensors to `out` (positioned at its start; not owned, not closed), which the
    /// model will find as `location`, relative to the model's folder.
    WeightWriter(std::FILE* out, std::string location, Layout layout);

    /// Generates the tensor `name` of `dtype` and `shape` with `fill` and returns its TensorProto.
    /// Throws InternalError for dtypes without a fixed element size (string, int4, uint4), and
    /// PolygraphyException when the file cannot be written.
    onnx::TensorProto write(const std::string& name, DataType dtype, const Shape& shape, const ElementFill& fill);
    /// The TensorProto of `value` (already in memory; small tensors such as tables).
    onnx::TensorProto write(const std::string& name, const Tensor& value);

    /// Whether tensors go to an external file.
    bool external() const { return out_ != nullptr; }
    /// Bytes of tensor data written so far (inline and external, without padding).
    uint64_t tensor_bytes() const { return tensor_bytes_; }
    /// Size of the external data file so far (with the alignment padding); 0 for inline writers.
    uint64_t file_bytes() const { return file_bytes_; }

private:
    void write_bytes(const void* data, std::size_t size);

    std::FILE* out_ = nullptr;
    std::string location_;
    Layout layout_;
    uint64_t tensor_bytes_ = 0;
    uint64_t file_bytes_ = 0;
};

/// The name of the external data file of the model `model_path`: its file name + ".data"
/// ("decoder.onnx" -> "decoder.onnx.data"), in the model's folder.
std::string external_data_location(const std::string& model_path);

/// What write_generated_model() wrote.
struct GeneratedModelInfo {
    uint64_t tensor_bytes = 0;  ///< bytes of weights written (without padding)
    uint64_t file_bytes = 0;    ///< size of the external data file (0 without one)
    uint64_t model_bytes = 0;   ///< size of the .onnx file
    int64_t node_count = 0;     ///< nodes of the main graph
};

/// Writes a generated model to `model_path`. `build` makes the model and writes each weight through the
/// writer it is given. With `external_data`, the weights are streamed to `<model_path>.data` while
/// `build` runs; that file and then the model are each written to a temporary file and renamed, so a
/// failure leaves neither half-written (a model that cannot be written removes its fresh data file).
/// Inline models over protobuf's 2 GiB limit are refused with PolygraphyException: before `build` runs
/// when `planned_weight_bytes` (the weights `build` will write) is already over it, else once built.
/// Returns the writer's figures.
GeneratedModelInfo write_generated_model(const std::string& model_path, bool external_data,
                                         const std::function<onnx::ModelProto(WeightWriter&)>& build,
                                         uint64_t planned_weight_bytes = 0, WeightWriter::Layout layout = {});

}  // namespace polygraphy::testing
