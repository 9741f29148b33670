// Tensor (data movement and shape) operators: Reshape, Flatten, Transpose, Concat, Split, Slice,
// Gather*, Squeeze/Unsqueeze, Shape, Size, ConstantOfShape, Expand, Tile, Range, Pad, Constant,
// Trilu, OneHot, NonZero, Scatter*, DepthToSpace/SpaceToDepth. They work on every dtype (strings
// included) unless they compute values.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/ref/ops/broadcast.h"
#include "backend/ref/ops/families.h"
#include "backend/ref/ops/kernel_util.h"

namespace polygraphy::ref {
namespace {

std::string ints_to_string(const std::vector<int64_t>& values) {
    return fmt::format("[{}]", fmt::join(values, ", "));
}

/// Reads an optional 1-D integer input; nullopt when omitted.
std::optional<std::vector<int64_t>> optional_ints(const KernelContext& ctx, std::size_t index, std::string_view what) {
    const Tensor* tensor = ctx.input(index);
    if (!tensor || !tensor->defined()) return std::nullopt;
    require_1d(ctx.node(), *tensor, what, /*allow_scalar=*/true);
    return read_ints(ctx.node(), *tensor, what);
}

int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
    int64_t result = 1;
    for (std::size_t i = begin; i < end && i < shape.size(); ++i) result *= shape[i];
    return result;
}

/// Index normalized into [0, size), or a failure naming the value and the axis.
int64_t checked_index(const NodeInfo& node, int64_t index, int64_t size, int64_t axis) {
    if (index < -size || index >= size)
        node.fail(fmt::format("index {} is out of bounds for axis {} with size {}", index, axis, size));
    return index < 0 ? index + size : index;
}

// ---------------------------------------------------------------------------------------------

class ReshapeKernel final : public Kernel {
public:
    explicit ReshapeKernel(const NodeInfo& node)
        : allowzero_(node.opset() >= 14 && node.attr_int("allowzero", 0) != 0) {
        if (node.opset() < 5) {
            if (!node.has_attr("shape")) node.fail("attribute 'shape' is required before opset 5");
            shape_ = node.attr_ints("shape");
        }
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        std::vector<int64_t> spec = shape_;
        if (node.opset() >= 5) {
            const Tensor& shape = ctx.required_input(1);
            require_1d(node, shape, "shape");
            spec = read_ints(node, shape, "shape");
        }
        ctx.set_output(0, x.reshaped(infer(node, x.shape(), x.numel(), spec)));
    }

private:
    Shape infer(const NodeInfo& node, const Shape& in, int64_t numel, const std::vector<int64_t>& spec) const {
        Shape out(spec.size());
        int64_t unknown = -1;
        bool has_zero = false;
        int64_t known = 1;
        for (std::size_t i = 0; i < spec.size(); ++i) {
            int64_t dim = spec[i];
            if (dim == -1) {
                if (unknown >= 0) node.fail(fmt::format("shape {} has more than one -1", ints_to_string(spec)));
                unknown = static_cast<int64_t>(i);
                continue;
            }
            if (dim < -1) node.fail(fmt::format("shape {} has an invalid dimension {}", ints_to_string(spec), dim));
            if (dim == 0) {
                has_zero = true;
                if (!allowzero_) {
                    if (i >= in.size())
                        node.fail(fmt::format("shape {} copies dimension {} (0), but the input {} has rank {}",
                                              ints_to_string(spec), i, shape_to_string(in), in.size()));
                    dim = in[i];
                }
            }
            out[i] = dim;
            if (dim != 0 && known > std::numeric_limits<int64_t>::max() / dim)
                node.fail(fmt::format("shape {} is too large", ints_to_string(spec)));
            known *= dim;
        }
        if (allowzero_ && has_zero && unknown >= 0)
            node.fail(fmt::format("shape {} has both 0 and -1, which allowzero=1 forbids", ints_to_string(spec)));
        if (unknown >= 0) {
            if (known == 0 || numel % known != 0)
                node.fail(fmt::format("cannot reshape input of shape {} ({} elements) into shape {}",
                                      shape_to_string(in), numel, ints_to_string(spec)));
            out[unknown] = numel / known;
        } else if (known != numel) {
            node.fail(fmt::format("cannot reshape input of shape {} ({} elements) into shape {} ({} elements)",
                                  shape_to_string(in), numel, ints_to_string(spec), known));
        }
        return out;
    }

    bool allowzero_;
    std::vector<int64_t> shape_;
};

class FlattenKernel final : public Kernel {
public:
    explicit FlattenKernel(const NodeInfo& node) : axis_(node.attr_int("axis", 1)) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        const int64_t rank = x.rank();
        if (axis_ < -rank || axis_ > rank)
            node.fail(fmt::format("axis {} is out of range for a tensor of rank {} (expected a value in [{}, {}])",
                                  axis_, rank, -rank, rank));
        const std::size_t axis = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);
        ctx.set_output(0, x.reshaped({product(x.shape(), 0, axis), product(x.shape(), axis, x.shape().size())}));
    }

