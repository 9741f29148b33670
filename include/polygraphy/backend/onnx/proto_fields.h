// Fields of ONNX's newer IR versions that libonnx 1.12's generated classes do not know: protobuf
// keeps them as unknown fields, read here.
#pragma once

#include <string>
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

}  // namespace polygraphy
