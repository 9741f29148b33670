// NodeInfo attribute helpers and KernelContext (include/polygraphy/backend/ref/kernel.h).
#include "polygraphy/backend/ref/kernel.h"

#include <cstring>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/tensor_proto.h"

namespace polygraphy::ref {
namespace {

using AttrType = onnx::AttributeProto::AttributeType;

// Old exporters leave AttributeProto.type unset; infer it from the populated field.
AttrType effective_type(const onnx::AttributeProto& attr) {
    if (attr.type() != onnx::AttributeProto::UNDEFINED) return attr.type();
    if (attr.has_f()) return onnx::AttributeProto::FLOAT;
    if (attr.has_i()) return onnx::AttributeProto::INT;
    if (attr.has_s()) return onnx::AttributeProto::STRING;
    if (attr.has_t()) return onnx::AttributeProto::TENSOR;
    if (attr.has_g()) return onnx::AttributeProto::GRAPH;
    if (attr.floats_size() > 0) return onnx::AttributeProto::FLOATS;
    if (attr.ints_size() > 0) return onnx::AttributeProto::INTS;
    if (attr.strings_size() > 0) return onnx::AttributeProto::STRINGS;
    if (attr.tensors_size() > 0) return onnx::AttributeProto::TENSORS;
    return onnx::AttributeProto::UNDEFINED;
}

const char* type_name(AttrType type) {
    switch (type) {
        case onnx::AttributeProto::FLOAT:
            return "float";
        case onnx::AttributeProto::INT:
            return "int";
        case onnx::AttributeProto::STRING:
            return "string";
        case onnx::AttributeProto::TENSOR:
            return "tensor";
        case onnx::AttributeProto::GRAPH:
            return "graph";
        case onnx::AttributeProto::SPARSE_TENSOR:
            return "sparse tensor";
        case onnx::AttributeProto::TYPE_PROTO:
            return "type";
        case onnx::AttributeProto::FLOATS:
            return "floats";
        case onnx::AttributeProto::INTS:
            return "ints";
        case onnx::AttributeProto::STRINGS:
            return "strings";
        case onnx::AttributeProto::TENSORS:
            return "tensors";
        case onnx::AttributeProto::GRAPHS:
            return "graphs";
        case onnx::AttributeProto::SPARSE_TENSORS:
            return "sparse tensors";
        case onnx::AttributeProto::TYPE_PROTOS:
            return "types";
        default:
            return "undefined";
    }
}

}  // namespace

const onnx::AttributeProto* NodeInfo::attr(std::string_view name) const {
    for (const auto& attribute : node_.attribute())
        if (attribute.name() == name) return &attribute;
    return nullptr;
}

bool NodeInfo::has_attr(std::string_view name) const {
    return attr(name) != nullptr;
}

namespace {
// Returns the attribute when present and of `expected` type; fails naming the attribute otherwise.
const onnx::AttributeProto* typed_attr(const NodeInfo& node, std::string_view name, AttrType expected) {
    const onnx::AttributeProto* attribute = node.attr(name);
    if (!attribute) return nullptr;
    const AttrType actual = effective_type(*attribute);
    if (actual != expected)
        node.fail(fmt::format("attribute '{}' must be of type {}, but it is of type {}", name, type_name(expected),
                              type_name(actual)));
    return attribute;
}
}  // namespace

int64_t NodeInfo::attr_int(std::string_view name, int64_t fallback) const {
    const auto* attribute = typed_attr(*this, name, onnx::AttributeProto::INT);
    return attribute ? attribute->i() : fallback;
}

float NodeInfo::attr_float(std::string_view name, float fallback) const {
    const auto* attribute = typed_attr(*this, name, onnx::AttributeProto::FLOAT);
    return attribute ? attribute->f() : fallback;
}

std::string NodeInfo::attr_string(std::string_view name, const std::string& fallback) const {
    const auto* attribute = typed_attr(*this, name, onnx::AttributeProto::STRING);
    return attribute ? attribute->s() : fallback;
}

std::vector<int64_t> NodeInfo::attr_ints(std::string_view name, std::vector<int64_t> fallback) const {
    const auto* attribute = typed_attr(*this, name, onnx::AttributeProto::INTS);
    if (!attribute) return fallback;
    return {attribute->ints().begin(), attribute->ints().end()};
}

std::vector<float> NodeInfo::attr_floats(std::string_view name, std::vector<float> fallback) const {
    const auto* attribute = typed_attr(*this, name, onnx::AttributeProto::FLOATS);
    if (!attribute) return fallback;
    return {attribute->floats().begin(), attribute->floats().end()};
}

std::optional<Tensor> NodeInfo::attr_tensor(std::string_view name) const {
    const auto* attribute = typed_attr(*this, name, onnx::AttributeProto::TENSOR);
    if (!attribute) return std::nullopt;
    try {
        return tensor_from_proto(attribute->t());
    } catch (const PolygraphyException& error) {
        fail(fmt::format("attribute '{}' holds an invalid tensor: {}", name, error.what()));
    }
}

std::unique_ptr<Subgraph> NodeInfo::subgraph(std::string_view name) const {
    const auto* attribute = typed_attr(*this, name, onnx::AttributeProto::GRAPH);
    if (!attribute) fail(fmt::format("graph attribute '{}' is missing", name));
    if (!subgraph_builder_) fail(fmt::format("graph attribute '{}' needs a session to run it", name));
    return subgraph_builder_(attribute->g());
}

void NodeInfo::fail(const std::string& message) const {
    throw ModelError(fmt::format("Node '{}' ({}): {}", display_name_, node_.op_type(), message));
}

const Tensor& KernelContext::required_input(std::size_t index) const {
    const Tensor* tensor = input(index);
    if (!tensor || !tensor->defined()) node_.fail(fmt::format("required input {} is missing", index));
    return *tensor;
}

Tensor& KernelContext::allocate_output(std::size_t index, DataType dtype, Shape shape) {
    const Tensor* offered = offered_output(index);
    if (offered != nullptr && offered->dtype() == dtype && offered->shape() == shape) {
        Tensor buffer = *offered;
        std::memset(buffer.data(), 0, buffer.nbytes());
        set_output(index, std::move(buffer));
    } else {
        set_output(index, Tensor(dtype, std::move(shape)));
    }
    return outputs_[index];
}

Tensor& KernelContext::allocate_uninitialized_output(std::size_t index, DataType dtype, Shape shape) {
    set_output(index, output_buffer(index, dtype, shape));
    return outputs_[index];
}

Tensor KernelContext::output_buffer(std::size_t index, DataType dtype, const Shape& shape) const {
    const Tensor* offered = offered_output(index);
    if (offered != nullptr && offered->dtype() == dtype && offered->shape() == shape) return *offered;
    return Tensor::uninitialized(dtype, shape);
}

void KernelContext::offer_output(std::size_t index, Tensor buffer) {
    if (index >= outputs_.size()) return;
    if (offered_.size() < outputs_.size()) offered_.resize(outputs_.size());
    offered_[index] = std::move(buffer);
}

void KernelContext::set_output(std::size_t index, Tensor tensor) {
    if (index >= outputs_.size())
        node_.fail(fmt::format("output {} is out of range: the node has {} outputs", index, outputs_.size()));
    outputs_[index] = std::move(tensor);
}

Value KernelContext::input_value(std::size_t index) const {
    if (values_ && index < values_->size()) {
        const Value* value = (*values_)[index];
        return value ? *value : Value();
    }
    const Tensor* tensor = input(index);
    return tensor ? Value(*tensor) : Value();
}

void KernelContext::set_output_value(std::size_t index, Value value) {
    if (index >= outputs_.size())
        node_.fail(fmt::format("output {} is out of range: the node has {} outputs", index, outputs_.size()));
    if (value.is_tensor()) {
        outputs_[index] = value.tensor();
        return;
    }
    if (value_outputs_.size() < outputs_.size()) value_outputs_.resize(outputs_.size());
    value_outputs_[index] = std::move(value);
}

Value KernelContext::take_output_value(std::size_t index) {
    if (index < value_outputs_.size() && value_outputs_[index].defined()) return std::move(value_outputs_[index]);
    return Value(std::move(outputs_.at(index)));
}

const Value* KernelContext::outer_value(const std::string& name) const {
    if (!values_ || !outer_names_) return nullptr;
    const std::size_t declared = static_cast<std::size_t>(node_.proto().input_size());
    for (std::size_t i = 0; i < outer_names_->size(); ++i)
        if ((*outer_names_)[i] == name) return declared + i < values_->size() ? (*values_)[declared + i] : nullptr;
    return nullptr;
}

Value Value::sequence(DataType element_type, std::vector<Tensor> elements) {
    Value value;
    value.kind_ = Kind::kSequence;
    value.element_type_ = element_type;
    value.elements_ = std::make_shared<const std::vector<Tensor>>(std::move(elements));
    return value;
}

Value Value::empty_optional() {
    Value value;
    value.kind_ = Kind::kEmptyOptional;
    return value;
}

const std::vector<Tensor>& Value::elements() const {
    if (kind_ != Kind::kSequence) throw InternalError(fmt::format("Value::elements() called on a {}", kind_name()));
    return *elements_;
}

const char* Value::kind_name() const {
    switch (kind_) {
        case Kind::kTensor:
            return "tensor";
        case Kind::kSequence:
            return "sequence";
        case Kind::kEmptyOptional:
            return "empty optional";
        default:
            return "undefined";
    }
}

}  // namespace polygraphy::ref