private:
    int64_t axis_;
};

class TransposeKernel final : public Kernel {
public:
    explicit TransposeKernel(const NodeInfo& node) : perm_(node.attr_ints("perm")), has_perm_(node.has_attr("perm")) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        const std::size_t rank = x.shape().size();
        std::vector<int64_t> perm = perm_;
        if (!has_perm_) {
            perm.resize(rank);
            for (std::size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
        }
        if (perm.size() != rank)
            node.fail(fmt::format("perm {} has {} entries, but the input {} has rank {}", ints_to_string(perm),
                                  perm.size(), shape_to_string(x.shape()), rank));
        std::vector<bool> seen(rank, false);
        for (int64_t& p : perm) {
            if (p < 0) p += static_cast<int64_t>(rank);  // tolerated by ONNX Runtime
            if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
                node.fail(fmt::format("perm {} is not a permutation of the {} axes", ints_to_string(perm_), rank));
            seen[p] = true;
        }
        const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
        Shape out(rank);
        std::vector<int64_t> strides(rank);
        for (std::size_t i = 0; i < rank; ++i) {
            out[i] = x.shape()[perm[i]];
            strides[i] = in_strides[perm[i]];
        }
        Tensor y(x.dtype(), out);
        strided_copy(x, 0, out, strides, y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }

private:
    std::vector<int64_t> perm_;
    bool has_perm_;
};

class ConcatKernel final : public Kernel {
public:
    explicit ConcatKernel(const NodeInfo& node) {
        if (node.opset() >= 4 && !node.has_attr("axis")) node.fail("attribute 'axis' is required");
        axis_ = node.attr_int("axis", 1);
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        if (ctx.num_inputs() == 0) node.fail("needs at least one input");
        const Tensor& first = ctx.required_input(0);
        const int64_t rank = first.rank();
        if (rank == 0) node.fail("cannot concatenate scalars");
        const int64_t axis = normalize_axis(node, axis_, rank);
        Shape out = first.shape();
        out[axis] = 0;
        for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
            const Tensor& input = ctx.required_input(i);
            if (input.dtype() != first.dtype())
                node.fail(fmt::format("input {} has data type {}, but input 0 has {}", i, dtype_name(input.dtype()),
                                      dtype_name(first.dtype())));
            bool compatible = input.rank() == rank;
            for (int64_t d = 0; compatible && d < rank; ++d)
                if (d != axis && input.shape()[d] != first.shape()[d]) compatible = false;
            if (!compatible)
                node.fail(fmt::format("input {} has shape {}, which cannot be concatenated with {} on axis {}", i,
                                      shape_to_string(input.shape()), shape_to_string(first.shape()), axis));
            out[axis] += input.shape()[axis];
        }
        Tensor y(first.dtype(), out);
        const int64_t outer = product(out, 0, axis), inner = product(out, axis + 1, out.size());
        const int64_t out_row = out[axis] * inner;
        int64_t column = 0;
        for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
            const Tensor& input = *ctx.input(i);
            const int64_t row = input.shape()[axis] * inner;
            for (int64_t o = 0; o < outer && row > 0; ++o) copy_elements(input, o * row, y, o * out_row + column, row);
            column += row;
        }
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t axis_ = 1;
};

