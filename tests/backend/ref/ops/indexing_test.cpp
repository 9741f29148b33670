// Indexing operators (src/backend/ref/ops/indexing.cpp). Expected values carry the numpy
// expression; x = np.arange(n).reshape(shape) unless said otherwise.
#include <limits>

#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

TEST(IndexingOps, Gather) {
    const Tensor data = iota(DataType::kFloat32, {3, 2});
    // data[[2, -3]]
    EXPECT_TRUE(
        tensors_near(OpTester("Gather").input(data).constant(i64({2}, {2, -3})).run(), f32({2, 2}, {4, 5, 0, 1})));
    // data[:, 1] (scalar index drops the axis)
    EXPECT_TRUE(
        tensors_near(OpTester("Gather").input(data).constant(i32({}, {1})).attr("axis", 1).run(), f32({3}, {1, 3, 5})));
    // data[[[0, 1], [1, 0]]]
    EXPECT_TRUE(tensors_near(OpTester("Gather").input(data).constant(i64({2, 2}, {0, 1, 1, 0})).run(),
                             f32({2, 2, 2}, {0, 1, 2, 3, 2, 3, 0, 1})));
    EXPECT_EQ(OpTester("Gather").input(data).constant(i64({0}, {})).run().shape(), (Shape{0, 2}));
    EXPECT_TRUE(tensors_near(OpTester("Gather").input(strings({3}, {"a", "b", "c"})).constant(i64({2}, {2, 2})).run(),
                             strings({2}, {"c", "c"})));
    EXPECT_THROW_MESSAGE(OpTester("Gather").input(data).constant(i64({2}, {0, 3})).run(), ModelError,
                         "Node 'node' (Gather): index 3 is out of bounds for axis 0 with size 3");
    EXPECT_THROW_MESSAGE(OpTester("Gather").input(data).constant(f32({1}, {0})).run(), ModelError,
                         "indices must be an int32 or int64 tensor, but it is float32");
}

TEST(IndexingOps, GatherElementsAndGatherND) {
    const Tensor data = f32({2, 2}, {1, 2, 3, 4});
    // np.take_along_axis(data, [[0, 0], [1, 0]], axis=1)
    EXPECT_TRUE(tensors_near(
        OpTester("GatherElements", 13).input(data).constant(i64({2, 2}, {0, 0, 1, 0})).attr("axis", 1).run(),
        f32({2, 2}, {1, 1, 4, 3})));
    // np.take_along_axis(data, [[1, -2]], axis=0)
    EXPECT_TRUE(tensors_near(OpTester("GatherElements", 13).input(data).constant(i64({1, 2}, {1, -2})).run(),
                             f32({1, 2}, {3, 2})));
    EXPECT_THROW_MESSAGE(OpTester("GatherElements", 13).input(data).constant(i64({1, 2}, {2, 0})).run(), ModelError,
                         "index 2 is out of bounds for axis 0 with size 2");
    EXPECT_THROW_MESSAGE(OpTester("GatherElements", 13).input(data).constant(i64({2}, {0, 0})).run(), ModelError,
                         "indices of shape (2,) do not fit data of shape (2, 2)");
    // data[[0, 1], [0, 1]] and data[[1], [0]] rows
    const Tensor d = iota(DataType::kFloat32, {2, 2});
    EXPECT_TRUE(
        tensors_near(OpTester("GatherND", 13).input(d).constant(i64({2, 2}, {0, 0, 1, 1})).run(), f32({2}, {0, 3})));
    EXPECT_TRUE(
        tensors_near(OpTester("GatherND", 13).input(d).constant(i64({2, 1}, {1, 0})).run(), f32({2, 2}, {2, 3, 0, 1})));
    // batch_dims=1: [data[0][1], data[1][0]] for data = np.arange(8).reshape(2, 2, 2)
    EXPECT_TRUE(tensors_near(OpTester("GatherND", 13)
                                 .input(iota(DataType::kFloat32, {2, 2, 2}))
                                 .constant(i64({2, 1}, {1, 0}))
                                 .attr("batch_dims", 1)
                                 .run(),
                             f32({2, 2}, {2, 3, 4, 5})));
}

