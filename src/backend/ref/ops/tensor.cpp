// Tensor (data movement) operators: Identity, Transpose, Concat, Split, Slice, Pad, CenterCropPad,
// Tile, Trilu, ReverseSequence. They work on every dtype (strings included).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

class IdentityKernel final : public Kernel {
public:
    explicit IdentityKernel(const NodeInfo&) {}
    // Any value: tensors, sequences (opset 14+) and optionals (opset 16+) pass through.
    void compute(KernelContext& ctx) const override {
        Value value = ctx.input_value(0);
        if (!value.defined()) ctx.node().fail("required input 0 is missing");
        ctx.set_output_value(0, std::move(value));
    }
};

/// y = x read through `strides` (the input stride of each output dim), for a permutation that moves
/// the input's contiguous dim (`contiguous`, stride 1) away from the output's last dim: copied in
/// square tiles of those two dims, so that reads and writes both stay within a few cache lines per
/// tile, where a row-by-row copy reads a new cache line for every element (vit_b_16's key
/// transposes, perm (1, 2, 0), are the case that showed it; BENCHMARKS.md).
template <typename T>
void tiled_transpose(const T* x, const Shape& out, const std::vector<int64_t>& strides, std::size_t contiguous, T* y,
                     int threads) {
    constexpr int64_t kTile = 16;
    const std::size_t last = out.size() - 1;
    const std::vector<int64_t> out_strides = contiguous_strides(out);
    std::vector<std::size_t> outer_dims;
    for (std::size_t d = 0; d < last; ++d)
        if (d != contiguous) outer_dims.push_back(d);
    int64_t outer = 1;
    for (std::size_t d : outer_dims) outer *= out[d];
    const int64_t rows = out[contiguous], cols = out[last];
    const int64_t row_tiles = (rows + kTile - 1) / kTile;
    const int64_t tasks = outer * row_tiles;
    const int64_t col_stride = strides[last], row_out_stride = out_strides[contiguous];
    const bool parallel = threads > 1 && outer * rows * cols >= kParallelThreshold && tasks > 1;
    for_each_index(tasks, parallel, threads, [&](int64_t task) {
        int64_t rest = task / row_tiles;
        int64_t src = 0, dst = 0;
        for (std::size_t i = outer_dims.size(); i-- > 0;) {
            const std::size_t d = outer_dims[i];
            const int64_t index = rest % out[d];
            rest /= out[d];
            src += index * strides[d];
            dst += index * out_strides[d];
        }
        const int64_t row_begin = (task % row_tiles) * kTile;
        const int64_t row_end = std::min(rows, row_begin + kTile);
        for (int64_t col_begin = 0; col_begin < cols; col_begin += kTile) {
            const int64_t col_end = std::min(cols, col_begin + kTile);
            for (int64_t r = row_begin; r < row_end; ++r) {
                const T* from = x + src + r;  // stride 1 along rows
                T* to = y + dst + r * row_out_stride;
                for (int64_t c = col_begin; c < col_end; ++c) to[c] = from[c * col_stride];
            }
        }
    });
}

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
        Tensor y = Tensor::uninitialized(x.dtype(), out);  // the copy writes every element
        // The output dim that reads the input's contiguous dim (the last one, stride 1).
        const std::size_t contiguous = static_cast<std::size_t>(
            std::find(perm.begin(), perm.end(), static_cast<int64_t>(rank) - 1) - perm.begin());
        const bool tiled = rank >= 2 && contiguous != rank - 1 && out[contiguous] > 1 && out[rank - 1] > 1 &&
                           x.dtype() != DataType::kString && dispatch_size(dtype_size(x.dtype()), [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               tiled_transpose(static_cast<const T*>(x.data()), out, strides, contiguous,
                                               static_cast<T*>(y.data()), ctx.num_threads());
                           });
        if (!tiled) strided_copy(x, 0, out, strides, y, 0, ctx.num_threads());
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
        const int64_t outer = product(out, 0, axis), inner = product(out, axis + 1, out.size());
        const int64_t out_row = out[axis] * inner;
        if (inputs_in_place(ctx, out, outer)) {
            ctx.set_output(0, *ctx.offered_output(0));
            return;
        }
        Tensor y = Tensor::uninitialized(first.dtype(), out);  // the inputs tile it
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
    /// Whether the session offered an output of this dtype and shape that its producers already
    /// filled: each input is the slice of it that the input would be copied to (one slice each, so
    /// the dims before the axis must be 1).
    static bool inputs_in_place(const KernelContext& ctx, const Shape& out, int64_t outer) {
        const Tensor* offered = ctx.offered_output(0);
        const Tensor& first = *ctx.input(0);
        if (offered == nullptr || offered->dtype() != first.dtype() || offered->shape() != out || outer != 1 ||
            first.dtype() == DataType::kString)
            return false;
        const auto* at = static_cast<const uint8_t*>(offered->data());
        for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
            const Tensor& input = *ctx.input(i);
            if (input.numel() > 0 && input.data() != at) return false;
            at += input.nbytes();
        }
        return true;
    }

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
            Tensor y = Tensor::uninitialized(x.dtype(), shape);  // every row is copied
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
        Tensor y = Tensor::uninitialized(x.dtype(), out);  // the copy writes every element
        if (y.numel() > 0) strided_copy(x, offset, out, strides, y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }

private:
    std::vector<int64_t> starts_, ends_;
    std::optional<std::vector<int64_t>> axes_;
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

