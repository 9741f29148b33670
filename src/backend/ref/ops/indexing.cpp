// Indexing operators: Gather, GatherElements, GatherND, ScatterND, ScatterElements (and opset 9-10
// Scatter), Compress, NonZero and OneHot. Indices may be negative (counted from the end) and are
// checked against the data's dims.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

// What Gather and GatherElements read first: data of rank 1 or more, the indices, and the axis
// attribute normalized for the data.
struct GatherOperands {
    const Tensor& data;
    const Tensor& indices;
    int64_t axis;
};

GatherOperands gather_operands(KernelContext& ctx, int64_t axis_attr) {
    const Tensor& data = ctx.required_input(0);
    const Tensor& indices = ctx.required_input(1);
    if (data.rank() == 0) ctx.node().fail("data must have rank >= 1");
    return {data, indices, normalize_axis(ctx.node(), axis_attr, data.rank())};
}

class GatherKernel final : public Kernel {
public:
    explicit GatherKernel(const NodeInfo& node) : axis_(node.attr_int("axis", 0)) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const GatherOperands operands = gather_operands(ctx, axis_);  // no structured binding: lambdas read them
        const Tensor& data = operands.data;
        const Tensor& indices_tensor = operands.indices;
        const int64_t axis = operands.axis;
        std::vector<int64_t> indices = read_ints(node, indices_tensor, "indices");
        const int64_t dim = data.shape()[axis];
        for (int64_t& index : indices) index = checked_index(node, index, dim, axis);
        Shape out(data.shape().begin(), data.shape().begin() + axis);
        out.insert(out.end(), indices_tensor.shape().begin(), indices_tensor.shape().end());
        out.insert(out.end(), data.shape().begin() + axis + 1, data.shape().end());
        Tensor y = Tensor::uninitialized(data.dtype(), out);  // every (outer, index) row is copied
        const int64_t outer = product(data.shape(), 0, axis);
        const int64_t inner = product(data.shape(), axis + 1, data.shape().size());
        const int64_t n = static_cast<int64_t>(indices.size());
        for (int64_t o = 0; o < outer && inner > 0; ++o)
            for (int64_t k = 0; k < n; ++k)
                copy_elements(data, (o * dim + indices[k]) * inner, y, (o * n + k) * inner, inner);
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t axis_;
};

/// Checks the ScatterElements/GatherElements shape contract: same rank, every dim of `indices`
/// within `data` except on `axis`.
void check_elements_shapes(const NodeInfo& node, const Tensor& data, const Tensor& indices, int64_t axis) {
    bool ok = indices.rank() == data.rank();
    for (int64_t d = 0; ok && d < data.rank(); ++d)
        if (d != axis && indices.shape()[d] > data.shape()[d]) ok = false;
    if (!ok)
        node.fail(
            fmt::format("indices of shape {} do not fit data of shape {} (same rank required, and no larger "
                        "dimension except on axis {})",
                        shape_to_string(indices.shape()), shape_to_string(data.shape()), axis));
}

class GatherElementsKernel final : public Kernel {
public:
    explicit GatherElementsKernel(const NodeInfo& node) : axis_(node.attr_int("axis", 0)) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const GatherOperands operands = gather_operands(ctx, axis_);  // no structured binding: lambdas read them
        const Tensor& data = operands.data;
        const Tensor& indices_tensor = operands.indices;
        const int64_t axis = operands.axis;
        check_elements_shapes(node, data, indices_tensor, axis);
        const std::vector<int64_t> indices = read_ints(node, indices_tensor, "indices");
        const std::vector<int64_t> strides = contiguous_strides(data.shape());
        const int64_t dim = data.shape()[axis];
        Tensor y(data.dtype(), indices_tensor.shape());
        dispatch_storage(node, data.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* in = storage<T>(data);
            T* out = storage<T>(y);
            for_each_index(indices_tensor.shape(), [&](int64_t flat, const std::vector<int64_t>& index) {
                int64_t offset = 0;
                for (std::size_t d = 0; d < index.size(); ++d)
                    offset +=
                        (static_cast<int64_t>(d) == axis ? checked_index(node, indices[flat], dim, axis) : index[d]) *
                        strides[d];
                out[flat] = in[offset];
            });
        });
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t axis_;
};

