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

std::optional<std::string> node_metadata_prop(const onnx::NodeProto& node, std::string_view key) {
    for (auto& [entry_key, value] : node_metadata_props(node))
        if (entry_key == key) return std::move(value);
    return std::nullopt;
}

void set_node_metadata_prop(onnx::NodeProto& node, std::string_view key, std::string_view value) {
    google::protobuf::UnknownFieldSet& fields = *node.mutable_unknown_fields();
    // Entries of `key` go; the others, and every other unknown field, stay in their order.
    google::protobuf::UnknownFieldSet kept;
    for (int i = 0; i < fields.field_count(); ++i) {
        const auto& field = fields.field(i);
        if (field.number() == kNodeMetadataPropsField &&
            field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
            onnx::StringStringEntryProto entry;
            if (entry.ParseFromString(field.length_delimited()) && entry.key() == key) continue;
        }
        kept.AddField(field);
    }
    onnx::StringStringEntryProto entry;
    entry.set_key(std::string(key));
    entry.set_value(std::string(value));
    kept.AddLengthDelimited(kNodeMetadataPropsField, entry.SerializeAsString());
    fields.Clear();
    fields.MergeFrom(kept);
}

void tag_node_origins(onnx::GraphProto& graph) {
    for (auto& node : *graph.mutable_node())
        if (!node.name().empty() && !node_metadata_prop(node, kNodeOriginKey))
            set_node_metadata_prop(node, kNodeOriginKey, node.name());
}

}  // namespace polygraphy
