#include "tools/inspect/unbounded_dds.h"

#include "polygraphy/common/python_repr.h"

namespace polygraphy::tools {
namespace {

// A shape as a Python list: fixed dims as numbers, named ones quoted, unknown ones None.
std::string python_shape(const DynShape& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const Dim& dim = shape[i];
        out += i ? ", " : "";
        out += !dim.is_dynamic() ? std::to_string(dim.value) : dim.param.empty() ? "None" : python_repr(dim.param);
    }
    return out + "]";
}

}  // namespace

std::string unbounded_dds_str(const TensorMetadata& tensors) {
    std::string out = "[";
    bool first = true;
    for (const auto& [name, meta] : tensors) {
        out += first ? "" : ", ";
        first = false;
        out += "Variable (" + name + "): (shape=" + (meta.shape ? python_shape(*meta.shape) : "None") +
               ", dtype=" + (meta.dtype ? std::string(dtype_name(*meta.dtype)) : "None") + ")";
    }
    return out + "]";
}

}  // namespace polygraphy::tools
