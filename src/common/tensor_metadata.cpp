#include "polygraphy/common/tensor_metadata.h"

#include <vector>

namespace polygraphy {

DynShape to_dyn_shape(const Shape& shape) {
    DynShape result;
    result.reserve(shape.size());
    for (int64_t dim : shape) result.push_back(Dim::fixed(dim));
    return result;
}

bool is_shape_dynamic(const DynShape& shape) {
    for (const Dim& dim : shape)
        if (dim.is_dynamic()) return true;
    return false;
}

std::string dyn_shape_to_string(const DynShape& shape) {
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) text += ", ";
        const Dim& dim = shape[i];
        if (!dim.is_dynamic())
            text += std::to_string(dim.value);
        else if (!dim.param.empty())
            text += "'" + dim.param + "'";
        else
            text += "-1";
    }
    if (shape.size() == 1) text += ",";
    return text + ")";
}

bool shape_matches(const Shape& concrete, const DynShape& declared) {
    if (concrete.size() != declared.size()) return false;
    for (std::size_t i = 0; i < concrete.size(); ++i)
        if (!declared[i].is_dynamic() && declared[i].value != concrete[i]) return false;
    return true;
}

TensorMetadata TensorMetadata::from_feed_dict(const TensorMap& feed) {
    TensorMetadata metadata;
    for (const auto& [name, tensor] : feed) metadata.add(name, tensor.dtype(), to_dyn_shape(tensor.shape()));
    return metadata;
}

std::string TensorMetadata::to_string() const {
    std::string text = "{";
    bool first = true;
    for (const auto& [name, entry] : *this) {
        if (!first) text += ",\n ";
        first = false;
        // Like Polygraphy, unknown fields are left out: `{x [shape=(2, 5)]}`.
        std::vector<std::string> fields;
        if (entry.dtype) fields.push_back("dtype=" + std::string(dtype_name(*entry.dtype)));
        if (entry.shape) fields.push_back("shape=" + dyn_shape_to_string(*entry.shape));
        text += name + " [";
        for (std::size_t i = 0; i < fields.size(); ++i) text += (i ? ", " : "") + fields[i];
        text += "]";
    }
    return text + "}";
}

}  // namespace polygraphy
