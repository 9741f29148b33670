// What the graph passes of the built-in runtime (fusion.h, blocked_layout.h) read and write on
// nodes: the values a graph fixes before running, and the operators and attributes of the fused
// nodes they write (fused_ops.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy::ref {

/// The attribute `name` of `node`, or nullptr.
const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, std::string_view name);

/// Appends an attribute to `node`.
void set_string_attr(onnx::NodeProto& node, std::string_view name, const std::string& value);
void set_int_attr(onnx::NodeProto& node, std::string_view name, int64_t value);
void set_float_attr(onnx::NodeProto& node, std::string_view name, float value);
void set_floats_attr(onnx::NodeProto& node, std::string_view name, const std::vector<float>& values);

/// Makes `node` operator `op_type` of `domain`; its inputs, outputs and attributes stay.
void set_operator(onnx::NodeProto& node, std::string_view domain, std::string_view op_type);

/// The values the graph fixes before running: initializers that are not also graph inputs (those can
/// be fed), Constant nodes, and Identity nodes of those (in node order). What cannot be read is left
/// out, so no pass relies on it.
class GraphConstants {
public:
    GraphConstants(const onnx::GraphProto& graph, const std::vector<onnx::NodeProto>& nodes);

    /// The data type and dims of a constant tensor (from its proto, nothing decoded).
    std::optional<std::pair<int32_t, std::vector<int64_t>>> type_and_dims(const std::string& name) const;

    /// The value of a float32 scalar constant.
    std::optional<float> scalar(const std::string& name) const;

private:
    std::unordered_map<std::string, const onnx::TensorProto*> protos_;
    std::unordered_map<std::string, float> floats_;
};

}  // namespace polygraphy::ref
