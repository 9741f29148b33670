// Declared types of the tensors of a graph (see src/backend/onnx/graph_internal.h).
#include "backend/onnx/graph_internal.h"

#include "polygraphy/backend/onnx/tensor_proto.h"

namespace polygraphy {

void set_value_info_type(onnx::ValueInfoProto& info, std::optional<DataType> dtype,
                         const std::optional<DynShape>& shape) {
    auto* tensor_type = info.mutable_type()->mutable_tensor_type();
    if (dtype) tensor_type->set_elem_type(dtype_to_onnx(*dtype));
    if (shape) {
        auto* proto_shape = tensor_type->mutable_shape();
        proto_shape->clear_dim();
        for (const Dim& dim : *shape) {
            auto* proto_dim = proto_shape->add_dim();
            if (!dim.is_dynamic())
                proto_dim->set_dim_value(dim.value);
            else if (!dim.param.empty())
                proto_dim->set_dim_param(dim.param);
        }
    } else {
        tensor_type->clear_shape();
    }
}

std::unordered_map<std::string, MetadataEntry> known_types(const onnx::GraphProto& graph) {
    std::unordered_map<std::string, MetadataEntry> types;
    auto add_info = [&](const onnx::ValueInfoProto& info) {
        if (!info.has_type() || !info.type().has_tensor_type()) return;
        MetadataEntry entry = metadata_from_value_info(info);
        auto& slot = types[info.name()];
        if (!slot.dtype) slot.dtype = entry.dtype;
        if (!slot.shape) slot.shape = entry.shape;
    };
    for (const auto& initializer : graph.initializer()) {
        MetadataEntry entry;
        DataType dtype = dtype_from_onnx(initializer.data_type());
        if (dtype != DataType::kUndefined) entry.dtype = dtype;
        DynShape shape;
        for (int64_t dim : initializer.dims()) shape.push_back(Dim::fixed(dim));
        entry.shape = shape;
        types[initializer.name()] = entry;
    }
    for (const auto& info : graph.input()) add_info(info);
    for (const auto& info : graph.output()) add_info(info);
    for (const auto& info : graph.value_info()) add_info(info);
    return types;
}

std::optional<Shape> static_shape(const MetadataEntry& entry) {
    if (!entry.shape || is_shape_dynamic(*entry.shape)) return std::nullopt;
    Shape shape;
    for (const Dim& dim : *entry.shape) shape.push_back(dim.value);
    return shape;
}

}  // namespace polygraphy
