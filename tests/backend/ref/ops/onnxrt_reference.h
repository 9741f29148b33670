// ONNX Runtime as the reference of the built-in runtime's contrib operators (issue 35): a model built
// in code runs on both backends with the same feed, and every output must agree.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "../../onnxrt/onnxrt_test_util.h"
#include "model_builder.h"
#include "op_test_util.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::testing {

/// Runs `builder`'s model on the built-in runtime and on ONNX Runtime's CPU provider and expects
/// every output of the same dtype and shape, within `atol` + `rtol` * |expected| of ONNX Runtime's.
inline void expect_matches_onnxrt(const ModelBuilder& builder, const TensorMap& feed, double rtol = 1e-5,
                                  double atol = 1e-6) {
    const OnnxModel model = builder.build();
    ref::SessionOptions options;
    options.num_threads = 1;
    const TensorMap ours = ref::Session(*model, options).run(feed);
    const TensorMap theirs = onnxrt::session_from_onnx(*model)->run(feed);
    ASSERT_EQ(ours.size(), theirs.size());
    for (const auto& [name, expected] : theirs) {
        SCOPED_TRACE("output " + name);
        ASSERT_TRUE(ours.contains(name));
        const Tensor& actual = ours.at(name);
        EXPECT_EQ(actual.dtype(), expected.dtype());
        expect_close(actual, expected, rtol, atol);
    }
}

}  // namespace polygraphy::testing