class CenterCropPadKernel final : public Kernel {
public:
    explicit CenterCropPadKernel(const NodeInfo& node) : axes_(node.attr_ints("axes")) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const std::vector<int64_t> target = read_ints(node, context.required_input(1), "shape");
        const int64_t rank = x.rank();
        std::vector<int64_t> axes;
        if (axes_.empty())
            for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
        else
            axes = normalize_axes(node, axes_, rank);
        if (target.size() != axes.size())
            node.fail("shape must have " + std::to_string(axes.size()) + " elements, but it has " +
                      std::to_string(target.size()));
        Shape out_shape = x.shape();
        for (std::size_t i = 0; i < axes.size(); ++i) {
            if (target[i] < 0) node.fail("shape must be non-negative, but it has " + std::to_string(target[i]));
            out_shape[static_cast<std::size_t>(axes[i])] = target[i];
        }
        Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
        // Copy the overlap: cropped axes start (in - out) / 2 into x, padded axes (out - in) / 2 into y.
        const std::size_t r = static_cast<std::size_t>(rank);
        std::vector<int64_t> region(r), src_start(r), dst_start(r);
        for (std::size_t d = 0; d < r; ++d) {
            const int64_t in = x.shape()[d], out = out_shape[d];
            region[d] = std::min(in, out);
            src_start[d] = in > out ? (in - out) / 2 : 0;
            dst_start[d] = out > in ? (out - in) / 2 : 0;
        }
        if (rank == 0) {
            copy_elements(x, 0, y, 0, 1);
            return;
        }
        for (int64_t v : region)
            if (v == 0) return;
        const std::vector<int64_t> src_strides = contiguous_strides(x.shape()),
                                   dst_strides = contiguous_strides(out_shape);
        std::vector<int64_t> index(r, 0);
        while (true) {
            int64_t src = 0, dst = 0;
            for (std::size_t d = 0; d < r; ++d) {
                src += (src_start[d] + index[d]) * src_strides[d];
                dst += (dst_start[d] + index[d]) * dst_strides[d];
            }
            copy_elements(x, src, y, dst, region[r - 1]);
            std::size_t d = r - 1;
            while (d-- > 0) {
                if (++index[d] < region[d]) break;
                index[d] = 0;
            }
            if (d == static_cast<std::size_t>(-1)) break;
        }
    }

private:
    std::vector<int64_t> axes_;
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
        Tensor y = Tensor::uninitialized(x.dtype(), out);  // the copy writes every element
        strided_copy(x, 0, view, strides, y, 0, ctx.num_threads());
        ctx.set_output(0, std::move(y));
    }
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

class ReverseSequenceKernel final : public Kernel {
public:
    explicit ReverseSequenceKernel(const NodeInfo& node)
        : batch_axis_(node.attr_int("batch_axis", 1)), time_axis_(node.attr_int("time_axis", 0)) {
        if (!((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0)))
            node.fail("attributes 'batch_axis' and 'time_axis' must be 0 and 1 in some order, but they are " +
                      std::to_string(batch_axis_) + " and " + std::to_string(time_axis_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        if (x.rank() < 2) node.fail("input must have rank >= 2, but it has shape " + shape_to_string(x.shape()));
        const std::vector<int64_t> lens = read_ints(node, context.required_input(1), "sequence_lens");
        const int64_t batch = x.shape()[static_cast<std::size_t>(batch_axis_)];
        const int64_t time = x.shape()[static_cast<std::size_t>(time_axis_)];
        if (static_cast<int64_t>(lens.size()) != batch)
            node.fail("sequence_lens must have " + std::to_string(batch) + " elements, but it has " +
                      std::to_string(lens.size()));
        int64_t inner = 1;
        for (int64_t d = 2; d < x.rank(); ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
        Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t len = lens[static_cast<std::size_t>(b)];
            if (len < 0 || len > time)
                node.fail("sequence length " + std::to_string(len) + " is out of range [0, " + std::to_string(time) +
                          "]");
            for (int64_t t = 0; t < time; ++t) {
                const int64_t source = t < len ? len - 1 - t : t;
                auto offset = [&](int64_t tt) { return (time_axis_ == 0 ? tt * batch + b : b * time + tt) * inner; };
                copy_elements(x, offset(source), y, offset(t), inner);
            }
        }
    }

private:
    int64_t batch_axis_;
    int64_t time_axis_;
};

}  // namespace

void register_tensor_ops(OpRegistry& registry) {
    registry.add("", "Identity", 1, kMaxOpset, make_factory<IdentityKernel>());
    registry.add("", "Transpose", 1, kMaxOpset, make_factory<TransposeKernel>());
    registry.add("", "Concat", 1, kMaxOpset, make_factory<ConcatKernel>());
    registry.add("", "Split", 1, kMaxOpset, make_factory<SplitKernel>());
    registry.add("", "Slice", 1, kMaxOpset, make_factory<SliceKernel>());
    registry.add("", "Pad", 1, kMaxOpset, make_factory<PadKernel>());
    registry.add("", "CenterCropPad", 18, kMaxOpset, make_factory<CenterCropPadKernel>());
    registry.add("", "Tile", 1, kMaxOpset, make_factory<TileKernel>());
    registry.add("", "Trilu", 14, kMaxOpset, make_factory<TriluKernel>());
    registry.add("", "ReverseSequence", 10, kMaxOpset, make_factory<ReverseSequenceKernel>());
}

}  // namespace polygraphy::ref
