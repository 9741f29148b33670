#include "backend/ref/graph_constants.h"

#include <unordered_set>

#include "backend/onnx/domain.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::ref {

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, std::string_view name) {
    for (const auto& attr : node.attribute())
        if (attr.name() == name) return &attr;
    return nullptr;
}

void set_string_attr(onnx::NodeProto& node, std::string_view name, const std::string& value) {
    auto* attr = node.add_attribute();
    attr->set_name(std::string(name));
    attr->set_type(onnx::AttributeProto::STRING);
    attr->set_s(value);
}

void set_int_attr(onnx::NodeProto& node, std::string_view name, int64_t value) {
    auto* attr = node.add_attribute();
    attr->set_name(std::string(name));
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
}

void set_float_attr(onnx::NodeProto& node, std::string_view name, float value) {
    auto* attr = node.add_attribute();
    attr->set_name(std::string(name));
    attr->set_type(onnx::AttributeProto::FLOAT);
    attr->set_f(value);
}

void set_floats_attr(onnx::NodeProto& node, std::string_view name, const std::vector<float>& values) {
    auto* attr = node.add_attribute();
    attr->set_name(std::string(name));
    attr->set_type(onnx::AttributeProto::FLOATS);
    for (float value : values) attr->add_floats(value);
}

void set_operator(onnx::NodeProto& node, std::string_view domain, std::string_view op_type) {
    node.set_domain(std::string(domain));
    node.set_op_type(std::string(op_type));
}

GraphConstants::GraphConstants(const onnx::GraphProto& graph, const std::vector<onnx::NodeProto>& nodes) {
    std::unordered_set<std::string> inputs;
    for (const auto& input : graph.input()) inputs.insert(input.name());
    for (const auto& initializer : graph.initializer())
        if (!inputs.contains(initializer.name())) protos_[initializer.name()] = &initializer;
    for (const auto& node : nodes) {
        if (!is_default_domain(node.domain()) || node.output_size() != 1) continue;
        if (node.op_type() == "Constant") {
            if (const auto* value = find_attr(node, "value"); value && value->has_t())
                protos_[node.output(0)] = &value->t();
            else if (const auto* number = find_attr(node, "value_float"))
                floats_[node.output(0)] = number->f();
        } else if (node.op_type() == "Identity" && node.input_size() == 1) {
            // Exporters share a weight between layers through Identity nodes (torch does).
            if (auto found = protos_.find(node.input(0)); found != protos_.end())
                protos_[node.output(0)] = found->second;
            else if (auto number = floats_.find(node.input(0)); number != floats_.end())
                floats_[node.output(0)] = number->second;
        }
    }
}

std::optional<std::pair<int32_t, std::vector<int64_t>>> GraphConstants::type_and_dims(const std::string& name) const {
    if (floats_.contains(name)) return std::pair<int32_t, std::vector<int64_t>>{onnx::TensorProto::FLOAT, {}};
    auto found = protos_.find(name);
    if (found == protos_.end()) return std::nullopt;
    return std::pair<int32_t, std::vector<int64_t>>{found->second->data_type(),
                                                    {found->second->dims().begin(), found->second->dims().end()}};
}

std::optional<float> GraphConstants::scalar(const std::string& name) const {
    if (auto found = floats_.find(name); found != floats_.end()) return found->second;
    auto found = protos_.find(name);
    if (found == protos_.end()) return std::nullopt;
    try {
        const Tensor tensor = tensor_from_proto(*found->second);
        if (tensor.dtype() != DataType::kFloat32 || tensor.numel() != 1) return std::nullopt;
        return tensor.data_as<float>()[0];
    } catch (const PolygraphyException&) {
        return std::nullopt;  // session preparation reports a broken initializer itself
    }
}

}  // namespace polygraphy::ref
