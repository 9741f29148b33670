// Private helpers of the kernels: dtype dispatch, axes, integer inputs, shape arithmetic.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/common/float16.h"

namespace polygraphy::ref {

template <typename T>
struct TypeTag {
    using type = T;
};

/// Throws UnsupportedError naming the node.
[[noreturn]] inline void unsupported(const NodeInfo& node, const std::string& message) {
    throw UnsupportedError(fmt::format("Node '{}' ({}): {}", node.name(), node.op_type(), message));
}

[[noreturn]] inline void unsupported_dtype(const NodeInfo& node, DataType dtype, std::string_view role = "input") {
    unsupported(node, fmt::format("{} data type {} is not supported", role, dtype_name(dtype)));
}

inline bool is_half(DataType dtype) {
    return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

/// The float types the kernels compute (float8 types are only cast and quantized).
inline bool is_float_type(DataType dtype) {
    return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 || is_half(dtype);
}

/// Calls fn(TypeTag<T>{}) with the C++ type of a computable dtype: float32/64, every integer width,
/// bool. float16/bfloat16 are not dispatched: callers compute them in float32 (see is_half()).
template <typename Fn>
void dispatch_dtype(const NodeInfo& node, DataType dtype, Fn&& fn) {
    switch (dtype) {
        case DataType::kFloat32:
            fn(TypeTag<float>{});
            return;
        case DataType::kFloat64:
            fn(TypeTag<double>{});
            return;
        case DataType::kInt8:
            fn(TypeTag<int8_t>{});
            return;
        case DataType::kInt16:
            fn(TypeTag<int16_t>{});
            return;
        case DataType::kInt32:
            fn(TypeTag<int32_t>{});
            return;
        case DataType::kInt64:
            fn(TypeTag<int64_t>{});
            return;
        case DataType::kUInt8:
            fn(TypeTag<uint8_t>{});
            return;
        case DataType::kUInt16:
            fn(TypeTag<uint16_t>{});
            return;
        case DataType::kUInt32:
            fn(TypeTag<uint32_t>{});
            return;
        case DataType::kUInt64:
            fn(TypeTag<uint64_t>{});
            return;
        case DataType::kBool:
            fn(TypeTag<bool>{});
            return;
        default:
            unsupported_dtype(node, dtype);
    }
}

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
constexpr bool kIsNumeric = kIsFloat<T> || kIsInt<T>;
template <typename T>
constexpr bool kIsSignedNumeric = kIsFloat<T> || (kIsInt<T> && std::is_signed_v<T>);

/// DataType of a dispatched C++ type.
template <typename T>
constexpr DataType dtype_of() {
    if constexpr (std::is_same_v<T, float>)
        return DataType::kFloat32;
    else if constexpr (std::is_same_v<T, double>)
        return DataType::kFloat64;
    else if constexpr (std::is_same_v<T, int8_t>)
        return DataType::kInt8;
    else if constexpr (std::is_same_v<T, int16_t>)
        return DataType::kInt16;
    else if constexpr (std::is_same_v<T, int32_t>)
        return DataType::kInt32;
    else if constexpr (std::is_same_v<T, int64_t>)
        return DataType::kInt64;
    else if constexpr (std::is_same_v<T, uint8_t>)
        return DataType::kUInt8;
    else if constexpr (std::is_same_v<T, uint16_t>)
        return DataType::kUInt16;
    else if constexpr (std::is_same_v<T, uint32_t>)
        return DataType::kUInt32;
    else if constexpr (std::is_same_v<T, uint64_t>)
        return DataType::kUInt64;
    else if constexpr (std::is_same_v<T, bool>)
        return DataType::kBool;
    else
        static_assert(sizeof(T) == 0, "no DataType for this type");
}

/// Calls fn(TypeTag<T>{}) with the unsigned integer type of `size` bytes (uint8_t ... uint64_t);
/// returns false, calling nothing, for other sizes (complex128).
template <typename Fn>
bool dispatch_size(std::size_t size, Fn&& fn) {
    switch (size) {
        case 1:
            fn(TypeTag<uint8_t>{});
            return true;
        case 2:
            fn(TypeTag<uint16_t>{});
            return true;
        case 4:
            fn(TypeTag<uint32_t>{});
            return true;
        case 8:
            fn(TypeTag<uint64_t>{});
            return true;
        default:
            return false;
    }
}

/// For data movement: calls fn(TypeTag<T>{}) with a type of the dtype's element size (uint8_t,
/// uint16_t, uint32_t, uint64_t) or std::string. Use storage<T>() to reach the elements.
template <typename Fn>
void dispatch_storage(const NodeInfo& node, DataType dtype, Fn&& fn) {
    if (dtype == DataType::kString) {
        fn(TypeTag<std::string>{});
        return;
    }
    if (!dispatch_size(dtype_size(dtype), fn)) unsupported_dtype(node, dtype);
}

template <typename T>
const T* storage(const Tensor& tensor) {
    if constexpr (std::is_same_v<T, std::string>)
        return tensor.strings().data();
    else
        return static_cast<const T*>(tensor.data());
}
template <typename T>
T* storage(Tensor& tensor) {
    if constexpr (std::is_same_v<T, std::string>)
        return tensor.strings().data();
    else
        return static_cast<T*>(tensor.data());
}

/// The positive int attribute `name`, which the node must set; fails naming it otherwise.
inline int64_t required_positive_attr(const NodeInfo& node, const char* name) {
    if (!node.has_attr(name)) node.fail(fmt::format("it lacks the required attribute '{}'", name));
    const int64_t value = node.attr_int(name, 0);
    if (value <= 0) node.fail(fmt::format("attribute {} must be positive, but it is {}", name, value));
    return value;
}

/// Normalizes `axis` in [-rank, rank) to [0, rank); fails naming the attribute otherwise.
inline int64_t normalize_axis(const NodeInfo& node, int64_t axis, int64_t rank, std::string_view what = "axis") {
    if (axis < -rank || axis >= rank)
        node.fail(fmt::format("{} {} is out of range for a tensor of rank {} (expected a value in [{}, {}])", what,
                              axis, rank, -rank, rank - 1));
    return axis < 0 ? axis + rank : axis;
}

/// Normalizes a list of axes and rejects duplicates.
inline std::vector<int64_t> normalize_axes(const NodeInfo& node, const std::vector<int64_t>& axes, int64_t rank,
                                           std::string_view what = "axes") {
    std::vector<int64_t> result;
    std::vector<bool> seen(static_cast<std::size_t>(std::max<int64_t>(rank, 0)), false);
    for (int64_t axis : axes) {
        const int64_t normalized = normalize_axis(node, axis, rank, "axis");
        if (seen[normalized]) node.fail(fmt::format("{} contain {} more than once", what, axis));
        seen[normalized] = true;
        result.push_back(normalized);
    }
    return result;
}

/// Elements of an integer tensor as int64 (shapes, axes, indices given as inputs).
/// a * b and a + b, failing instead of overflowing (sizes computed from untrusted attributes/inputs).
inline int64_t checked_mul(const NodeInfo& node, int64_t a, int64_t b) {
    int64_t result = 0;
    if (__builtin_mul_overflow(a, b, &result)) node.fail(fmt::format("size {} * {} overflows int64", a, b));
    return result;
}
inline int64_t checked_add(const NodeInfo& node, int64_t a, int64_t b) {
    int64_t result = 0;
    if (__builtin_add_overflow(a, b, &result)) node.fail(fmt::format("size {} + {} overflows int64", a, b));
    return result;
}

inline std::vector<int64_t> read_ints(const NodeInfo& node, const Tensor& tensor, std::string_view what) {
    std::vector<int64_t> values(static_cast<std::size_t>(tensor.numel()));
    switch (tensor.dtype()) {
        case DataType::kInt64:
            std::copy_n(tensor.data_as<int64_t>(), tensor.numel(), values.begin());
            break;
        case DataType::kInt32:
            std::copy_n(tensor.data_as<int32_t>(), tensor.numel(), values.begin());
            break;
        case DataType::kInt16:
            std::copy_n(tensor.data_as<int16_t>(), tensor.numel(), values.begin());
            break;
        case DataType::kInt8:
            std::copy_n(tensor.data_as<int8_t>(), tensor.numel(), values.begin());
            break;
        case DataType::kUInt8:
            std::copy_n(tensor.data_as<uint8_t>(), tensor.numel(), values.begin());
            break;
        case DataType::kUInt16:
            std::copy_n(tensor.data_as<uint16_t>(), tensor.numel(), values.begin());
            break;
        case DataType::kUInt32:
            std::copy_n(tensor.data_as<uint32_t>(), tensor.numel(), values.begin());
            break;
        default:
            node.fail(
                fmt::format("{} must be an int32 or int64 tensor, but it is {}", what, dtype_name(tensor.dtype())));
    }
    return values;
}

/// Fails unless `tensor` has exactly one element.
inline void require_scalar(const NodeInfo& node, const Tensor& tensor, std::string_view what) {
    if (tensor.numel() != 1)
        node.fail(fmt::format("{} must be a scalar, but it has shape {}", what, shape_to_string(tensor.shape())));
}

/// Fails unless `tensor` has rank 1 (or is a scalar when `allow_scalar`).
inline void require_1d(const NodeInfo& node, const Tensor& tensor, std::string_view what, bool allow_scalar = false) {
    if (tensor.rank() == 1 || (allow_scalar && tensor.rank() == 0)) return;
    node.fail(fmt::format("{} must be a 1-D tensor, but it has shape {}", what, shape_to_string(tensor.shape())));
}

/// float16/bfloat16 tensors widened to float32 (other dtypes returned as they are).
inline Tensor widen_half(const Tensor& tensor) {
    return is_half(tensor.dtype()) ? tensor.cast(DataType::kFloat32) : tensor;
}

/// "[1, 2, 3]" (for messages).
inline std::string ints_to_string(const std::vector<int64_t>& values) {
    return fmt::format("[{}]", fmt::join(values, ", "));
}

/// Product of dims [begin, end) of `shape` (1 for an empty range).
inline int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
    int64_t result = 1;
    for (std::size_t i = begin; i < end && i < shape.size(); ++i) result *= shape[i];
    return result;
}

/// Index normalized into [0, size), or a failure naming the value and the axis.
inline int64_t checked_index(const NodeInfo& node, int64_t index, int64_t size, int64_t axis) {
    if (index < -size || index >= size)
        node.fail(fmt::format("index {} is out of bounds for axis {} with size {}", index, axis, size));
    return index < 0 ? index + size : index;
}

/// Reads an optional 1-D integer input; nullopt when omitted.
inline std::optional<std::vector<int64_t>> optional_ints(const KernelContext& ctx, std::size_t index,
                                                         std::string_view what) {
    const Tensor* tensor = ctx.input(index);
    if (!tensor || !tensor->defined()) return std::nullopt;
    require_1d(ctx.node(), *tensor, what, /*allow_scalar=*/true);
    return read_ints(ctx.node(), *tensor, what);
}

/// The data type named by attribute `attr_name` (an ONNX TensorProto type), or `fallback` when
/// the node does not set it; fails for undefined and string types.
inline DataType output_dtype_attr(const NodeInfo& node, const char* attr_name, DataType fallback) {
    if (!node.has_attr(attr_name)) return fallback;
    const int64_t onnx_type = node.attr_int(attr_name, 0);
    const DataType dtype = dtype_from_onnx(static_cast<int32_t>(onnx_type));
    if (dtype == DataType::kUndefined || dtype == DataType::kString)
        node.fail(std::string("attribute '") + attr_name + "' has unsupported data type " + std::to_string(onnx_type));
    return dtype;
}

/// Calls fn(flat_index, multi_index) for every element of `shape` in row-major order.
template <typename Fn>
void for_each_index(const Shape& shape, Fn&& fn) {
    const int64_t total = shape_volume(shape);
    std::vector<int64_t> index(shape.size(), 0);
    for (int64_t flat = 0; flat < total; ++flat) {
        fn(flat, index);
        for (std::size_t d = shape.size(); d-- > 0;) {
            if (++index[d] < shape[d]) break;
            index[d] = 0;
        }
    }
}

/// A shape given as a 1-D integer input; fails for negative dims.
inline Shape read_shape(const NodeInfo& node, const Tensor& tensor, std::string_view what) {
    require_1d(node, tensor, what);
    const std::vector<int64_t> dims = read_ints(node, tensor, what);
    for (int64_t dim : dims)
        if (dim < 0) node.fail(fmt::format("{} {} has a negative dimension", what, ints_to_string(dims)));
    return dims;
}

}  // namespace polygraphy::ref
