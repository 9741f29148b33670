// Scattering windows back into images: Col2Im (opset 18) and MaxUnpool (opset 9/11).
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/ops/families.h"
#include "backend/ref/ops/kernel_util.h"

namespace polygraphy::ref {
namespace {

std::vector<int64_t> ints_or(const NodeInfo& node, std::string_view name, std::size_t count, int64_t fallback,
                             bool positive) {
    std::vector<int64_t> values = node.attr_ints(name);
    if (values.empty()) return std::vector<int64_t>(count, fallback);
    if (values.size() != count)
        node.fail(fmt::format("attribute '{}' must have {} values, but it has {}", name, count, values.size()));
    for (int64_t value : values)
        if (positive ? value <= 0 : value < 0)
            node.fail(fmt::format("attribute '{}' values must be {}, but one is {}", name,
                                  positive ? "positive" : "non-negative", value));
    return values;
}

class Col2ImKernel final : public Kernel {
public:
    explicit Col2ImKernel(const NodeInfo&) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        const std::vector<int64_t> image = read_ints(node, context.required_input(1), "image_shape");
        const std::vector<int64_t> block = read_ints(node, context.required_input(2), "block_shape");
        if (x0.dtype() == DataType::kString || x0.dtype() == DataType::kBool) unsupported_dtype(node, x0.dtype());
        const std::size_t rank = image.size();
        if (rank == 0 || block.size() != rank)
            node.fail(
                fmt::format("image_shape and block_shape must have the same non-zero length, but they have {} "
                            "and {}",
                            rank, block.size()));
        const std::vector<int64_t> dilations = ints_or(node, "dilations", rank, 1, true);
        const std::vector<int64_t> strides = ints_or(node, "strides", rank, 1, true);
        const std::vector<int64_t> pads = ints_or(node, "pads", 2 * rank, 0, false);
        if (x0.rank() != 3)
            node.fail(fmt::format("input must have shape [N, C * prod(block_shape), L], but it has shape {}",
                                  shape_to_string(x0.shape())));
        int64_t kernel_points = 1, image_points = 1, blocks_total = 1;
        std::vector<int64_t> blocks(rank);
        for (std::size_t d = 0; d < rank; ++d) {
            if (image[d] <= 0 || block[d] <= 0)
                node.fail(fmt::format("image_shape and block_shape values must be positive, but they are {} and {}",
                                      image[d], block[d]));
            kernel_points *= block[d];
            image_points *= image[d];
            const int64_t extent = image[d] + pads[d] + pads[rank + d] - (dilations[d] * (block[d] - 1) + 1);
            if (extent < 0)
                node.fail(fmt::format("block {} with dilation {} does not fit the padded image dim {}", block[d],
                                      dilations[d], image[d] + pads[d] + pads[rank + d]));
            blocks[d] = extent / strides[d] + 1;
            blocks_total *= blocks[d];
        }
        const int64_t batch = x0.shape()[0];
        if (x0.shape()[1] % kernel_points != 0 || x0.shape()[2] != blocks_total)
            node.fail(fmt::format("input of shape {} does not match {} kernel points per channel and {} blocks",
                                  shape_to_string(x0.shape()), kernel_points, blocks_total));
        const int64_t channels = x0.shape()[1] / kernel_points;
        const Tensor x = x0.cast(DataType::kFloat64);
        Shape out_shape{batch, channels};
        out_shape.insert(out_shape.end(), image.begin(), image.end());
        Tensor y(DataType::kFloat64, out_shape);
        std::vector<int64_t> kernel_index(rank), block_index(rank);
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t k = 0; k < kernel_points; ++k) {
                    int64_t rest = k;
                    for (std::size_t d = rank; d-- > 0;) {
                        kernel_index[d] = rest % block[d];
                        rest /= block[d];
                    }
                    for (int64_t l = 0; l < blocks_total; ++l) {
                        rest = l;
                        for (std::size_t d = rank; d-- > 0;) {
                            block_index[d] = rest % blocks[d];
                            rest /= blocks[d];
                        }
                        int64_t offset = 0;
                        bool inside = true;
                        for (std::size_t d = 0; d < rank && inside; ++d) {
                            const int64_t position =
                                block_index[d] * strides[d] - pads[d] + kernel_index[d] * dilations[d];
                            inside = position >= 0 && position < image[d];
                            offset = offset * image[d] + position;
                        }
                        if (!inside) continue;
                        y.data_as<double>()[(n * channels + c) * image_points + offset] +=
                            x.data_as<double>()[((n * channels + c) * kernel_points + k) * blocks_total + l];
                    }
                }
        context.set_output(0, y.cast(x0.dtype()));
    }
};

