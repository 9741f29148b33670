// Sorting and scanning operators (src/backend/ref/ops/sort.cpp), with the numpy expressions.
#include "op_test_util.h"

namespace polygraphy::ref {
namespace {

using testing::f32;
using testing::i32;
using testing::i64;
using testing::OpTester;
using testing::tensors_near;

TEST(SortOps, TopKLargestAndSmallestKeepLowerIndexOnTies) {
    const Tensor x = f32({2, 4}, {3, 1, 2, 3, 0, 5, 5, -1});
    // np.argsort(-x, kind='stable')[:, :2] -> [[0, 3], [1, 2]]
    auto largest = OpTester("TopK", 11).input(x).constant(i64({1}, {2})).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(largest[0], f32({2, 2}, {3, 3, 5, 5})));
    EXPECT_TRUE(tensors_near(largest[1], i64({2, 2}, {0, 3, 1, 2})));
    // TopK-1 takes k as an attribute: x.max(axis=0, keepdims=True), x.argmax(axis=0) = [[0, 1, 1, 0]]
    auto top1 = OpTester("TopK", 1).input(x).attr("k", 1).attr("axis", 0).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(top1[0], f32({1, 4}, {3, 5, 5, 3})));
    EXPECT_TRUE(tensors_near(top1[1], i64({1, 4}, {0, 1, 1, 0})));
}

TEST(SortOps, TopKSmallest) {
    const Tensor x = f32({2, 4}, {3, 1, 2, 3, 0, 5, 5, -1});
    // np.sort(x, axis=0)[:1] = [[0, 1, 2, -1]], np.argsort(x, axis=0, kind='stable')[:1] = [[1, 0, 0, 1]]
    auto smallest = OpTester("TopK", 11).input(x).constant(i64({1}, {1})).attr("axis", 0).attr("largest", 0).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(smallest[0], f32({1, 4}, {0, 1, 2, -1})));
    EXPECT_TRUE(tensors_near(smallest[1], i64({1, 4}, {1, 0, 0, 1})));
    EXPECT_THROW_MESSAGE(OpTester("TopK", 11).input(x).constant(i64({1}, {5})).outputs(2).run_all(), ModelError,
                         "K = 5 is out of range for axis 1 of length 4");
}

TEST(SortOps, CumSumModes) {
    const Tensor x = f32({4}, {1, 2, 3, 4});
    // np.cumsum(x) = [1, 3, 6, 10]
    EXPECT_TRUE(tensors_near(OpTester("CumSum", 14).input(x).constant(i32({}, {0})).run(), f32({4}, {1, 3, 6, 10})));
    // exclusive + reverse: np.cumsum(x[::-1])[::-1] - x = [9, 7, 4, 0]
    EXPECT_TRUE(tensors_near(
        OpTester("CumSum", 14).input(x).constant(i64({}, {-1})).attr("exclusive", 1).attr("reverse", 1).run(),
        f32({4}, {9, 7, 4, 0})));
    // np.cumsum(np.arange(6).reshape(2, 3), axis=1) on int64
    EXPECT_TRUE(tensors_near(OpTester("CumSum", 14).input(i64({2, 3}, {0, 1, 2, 3, 4, 5})).constant(i64({}, {1})).run(),
                             i64({2, 3}, {0, 1, 3, 3, 7, 12})));
    EXPECT_THROW_MESSAGE(OpTester("CumSum", 14).input(x).constant(i64({}, {1})).run(), ModelError,
                         "axis 1 is out of range for a tensor of rank 1");
}

TEST(SortOps, UniqueSortedAndUnsorted) {
    const Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
    // np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    auto sorted = OpTester("Unique", 11).input(x).outputs(4).run_all();
    EXPECT_TRUE(tensors_near(sorted[0], f32({4}, {1, 2, 3, 4})));
    EXPECT_TRUE(tensors_near(sorted[1], i64({4}, {1, 0, 3, 4})));
    EXPECT_TRUE(tensors_near(sorted[2], i64({6}, {1, 0, 0, 2, 3, 2})));
    EXPECT_TRUE(tensors_near(sorted[3], i64({4}, {2, 1, 2, 1})));
    // first-occurrence order: y = x[np.sort(index)]
    auto unsorted = OpTester("Unique", 11).input(x).attr("sorted", 0).outputs(4).run_all();
    EXPECT_TRUE(tensors_near(unsorted[0], f32({4}, {2, 1, 3, 4})));
    EXPECT_TRUE(tensors_near(unsorted[2], i64({6}, {0, 1, 1, 2, 3, 2})));
    // np.unique(a, axis=0) for a = [[1, 0], [0, 1], [1, 0]] -> [[0, 1], [1, 0]]
    auto rows = OpTester("Unique", 11).input(f32({3, 2}, {1, 0, 0, 1, 1, 0})).attr("axis", 0).run();
    EXPECT_TRUE(tensors_near(rows, f32({2, 2}, {0, 1, 1, 0})));
}

}  // namespace
}  // namespace polygraphy::ref
