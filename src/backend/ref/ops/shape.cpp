// Shape operators: Reshape, Flatten, Squeeze, Unsqueeze, Expand, DepthToSpace, SpaceToDepth (which
// change how elements are arranged, not their values), and Shape and Size (which read a shape).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

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

void register_shape_ops(OpRegistry& registry) {
    registry.add("", "Reshape", 1, kMaxOpset, make_factory<ReshapeKernel>());
    registry.add("", "Flatten", 1, kMaxOpset, make_factory<FlattenKernel>());
    registry.add("", "Squeeze", 1, kMaxOpset, make_factory<SqueezeKernel>());
    registry.add("", "Unsqueeze", 1, kMaxOpset, make_factory<UnsqueezeKernel>());
    registry.add("", "Shape", 1, kMaxOpset, make_factory<ShapeKernel>());
    registry.add("", "Size", 1, kMaxOpset, make_factory<SizeKernel>());
    registry.add("", "Expand", 8, kMaxOpset, make_factory<ExpandKernel>());
    registry.add("", "DepthToSpace", 1, kMaxOpset, make_factory<DepthToSpaceKernel>());
    registry.add("", "SpaceToDepth", 1, kMaxOpset, make_factory<SpaceToDepthKernel>());
}

}  // namespace polygraphy::ref