class SplitKernel final : public Kernel {
public:
    explicit SplitKernel(const NodeInfo& node) : axis_(node.attr_int("axis", 0)) {
        if (node.opset() < 13) split_ = node.attr_ints("split");
        if (node.opset() >= 18 && node.has_attr("num_outputs")) {
            num_outputs_ = node.attr_int("num_outputs", 0);
            if (*num_outputs_ < 1)
                node.fail(fmt::format("attribute 'num_outputs' must be >= 1, got {}", *num_outputs_));
            if (*num_outputs_ != node.proto().output_size())
                node.fail(fmt::format("attribute 'num_outputs' ({}) differs from the number of outputs ({})",
                                      *num_outputs_, node.proto().output_size()));
        }
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        const int64_t axis = normalize_axis(node, axis_, x.rank());
        const int64_t dim = x.shape()[axis];
        const int64_t count = static_cast<int64_t>(ctx.num_outputs());
        if (count < 1) node.fail("needs at least one output");
        std::vector<int64_t> sizes = split_;
        if (node.opset() >= 13 || (node.opset() == 1 && sizes.empty()))
            if (auto given = optional_ints(ctx, 1, "split")) sizes = *given;
        if (!sizes.empty()) {
            if (static_cast<int64_t>(sizes.size()) != count)
                node.fail(
                    fmt::format("split {} has {} entries for {} outputs", ints_to_string(sizes), sizes.size(), count));
            int64_t total = 0;
            for (int64_t size : sizes) {
                if (size < 0) node.fail(fmt::format("split {} has a negative size", ints_to_string(sizes)));
                total = checked_add(node, total, size);
            }
            if (total != dim)
                node.fail(fmt::format("split {} sums to {}, but axis {} of the input {} has size {}",
                                      ints_to_string(sizes), total, axis, shape_to_string(x.shape()), dim));
        } else if (num_outputs_) {
            const int64_t chunk = (dim + count - 1) / count;
            if (chunk * (count - 1) > dim)
                node.fail(fmt::format("cannot split axis {} of size {} into {} outputs", axis, dim, count));
            sizes.assign(count, chunk);
            sizes.back() = dim - chunk * (count - 1);
        } else {
            if (dim % count != 0)
                node.fail(fmt::format("axis {} of size {} cannot be split evenly into {} outputs", axis, dim, count));
            sizes.assign(count, dim / count);
        }
        const int64_t outer = product(x.shape(), 0, axis), inner = product(x.shape(), axis + 1, x.shape().size());
        int64_t column = 0;
        for (int64_t k = 0; k < count; ++k) {
            Shape shape = x.shape();
            shape[axis] = sizes[k];
            Tensor y(x.dtype(), shape);
            const int64_t row = sizes[k] * inner;
            for (int64_t o = 0; o < outer && row > 0; ++o) copy_elements(x, o * dim * inner + column, y, o * row, row);
            column += row;
            ctx.set_output(k, std::move(y));
        }
    }

private:
    int64_t axis_;
    std::vector<int64_t> split_;
    std::optional<int64_t> num_outputs_;
};

