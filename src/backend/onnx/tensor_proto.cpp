// Conversions between onnx::TensorProto and Tensor.
#include "polygraphy/backend/onnx/tensor_proto.h"

#include "backend/onnx/external_data.h"

#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

static_assert(std::endian::native == std::endian::little,
              "raw_data is little-endian; big-endian hosts are not supported");

std::string tensor_label(const onnx::TensorProto& proto) {
    return "Tensor '" + proto.name() + "'";
}

bool is_packed_4bit(DataType dtype) {
    return dtype == DataType::kInt4 || dtype == DataType::kUInt4;
}

// Bytes taken by `count` elements in raw_data (int4/uint4 pack two elements per byte).
std::size_t raw_byte_count(DataType dtype, std::size_t count) {
    if (is_packed_4bit(dtype)) return count / 2 + count % 2;
    return count * dtype_size(dtype);
}

// Element count of the dims; FormatError for negative dims or absurd sizes.
std::size_t checked_numel(const onnx::TensorProto& proto) {
    // Cap well below SIZE_MAX so that byte counts (up to 16 bytes per element) cannot overflow.
    constexpr uint64_t kMaxElements = uint64_t{1} << 58;
    uint64_t numel = 1;
    for (int64_t dim : proto.dims()) {
        if (dim < 0) {
            throw FormatError(tensor_label(proto) + " has a negative dimension (" + std::to_string(dim) + ")");
        }
        if (dim != 0 && numel > kMaxElements / static_cast<uint64_t>(dim)) {
            throw FormatError(tensor_label(proto) + " has dimensions whose product is too large");
        }
        numel *= static_cast<uint64_t>(dim);
    }
    return static_cast<std::size_t>(numel);
}

Shape shape_of(const onnx::TensorProto& proto) {
    return Shape(proto.dims().begin(), proto.dims().end());
}

[[noreturn]] void throw_count_mismatch(const onnx::TensorProto& proto, DataType dtype, const char* field,
                                       std::size_t have, std::size_t need) {
    throw FormatError(tensor_label(proto) + " has " + std::to_string(have) + " values in " + field +
                      ", but its shape " + shape_to_string(shape_of(proto)) + " and dtype " +
                      std::string(dtype_name(dtype)) + " need " + std::to_string(need));
}

// Unpacks two 4-bit values per byte (low nibble first) into one byte per element.
void unpack_4bit(const uint8_t* packed, std::size_t count, bool is_signed, uint8_t* out) {
    for (std::size_t i = 0; i < count; ++i) {
        uint8_t nibble = (i % 2 == 0) ? (packed[i / 2] & 0x0F) : (packed[i / 2] >> 4);
        if (is_signed && (nibble & 0x08)) nibble |= 0xF0;  // sign-extend
        out[i] = nibble;
    }
}

// Copies `values` (an int32_data-like field) into `out`, truncating each value to T's width.
template <typename T, typename Field>
void narrow_into(const Field& values, void* out) {
    T* dst = static_cast<T*>(out);
    for (int i = 0; i < values.size(); ++i) {
        const auto bits = static_cast<std::make_unsigned_t<T>>(static_cast<uint32_t>(values.Get(i)));
        dst[i] = static_cast<T>(bits);
    }
}

Tensor decode_raw(const onnx::TensorProto& proto, DataType dtype, std::size_t numel, std::string_view raw) {
    if (dtype == DataType::kString) {
        throw FormatError(tensor_label(proto) + " is a string tensor with raw_data; strings must be in string_data");
    }
    const std::size_t need = raw_byte_count(dtype, numel);
    if (raw.size() != need) {
        throw FormatError(tensor_label(proto) + " has " + std::to_string(raw.size()) +
                          " bytes of raw_data, but its shape " + shape_to_string(shape_of(proto)) + " and dtype " +
                          std::string(dtype_name(dtype)) + " need " + std::to_string(need));
    }
    Tensor tensor(dtype, shape_of(proto));
    if (is_packed_4bit(dtype)) {
        unpack_4bit(reinterpret_cast<const uint8_t*>(raw.data()), numel, dtype == DataType::kInt4,
                    static_cast<uint8_t*>(tensor.data()));
    } else if (need > 0) {
        std::memcpy(tensor.data(), raw.data(), need);
    }
    if (dtype == DataType::kBool) {
        // numpy bools are 0/1; normalise other non-zero bytes.
        uint8_t* data = tensor.data_as<uint8_t>();
        for (std::size_t i = 0; i < numel; ++i) data[i] = data[i] != 0;
    }
    return tensor;
}