class GatherNDKernel final : public Kernel {
public:
    explicit GatherNDKernel(const NodeInfo& node)
        : batch_dims_(node.opset() >= 12 ? node.attr_int("batch_dims", 0) : 0) {
        if (batch_dims_ < 0) node.fail(fmt::format("attribute 'batch_dims' must be >= 0, got {}", batch_dims_));
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& data = ctx.required_input(0);
        const Tensor& indices_tensor = ctx.required_input(1);
        const int64_t r = data.rank(), q = indices_tensor.rank(), b = batch_dims_;
        if (q < 1 || r < 1 || b >= std::min(q, r))
            node.fail(fmt::format("batch_dims {} must be smaller than the ranks of data {} and indices {}", b,
                                  shape_to_string(data.shape()), shape_to_string(indices_tensor.shape())));
        const int64_t k = indices_tensor.shape().back();
        if (k < 1 || k > r - b)
            node.fail(fmt::format("the last dimension of indices {} must be in [1, {}]",
                                  shape_to_string(indices_tensor.shape()), r - b));
        for (int64_t d = 0; d < b; ++d)
            if (data.shape()[d] != indices_tensor.shape()[d])
                node.fail(fmt::format("batch dimensions of data {} and indices {} differ",
                                      shape_to_string(data.shape()), shape_to_string(indices_tensor.shape())));
        Shape out(indices_tensor.shape().begin(), indices_tensor.shape().end() - 1);
        out.insert(out.end(), data.shape().begin() + b + k, data.shape().end());
        Tensor y(data.dtype(), out);
        const std::vector<int64_t> indices = read_ints(node, indices_tensor, "indices");
        const std::vector<int64_t> strides = contiguous_strides(data.shape());
        const int64_t batches = product(data.shape(), 0, b);
        const int64_t batch_stride = product(data.shape(), b, data.shape().size());
        const int64_t block = product(data.shape(), b + k, data.shape().size());
        const int64_t tuples = batches > 0 ? static_cast<int64_t>(indices.size()) / k / batches : 0;
        for (int64_t batch = 0; batch < batches; ++batch) {
            for (int64_t t = 0; t < tuples; ++t) {
                const int64_t tuple = batch * tuples + t;
                int64_t offset = batch * batch_stride;
                for (int64_t j = 0; j < k; ++j)
                    offset += checked_index(node, indices[tuple * k + j], data.shape()[b + j], b + j) * strides[b + j];
                copy_elements(data, offset, y, tuple * block, block);
            }
        }
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t batch_dims_;
};

// ---------------------------------------------------------------------------------------------
// ScatterND, ScatterElements (and opset 9-10 Scatter).

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction parse_reduction(const NodeInfo& node) {
    if (node.opset() < 16) return Reduction::kNone;
    const std::string name = node.attr_string("reduction", "none");
    if (name == "none") return Reduction::kNone;
    if (name == "add") return Reduction::kAdd;
    if (name == "mul") return Reduction::kMul;
    if (node.opset() >= 18 && name == "max") return Reduction::kMax;
    if (node.opset() >= 18 && name == "min") return Reduction::kMin;
    node.fail(fmt::format("attribute 'reduction' has an unsupported value \"{}\"", name));
}

/// Calls fn(T* out, const T* updates) typed for the data; reductions need a numeric type.
template <typename Fn>
void dispatch_scatter(const NodeInfo& node, Reduction reduction, DataType dtype, Fn&& fn) {
    if (reduction == Reduction::kNone) {
        dispatch_storage(node, dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            fn(tag, [](T& target, const T& value) { target = value; });
        });
        return;
    }
    if (is_half(dtype)) unsupported(node, "reductions on float16/bfloat16 data are not supported");
    dispatch_dtype(node, dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (kIsNumeric<T>) {
            fn(tag, [reduction](T& target, const T& value) {
                switch (reduction) {
                    case Reduction::kAdd:
                        target = static_cast<T>(target + value);
                        break;
                    case Reduction::kMul:
                        target = static_cast<T>(target * value);
                        break;
                    case Reduction::kMax:
                        target = std::max(target, value);
                        break;
                    case Reduction::kMin:
                        target = std::min(target, value);
                        break;
                    default:
                        target = value;
                }
            });
        } else {
            unsupported_dtype(node, dtype);
        }
    });
}

