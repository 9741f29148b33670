// Element types of tensors: every ONNX tensor element type, with numpy-style names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace polygraphy {

/// Every ONNX TensorProto element type. Float8, int4/uint4 and complex types are recognised
/// (they load, print and round-trip) but most computations reject them with UnsupportedError.
enum class DataType : uint8_t {
    kUndefined,
    kFloat32,
    kFloat64,
    kFloat16,
    kBFloat16,
    kInt8,
    kInt16,
    kInt32,
    kInt64,
    kUInt8,
    kUInt16,
    kUInt32,
    kUInt64,
    kBool,
    kString,
    kComplex64,
    kComplex128,
    kFloat8E4M3FN,
    kFloat8E4M3FNUZ,
    kFloat8E5M2,
    kFloat8E5M2FNUZ,
    kUInt4,
    kInt4,
};

/// numpy-style name as Polygraphy prints it: "float32", "int64", "bool", "bfloat16", "float8e4m3fn"...
std::string_view dtype_name(DataType dtype);

/// Inverse of dtype_name(); also accepts a few aliases ("float" -> float32, "double", "half", "int", "long").
std::optional<DataType> dtype_from_name(std::string_view name);

/// Bytes per element; 0 for kString and kUndefined. int4/uint4 report 1 (we store one element per byte).
std::size_t dtype_size(DataType dtype);

bool dtype_is_floating(DataType dtype);  ///< float16/32/64, bfloat16, float8 variants
bool dtype_is_integer(DataType dtype);   ///< signed and unsigned integers, int4/uint4 (not bool)
bool dtype_is_signed(DataType dtype);    ///< signed integers and floating types

/// ONNX TensorProto.DataType value <-> DataType. Unknown values give kUndefined.
DataType dtype_from_onnx(int32_t onnx_type);
int32_t dtype_to_onnx(DataType dtype);

/// numpy array-protocol descriptor ("<f4", "|b1", "<i8", ...) used in .npy headers.
/// Returns nullopt for types numpy has no descriptor for (bfloat16, float8, int4, string).
std::optional<std::string> dtype_to_npy_descr(DataType dtype);
std::optional<DataType> dtype_from_npy_descr(std::string_view descr);

}  // namespace polygraphy
