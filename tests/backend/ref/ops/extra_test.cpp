// Bitwise, activation and generator operators (src/backend/ref/ops/extra.cpp), with numpy expressions.
#include <cmath>

#include "../ref_test_util.h"

namespace polygraphy::ref {
namespace {

using testing::f32;
using testing::i32;
using testing::i64;
using testing::OpTester;
using testing::tensors_near;

TEST(ExtraOps, BitwiseBroadcastsAndNot) {
    // np.bitwise_and(np.int32([[12], [10]]), np.int32([6, 3])) = [[4, 0], [2, 2]]
    EXPECT_TRUE(tensors_near(OpTester("BitwiseAnd", 18).input(i32({2, 1}, {12, 10})).input(i32({2}, {6, 3})).run(),
                             i32({2, 2}, {4, 0, 2, 2})));
    // np.bitwise_xor(12, 10) = 6, np.bitwise_or(12, 10) = 14
    EXPECT_TRUE(tensors_near(OpTester("BitwiseXor", 18).input(i64({1}, {12})).input(i64({1}, {10})).run(), i64({1}, {6})));
    EXPECT_TRUE(tensors_near(OpTester("BitwiseOr", 18).input(i64({1}, {12})).input(i64({1}, {10})).run(), i64({1}, {14})));
    // ~np.int32([0, 5]) = [-1, -6]
    EXPECT_TRUE(tensors_near(OpTester("BitwiseNot", 18).input(i32({2}, {0, 5})).run(), i32({2}, {-1, -6})));
    EXPECT_THROW_MESSAGE(OpTester("BitwiseAnd", 18).input(f32({1}, {1})).input(f32({1}, {1})).run(), UnsupportedError,
                         "float32 is not supported");
}

TEST(ExtraOps, Activations) {
    // 0.5 * x * (1 + erf(x / sqrt(2))) and the tanh form, at x = 1
    EXPECT_TRUE(tensors_near(OpTester("Gelu", 20).input(f32({1}, {1})).run(), f32({1}, {0.841344746})));
    EXPECT_TRUE(tensors_near(OpTester("Gelu", 20).input(f32({1}, {1})).attr("approximate", "tanh").run(),
                             f32({1}, {0.841191990})));
    // x * np.tanh(np.log1p(np.exp(x))) at x = 1: 0.865098388
    EXPECT_TRUE(tensors_near(OpTester("Mish", 18).input(f32({1}, {1})).run(), f32({1}, {0.865098388})));
    // celu(-1, alpha=2) = 2 * (np.exp(-0.5) - 1) = -0.786938681
    EXPECT_TRUE(tensors_near(OpTester("Celu", 12).input(f32({2}, {-1, 3})).attr("alpha", 2.0).run(),
                             f32({2}, {-0.786938681, 3})));
    // np.where(x > 1.5, x, 0)
    EXPECT_TRUE(tensors_near(OpTester("ThresholdedRelu", 10).input(f32({3}, {1, 1.5, 2})).attr("alpha", 1.5).run(),
                             f32({3}, {0, 0, 2})));
    EXPECT_THROW_MESSAGE(OpTester("Gelu", 20).input(f32({1}, {1})).attr("approximate", "fast").run(), ModelError,
                         "attribute 'approximate' must be 'none' or 'tanh', but it is 'fast'");
}

TEST(ExtraOps, WindowsAndEyeLike) {
    // periodic Hann: 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(4) / 4)
    EXPECT_TRUE(tensors_near(OpTester("HannWindow", 17).input(i64({}, {4})).run(), f32({4}, {0, 0.5, 1, 0.5})));
    // symmetric Hamming: 25/46 - 21/46 * np.cos(2 * np.pi * np.arange(3) / 2)
    EXPECT_TRUE(tensors_near(OpTester("HammingWindow", 17).input(i64({}, {3})).attr("periodic", 0).run(),
                             f32({3}, {4.0 / 46, 1, 4.0 / 46})));
    // np.eye(2, 3, k=1)
    EXPECT_TRUE(tensors_near(OpTester("EyeLike", 9).input(f32({2, 3}, {5, 5, 5, 5, 5, 5})).attr("k", 1).run(),
                             f32({2, 3}, {0, 1, 0, 0, 0, 1})));
}

TEST(ExtraOps, CompressAndReverseSequence) {
    const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    // np.compress([False, True, True], x, axis=0) = [[3, 4], [5, 6]]
    EXPECT_TRUE(tensors_near(
        OpTester("Compress", 11).input(x).input(testing::boolean({3}, {0, 1, 1})).attr("axis", 0).run(),
        f32({2, 2}, {3, 4, 5, 6})));
    // np.compress([True, False, True], x) (flattened) = [1, 3]
    EXPECT_TRUE(tensors_near(OpTester("Compress", 11).input(x).input(testing::boolean({3}, {1, 0, 1})).run(),
                             f32({2}, {1, 3})));
    EXPECT_THROW_MESSAGE(
        OpTester("Compress", 11).input(x).input(testing::boolean({4}, {1, 0, 1, 1})).attr("axis", 0).run(), ModelError,
        "condition has 4 elements, more than the 3 of the selected axis");
    // time_axis 0, batch_axis 1, lens [3, 1]: column 0 reversed fully, column 1 unchanged
    EXPECT_TRUE(tensors_near(OpTester("ReverseSequence", 10).input(x).input(i64({2}, {3, 1})).run(),
                             f32({3, 2}, {5, 2, 3, 4, 1, 6})));
    EXPECT_THROW_MESSAGE(OpTester("ReverseSequence", 10).input(x).input(i64({2}, {3, 1})).attr("batch_axis", 0).run(),
                         ModelError, "attributes 'batch_axis' and 'time_axis' must be 0 and 1 in some order");
}

TEST(ExtraOps, CenterCropPad) {
    // crop axis 0 from 3 to 1 (row 1), pad axis 1 from 2 to 4 (one zero each side):
    // np.pad(x[1:2], ((0, 0), (1, 1)))
    EXPECT_TRUE(tensors_near(
        OpTester("CenterCropPad", 18).input(f32({3, 2}, {1, 2, 3, 4, 5, 6})).input(i64({2}, {1, 4})).run(),
        f32({1, 4}, {0, 3, 4, 0})));
    EXPECT_THROW_MESSAGE(
        OpTester("CenterCropPad", 18).input(f32({3, 2}, {1, 2, 3, 4, 5, 6})).input(i64({1}, {1})).run(), ModelError,
        "shape must have 2 elements, but it has 1");
}

}  // namespace
}  // namespace polygraphy::ref