class SliceKernel final : public Kernel {
public:
    explicit SliceKernel(const NodeInfo& node) {
        if (node.opset() < 10) {
            if (!node.has_attr("starts") || !node.has_attr("ends"))
                node.fail("attributes 'starts' and 'ends' are required before opset 10");
            starts_ = node.attr_ints("starts");
            ends_ = node.attr_ints("ends");
            if (node.has_attr("axes")) axes_ = node.attr_ints("axes");
        }
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        std::vector<int64_t> starts = starts_, ends = ends_;
        std::optional<std::vector<int64_t>> axes = axes_, steps;
        if (node.opset() >= 10) {
            ctx.required_input(1);
            ctx.required_input(2);
            starts = *optional_ints(ctx, 1, "starts");
            ends = *optional_ints(ctx, 2, "ends");
            axes = optional_ints(ctx, 3, "axes");
            steps = optional_ints(ctx, 4, "steps");
        }
        if (starts.size() != ends.size())
            node.fail(fmt::format("starts {} and ends {} have different lengths", ints_to_string(starts),
                                  ints_to_string(ends)));
        if (axes && axes->size() != starts.size())
            node.fail(fmt::format("axes {} and starts {} have different lengths", ints_to_string(*axes),
                                  ints_to_string(starts)));
        if (steps && steps->size() != starts.size())
            node.fail(fmt::format("steps {} and starts {} have different lengths", ints_to_string(*steps),
                                  ints_to_string(starts)));
        const int64_t rank = x.rank();
        std::vector<int64_t> axis_list;
        if (axes) {
            axis_list = normalize_axes(node, *axes, rank);
        } else {
            if (static_cast<int64_t>(starts.size()) > rank)
                node.fail(
                    fmt::format("starts {} has more entries than the input's rank {}", ints_to_string(starts), rank));
            for (std::size_t i = 0; i < starts.size(); ++i) axis_list.push_back(static_cast<int64_t>(i));
        }

        const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
        Shape out = x.shape();
        std::vector<int64_t> strides = in_strides;
        int64_t offset = 0;
        for (std::size_t i = 0; i < axis_list.size(); ++i) {
            const int64_t axis = axis_list[i];
            const int64_t dim = x.shape()[axis];
            const int64_t step = steps ? (*steps)[i] : 1;
            if (step == 0) node.fail(fmt::format("steps {} contain 0", ints_to_string(*steps)));
            int64_t start = starts[i], end = ends[i];
            if (start < 0) start += dim;
            if (end < 0) end += dim;
            int64_t count = 0;
            if (dim == 0) {
                start = 0;
            } else if (step > 0) {
                start = std::clamp<int64_t>(start, 0, dim);
                end = std::clamp<int64_t>(end, 0, dim);
                count = end > start ? 1 + (end - start - 1) / step : 0;  // no overflow for huge steps
            } else {
                start = std::clamp<int64_t>(start, 0, dim - 1);
                end = std::clamp<int64_t>(end, -1, dim - 1);
                const int64_t magnitude =
                    step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
                count = start > end ? 1 + (start - end - 1) / magnitude : 0;
            }
            out[axis] = count;
            offset += count > 0 ? start * in_strides[axis] : 0;
            strides[axis] = count > 1 ? in_strides[axis] * step : 0;  // |step| < dim here
        }
        Tensor y(x.dtype(), out);
        if (y.numel() > 0) strided_copy(x, offset, out, strides, y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }

private:
    std::vector<int64_t> starts_, ends_;
    std::optional<std::vector<int64_t>> axes_;
};

class GatherKernel final : public Kernel {
public:
    explicit GatherKernel(const NodeInfo& node) : axis_(node.attr_int("axis", 0)) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& data = ctx.required_input(0);
        const Tensor& indices_tensor = ctx.required_input(1);
        if (data.rank() == 0) node.fail("data must have rank >= 1");
        const int64_t axis = normalize_axis(node, axis_, data.rank());
        std::vector<int64_t> indices = read_ints(node, indices_tensor, "indices");
        const int64_t dim = data.shape()[axis];
        for (int64_t& index : indices) index = checked_index(node, index, dim, axis);
        Shape out(data.shape().begin(), data.shape().begin() + axis);
        out.insert(out.end(), indices_tensor.shape().begin(), indices_tensor.shape().end());
        out.insert(out.end(), data.shape().begin() + axis + 1, data.shape().end());
        Tensor y(data.dtype(), out);
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
        const Tensor& data = ctx.required_input(0);
        const Tensor& indices_tensor = ctx.required_input(1);
        if (data.rank() == 0) node.fail("data must have rank >= 1");
        const int64_t axis = normalize_axis(node, axis_, data.rank());
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

class SqueezeKernel final : public Kernel {
public:
    explicit SqueezeKernel(const NodeInfo& node) {
        if (node.opset() < 13 && node.has_attr("axes")) axes_ = node.attr_ints("axes");
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        std::optional<std::vector<int64_t>> axes = axes_;
        if (node.opset() >= 13) axes = optional_ints(ctx, 1, "axes");
        Shape out;
        if (!axes || axes->empty()) {
            for (int64_t dim : x.shape())
                if (dim != 1) out.push_back(dim);
        } else {
            const std::vector<int64_t> normalized = normalize_axes(node, *axes, x.rank());
            for (int64_t axis : normalized)
                if (x.shape()[axis] != 1)
                    node.fail(fmt::format("cannot squeeze axis {} of the input {}: its size is not 1", axis,
                                          shape_to_string(x.shape())));
            for (int64_t d = 0; d < x.rank(); ++d)
                if (std::find(normalized.begin(), normalized.end(), d) == normalized.end()) out.push_back(x.shape()[d]);
        }
        ctx.set_output(0, x.reshaped(out));
    }

private:
    std::optional<std::vector<int64_t>> axes_;
};

class UnsqueezeKernel final : public Kernel {
public:
    explicit UnsqueezeKernel(const NodeInfo& node) {
        if (node.opset() < 13) {
            if (!node.has_attr("axes")) node.fail("attribute 'axes' is required before opset 13");
            axes_ = node.attr_ints("axes");
        }
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        std::vector<int64_t> axes = axes_;
        if (node.opset() >= 13) {
            ctx.required_input(1);
            axes = *optional_ints(ctx, 1, "axes");
        }
        const int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
        const std::vector<int64_t> normalized = normalize_axes(node, axes, rank);
        Shape out(rank, 1);
        std::vector<bool> inserted(rank, false);
        for (int64_t axis : normalized) inserted[axis] = true;
        std::size_t next = 0;
        for (int64_t d = 0; d < rank; ++d)
            if (!inserted[d]) out[d] = x.shape()[next++];
        ctx.set_output(0, x.reshaped(out));
    }

private:
    std::vector<int64_t> axes_;
};

class ShapeKernel final : public Kernel {
public:
    explicit ShapeKernel(const NodeInfo& node) {
        if (node.opset() >= 15) {
            start_ = node.attr_int("start", 0);
            if (node.has_attr("end")) end_ = node.attr_int("end", 0);
        }
    }

