// onnx_structure_from_path: the model without tensor values, from a filtered copy of its wire format.
#include "polygraphy/backend/onnx/structure.h"
#include "backend/onnx/structure_unlogged.h"

#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/tensor_proto.h"

#include "backend/onnx/protobuf.h"

#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

enum class Message { kModel, kGraph, kNode, kAttribute, kTensor, kSparseTensor, kFunction, kTraining };

// The message type of field `number` of `message` when it can (transitively) hold a TensorProto.
std::optional<Message> tensor_bearing_field(Message message, uint64_t number) {
    switch (message) {
        case Message::kModel:  // graph, training_info, functions
            if (number == 7) return Message::kGraph;
            if (number == 20) return Message::kTraining;
            if (number == 25) return Message::kFunction;
            break;
        case Message::kTraining:  // initialization, algorithm
            if (number == 1 || number == 2) return Message::kGraph;
            break;
        case Message::kGraph:  // node, initializer, sparse_initializer
            if (number == 1) return Message::kNode;
            if (number == 5) return Message::kTensor;
            if (number == 15) return Message::kSparseTensor;
            break;
        case Message::kNode:  // attribute
            if (number == 5) return Message::kAttribute;
            break;
        case Message::kAttribute:  // t, g, tensors, graphs, sparse_tensor, sparse_tensors
            if (number == 5 || number == 10) return Message::kTensor;
            if (number == 6 || number == 11) return Message::kGraph;
            if (number == 22 || number == 23) return Message::kSparseTensor;
            break;
        case Message::kSparseTensor:  // values, indices
            if (number == 1 || number == 2) return Message::kTensor;
            break;
        case Message::kFunction:  // node
            if (number == 7) return Message::kNode;
            break;
        case Message::kTensor:
            break;
    }
    return std::nullopt;
}

// TensorProto fields holding values: float_data, int32_data, string_data, int64_data, raw_data,
// double_data, uint64_data.
bool is_tensor_data_field(uint64_t number) {
    return number == 4 || number == 5 || number == 6 || number == 7 || number == 9 || number == 10 || number == 11;
}

constexpr int kMaxDepth = 64;
constexpr uint64_t kRawDataField = 9;

class Filter {
public:
    /// `file_begin`: when set, raw_data is replaced by a reference to where it lies in the file
    /// (kMappedOffsetKey/kMappedLengthKey external_data entries) and the typed data fields are kept.
    explicit Filter(std::string what, const uint8_t* file_begin = nullptr)
        : what_(std::move(what)), file_begin_(file_begin) {}

    // Appends the message in [begin, end) to `out`, minus the tensor data fields.
    void run(const uint8_t* begin, const uint8_t* end, Message message, int depth, std::string& out) const {
        if (depth > kMaxDepth) fail("messages are nested too deeply");
        const uint8_t* p = begin;
        while (p < end) {
            const uint8_t* field_start = p;
            const uint64_t tag = read_varint(p, end);
            const uint64_t number = tag >> 3;
            const unsigned wire_type = static_cast<unsigned>(tag & 7);
            if (number == 0) fail("a field has number 0");
            const uint8_t* length_start = p;
            const uint8_t* payload = p;
            const uint8_t* field_end = nullptr;
            switch (wire_type) {
                case 0:
                    read_varint(p, end);
                    field_end = p;
                    break;
                case 1:
                    field_end = skip(p, end, 8);
                    break;
                case 5:
                    field_end = skip(p, end, 4);
                    break;
                case 2: {
                    const uint64_t length = read_varint(p, end);
                    payload = p;
                    field_end = skip(p, end, length);
                    break;
                }
                default:
                    fail("a field has the unsupported wire type " + std::to_string(wire_type));
            }
            if (message == Message::kTensor && is_tensor_data_field(number)) {
                if (file_begin_ && number == kRawDataField && wire_type == 2) {
                    append_entry(out, kMappedOffsetKey, std::to_string(payload - file_begin_));
                    append_entry(out, kMappedLengthKey, std::to_string(field_end - payload));
                    p = field_end;
                    continue;
                }
                if (!file_begin_) {
                    p = field_end;
                    continue;  // the values: skipped unread
                }
            }
            const auto nested = tensor_bearing_field(message, number);
            if (nested && wire_type == 2) {
                std::string child;
                run(payload, field_end, *nested, depth + 1, child);
                out.append(reinterpret_cast<const char*>(field_start),
                           static_cast<std::size_t>(length_start - field_start));
                append_varint(out, child.size());
                out += child;
            } else {
                out.append(reinterpret_cast<const char*>(field_start), static_cast<std::size_t>(field_end - field_start));
            }
            p = field_end;
        }
    }

private:
    [[noreturn]] void fail(const std::string& reason) const {
        throw FormatError(what_ + " is not a valid ONNX model: " + reason + " (corrupt or truncated file?)");
    }