class MaxUnpoolKernel final : public Kernel {
public:
    explicit MaxUnpoolKernel(const NodeInfo& node) : kernel_(node.attr_ints("kernel_shape")) {
        if (kernel_.empty()) node.fail("attribute 'kernel_shape' is required");
        for (int64_t k : kernel_)
            if (k <= 0) node.fail(fmt::format("attribute 'kernel_shape' values must be positive, but one is {}", k));
        strides_ = ints_or(node, "strides", kernel_.size(), 1, true);
        pads_ = ints_or(node, "pads", 2 * kernel_.size(), 0, false);
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& indices = context.required_input(1);
        const std::size_t rank = kernel_.size();
        if (x.rank() != static_cast<int64_t>(rank) + 2)
            node.fail(fmt::format("input X must have rank {} (kernel_shape has {} values), but it has shape {}",
                                  rank + 2, rank, shape_to_string(x.shape())));
        if (indices.shape() != x.shape())
            node.fail(fmt::format("input I must have the shape of X {}, but it has shape {}",
                                  shape_to_string(x.shape()), shape_to_string(indices.shape())));
        Shape out_shape{x.shape()[0], x.shape()[1]};
        for (std::size_t d = 0; d < rank; ++d)
            out_shape.push_back((x.shape()[d + 2] - 1) * strides_[d] - (pads_[d] + pads_[rank + d]) + kernel_[d]);
        // Indices address the default (inferred) output; a larger output_shape keeps their coordinates
        // (the extra rows and columns stay zero), as ONNX Runtime and the test data do.
        const Shape inferred = out_shape;
        if (const Tensor* given = context.input(2); given && given->defined()) {
            const std::vector<int64_t> shape = read_ints(node, *given, "output_shape");
            if (shape.size() != out_shape.size())
                node.fail(
                    fmt::format("output_shape must have {} values, but it has {}", out_shape.size(), shape.size()));
            for (std::size_t d = 0; d < shape.size(); ++d)
                if (shape[d] < inferred[d])
                    node.fail(fmt::format("output_shape {} is smaller than the unpooled shape {}",
                                          shape_to_string(Shape(shape.begin(), shape.end())),
                                          shape_to_string(inferred)));
            out_shape.assign(shape.begin(), shape.end());
        }
        Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
        std::vector<int64_t> where = read_ints(node, indices, "I");
        const int64_t inferred_count = shape_volume(inferred);
        if (out_shape != inferred) {
            for (int64_t& flat : where) {
                if (flat < 0 || flat >= inferred_count) continue;  // reported below
                int64_t rest = flat, mapped = 0, stride = 1;
                for (std::size_t d = inferred.size(); d-- > 0;) {
                    mapped += (rest % inferred[d]) * stride;
                    rest /= inferred[d];
                    stride *= out_shape[d];
                }
                flat = mapped;
            }
        }
        const std::size_t element = dtype_size(x.dtype());
        if (element == 0) unsupported_dtype(node, x.dtype());
        for (int64_t i = 0; i < x.numel(); ++i) {
            if (where[i] < 0 || where[i] >= y.numel())
                node.fail(
                    fmt::format("index {} in I is out of range for an output of {} elements", where[i], y.numel()));
            std::memcpy(static_cast<unsigned char*>(y.data()) + where[i] * element,
                        static_cast<const unsigned char*>(x.data()) + i * element, element);
        }
    }

private:
    std::vector<int64_t> kernel_, strides_, pads_;
};

}  // namespace

void register_col2im_ops(OpRegistry& registry) {
    registry.add("", "Col2Im", 18, kMaxOpset, make_factory<Col2ImKernel>());
    registry.add("", "MaxUnpool", 9, kMaxOpset, make_factory<MaxUnpoolKernel>());
}

}  // namespace polygraphy::ref
