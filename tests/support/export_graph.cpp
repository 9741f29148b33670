#include "export_graph.h"

#include <fmt/format.h>

#include "model_builder.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::testing {
namespace {

Tensor int64_tensor(const Shape& shape, const std::vector<int64_t>& values) {
    return Tensor::from_bytes(DataType::kInt64, shape, values.data(), values.size() * sizeof(int64_t));
}

}  // namespace

onnx::NodeProto& ExportGraph::node(const std::string& scope, const std::string& op_type,
                                   const std::vector<std::string>& inputs, int output_count,
                                   const std::string& domain) {
    std::string name = scope;  // appended in steps: GCC 12 warns falsely (-Wrestrict) about a + "/" + b
    name += '/';
    name += op_type;
    const int repeat = used_names_[name]++;
    if (repeat > 0) name += fmt::format("_{}", repeat);

    auto* node = nodes_->Add();
    node->set_name(name);
    node->set_op_type(op_type);
    if (!domain.empty()) node->set_domain(domain);
    for (const auto& input : inputs) node->add_input(input);
    for (int i = 0; i < output_count; ++i) node->add_output(fmt::format("{}_output_{}", name, i));
    return *node;
}

std::string ExportGraph::op(const std::string& scope, const std::string& op_type,
                            const std::vector<std::string>& inputs) {
    return node(scope, op_type, inputs).output(0);
}

std::string ExportGraph::scalar(const std::string& scope, float value) {
    auto& constant = node(scope, "Constant", {});
    set_attr(constant, "value", Tensor::from_bytes(DataType::kFloat32, Shape{}, &value, sizeof(value)));
    return constant.output(0);
}

std::string ExportGraph::scalar(const std::string& scope, int64_t value) {
    auto& constant = node(scope, "Constant", {});
    set_attr(constant, "value", int64_tensor(Shape{}, {value}));
    return constant.output(0);
}

std::string ExportGraph::ints(const std::string& scope, const std::vector<int64_t>& values) {
    auto& constant = node(scope, "Constant", {});
    set_attr(constant, "value", int64_tensor(Shape{static_cast<int64_t>(values.size())}, values));
    return constant.output(0);
}

std::string ExportGraph::dim(const std::string& scope, const std::string& x, int64_t index) {
    const std::string shape = op(scope, "Shape", {x});
    auto& gather = node(scope, "Gather", {shape, scalar(scope, index)});
    set_attr(gather, "axis", int64_t{0});
    return gather.output(0);
}

std::string ExportGraph::unsqueeze(const std::string& scope, const std::string& x, const std::vector<int64_t>& axes) {
    return op(scope, "Unsqueeze", {x, ints(scope, axes)});
}

std::string ExportGraph::reshape(const std::string& scope, const std::string& x, const std::vector<TracedDim>& dims) {
    std::vector<std::string> parts;
    for (const auto& dim : dims) {
        if (const auto* traced = std::get_if<std::string>(&dim))
            parts.push_back(unsqueeze(scope, *traced, {0}));
        else
            parts.push_back(ints(scope, {std::get<int64_t>(dim)}));
    }
    auto& concat = node(scope, "Concat", parts);
    set_attr(concat, "axis", int64_t{0});
    return op(scope, "Reshape", {x, concat.output(0)});
}

std::string ExportGraph::transpose(const std::string& scope, const std::string& x, const std::vector<int64_t>& perm) {
    auto& transpose = node(scope, "Transpose", {x});
    set_attr(transpose, "perm", perm);
    return transpose.output(0);
}

void ExportGraph::rename_last_output(const std::string& output, const std::string& name) {
    if (nodes_->empty() || nodes_->rbegin()->output(0) != output)
        throw InternalError("rename_last_output: " + output + " is not the output of the last node");
    nodes_->rbegin()->set_output(0, name);
}

std::string ExportGraph::bound(const std::string& scope, const TracedDim& value) {
    if (const auto* traced = std::get_if<std::string>(&value)) return *traced;
    return ints(scope, {std::get<int64_t>(value)});
}

std::string ExportGraph::slice(const std::string& scope, const std::string& x, const TracedDim& start,
                               const TracedDim& end, int64_t axis) {
    const std::string starts = bound(scope, start);
    const std::string ends = bound(scope, end);
    return op(scope, "Slice", {x, starts, ends, ints(scope, {axis})});
}

}  // namespace polygraphy::testing