// A checked external reference: the mapped bytes themselves (read-only) when the elements can be
// used as stored, else decoded into a new tensor.
Tensor decode_external(const onnx::TensorProto& proto, DataType dtype) {
    const std::size_t numel = checked_numel(proto);
    ExternalBytes external = read_external_bytes(proto);
    const auto address = reinterpret_cast<std::uintptr_t>(external.bytes.data());
    const bool usable_as_stored = !is_packed_4bit(dtype) && dtype != DataType::kBool && dtype != DataType::kString &&
                                  address % dtype_size(dtype) == 0 &&
                                  external.bytes.size() == raw_byte_count(dtype, numel);
    if (!usable_as_stored || numel == 0) return decode_raw(proto, dtype, numel, external.bytes);
    return Tensor::wrap(dtype, shape_of(proto), std::const_pointer_cast<void>(std::move(external.owner)),
                        const_cast<char*>(external.bytes.data()));
}

Tensor decode_typed(const onnx::TensorProto& proto, DataType dtype, std::size_t numel) {
    const Shape shape = shape_of(proto);
    auto check = [&](const char* field, std::size_t have, std::size_t need) {
        if (have != need) throw_count_mismatch(proto, dtype, field, have, need);
    };
    if (dtype == DataType::kString) {
        check("string_data", static_cast<std::size_t>(proto.string_data_size()), numel);
        Tensor tensor(dtype, shape);
        auto& strings = tensor.strings();
        strings.assign(proto.string_data().begin(), proto.string_data().end());
        return tensor;
    }

    // Fields whose elements are stored as they are: copy `count` of them.
    auto copy_field = [&](const char* field_name, const auto& field, std::size_t count) {
        check(field_name, static_cast<std::size_t>(field.size()), count);
        Tensor tensor(dtype, shape);
        if (count > 0) std::memcpy(tensor.data(), field.data(), count * sizeof(*field.data()));
        return tensor;
    };
    const auto int32_count = static_cast<std::size_t>(proto.int32_data_size());
    switch (dtype) {
        case DataType::kFloat32:
            return copy_field("float_data", proto.float_data(), numel);
        case DataType::kComplex64:
            return copy_field("float_data", proto.float_data(), 2 * numel);
        case DataType::kFloat64:
            return copy_field("double_data", proto.double_data(), numel);
        case DataType::kComplex128:
            return copy_field("double_data", proto.double_data(), 2 * numel);
        case DataType::kInt64:
            return copy_field("int64_data", proto.int64_data(), numel);
        case DataType::kUInt64:
            return copy_field("uint64_data", proto.uint64_data(), numel);
        case DataType::kInt32:
            return copy_field("int32_data", proto.int32_data(), numel);
        case DataType::kUInt32: {
            check("uint64_data", static_cast<std::size_t>(proto.uint64_data_size()), numel);
            Tensor tensor(dtype, shape);
            auto* out = tensor.data_as<uint32_t>();
            for (std::size_t i = 0; i < numel; ++i)
                out[i] = static_cast<uint32_t>(proto.uint64_data(static_cast<int>(i)));
            return tensor;
        }
        case DataType::kInt16:
        case DataType::kUInt16:
        case DataType::kFloat16:
        case DataType::kBFloat16:
        case DataType::kInt8:
        case DataType::kUInt8:
        case DataType::kFloat8E4M3FN:
        case DataType::kFloat8E4M3FNUZ:
        case DataType::kFloat8E5M2:
        case DataType::kFloat8E5M2FNUZ: {
            // Narrow types (and the bit patterns of halves and float8) are widened into int32_data.
            check("int32_data", int32_count, numel);
            Tensor tensor(dtype, shape);
            if (dtype_size(dtype) == 2) {
                narrow_into<uint16_t>(proto.int32_data(), tensor.data());
            } else {
                narrow_into<uint8_t>(proto.int32_data(), tensor.data());
            }
            return tensor;
        }
        case DataType::kBool: {
            check("int32_data", int32_count, numel);
            Tensor tensor(dtype, shape);
            auto* out = tensor.data_as<uint8_t>();
            for (std::size_t i = 0; i < numel; ++i) out[i] = proto.int32_data(static_cast<int>(i)) != 0;
            return tensor;
        }
        case DataType::kInt4:
        case DataType::kUInt4: {
            // Each int32_data entry holds one byte with two 4-bit values, low nibble first.
            check("int32_data", int32_count, raw_byte_count(dtype, numel));
            std::vector<uint8_t> packed(int32_count);
            for (std::size_t i = 0; i < int32_count; ++i) {
                packed[i] = static_cast<uint8_t>(proto.int32_data(static_cast<int>(i)));
            }
            Tensor tensor(dtype, shape);
            unpack_4bit(packed.data(), numel, dtype == DataType::kInt4, static_cast<uint8_t*>(tensor.data()));
            return tensor;
        }
        default:
            break;
    }
    throw UnsupportedError(tensor_label(proto) + " has data type " + std::string(dtype_name(dtype)) +
                           ", which cannot be decoded");
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto) {
    const DataType dtype = dtype_from_onnx(proto.data_type());
    if (dtype == DataType::kUndefined) {
        throw FormatError(tensor_label(proto) + " has an undefined or unknown data type (" +
                          std::to_string(proto.data_type()) + ")");
    }
    if (is_checked_external(proto)) return decode_external(proto, dtype);
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
        std::string location;
        for (const auto& entry : proto.external_data()) {
            if (entry.key() == "location") location = entry.value();
        }
        throw FormatError(tensor_label(proto) + " stores its data in an external file ('" + location +
                          "') that was not loaded" +
                          "\nNote: Load the model with its external data (without --ignore-external-data)");
    }
    if (proto.has_segment()) {
        throw UnsupportedError(tensor_label(proto) + " is a segment of a larger tensor, which is not supported");
    }
    const std::size_t numel = checked_numel(proto);
    if (numel > 0 && proto.raw_data().empty() && proto.doc_string().rfind("TRT_WEIGHTLESS", 0) == 0) {
        throw UnsupportedError(tensor_label(proto) + " has no values: the model was saved without weights " +
                               "(TRT_WEIGHTLESS), which only TensorRT can refit");
    }
    if (proto.has_raw_data()) return decode_raw(proto, dtype, numel, proto.raw_data());
    return decode_typed(proto, dtype, numel);
}

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
    if (!tensor.defined()) throw PolygraphyException("Cannot convert tensor '" + name + "': it is undefined");
    onnx::TensorProto proto;
    proto.set_name(name);
    proto.set_data_type(dtype_to_onnx(tensor.dtype()));
    for (int64_t dim : tensor.shape()) proto.add_dims(dim);

    const DataType dtype = tensor.dtype();
    const auto numel = static_cast<std::size_t>(tensor.numel());
    if (dtype == DataType::kString) {
        for (const std::string& value : tensor.strings()) proto.add_string_data(value);
    } else if (is_packed_4bit(dtype)) {
        std::string packed(raw_byte_count(dtype, numel), '\0');
        const auto* values = tensor.data_as<uint8_t>();
        for (std::size_t i = 0; i < numel; ++i) {
            const auto nibble = static_cast<uint8_t>(values[i] & 0x0F);
            packed[i / 2] =
                static_cast<char>(static_cast<uint8_t>(packed[i / 2]) | (i % 2 == 0 ? nibble : nibble << 4));
        }
        proto.set_raw_data(std::move(packed));
    } else {
        proto.set_raw_data(std::string(static_cast<const char*>(tensor.data()), tensor.nbytes()));
    }
    return proto;
}