class ScatterNDKernel final : public Kernel {
public:
    explicit ScatterNDKernel(const NodeInfo& node) : reduction_(parse_reduction(node)) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& data = ctx.required_input(0);
        const Tensor& indices_tensor = ctx.required_input(1);
        const Tensor& updates = ctx.required_input(2);
        if (updates.dtype() != data.dtype()) node.fail("updates must have the data type of data");
        if (indices_tensor.rank() < 1) node.fail("indices must have rank >= 1");
        const int64_t k = indices_tensor.shape().back();
        if (k < 1 || k > data.rank())
            node.fail(fmt::format("the last dimension of indices {} must be in [1, {}]",
                                  shape_to_string(indices_tensor.shape()), data.rank()));
        Shape expected(indices_tensor.shape().begin(), indices_tensor.shape().end() - 1);
        expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
        if (updates.shape() != expected)
            node.fail(fmt::format("updates must have shape {}, got {}", shape_to_string(expected),
                                  shape_to_string(updates.shape())));
        const std::vector<int64_t> indices = read_ints(node, indices_tensor, "indices");
        const std::vector<int64_t> strides = contiguous_strides(data.shape());
        const int64_t block = product(data.shape(), k, data.shape().size());
        const int64_t tuples = static_cast<int64_t>(indices.size()) / k;
        std::vector<int64_t> offsets(tuples);
        for (int64_t t = 0; t < tuples; ++t)
            for (int64_t j = 0; j < k; ++j)
                offsets[t] += checked_index(node, indices[t * k + j], data.shape()[j], j) * strides[j];
        Tensor y = data.clone();
        dispatch_scatter(node, reduction_, data.dtype(), [&](auto tag, auto apply) {
            using T = typename decltype(tag)::type;
            T* out = storage<T>(y);
            const T* in = storage<T>(updates);
            for (int64_t t = 0; t < tuples; ++t)
                for (int64_t e = 0; e < block; ++e) apply(out[offsets[t] + e], in[t * block + e]);
        });
        ctx.set_output(0, std::move(y));
    }

private:
    Reduction reduction_;
};

class ScatterElementsKernel final : public Kernel {
public:
    explicit ScatterElementsKernel(const NodeInfo& node)
        : axis_(node.attr_int("axis", 0)), reduction_(parse_reduction(node)) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& data = ctx.required_input(0);
        const Tensor& indices_tensor = ctx.required_input(1);
        const Tensor& updates = ctx.required_input(2);
        if (updates.dtype() != data.dtype()) node.fail("updates must have the data type of data");
        if (data.rank() == 0) node.fail("data must have rank >= 1");
        const int64_t axis = normalize_axis(node, axis_, data.rank());
        check_elements_shapes(node, data, indices_tensor, axis);
        if (updates.shape() != indices_tensor.shape())
            node.fail(fmt::format("updates of shape {} must have the shape of indices {}",
                                  shape_to_string(updates.shape()), shape_to_string(indices_tensor.shape())));
        const std::vector<int64_t> indices = read_ints(node, indices_tensor, "indices");
        const std::vector<int64_t> strides = contiguous_strides(data.shape());
        const int64_t dim = data.shape()[axis];
        std::vector<int64_t> targets(indices.size());
        for_each_index(indices_tensor.shape(), [&](int64_t flat, const std::vector<int64_t>& index) {
            int64_t offset = 0;
            for (std::size_t d = 0; d < index.size(); ++d)
                offset += (static_cast<int64_t>(d) == axis ? checked_index(node, indices[flat], dim, axis) : index[d]) *
                          strides[d];
            targets[flat] = offset;
        });
        Tensor y = data.clone();
        dispatch_scatter(node, reduction_, data.dtype(), [&](auto tag, auto apply) {
            using T = typename decltype(tag)::type;
            T* out = storage<T>(y);
            const T* in = storage<T>(updates);
            for (std::size_t i = 0; i < targets.size(); ++i) apply(out[targets[i]], in[i]);
        });
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t axis_;
    Reduction reduction_;
};

class CompressKernel final : public Kernel {
public:
    explicit CompressKernel(const NodeInfo& node) : has_axis_(node.has_attr("axis")), axis_(node.attr_int("axis", 0)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& condition = context.required_input(1);
        require_1d(node, condition, "condition");
        if (condition.dtype() != DataType::kBool)
            node.fail("condition must be a bool tensor, but it is " + std::string(dtype_name(condition.dtype())));
        const int64_t axis = has_axis_ ? normalize_axis(node, axis_, x.rank()) : 0;
        int64_t outer = 1, length = x.numel(), inner = 1;
        if (has_axis_) {
            length = x.shape()[static_cast<std::size_t>(axis)];
            for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<std::size_t>(d)];
            for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
        }
        if (condition.numel() > length)
            node.fail("condition has " + std::to_string(condition.numel()) + " elements, more than the " +
                      std::to_string(length) + " of the selected axis");
        std::vector<int64_t> kept;
        const bool* flags = condition.data_as<bool>();
        for (int64_t i = 0; i < condition.numel(); ++i)
            if (flags[i]) kept.push_back(i);
        const auto count = static_cast<int64_t>(kept.size());
        Shape out_shape{count};
        if (has_axis_) {
            out_shape = x.shape();
            out_shape[static_cast<std::size_t>(axis)] = count;
        }
        Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t k = 0; k < count; ++k)
                copy_elements(x, (o * length + kept[static_cast<std::size_t>(k)]) * inner, y, (o * count + k) * inner,
                              inner);
    }

