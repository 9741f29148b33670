// A scan of an ONNX file's wire format for tensors stored outside it, without parsing the model:
// length-delimited fields that cannot hold tensors (raw weights above all) are skipped unread.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <limits>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

enum class Message { kModel, kGraph, kNode, kAttribute, kTensor, kSparseTensor, kFunction };

// The message type of field `number` of `message` when it can (transitively) hold a TensorProto.
std::optional<Message> tensor_bearing_field(Message message, int number) {
    switch (message) {
        case Message::kModel:  // graph, functions
            if (number == 7) return Message::kGraph;
            if (number == 25) return Message::kFunction;
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

constexpr int kMaxDepth = 64;
constexpr int kExternalDataField = 13;
constexpr int kDataLocationField = 14;
constexpr uint64_t kDataLocationExternal = 1;

// True when the message (up to the stream's current limit) refers to external data, or when it
// cannot be read: either way the caller must take the full, checked path.
bool refers_to_external_data(CodedInputStream& input, Message message, int depth) {
    if (depth > kMaxDepth) return true;
    while (true) {
        const uint32_t tag = input.ReadTag();
        if (tag == 0) return !input.ConsumedEntireMessage();  // the end, or a malformed tag
        const int number = WireFormatLite::GetTagFieldNumber(tag);
        const auto wire_type = WireFormatLite::GetTagWireType(tag);
        if (message == Message::kTensor) {
            if (number == kExternalDataField) return true;
            if (number == kDataLocationField && wire_type == WireFormatLite::WIRETYPE_VARINT) {
                uint64_t location = 0;
                if (!input.ReadVarint64(&location)) return true;
                if (location == kDataLocationExternal) return true;
                continue;
            }
        }
        const auto nested = tensor_bearing_field(message, number);
        if (nested && wire_type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
            uint32_t length = 0;
            if (!input.ReadVarint32(&length)) return true;
            if (length > static_cast<uint32_t>(input.BytesUntilLimit())) return true;  // runs past its parent
            const auto limit = input.PushLimit(static_cast<int>(length));
            if (refers_to_external_data(input, *nested, depth + 1)) return true;
            if (input.BytesUntilLimit() != 0) return true;
            input.PopLimit(limit);
            continue;
        }
        if (!WireFormatLite::SkipField(&input, tag)) return true;
    }
}

}  // namespace

bool onnx_file_may_use_external_data(const std::string& path) {
    const MappedFile file(path);
    if (file.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) return true;
    CodedInputStream input(reinterpret_cast<const uint8_t*>(file.data()), static_cast<int>(file.size()));
    input.PushLimit(static_cast<int>(file.size()));  // so that every nested length can be checked
    return refers_to_external_data(input, Message::kModel, 0);
}

}  // namespace polygraphy
