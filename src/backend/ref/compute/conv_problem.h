// One convolution's sizes for one input shape, as every implementation (conv_reference.h,
// conv_direct.h, conv_dnnl.h, blocked_conv.h) takes them from the Conv and ConvTranspose kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/ref/compute/window_util.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::ref::conv {

using window::Geometry;

inline int64_t product(const std::vector<int64_t>& values) {
    int64_t result = 1;
    for (int64_t v : values) result *= v;
    return result;
}

/// Everything a convolution needs besides the data, for one input shape.
struct ConvProblem {
    bool transpose = false;
    int64_t batch = 0;
    int64_t in_channels = 0;   ///< C
    int64_t out_channels = 0;  ///< M
    int64_t group = 1;
    Geometry geometry;
    std::vector<int64_t> output_padding;  ///< ConvTranspose only (all zero for Conv)
    Shape output_shape;

    /// X's shape as NCHW (however the graph holds X).
    Shape input_shape() const {
        Shape shape = {batch, in_channels};
        shape.insert(shape.end(), geometry.input.begin(), geometry.input.end());
        return shape;
    }
};

}  // namespace polygraphy::ref::conv
