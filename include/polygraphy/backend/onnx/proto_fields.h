// Fields of ONNX's newer IR versions that libonnx 1.12's generated classes do not know: protobuf
// keeps them as unknown fields, read and written here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

namespace polygraphy {

/// NodeProto.overload (IR 10).
inline constexpr int kNodeOverloadField = 8;
/// NodeProto.metadata_props (IR 10): StringStringEntryProto entries.
inline constexpr int kNodeMetadataPropsField = 9;

/// The values of the length-delimited unknown fields numbered `number`, in order.
std::vector<std::string> unknown_strings(const google::protobuf::UnknownFieldSet& fields, int number);

/// A node's metadata_props (PyTorch writes `pkg.torch.onnx.name_scopes` there), as key/value pairs;
/// unreadable entries are skipped.
std::vector<std::pair<std::string, std::string>> node_metadata_props(const onnx::NodeProto& node);

/// The value of one metadata_props entry of a node (the first entry with `key`), or nullopt.
std::optional<std::string> node_metadata_prop(const onnx::NodeProto& node, std::string_view key);

/// Sets a node's metadata_props entry `key` to `value` (replacing the entries with that key).
void set_node_metadata_prop(onnx::NodeProto& node, std::string_view key, std::string_view value);

/// The metadata_props key of provenance tags: the name, in the graph a pass of polygraphy read, of
/// the node a node it wrote comes from. `debug diff` pairs through it after the nodes are renamed.
inline constexpr std::string_view kNodeOriginKey = "polygraphy.origin";

/// Tags each named node of `graph` that has no kNodeOriginKey entry yet with its own name (a tag
/// already there is the node's first origin and stays, through any number of passes).
void tag_node_origins(onnx::GraphProto& graph);

}  // namespace polygraphy