Tensor tensor_from_pb_file(const std::string& path, std::string* name) {
    const std::string bytes = bytes_from_path(path);
    if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
        throw FormatError("'" + path + "' is not a valid TensorProto file: it is larger than 2 GiB");
    }
    onnx::TensorProto proto;
    google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    if (bytes.empty() || !proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
        throw FormatError("'" + path + "' is not a valid TensorProto file: " +
                          (bytes.empty() ? "it is empty" : "protobuf parsing failed"));
    }
    try {
        Tensor tensor = tensor_from_proto(proto);
        if (name) *name = proto.name();
        return tensor;
    } catch (const PolygraphyException& error) {
        throw FormatError("'" + path + "' is not a valid TensorProto file: " + error.what());
    }
}

MetadataEntry metadata_from_value_info(const onnx::ValueInfoProto& value_info) {
    MetadataEntry entry;
    if (!value_info.has_type() || !value_info.type().has_tensor_type()) return entry;
    const auto& tensor_type = value_info.type().tensor_type();
    if (tensor_type.has_elem_type()) {
        const DataType dtype = dtype_from_onnx(tensor_type.elem_type());
        if (dtype != DataType::kUndefined) entry.dtype = dtype;
    }
    if (tensor_type.has_shape()) {
        DynShape shape;
        for (const auto& dim : tensor_type.shape().dim()) {
            if (dim.value_case() == onnx::TensorShapeProto_Dimension::kDimValue && dim.dim_value() == -1) {
                shape.push_back(Dim::unknown());  // older exporters' way of saying "dynamic"
            } else if (dim.value_case() == onnx::TensorShapeProto_Dimension::kDimValue) {
                if (dim.dim_value() < 0)
                    throw ModelError("Tensor '" + value_info.name() + "' declares a negative dimension (" +
                                     std::to_string(dim.dim_value()) + "); ONNX dimensions are >= 0 or symbolic");
                shape.push_back(Dim::fixed(dim.dim_value()));
            } else if (dim.value_case() == onnx::TensorShapeProto_Dimension::kDimParam && !dim.dim_param().empty()) {
                shape.push_back(Dim::named(dim.dim_param()));
            } else {
                shape.push_back(Dim::unknown());
            }
        }
        entry.shape = std::move(shape);
    }
    return entry;
}

}  // namespace polygraphy
