// Conversions between onnx::TensorProto and Tensor.
#pragma once

#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

/// Decodes raw_data or the typed *_data fields of every dtype (float16/bfloat16 stored in int32_data,
/// int4 packed two per byte, strings). A tensor whose data lives in an external file that
/// OnnxFromPath checked is mapped read-only, not copied: the returned tensor shares the file's pages
/// (it must not be written to; its buffer is aligned to its element size, not to 64 bytes); bool and
/// int4 tensors, and small ones, are copied. Other external tensors are an error (FormatError: not
/// loaded), as are files that changed since loading (too short, moved). FormatError when the data size
/// disagrees with the dims.
Tensor tensor_from_proto(const onnx::TensorProto& proto);

/// Encodes `tensor` as raw_data (strings in string_data).
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

/// Reads a serialized TensorProto (.pb file as in ONNX test data). FormatError when not one.
Tensor tensor_from_pb_file(const std::string& path, std::string* name = nullptr);

/// Declared dtype and shape of a ValueInfoProto (tensor types only; nullopt fields when unknown).
/// -1 reads as a dynamic dimension (older exporters); ModelError for other negative ones.
MetadataEntry metadata_from_value_info(const onnx::ValueInfoProto& value_info);

}  // namespace polygraphy