    uint64_t read_varint(const uint8_t*& p, const uint8_t* end) const {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p >= end) fail("a field runs past the end of its message");
            const uint8_t byte = *p++;
            value |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return value;
        }
        fail("a varint is longer than 10 bytes");
    }

    const uint8_t* skip(const uint8_t* p, const uint8_t* end, uint64_t length) const {
        if (length > static_cast<uint64_t>(end - p)) fail("a field runs past the end of its message");
        return p + length;
    }

    static void append_varint(std::string& out, uint64_t value) {
        while (value >= 0x80) {
            out += static_cast<char>((value & 0x7f) | 0x80);
            value >>= 7;
        }
        out += static_cast<char>(value);
    }

    // A TensorProto.external_data entry (field 13: StringStringEntryProto {1: key, 2: value}).
    static void append_entry(std::string& out, const std::string& key, const std::string& value) {
        std::string entry;
        entry += static_cast<char>((1 << 3) | 2);
        append_varint(entry, key.size());
        entry += key;
        entry += static_cast<char>((2 << 3) | 2);
        append_varint(entry, value.size());
        entry += value;
        out += static_cast<char>((13 << 3) | 2);
        append_varint(out, entry.size());
        out += entry;
    }

    std::string what_;
    const uint8_t* file_begin_;
};

}  // namespace

namespace {

OnnxModel load_filtered(const std::string& path, bool keep_references, std::size_t* file_size) {
    const std::string what = "'" + path + "'";
    std::error_code error;
    if (!std::filesystem::exists(path, error)) throw PolygraphyException("Model file does not exist: " + what);
    if (std::filesystem::is_directory(path, error))
        throw PolygraphyException("Expected a file, but got a directory: " + what);
    const MappedFile file(path);
    if (file.size() == 0) throw FormatError(what + " is not a valid ONNX model: it is empty");
    if (file_size) *file_size = file.size();

    std::string filtered;
    const auto* begin = reinterpret_cast<const uint8_t*>(file.data());
    Filter(what, keep_references ? begin : nullptr).run(begin, begin + file.size(), Message::kModel, 0, filtered);
    if (filtered.size() > kProtobufLimit)
        throw FormatError(what + " is not a valid ONNX model: its structure alone is larger than 2 GiB");

    route_protobuf_logs();
    auto model = std::make_shared<onnx::ModelProto>();
    if (!model->ParseFromString(filtered))
        throw FormatError(what + " is not a valid ONNX model: protobuf parsing failed (corrupt or truncated file?)");
    if (!model->has_graph()) throw FormatError(what + " is not a valid ONNX model: it has no graph");
    check_nodes(*model);
    return model;
}

}  // namespace

OnnxModel onnx_structure_from_path(const std::string& path) {
    logger().info("Loading model: " + path);
    return load_filtered(path, false, nullptr);
}

OnnxModel onnx_structure_from_path_unlogged(const std::string& path) {
    return load_filtered(path, false, nullptr);
}

OnnxFileModel::OnnxFileModel(std::string path) : path_(std::move(path)) {
    logger().info("Loading model: " + path_);
    model_ = load_filtered(path_, true, &file_size_);
}

Tensor OnnxFileModel::decode_tensor(const onnx::TensorProto& tensor) const {
    std::optional<uint64_t> offset, length;
    auto number = [&](const std::string& text) -> uint64_t {
        try {
            std::size_t used = 0;
            const uint64_t value = std::stoull(text, &used);
            if (used == text.size()) return value;
        } catch (const std::exception&) {
        }
        throw FormatError("Tensor '" + tensor.name() + "' has an invalid file reference: " + text);
    };
    for (const auto& entry : tensor.external_data()) {
        if (entry.key() == kMappedOffsetKey) offset = number(entry.value());
        if (entry.key() == kMappedLengthKey) length = number(entry.value());
    }
    if (!offset || !length) return tensor_from_proto(tensor);
    if (*offset > file_size_ || *length > file_size_ - *offset)
        throw FormatError("Tensor '" + tensor.name() + "': its data would lie outside '" + path_ + "'");

    onnx::TensorProto copy = tensor;
    copy.clear_external_data();
    for (const auto& entry : tensor.external_data())
        if (entry.key() != kMappedOffsetKey && entry.key() != kMappedLengthKey) *copy.add_external_data() = entry;
    std::string bytes(static_cast<std::size_t>(*length), '\0');
    std::ifstream in(path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(*offset));
    if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
        throw PolygraphyException("Could not read the data of tensor '" + tensor.name() + "' from '" + path_ + "'");
    copy.set_raw_data(std::move(bytes));
    return tensor_from_proto(copy);
}

}  // namespace polygraphy
