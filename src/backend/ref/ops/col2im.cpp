// Col2Im (opset 18): sums sliding blocks (columns) back into an image, the inverse of im2col.
// (MaxUnpool, which scatters pooled values back, is in pool.cpp.)
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/window_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

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
        const std::vector<int64_t> dilations = window::ints_or(node, "dilations", rank, 1, true);
        const std::vector<int64_t> strides = window::ints_or(node, "strides", rank, 1, true);
        const std::vector<int64_t> pads = window::ints_or(node, "pads", 2 * rank, 0, false);
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

}  // namespace

void register_col2im_ops(OpRegistry& registry) {
    registry.add("", "Col2Im", 18, kMaxOpset, make_factory<Col2ImKernel>());
}

}  // namespace polygraphy::ref
