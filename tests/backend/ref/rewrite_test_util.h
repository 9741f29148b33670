// Helpers of the tests of the runtime's graph rewrites for speed (fusion_test.cpp,
// blocked_layout_test.cpp): small models and sessions run folded and as written.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::ref::rewrite_testing {

using polygraphy::testing::ModelBuilder;
using polygraphy::testing::random_tensor;
using polygraphy::testing::set_attr;
using Names = std::vector<std::string>;

// Between two convolutions of 8-channel multiples the activation stays channel-blocked
// (blocked_layout.h), and oneDNN's blocked kernels sum in another order than its NCHW GEMM: results
// differ by a few units in the last place, more where a sum cancels. The values of these tests
// reach ~10-100 (an ulp of 64 is 7.6e-6), so the bound is 1e-4.
constexpr double kBlockedLayoutTolerance = 1e-4;

// x(1,4,8,8) -> Conv 3x3 (8 channels, pads 1) -> "c"; the caller adds what reads c.
inline ModelBuilder conv_model(int64_t opset = 17) {
    ModelBuilder builder(opset);
    builder.input("x", DataType::kFloat32, Shape{1, 4, 8, 8});
    builder.initializer("w", random_tensor({8, 4, 3, 3}, 1));
    builder.initializer("b", random_tensor({8}, 2));
    set_attr(builder.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
    return builder;
}

inline Tensor scalar(float value) {
    return Tensor::from_doubles(DataType::kFloat32, {}, {value});
}

// `channel_block`: SessionOptions::max_channel_block (0: the CPU's widest).
inline SessionOptions with_fusion(bool fuse, int channel_block = 0) {
    SessionOptions options;
    options.num_threads = 1;
    options.fuse_activations = fuse;
    options.max_channel_block = channel_block;
    return options;
}

// Runs the model folded and as written on `feed`; returns the folded session's execution order
// after checking that both give `output` (of any float type) within `tolerance` (0: bit-identical).
// The folded model runs with blocked layouts of at most 8 and of at most 16 channels, whatever this
// CPU's widest block is.
inline Names expect_same_values_on(const ModelBuilder& builder, const std::string& output, double tolerance,
                                   const TensorMap& feed) {
    const OnnxModel model = builder.build();
    const Session written(*model, with_fusion(false));
    const Tensor b0 = written.run(feed).at(output);
    const Tensor b = b0.cast(DataType::kFloat64);
    std::optional<Names> order;
    for (const int block : {8, 16}) {
        const Session folded(*model, with_fusion(true, block));
        const Tensor a0 = folded.run(feed).at(output);
        EXPECT_EQ(a0.dtype(), b0.dtype());
        EXPECT_EQ(a0.shape(), b0.shape());
        const Tensor a = a0.cast(DataType::kFloat64);
        for (int64_t i = 0; i < a.numel(); ++i)
            EXPECT_NEAR(a.data_as<double>()[i], b.data_as<double>()[i], tolerance)
                << output << "[" << i << "], blocks of at most " << block;
        if (order) {
            EXPECT_EQ(folded.execution_order(), *order) << "blocks of at most " << block;
        }
        order = folded.execution_order();
    }
    std::size_t runnable = 0;  // Constant nodes are evaluated while preparing, so they never run
    for (const auto& node : model->graph().node()) runnable += node.op_type() != "Constant";
    EXPECT_EQ(written.execution_order().size(), runnable);
    return *order;
}

// expect_same_values_on() with an input x of `x_shape` only.
inline Names expect_same_values(const ModelBuilder& builder, const std::string& output, double tolerance = 0.0,
                                const Shape& x_shape = {1, 4, 8, 8}) {
    return expect_same_values_on(builder, output, tolerance, {{"x", random_tensor(x_shape, 3, -2.0f, 2.0f)}});
}

}  // namespace polygraphy::ref::rewrite_testing