private:
    bool has_axis_;
    int64_t axis_;
};

class NonZeroKernel final : public Kernel {
public:
    explicit NonZeroKernel(const NodeInfo&) {}
    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        if (x.dtype() == DataType::kString) unsupported_dtype(node, x.dtype());
        // A scalar is treated as a 1-element vector (as ONNX Runtime does).
        const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
        std::vector<int64_t> hits;
        for (int64_t i = 0; i < x.numel(); ++i)
            if (x.value_as_double(i) != 0.0) hits.push_back(i);
        const int64_t rank = static_cast<int64_t>(shape.size()), count = static_cast<int64_t>(hits.size());
        Tensor& y = ctx.allocate_output(0, DataType::kInt64, {rank, count});
        int64_t* out = y.data_as<int64_t>();
        const std::vector<int64_t> strides = contiguous_strides(shape);
        for (int64_t n = 0; n < count; ++n)
            for (int64_t d = 0; d < rank; ++d) out[d * count + n] = (hits[n] / strides[d]) % shape[d];
    }
};

class OneHotKernel final : public Kernel {
public:
    explicit OneHotKernel(const NodeInfo& node) : axis_(node.attr_int("axis", -1)) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& indices = ctx.required_input(0);
        const Tensor& depth_tensor = ctx.required_input(1);
        const Tensor& values = ctx.required_input(2);
        require_scalar(node, depth_tensor, "depth");
        if (values.numel() != 2 || values.rank() != 1)
            node.fail(fmt::format("values must be a 1-D tensor of 2 elements [off, on], got shape {}",
                                  shape_to_string(values.shape())));
        if (indices.dtype() == DataType::kString || depth_tensor.dtype() == DataType::kString)
            unsupported_dtype(node, DataType::kString);
        const double depth_value = depth_tensor.value_as_double(0);
        if (!(depth_value >= 1) || depth_value > 1e12)
            node.fail(fmt::format("depth must be >= 1, got {}", depth_value));
        const int64_t depth = static_cast<int64_t>(depth_value);
        const int64_t rank = indices.rank() + 1;
        const int64_t axis = normalize_axis(node, axis_, rank);
        Shape out = indices.shape();
        out.insert(out.begin() + axis, depth);
        Tensor y(values.dtype(), out);
        strided_copy(values, 0, out, std::vector<int64_t>(out.size(), 0), y);  // all "off"
        const int64_t inner = product(indices.shape(), axis, indices.shape().size());
        for (int64_t flat = 0; flat < indices.numel(); ++flat) {
            const double raw = indices.value_as_double(flat);
            if (std::isnan(raw)) continue;
            int64_t index = static_cast<int64_t>(std::clamp(raw, -1e15, 1e15));
            if (index < 0) index += depth;
            if (index < 0 || index >= depth) continue;  // out of range: the row stays "off"
            const int64_t o = flat / inner, i = flat % inner;
            copy_elements(values, 1, y, (o * depth + index) * inner + i, 1);
        }
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t axis_;
};

}  // namespace

void register_indexing_ops(OpRegistry& registry) {
    registry.add("", "Gather", 1, kMaxOpset, make_factory<GatherKernel>());
    registry.add("", "GatherElements", 11, kMaxOpset, make_factory<GatherElementsKernel>());
    registry.add("", "GatherND", 11, kMaxOpset, make_factory<GatherNDKernel>());
    registry.add("", "ScatterND", 11, kMaxOpset, make_factory<ScatterNDKernel>());
    registry.add("", "ScatterElements", 11, kMaxOpset, make_factory<ScatterElementsKernel>());
    registry.add("", "Scatter", 9, 10, make_factory<ScatterElementsKernel>());  // removed in opset 11
    registry.add("", "Compress", 9, kMaxOpset, make_factory<CompressKernel>());
    registry.add("", "NonZero", 9, kMaxOpset, make_factory<NonZeroKernel>());
    registry.add("", "OneHot", 9, kMaxOpset, make_factory<OneHotKernel>());
}

}  // namespace polygraphy::ref