    void compute(KernelContext& ctx) const override {
        const Tensor& x = ctx.required_input(0);
        const int64_t rank = x.rank();
        auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
        const int64_t start = clamp(start_), end = end_ ? clamp(*end_) : rank;
        const int64_t count = std::max<int64_t>(0, end - start);
        Tensor& y = ctx.allocate_output(0, DataType::kInt64, {count});
        for (int64_t i = 0; i < count; ++i) y.data_as<int64_t>()[i] = x.shape()[start + i];
    }

private:
    int64_t start_ = 0;
    std::optional<int64_t> end_;
};

class SizeKernel final : public Kernel {
public:
    explicit SizeKernel(const NodeInfo&) {}
    void compute(KernelContext& ctx) const override {
        const Tensor& x = ctx.required_input(0);
        ctx.allocate_output(0, DataType::kInt64, {}).data_as<int64_t>()[0] = x.numel();
    }
};

Shape read_shape(const NodeInfo& node, const Tensor& tensor, std::string_view what) {
    require_1d(node, tensor, what);
    const std::vector<int64_t> dims = read_ints(node, tensor, what);
    for (int64_t dim : dims)
        if (dim < 0) node.fail(fmt::format("{} {} has a negative dimension", what, ints_to_string(dims)));
    return dims;
}

class ConstantOfShapeKernel final : public Kernel {
public:
    explicit ConstantOfShapeKernel(const NodeInfo& node) {
        std::optional<Tensor> value = node.attr_tensor("value");
        if (value) {
            if (value->numel() != 1)
                node.fail(fmt::format("attribute 'value' must hold one element, but it has shape {}",
                                      shape_to_string(value->shape())));
            value_ = *value;
        } else {
            value_ = Tensor(DataType::kFloat32, {1});
        }
    }

    void compute(KernelContext& ctx) const override {
        const Shape shape = read_shape(ctx.node(), ctx.required_input(0), "shape");
        Tensor y(value_.dtype(), shape);
        strided_copy(value_, 0, shape, std::vector<int64_t>(shape.size(), 0), y);
        ctx.set_output(0, std::move(y));
    }

private:
    Tensor value_;
};

class ExpandKernel final : public Kernel {
public:
    explicit ExpandKernel(const NodeInfo&) {}
    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        const Shape shape = read_shape(node, ctx.required_input(1), "shape");
        const Shape out = broadcast_shapes(node, {x.shape(), shape});
        Tensor y(x.dtype(), out);
        strided_copy(x, 0, out, broadcast_strides(x.shape(), out), y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }
};

class TileKernel final : public Kernel {
public:
    explicit TileKernel(const NodeInfo&) {}
    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        std::vector<int64_t> repeats(x.shape().size(), 1);
        if (node.opset() < 6) {
            // Opset 1: scalar `tiles` repetitions along scalar `axis`.
            const Tensor& tiles = ctx.required_input(1);
            const Tensor& axis_tensor = ctx.required_input(2);
            require_scalar(node, tiles, "tiles");
            require_scalar(node, axis_tensor, "axis");
            const int64_t axis = normalize_axis(node, read_ints(node, axis_tensor, "axis")[0], x.rank());
            repeats[axis] = read_ints(node, tiles, "tiles")[0];
        } else {
            const Tensor& repeats_tensor = ctx.required_input(1);
            require_1d(node, repeats_tensor, "repeats");
            repeats = read_ints(node, repeats_tensor, "repeats");
            if (repeats.size() != x.shape().size())
                node.fail(fmt::format("repeats {} must have one entry per input dimension (input shape {})",
                                      ints_to_string(repeats), shape_to_string(x.shape())));
        }
        // The output seen as (r0, d0, r1, d1, ...): repetitions read the input with stride 0.
        const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
        Shape view, out;
        std::vector<int64_t> strides;
        for (std::size_t d = 0; d < repeats.size(); ++d) {
            if (repeats[d] < 0) node.fail(fmt::format("repeats {} has a negative entry", ints_to_string(repeats)));
            view.insert(view.end(), {repeats[d], x.shape()[d]});
            strides.insert(strides.end(), {0, in_strides[d]});
            out.push_back(checked_mul(node, repeats[d], x.shape()[d]));
        }
        Tensor y(x.dtype(), out);
        strided_copy(x, 0, view, strides, y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }
};

class RangeKernel final : public Kernel {
public:
    explicit RangeKernel(const NodeInfo&) {}
    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& start = ctx.required_input(0);
        const Tensor& limit = ctx.required_input(1);
        const Tensor& delta = ctx.required_input(2);
        const std::pair<const Tensor*, const char*> operands[] = {
            {&start, "start"}, {&limit, "limit"}, {&delta, "delta"}};
        for (const auto& [tensor, what] : operands) {
            require_scalar(node, *tensor, what);
            if (tensor->dtype() != start.dtype())
                node.fail(
                    fmt::format("start, limit and delta must have the same data type, but {} is {} and start is {}",
                                what, dtype_name(tensor->dtype()), dtype_name(start.dtype())));
        }
        dispatch_dtype(node, start.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (kIsNumeric<T>) {
                const T first = start.data_as<T>()[0], last = limit.data_as<T>()[0], step = delta.data_as<T>()[0];
                if (step == T(0)) node.fail("delta must not be 0");
                int64_t count = 0;
                if constexpr (kIsFloat<T>) {
                    const double n =
                        std::ceil((static_cast<double>(last) - static_cast<double>(first)) / static_cast<double>(step));
                    if (std::isnan(n)) node.fail("start, limit and delta must be finite");
                    if (n >= 9.2e18) node.fail("the range is too large");
                    count = n > 0 ? static_cast<int64_t>(n) : 0;
                } else {
                    const __int128 span = static_cast<__int128>(last) - static_cast<__int128>(first);
                    const __int128 s = static_cast<__int128>(step);
                    __int128 n = s > 0 ? (span + s - 1) / s : (span + s + 1) / s;
                    if (span == 0 || (span > 0) != (s > 0)) n = 0;
                    count = static_cast<int64_t>(n);
                }
                Tensor& y = ctx.allocate_output(0, start.dtype(), {count});
                T* out = y.data_as<T>();
                for (int64_t i = 0; i < count; ++i) {
                    if constexpr (kIsFloat<T>)
                        out[i] = static_cast<T>(first + static_cast<T>(i) * step);
                    else
                        out[i] = static_cast<T>(static_cast<__int128>(first) + static_cast<__int128>(i) * step);
                }
            } else {
                unsupported_dtype(node, start.dtype());
            }
        });
    }
};

