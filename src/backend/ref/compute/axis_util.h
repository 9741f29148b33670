// Slicing one index out of an axis, and concatenating/stacking along an axis, for any dtype
// (strings included). Used by the control-flow (Scan, Loop) and sequence families.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"

namespace polygraphy::ref {

/// `tensor` with `index` taken along `axis` (that axis removed). Caller validates axis and index.
inline Tensor take_along_axis(const Tensor& tensor, int64_t axis, int64_t index) {
    const Shape& shape = tensor.shape();
    const auto a = static_cast<std::size_t>(axis);
    Shape out_shape(shape.begin(), shape.end());
    out_shape.erase(out_shape.begin() + axis);
    Tensor out(tensor.dtype(), out_shape);
    const int64_t outer = product(shape, 0, a);
    const int64_t inner = product(shape, a + 1, shape.size());
    const int64_t count = shape[a];
    if (tensor.dtype() == DataType::kString) {
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i)
                out.strings()[o * inner + i] = tensor.strings()[(o * count + index) * inner + i];
        return out;
    }
    const std::size_t element = dtype_size(tensor.dtype());
    const auto* source = static_cast<const unsigned char*>(tensor.data());
    auto* target = static_cast<unsigned char*>(out.data());
    const std::size_t chunk = static_cast<std::size_t>(inner) * element;
    for (int64_t o = 0; o < outer; ++o)
        if (chunk) std::memcpy(target + o * chunk, source + ((o * count + index) * inner) * element, chunk);
    return out;
}

/// Concatenates `parts` along `axis` (or stacks them on a new axis `axis` when `new_axis`). Fails
/// naming `node` when dtypes, ranks or the other dims differ. `parts` must not be empty.
inline Tensor concat_along_axis(const NodeInfo& node, const std::vector<Tensor>& parts, int64_t axis, bool new_axis) {
    const Tensor& first = parts.front();
    const DataType dtype = first.dtype();
    std::vector<Shape> shapes;
    for (const Tensor& part : parts) {
        if (part.dtype() != dtype)
            node.fail(fmt::format("cannot concatenate tensors of data types {} and {}", dtype_name(dtype),
                                  dtype_name(part.dtype())));
        if (part.shape().size() != first.shape().size() || (new_axis && part.shape() != first.shape()))
            node.fail(fmt::format("cannot {} tensors of shapes {} and {}", new_axis ? "stack" : "concatenate",
                                  shape_to_string(first.shape()), shape_to_string(part.shape())));
        Shape shape = part.shape();
        if (new_axis) shape.insert(shape.begin() + axis, 1);
        shapes.push_back(std::move(shape));
    }
    const auto a = static_cast<std::size_t>(axis);
    Shape out_shape = shapes.front();
    out_shape[a] = 0;
    for (const Shape& shape : shapes) {
        for (std::size_t d = 0; d < shape.size(); ++d)
            if (d != a && shape[d] != shapes.front()[d])
                node.fail(fmt::format("cannot concatenate tensors of shapes {} and {} along axis {}",
                                      shape_to_string(first.shape()), shape_to_string(shape), axis));
        out_shape[a] += shape[a];
    }
    Tensor out(dtype, out_shape);
    const int64_t outer = product(out_shape, 0, a);
    const int64_t out_inner = product(out_shape, a, out_shape.size());
    int64_t offset = 0;  // elements, within one outer row of the output
    for (std::size_t p = 0; p < parts.size(); ++p) {
        const int64_t inner = product(shapes[p], a, shapes[p].size());
        if (dtype == DataType::kString) {
            for (int64_t o = 0; o < outer; ++o)
                for (int64_t i = 0; i < inner; ++i)
                    out.strings()[o * out_inner + offset + i] = parts[p].strings()[o * inner + i];
        } else {
            const std::size_t element = dtype_size(dtype);
            const auto* source = static_cast<const unsigned char*>(parts[p].data());
            auto* target = static_cast<unsigned char*>(out.data());
            const std::size_t chunk = static_cast<std::size_t>(inner) * element;
            for (int64_t o = 0; o < outer; ++o)
                if (chunk) std::memcpy(target + (o * out_inner + offset) * element, source + o * chunk, chunk);
        }
        offset += inner;
    }
    return out;
}

}  // namespace polygraphy::ref