TEST(IndexingOps, ScatterNDAndScatterElements) {
    const Tensor data = iota(DataType::kFloat32, {4});
    // out = data.copy(); out[[1, 3]] = [10, 30]
    EXPECT_TRUE(tensors_near(
        OpTester("ScatterND", 13).input(data).constant(i64({2, 1}, {1, 3})).input(f32({2}, {10, 30})).run(),
        f32({4}, {0, 10, 2, 30})));
    // reduction add: out[[1, 3]] += [10, 30]
    EXPECT_TRUE(tensors_near(OpTester("ScatterND", 16)
                                 .input(data)
                                 .constant(i64({2, 1}, {1, 3}))
                                 .input(f32({2}, {10, 30}))
                                 .attr("reduction", "add")
                                 .run(),
                             f32({4}, {0, 11, 2, 33})));
    // rows: out[1] = [5, 6]
    EXPECT_TRUE(tensors_near(OpTester("ScatterND", 13)
                                 .input(f32({2, 2}, {0, 0, 0, 0}))
                                 .constant(i64({1, 1}, {1}))
                                 .input(f32({1, 2}, {5, 6}))
                                 .run(),
                             f32({2, 2}, {0, 0, 5, 6})));
    EXPECT_THROW_MESSAGE(OpTester("ScatterND", 13).input(data).constant(i64({1, 1}, {4})).input(f32({1}, {1})).run(),
                         ModelError, "index 4 is out of bounds for axis 0 with size 4");
    EXPECT_THROW_MESSAGE(OpTester("ScatterND", 13).input(data).constant(i64({1, 1}, {0})).input(f32({2}, {1, 2})).run(),
                         ModelError, "updates must have shape (1,), got (2,)");
    // ONNX's ScatterElements example, axis 0
    EXPECT_TRUE(tensors_near(OpTester("ScatterElements", 13)
                                 .input(f32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}))
                                 .constant(i64({2, 3}, {1, 0, 2, 0, 2, 1}))
                                 .input(f32({2, 3}, {1.0, 1.1, 1.2, 2.0, 2.1, 2.2}))
                                 .run(),
                             f32({3, 3}, {2.0, 1.1, 0.0, 1.0, 0.0, 2.2, 0.0, 2.1, 1.2})));
    // axis 1 with a negative index: data[0, [1, -2]] = [1.1, 2.1]
    EXPECT_TRUE(tensors_near(OpTester("ScatterElements", 13)
                                 .input(f32({1, 5}, {1, 2, 3, 4, 5}))
                                 .constant(i64({1, 2}, {1, -2}))
                                 .input(f32({1, 2}, {1.1, 2.1}))
                                 .attr("axis", 1)
                                 .run(),
                             f32({1, 5}, {1, 1.1, 3, 2.1, 5})));
    // reduction max (opset 18)
    EXPECT_TRUE(tensors_near(OpTester("ScatterElements", 18)
                                 .input(f32({3}, {5, 5, 5}))
                                 .constant(i64({2}, {0, 2}))
                                 .input(f32({2}, {9, 1}))
                                 .attr("reduction", "max")
                                 .run(),
                             f32({3}, {9, 5, 5})));
    // opset 9-10 Scatter is ScatterElements
    EXPECT_TRUE(tensors_near(
        OpTester("Scatter", 9).input(f32({3}, {0, 0, 0})).constant(i64({1}, {2})).input(f32({1}, {7})).run(),
        f32({3}, {0, 0, 7})));
    EXPECT_THROW_MESSAGE(OpTester("ScatterElements", 16)
                             .input(data)
                             .constant(i64({1}, {0}))
                             .input(f32({1}, {1}))
                             .attr("reduction", "max")
                             .run(),
                         ModelError, "attribute 'reduction' has an unsupported value \"max\"");
}

TEST(IndexingOps, OneHot) {
    // np.eye(3)[[0, 2, -1]] with an out-of-range index giving a row of "off"
    EXPECT_TRUE(tensors_near(
        OpTester("OneHot", 11).input(i64({4}, {0, 2, -1, 5})).input(i64({}, {3})).input(f32({2}, {0, 1})).run(),
        f32({4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0})));
    // axis 0: np.eye(3)[[0, 2]].T with off=-1, on=5
    EXPECT_TRUE(tensors_near(OpTester("OneHot", 11)
                                 .input(i64({2}, {0, 2}))
                                 .input(f32({}, {3}))
                                 .input(i32({2}, {-1, 5}))
                                 .attr("axis", 0)
                                 .run(),
                             i32({3, 2}, {5, -1, -1, -1, -1, 5})));
    EXPECT_THROW_MESSAGE(
        OpTester("OneHot", 11).input(i64({1}, {0})).input(i64({}, {3})).input(f32({3}, {0, 1, 2})).run(), ModelError,
        "values must be a 1-D tensor of 2 elements [off, on], got shape (3,)");
}

TEST(IndexingOps, NonZero) {
    // np.array(np.nonzero([[1, 0], [0, 3]]))
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(f32({2, 2}, {1, 0, 0, 3})).run(), i64({2, 2}, {0, 1, 0, 1})));
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(boolean({3}, {0, 1, 1})).run(), i64({1, 2}, {1, 2})));
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(i32({2, 2}, {0, 0, 0, 0})).run(), i64({2, 0}, {})));
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(f32({}, {5})).run(), i64({1, 1}, {0})));
}

TEST(IndexingOps, Compress) {
    const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    // np.compress([False, True, True], x, axis=0) = [[3, 4], [5, 6]]
    EXPECT_TRUE(
        tensors_near(OpTester("Compress", 11).input(x).input(testing::boolean({3}, {0, 1, 1})).attr("axis", 0).run(),
                     f32({2, 2}, {3, 4, 5, 6})));
    // np.compress([True, False, True], x) (flattened) = [1, 3]
    EXPECT_TRUE(tensors_near(OpTester("Compress", 11).input(x).input(testing::boolean({3}, {1, 0, 1})).run(),
                             f32({2}, {1, 3})));
    EXPECT_THROW_MESSAGE(
        OpTester("Compress", 11).input(x).input(testing::boolean({4}, {1, 0, 1, 1})).attr("axis", 0).run(), ModelError,
        "condition has 4 elements, more than the 3 of the selected axis");
}

}  // namespace
}  // namespace polygraphy::testing