class PadKernel final : public Kernel {
public:
    explicit PadKernel(const NodeInfo& node) : mode_(node.attr_string("mode", "constant")) {
        if (mode_ != "constant" && mode_ != "reflect" && mode_ != "edge" && mode_ != "wrap")
            node.fail(fmt::format(
                "attribute 'mode' must be \"constant\", \"reflect\", \"edge\" or \"wrap\", got \"{}\"", mode_));
        if (node.opset() < 11) {
            const char* name = node.opset() < 2 ? "paddings" : "pads";
            if (!node.has_attr(name)) node.fail(fmt::format("attribute '{}' is required", name));
            pads_ = node.attr_ints(name);
            value_ = node.attr_float("value", 0.0f);
        }
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        const int64_t rank = x.rank();
        std::vector<int64_t> pads = pads_;
        Tensor constant;
        std::vector<int64_t> axes;
        if (node.opset() >= 11) {
            const Tensor& pads_tensor = ctx.required_input(1);
            require_1d(node, pads_tensor, "pads");
            pads = read_ints(node, pads_tensor, "pads");
            if (const Tensor* value = ctx.input(2); value && value->defined() && mode_ == "constant") {
                require_scalar(node, *value, "constant_value");
                if (value->dtype() != x.dtype())
                    node.fail(fmt::format("constant_value has data type {}, but the input has {}",
                                          dtype_name(value->dtype()), dtype_name(x.dtype())));
                constant = *value;
            }
            if (auto given = optional_ints(ctx, 3, "axes")) axes = normalize_axes(node, *given, rank);
        } else if (x.dtype() != DataType::kString) {
            constant = Tensor::from_doubles(x.dtype(), {}, {value_});
        }
        if (axes.empty())
            for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
        if (pads.size() != 2 * axes.size())
            node.fail(fmt::format("pads {} must have {} entries (begin and end for {} axes)", ints_to_string(pads),
                                  2 * axes.size(), axes.size()));
        if (!constant.defined()) constant = Tensor(x.dtype(), {});

        // Per output dimension: which input index each output index reads, -1 for the constant.
        Shape out = x.shape();
        std::vector<std::vector<int64_t>> maps(rank);
        std::vector<int64_t> begins(rank, 0);
        for (std::size_t i = 0; i < axes.size(); ++i) {
            const int64_t axis = axes[i];
            begins[axis] = pads[i];
            out[axis] = checked_add(node, checked_add(node, x.shape()[axis], pads[i]), pads[i + axes.size()]);
            if (out[axis] < 0)
                node.fail(fmt::format("pads {} crop axis {} of the input {} below size 0", ints_to_string(pads), axis,
                                      shape_to_string(x.shape())));
        }
        for (int64_t d = 0; d < rank; ++d)
            if (x.shape()[d] == 0 && out[d] > 0 && mode_ != "constant")
                node.fail(fmt::format("mode '{}' cannot pad axis {} of size 0", mode_, d));
        Tensor y(x.dtype(), out);  // validates the size before the index maps are built
        if (y.numel() == 0) {
            ctx.set_output(0, std::move(y));
            return;
        }
        for (int64_t d = 0; d < rank; ++d) {
            maps[d].resize(out[d]);
            for (int64_t j = 0; j < out[d]; ++j) maps[d][j] = source_index(j - begins[d], x.shape()[d]);
        }
        const std::vector<int64_t> strides = contiguous_strides(x.shape());
        dispatch_storage(node, x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* in = storage<T>(x);
            const T fill = storage<T>(constant)[0];
            T* dst = storage<T>(y);
            if (rank == 0) {
                dst[0] = in[0];
                return;
            }
            const int64_t width = out.back();
            const std::vector<int64_t>& last = maps.back();
            Shape outer(out.begin(), out.end() - 1);
            for_each_index(outer, [&](int64_t row, const std::vector<int64_t>& index) {
                int64_t base = 0;
                bool inside = true;
                for (std::size_t d = 0; d < index.size(); ++d) {
                    const int64_t src = maps[d][index[d]];
                    if (src < 0) inside = false;
                    base += src * strides[d];
                }
                T* row_out = dst + row * width;
                for (int64_t j = 0; j < width; ++j) row_out[j] = inside && last[j] >= 0 ? in[base + last[j]] : fill;
            });
        });
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t source_index(int64_t i, int64_t dim) const {
        if (i >= 0 && i < dim) return i;
        if (mode_ == "constant" || dim == 0) return -1;
        if (mode_ == "edge") return i < 0 ? 0 : dim - 1;
        if (mode_ == "wrap") return ((i % dim) + dim) % dim;
        if (dim == 1) return 0;  // reflect
        const int64_t period = 2 * (dim - 1);
        int64_t m = ((i % period) + period) % period;
        return m >= dim ? period - m : m;
    }

