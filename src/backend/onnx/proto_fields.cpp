#include "polygraphy/backend/onnx/proto_fields.h"

namespace polygraphy {

std::vector<std::string> unknown_strings(const google::protobuf::UnknownFieldSet& fields, int number) {
    std::vector<std::string> values;
    for (int i = 0; i < fields.field_count(); ++i) {
        const auto& field = fields.field(i);
        if (field.number() == number && field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
            values.push_back(field.length_delimited());
    }
    return values;
}

std::vector<std::pair<std::string, std::string>> node_metadata_props(const onnx::NodeProto& node) {
    std::vector<std::pair<std::string, std::string>> props;
    for (const std::string& bytes : unknown_strings(node.unknown_fields(), kNodeMetadataPropsField)) {
        onnx::StringStringEntryProto entry;
        if (entry.ParseFromString(bytes)) props.emplace_back(entry.key(), entry.value());
    }
    return props;
}

}  // namespace polygraphy
