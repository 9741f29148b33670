#include "polygraphy/common/datatype.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace polygraphy {
namespace {

struct DataTypeInfo {
    DataType dtype;
    std::string_view name;
    std::size_t size;
    int32_t onnx;           // TensorProto.DataType
    std::string_view npy;   // numpy descr, empty when numpy has none
};

// ONNX TensorProto.DataType values: FLOAT=1 UINT8=2 INT8=3 UINT16=4 INT16=5 INT32=6 INT64=7 STRING=8
// BOOL=9 FLOAT16=10 DOUBLE=11 UINT32=12 UINT64=13 COMPLEX64=14 COMPLEX128=15 BFLOAT16=16
// FLOAT8E4M3FN=17 FLOAT8E4M3FNUZ=18 FLOAT8E5M2=19 FLOAT8E5M2FNUZ=20 UINT4=21 INT4=22.
constexpr std::array<DataTypeInfo, 23> kInfos = {{
    {DataType::kUndefined, "undefined", 0, 0, ""},
    {DataType::kFloat32, "float32", 4, 1, "<f4"},
    {DataType::kFloat64, "float64", 8, 11, "<f8"},
    {DataType::kFloat16, "float16", 2, 10, "<f2"},
    {DataType::kBFloat16, "bfloat16", 2, 16, ""},
    {DataType::kInt8, "int8", 1, 3, "|i1"},
    {DataType::kInt16, "int16", 2, 5, "<i2"},
    {DataType::kInt32, "int32", 4, 6, "<i4"},
    {DataType::kInt64, "int64", 8, 7, "<i8"},
    {DataType::kUInt8, "uint8", 1, 2, "|u1"},
    {DataType::kUInt16, "uint16", 2, 4, "<u2"},
    {DataType::kUInt32, "uint32", 4, 12, "<u4"},
    {DataType::kUInt64, "uint64", 8, 13, "<u8"},
    {DataType::kBool, "bool", 1, 9, "|b1"},
    {DataType::kString, "string", 0, 8, ""},
    {DataType::kComplex64, "complex64", 8, 14, "<c8"},
    {DataType::kComplex128, "complex128", 16, 15, "<c16"},
    {DataType::kFloat8E4M3FN, "float8e4m3fn", 1, 17, ""},
    {DataType::kFloat8E4M3FNUZ, "float8e4m3fnuz", 1, 18, ""},
    {DataType::kFloat8E5M2, "float8e5m2", 1, 19, ""},
    {DataType::kFloat8E5M2FNUZ, "float8e5m2fnuz", 1, 20, ""},
    {DataType::kUInt4, "uint4", 1, 21, ""},
    {DataType::kInt4, "int4", 1, 22, ""},
}};

const DataTypeInfo& info(DataType dtype) {
    for (const auto& entry : kInfos)
        if (entry.dtype == dtype) return entry;
    return kInfos[0];
}

std::string lower(std::string_view text) {
    std::string result(text);
    std::transform(result.begin(), result.end(), result.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return result;
}

}  // namespace

std::string_view dtype_name(DataType dtype) { return info(dtype).name; }

std::optional<DataType> dtype_from_name(std::string_view name) {
    const std::string key = lower(name);
    for (const auto& entry : kInfos)
        if (entry.dtype != DataType::kUndefined && entry.name == key) return entry.dtype;
    struct Alias {
        std::string_view alias;
        DataType dtype;
    };
    static constexpr Alias kAliases[] = {
        {"float", DataType::kFloat32},  {"double", DataType::kFloat64}, {"half", DataType::kFloat16},
        {"int", DataType::kInt32},      {"long", DataType::kInt64},     {"str", DataType::kString},
        {"bool_", DataType::kBool},     {"bf16", DataType::kBFloat16},  {"fp16", DataType::kFloat16},
        {"fp32", DataType::kFloat32},
    };
    for (const auto& alias : kAliases)
        if (alias.alias == key) return alias.dtype;
    return std::nullopt;
}

std::size_t dtype_size(DataType dtype) { return info(dtype).size; }

bool dtype_is_floating(DataType dtype) {
    switch (dtype) {
        case DataType::kFloat32:
        case DataType::kFloat64:
        case DataType::kFloat16:
        case DataType::kBFloat16:
        case DataType::kFloat8E4M3FN:
        case DataType::kFloat8E4M3FNUZ:
        case DataType::kFloat8E5M2:
        case DataType::kFloat8E5M2FNUZ:
            return true;
        default:
            return false;
    }
}

bool dtype_is_integer(DataType dtype) {
    switch (dtype) {
        case DataType::kInt8:
        case DataType::kInt16:
        case DataType::kInt32:
        case DataType::kInt64:
        case DataType::kUInt8:
        case DataType::kUInt16:
        case DataType::kUInt32:
        case DataType::kUInt64:
        case DataType::kInt4:
        case DataType::kUInt4:
            return true;
        default:
            return false;
    }
}

bool dtype_is_signed(DataType dtype) {
    switch (dtype) {
        case DataType::kInt8:
        case DataType::kInt16:
        case DataType::kInt32:
        case DataType::kInt64:
        case DataType::kInt4:
            return true;
        default:
            return dtype_is_floating(dtype);
    }
}

DataType dtype_from_onnx(int32_t onnx_type) {
    for (const auto& entry : kInfos)
        if (entry.onnx == onnx_type && entry.dtype != DataType::kUndefined) return entry.dtype;
    return DataType::kUndefined;
}

int32_t dtype_to_onnx(DataType dtype) { return info(dtype).onnx; }

std::optional<std::string> dtype_to_npy_descr(DataType dtype) {
    const auto& entry = info(dtype);
    if (entry.npy.empty()) return std::nullopt;
    return std::string(entry.npy);
}

std::optional<DataType> dtype_from_npy_descr(std::string_view descr) {
    // Single-byte types are written with '|' by numpy but '<', '>' and '=' are accepted too.
    if (descr.size() >= 2 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '=' || descr[0] == '|')) {
        const std::string_view body = descr.substr(1);
        for (const auto& entry : kInfos)
            if (!entry.npy.empty() && entry.npy.substr(1) == body) return entry.dtype;
    }
    return std::nullopt;
}

}  // namespace polygraphy