    std::string mode_;
    std::vector<int64_t> pads_;
    float value_ = 0.0f;
};

class ConstantKernel final : public Kernel {
public:
    explicit ConstantKernel(const NodeInfo& node) {
        int set = 0;
        for (const auto& attr : node.proto().attribute()) {
            const std::string& name = attr.name();
            if (name == "sparse_value")
                unsupported(node, "sparse constants (attribute 'sparse_value') are not supported");
            ++set;
            if (name == "value") {
                value_ = *node.attr_tensor("value");
            } else if (name == "value_float") {
                value_ = Tensor::from_doubles(DataType::kFloat32, {}, {node.attr_float(name, 0)});
            } else if (name == "value_floats") {
                const auto values = node.attr_floats(name);
                value_ = Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(values.size())},
                                              std::vector<double>(values.begin(), values.end()));
            } else if (name == "value_int") {
                value_ = Tensor(DataType::kInt64, {});
                value_.data_as<int64_t>()[0] = node.attr_int(name, 0);
            } else if (name == "value_ints") {
                const auto values = node.attr_ints(name);
                value_ = Tensor(DataType::kInt64, {static_cast<int64_t>(values.size())});
                std::copy(values.begin(), values.end(), value_.data_as<int64_t>());
            } else if (name == "value_string") {
                value_ = Tensor(DataType::kString, {});
                value_.strings()[0] = node.attr_string(name, "");
            } else if (name == "value_strings") {
                if (attr.type() != onnx::AttributeProto::STRINGS)
                    node.fail("attribute 'value_strings' must be of type strings");
                value_ = Tensor(DataType::kString, {attr.strings_size()});
                for (int i = 0; i < attr.strings_size(); ++i) value_.strings()[i] = attr.strings(i);
            } else {
                --set;
            }
        }
        if (set != 1) node.fail(fmt::format("exactly one value attribute must be set, found {}", set));
    }

    void compute(KernelContext& ctx) const override { ctx.set_output(0, value_); }

private:
    Tensor value_;
};

class TriluKernel final : public Kernel {
public:
    explicit TriluKernel(const NodeInfo& node) : upper_(node.attr_int("upper", 1) != 0) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        if (x.rank() < 2)
            node.fail(fmt::format("input must have rank >= 2, but it has shape {}", shape_to_string(x.shape())));
        int64_t k = 0;
        if (const Tensor* k_tensor = ctx.input(1); k_tensor && k_tensor->defined()) {
            require_scalar(node, *k_tensor, "k");
            k = read_ints(node, *k_tensor, "k")[0];
        }
        Tensor y = x.clone();
        const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape().back();
        const int64_t matrices = rows * cols > 0 ? x.numel() / (rows * cols) : 0;
        dispatch_storage(node, x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            T* data = storage<T>(y);
            for (int64_t m = 0; m < matrices; ++m)
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < cols; ++j) {
                        const bool keep = upper_ ? j - i >= k : j - i <= k;
                        if (!keep) data[(m * rows + i) * cols + j] = T{};
                    }
        });
        ctx.set_output(0, std::move(y));
    }

private:
    bool upper_;
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

// ---------------------------------------------------------------------------------------------
// DepthToSpace / SpaceToDepth: a reshape, a transpose and a reshape, done as one strided copy.

class DepthToSpaceKernel final : public Kernel {
public:
    explicit DepthToSpaceKernel(const NodeInfo& node)
        : block_(node.attr_int("blocksize", 0)), crd_(node.opset() >= 11 && node.attr_string("mode", "DCR") == "CRD") {
        if (block_ < 1) node.fail(fmt::format("attribute 'blocksize' must be >= 1, got {}", block_));
        const std::string mode = node.opset() >= 11 ? node.attr_string("mode", "DCR") : "DCR";
        if (mode != "DCR" && mode != "CRD") node.fail(fmt::format("attribute 'mode' must be DCR or CRD, got {}", mode));
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        if (x.rank() != 4) node.fail(fmt::format("input must have rank 4, got shape {}", shape_to_string(x.shape())));
        const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3], b = block_;
        if (b > c) node.fail(fmt::format("blocksize ({}) is larger than the channels ({})", b, c));
        if (c % (b * b) != 0) node.fail(fmt::format("channels ({}) must be a multiple of blocksize^2 ({})", c, b * b));
        const int64_t c2 = c / (b * b);
        const int64_t hw = h * w;
        // Strides of the input viewed as (N, b1, b2, C', H, W) for DCR or (N, C', b1, b2, H, W) for CRD.
        const int64_t s_n = c * hw, s_h = w, s_w = 1;
        const int64_t s_c = crd_ ? b * b * hw : hw;
        const int64_t s_b1 = crd_ ? b * hw : b * c2 * hw;
        const int64_t s_b2 = crd_ ? hw : c2 * hw;
        const Shape view{n, c2, h, b, w, b};
        Tensor y(x.dtype(), {n, c2, h * b, w * b});
        strided_copy(x, 0, view, {s_n, s_c, s_h, s_b1, s_w, s_b2}, y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t block_;
    bool crd_;
};

class SpaceToDepthKernel final : public Kernel {
public:
    explicit SpaceToDepthKernel(const NodeInfo& node) : block_(node.attr_int("blocksize", 0)) {
        if (block_ < 1) node.fail(fmt::format("attribute 'blocksize' must be >= 1, got {}", block_));
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        if (x.rank() != 4) node.fail(fmt::format("input must have rank 4, got shape {}", shape_to_string(x.shape())));
        const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3], b = block_;
        if (h % b != 0 || w % b != 0)
            node.fail(fmt::format("height ({}) and width ({}) must be multiples of blocksize ({})", h, w, b));
        // Input viewed as (N, C, H', b1, W', b2); output order (N, b1, b2, C, H', W').
        const Shape view{n, b, b, c, h / b, w / b};
        Tensor y(x.dtype(), {n, checked_mul(node, c, checked_mul(node, b, b)), h / b, w / b});
        strided_copy(x, 0, view, {c * h * w, w, 1, h * w, b * w, b}, y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }

private:
    int64_t block_;
};

}  // namespace

void register_tensor_ops(OpRegistry& registry) {
    auto add = [&](const char* op, int since, KernelFactory factory, int until = kMaxOpset) {
        registry.add("", op, since, until, std::move(factory));
    };
    add("Constant", 1, make_factory<ConstantKernel>());
    add("Reshape", 1, make_factory<ReshapeKernel>());
    add("Flatten", 1, make_factory<FlattenKernel>());
    add("Transpose", 1, make_factory<TransposeKernel>());
    add("Concat", 1, make_factory<ConcatKernel>());
    add("Split", 1, make_factory<SplitKernel>());
    add("Slice", 1, make_factory<SliceKernel>());
    add("Gather", 1, make_factory<GatherKernel>());
    add("GatherElements", 11, make_factory<GatherElementsKernel>());
    add("GatherND", 11, make_factory<GatherNDKernel>());
    add("Squeeze", 1, make_factory<SqueezeKernel>());
    add("Unsqueeze", 1, make_factory<UnsqueezeKernel>());
    add("Shape", 1, make_factory<ShapeKernel>());
    add("Size", 1, make_factory<SizeKernel>());
    add("ConstantOfShape", 9, make_factory<ConstantOfShapeKernel>());
    add("Expand", 8, make_factory<ExpandKernel>());
    add("Tile", 1, make_factory<TileKernel>());
    add("Range", 11, make_factory<RangeKernel>());
    add("Pad", 1, make_factory<PadKernel>());
    add("Trilu", 14, make_factory<TriluKernel>());
    add("OneHot", 9, make_factory<OneHotKernel>());
    add("NonZero", 9, make_factory<NonZeroKernel>());
    add("ScatterND", 11, make_factory<ScatterNDKernel>());
    add("ScatterElements", 11, make_factory<ScatterElementsKernel>());
    add("Scatter", 9, make_factory<ScatterElementsKernel>(), 10);  // removed in opset 11
    add("DepthToSpace", 1, make_factory<DepthToSpaceKernel>());
    add("SpaceToDepth", 1, make_factory<SpaceToDepthKernel>());
}

}  // namespace polygraphy::ref
