// Tensor operators (src/backend/ref/ops/tensor.cpp). Expected values carry the numpy expression
// that produces them; x = np.arange(n).reshape(shape) unless said otherwise.
#include <limits>

#include "../ref_test_util.h"

namespace polygraphy::ref {
namespace {

using testing::boolean;
using testing::f32;
using testing::i32;
using testing::i64;
using testing::iota;
using testing::make;
using testing::OpTester;
using testing::strings;
using testing::tensors_near;
using testing::values_of;

constexpr double kInt64Max = static_cast<double>(std::numeric_limits<int64_t>::max());
constexpr double kInt64Min = static_cast<double>(std::numeric_limits<int64_t>::min());

Tensor x234() {
    return iota(DataType::kFloat32, {2, 3, 4});
}

TEST(TensorOpsTest, Reshape) {
    // x.reshape(2, -1); 0 copies the input dim
    EXPECT_TRUE(tensors_near(OpTester("Reshape").input(x234()).constant(i64({2}, {0, -1})).run(),
                             iota(DataType::kFloat32, {2, 12})));
    EXPECT_EQ(OpTester("Reshape").input(x234()).constant(i64({3}, {4, 0, -1})).run().shape(), (Shape{4, 3, 2}));
    // opsets 1-4 read the `shape` attribute
    EXPECT_EQ(OpTester("Reshape", 4).input(x234()).ints("shape", {6, 4}).run().shape(), (Shape{6, 4}));
    // allowzero (opset 14): 0 is a real zero
    const Tensor empty = f32({0, 4}, {});
    EXPECT_EQ(OpTester("Reshape", 14).input(empty).constant(i64({2}, {4, 0})).attr("allowzero", 1).run().shape(),
              (Shape{4, 0}));
    EXPECT_THROW_MESSAGE(OpTester("Reshape", 14).input(empty).constant(i64({2}, {3, 0})).run(), ModelError,
                         "cannot reshape input of shape (0, 4) (0 elements) into shape [3, 0] (12 elements)");
    EXPECT_THROW_MESSAGE(
        OpTester("Reshape").input(x234()).constant(i64({2}, {5, -1})).run(), ModelError,
        "Node 'node' (Reshape): cannot reshape input of shape (2, 3, 4) (24 elements) into shape [5, -1]");
    EXPECT_THROW_MESSAGE(OpTester("Reshape").input(x234()).constant(i64({2}, {-1, -1})).run(), ModelError,
                         "shape [-1, -1] has more than one -1");
    EXPECT_THROW_MESSAGE(OpTester("Reshape", 14).input(x234()).constant(i64({2}, {0, -1})).attr("allowzero", 1).run(),
                         ModelError, "shape [0, -1] has both 0 and -1, which allowzero=1 forbids");
}

TEST(TensorOpsTest, Flatten) {
    EXPECT_EQ(OpTester("Flatten").input(x234()).run().shape(), (Shape{2, 12}));
    EXPECT_EQ(OpTester("Flatten").input(x234()).attr("axis", 0).run().shape(), (Shape{1, 24}));
    EXPECT_EQ(OpTester("Flatten").input(x234()).attr("axis", -1).run().shape(), (Shape{6, 4}));
    EXPECT_EQ(OpTester("Flatten").input(x234()).attr("axis", 3).run().shape(), (Shape{24, 1}));
    EXPECT_THROW_MESSAGE(OpTester("Flatten").input(x234()).attr("axis", 4).run(), ModelError,
                         "axis 4 is out of range for a tensor of rank 3 (expected a value in [-3, 3])");
}

TEST(TensorOpsTest, Transpose) {
    // x.T for (2, 3)
    EXPECT_TRUE(tensors_near(OpTester("Transpose").input(iota(DataType::kFloat32, {2, 3})).run(),
                             f32({3, 2}, {0, 3, 1, 4, 2, 5})));
    // np.arange(12).reshape(2, 3, 2).transpose(1, 0, 2)
    EXPECT_TRUE(
        tensors_near(OpTester("Transpose").input(iota(DataType::kInt64, {2, 3, 2})).ints("perm", {1, 0, 2}).run(),
                     i64({3, 2, 2}, {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11})));
    EXPECT_TRUE(tensors_near(OpTester("Transpose").input(strings({2, 2}, {"a", "b", "c", "d"})).run(),
                             strings({2, 2}, {"a", "c", "b", "d"})));
    EXPECT_EQ(OpTester("Transpose").input(f32({0, 3}, {})).run().shape(), (Shape{3, 0}));
    EXPECT_THROW_MESSAGE(OpTester("Transpose").input(iota(DataType::kFloat32, {2, 2})).ints("perm", {0, 0}).run(),
                         ModelError, "perm [0, 0] is not a permutation of the 2 axes");
    EXPECT_THROW_MESSAGE(OpTester("Transpose").input(iota(DataType::kFloat32, {2, 2})).ints("perm", {0}).run(),
                         ModelError, "perm [0] has 1 entries, but the input (2, 2) has rank 2");
}

TEST(TensorOpsTest, LargeTransposeMatchesItsDefinition) {
    const Tensor x = iota(DataType::kFloat32, {64, 33, 40});
    const Tensor y = OpTester("Transpose").input(x).ints("perm", {2, 0, 1}).run();
    ASSERT_EQ(y.shape(), (Shape{40, 64, 33}));
    for (int64_t k = 0; k < 40; k += 7)
        for (int64_t i = 0; i < 64; i += 5)
            for (int64_t j = 0; j < 33; j += 4)
                ASSERT_EQ(y.data_as<float>()[(k * 64 + i) * 33 + j], x.data_as<float>()[(i * 33 + j) * 40 + k]);
}

TEST(TensorOpsTest, Concat) {
    const Tensor a = iota(DataType::kFloat32, {2, 2});
    // np.concatenate([a, [[9], [8]]], axis=1)
    EXPECT_TRUE(tensors_near(OpTester("Concat").input(a).input(f32({2, 1}, {9, 8})).attr("axis", 1).run(),
                             f32({2, 3}, {0, 1, 9, 2, 3, 8})));
    EXPECT_TRUE(tensors_near(OpTester("Concat").input(a).input(f32({1, 2}, {5, 6})).attr("axis", -2).run(),
                             f32({3, 2}, {0, 1, 2, 3, 5, 6})));
    // zero-size inputs are fine
    EXPECT_TRUE(tensors_near(OpTester("Concat").input(f32({0, 2}, {})).input(f32({1, 2}, {5, 6})).attr("axis", 0).run(),
                             f32({1, 2}, {5, 6})));
    EXPECT_THROW_MESSAGE(
        OpTester("Concat").input(a).input(f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})).attr("axis", 0).run(), ModelError,
        "input 1 has shape (3, 3), which cannot be concatenated with (2, 2) on axis 0");
    EXPECT_THROW_MESSAGE(OpTester("Concat").input(a).run(), ModelError, "attribute 'axis' is required");
}

TEST(TensorOpsTest, SplitByOpset) {
    const Tensor x = iota(DataType::kFloat32, {6});
    auto parts = OpTester("Split", 13).input(x).outputs(3).run_all();  // np.split(x, 3)
    EXPECT_TRUE(tensors_near(parts[0], f32({2}, {0, 1})));
    EXPECT_TRUE(tensors_near(parts[2], f32({2}, {4, 5})));
    parts = OpTester("Split", 11).input(x).ints("split", {1, 5}).outputs(2).run_all();  // attribute
    EXPECT_TRUE(tensors_near(parts[0], f32({1}, {0})));
    EXPECT_TRUE(tensors_near(parts[1], f32({5}, {1, 2, 3, 4, 5})));
    parts = OpTester("Split", 13).input(x).constant(i64({2}, {4, 2})).outputs(2).run_all();  // input
    EXPECT_TRUE(tensors_near(parts[1], f32({2}, {4, 5})));
    // opset 18 num_outputs: uneven, the last chunk is smaller: sizes 2, 2, 1
    parts = OpTester("Split", 18).input(iota(DataType::kFloat32, {5})).attr("num_outputs", 3).outputs(3).run_all();
    EXPECT_TRUE(tensors_near(parts[1], f32({2}, {2, 3})));
    EXPECT_TRUE(tensors_near(parts[2], f32({1}, {4})));
    // axis 1 of (2, 4): np.split(x, 2, axis=1)
    parts = OpTester("Split", 13).input(iota(DataType::kFloat32, {2, 4})).attr("axis", 1).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(parts[1], f32({2, 2}, {2, 3, 6, 7})));
    EXPECT_THROW_MESSAGE(OpTester("Split", 13).input(x).constant(i64({2}, {1, 2})).outputs(2).run(), ModelError,
                         "split [1, 2] sums to 3, but axis 0 of the input (6,) has size 6");
    EXPECT_THROW_MESSAGE(OpTester("Split", 13).input(iota(DataType::kFloat32, {5})).outputs(2).run(), ModelError,
                         "axis 0 of size 5 cannot be split evenly into 2 outputs");
}

TEST(TensorOpsTest, Slice) {
    const Tensor x = iota(DataType::kFloat32, {10});
    auto slice = [&](const Tensor& data, std::vector<double> starts, std::vector<double> ends, std::vector<double> axes,
                     std::vector<double> steps) {
        OpTester tester("Slice", 13);
        const auto n = static_cast<int64_t>(starts.size());
        tester.input(data).constant(i64({n}, starts)).constant(i64({n}, ends));
        if (!axes.empty())
            tester.constant(i64({n}, axes));
        else if (!steps.empty())
            tester.omit();
        if (!steps.empty()) tester.constant(i64({n}, steps));
        return tester.run();
    };
    // x[1:8:3], x[-1:-100:-2], x[2:INT64_MAX]
    EXPECT_TRUE(tensors_near(slice(x, {1}, {8}, {0}, {3}), f32({3}, {1, 4, 7})));
    EXPECT_TRUE(tensors_near(slice(x, {-1}, {-100}, {}, {-2}), f32({5}, {9, 7, 5, 3, 1})));
    EXPECT_TRUE(tensors_near(slice(x, {2}, {kInt64Max}, {}, {}), f32({8}, {2, 3, 4, 5, 6, 7, 8, 9})));
    EXPECT_TRUE(tensors_near(slice(x, {kInt64Max}, {kInt64Min}, {}, {-4}), f32({3}, {9, 5, 1})));
    // x.reshape(3, 4)[0:2, 1:3] and [:, 1:3] through a negative axis
    const Tensor m = iota(DataType::kFloat32, {3, 4});
    EXPECT_TRUE(tensors_near(slice(m, {0, 1}, {2, 3}, {}, {}), f32({2, 2}, {1, 2, 5, 6})));
    EXPECT_TRUE(tensors_near(slice(m, {1}, {3}, {-1}, {}), f32({3, 2}, {1, 2, 5, 6, 9, 10})));
    // opset 9: attributes
    EXPECT_TRUE(
        tensors_near(OpTester("Slice", 9).input(m).ints("starts", {1}).ints("ends", {3}).ints("axes", {1}).run(),
                     f32({3, 2}, {1, 2, 5, 6, 9, 10})));
    // empty results: x[5:2]
    EXPECT_EQ(slice(x, {5}, {2}, {}, {}).shape(), (Shape{0}));
    EXPECT_EQ(slice(f32({0}, {}), {0}, {5}, {}, {-1}).shape(), (Shape{0}));
    // extreme steps take one element: x[0::INT64_MAX], x[9::INT64_MIN]
    EXPECT_TRUE(tensors_near(slice(x, {0}, {10}, {}, {kInt64Max}), f32({1}, {0})));
    EXPECT_TRUE(tensors_near(slice(x, {9}, {kInt64Min}, {}, {kInt64Min}), f32({1}, {9})));
    EXPECT_THROW_MESSAGE(slice(x, {0}, {5}, {}, {0}), ModelError, "Node 'node' (Slice): steps [0] contain 0");
    EXPECT_THROW_MESSAGE(slice(m, {0, 0}, {1, 1}, {1, 1}, {}), ModelError, "axes contain 1 more than once");
}

TEST(TensorOpsTest, Gather) {
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

TEST(TensorOpsTest, GatherElementsAndGatherND) {
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

TEST(TensorOpsTest, SqueezeAndUnsqueeze) {
    const Tensor x = iota(DataType::kFloat32, {1, 3, 1, 2});
    EXPECT_EQ(OpTester("Squeeze", 11).input(x).ints("axes", {0, 2}).run().shape(), (Shape{3, 2}));
    EXPECT_EQ(OpTester("Squeeze", 13).input(x).constant(i64({1}, {-2})).run().shape(), (Shape{1, 3, 2}));
    EXPECT_TRUE(tensors_near(OpTester("Squeeze", 13).input(x).run(), iota(DataType::kFloat32, {3, 2})));
    EXPECT_THROW_MESSAGE(OpTester("Squeeze", 13).input(x).constant(i64({1}, {1})).run(), ModelError,
                         "cannot squeeze axis 1 of the input (1, 3, 1, 2): its size is not 1");
    const Tensor v = iota(DataType::kFloat32, {3});
    EXPECT_EQ(OpTester("Unsqueeze", 11).input(v).ints("axes", {0, 2}).run().shape(), (Shape{1, 3, 1}));
    EXPECT_EQ(OpTester("Unsqueeze", 13).input(v).constant(i64({1}, {-1})).run().shape(), (Shape{3, 1}));
    EXPECT_EQ(OpTester("Unsqueeze", 13).input(f32({}, {1})).constant(i64({1}, {0})).run().shape(), (Shape{1}));
    EXPECT_THROW_MESSAGE(OpTester("Unsqueeze", 13).input(v).constant(i64({2}, {0, 0})).run(), ModelError,
                         "axes contain 0 more than once");
    EXPECT_THROW_MESSAGE(OpTester("Unsqueeze", 13).input(v).constant(i64({1}, {5})).run(), ModelError,
                         "axis 5 is out of range for a tensor of rank 2");
    EXPECT_THROW_MESSAGE(OpTester("Unsqueeze", 11).input(v).run(), ModelError,
                         "attribute 'axes' is required before opset 13");
}

TEST(TensorOpsTest, ShapeAndSize) {
    EXPECT_TRUE(tensors_near(OpTester("Shape").input(x234()).run(), i64({3}, {2, 3, 4})));
    EXPECT_TRUE(tensors_near(OpTester("Shape", 15).input(x234()).attr("start", 1).run(), i64({2}, {3, 4})));
    EXPECT_TRUE(tensors_near(OpTester("Shape", 15).input(x234()).attr("end", -1).run(), i64({2}, {2, 3})));
    EXPECT_TRUE(tensors_near(OpTester("Shape", 15).input(x234()).attr("start", 5).run(), i64({0}, {})));
    EXPECT_TRUE(tensors_near(OpTester("Size").input(x234()).run(), i64({}, {24})));
    EXPECT_TRUE(tensors_near(OpTester("Size").input(f32({0, 3}, {})).run(), i64({}, {0})));
}

TEST(TensorOpsTest, ConstantOfShapeAndExpand) {
    EXPECT_TRUE(
        tensors_near(OpTester("ConstantOfShape").input(i64({2}, {2, 3})).run(), f32({2, 3}, {0, 0, 0, 0, 0, 0})));
    EXPECT_TRUE(tensors_near(OpTester("ConstantOfShape").input(i64({1}, {2})).attr("value", i64({1}, {7})).run(),
                             i64({2}, {7, 7})));
    EXPECT_TRUE(
        tensors_near(OpTester("ConstantOfShape").input(i64({0}, {})).attr("value", f32({1}, {5})).run(), f32({}, {5})));
    EXPECT_THROW_MESSAGE(OpTester("ConstantOfShape").input(i64({1}, {-1})).run(), ModelError,
                         "shape [-1] has a negative dimension");
    EXPECT_THROW_MESSAGE(OpTester("ConstantOfShape").input(i64({1}, {1})).attr("value", f32({2}, {1, 2})).run(),
                         ModelError, "attribute 'value' must hold one element, but it has shape (2,)");
    // np.broadcast_to([[1], [2], [3]], (2, 3, 4))
    const Tensor expanded = OpTester("Expand").input(f32({3, 1}, {1, 2, 3})).constant(i64({3}, {2, 1, 4})).run();
    ASSERT_EQ(expanded.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(values_of(expanded)[4 + 12], 2);  // [1, 1, 0]
    EXPECT_EQ(values_of(expanded)[23], 3);      // [1, 2, 3]
    // bidirectional: a shape of ones keeps the input's dims
    EXPECT_EQ(OpTester("Expand").input(f32({3, 1}, {1, 2, 3})).constant(i64({2}, {1, 1})).run().shape(), (Shape{3, 1}));
    EXPECT_EQ(OpTester("Expand").input(f32({1}, {1})).constant(i64({1}, {0})).run().shape(), (Shape{0}));
    EXPECT_THROW_MESSAGE(OpTester("Expand").input(f32({3}, {1, 2, 3})).constant(i64({1}, {2})).run(), ModelError,
                         "cannot broadcast shapes (3,) and (2,)");
}

TEST(TensorOpsTest, Tile) {
    // np.tile([1, 2], 3)
    EXPECT_TRUE(tensors_near(OpTester("Tile").input(f32({2}, {1, 2})).constant(i64({1}, {3})).run(),
                             f32({6}, {1, 2, 1, 2, 1, 2})));
    const Tensor m = f32({2, 2}, {1, 2, 3, 4});
    // np.tile(m, (2, 1)), np.tile(m, (1, 2))
    EXPECT_TRUE(tensors_near(OpTester("Tile").input(m).constant(i64({2}, {2, 1})).run(),
                             f32({4, 2}, {1, 2, 3, 4, 1, 2, 3, 4})));
    EXPECT_TRUE(tensors_near(OpTester("Tile").input(m).constant(i64({2}, {1, 2})).run(),
                             f32({2, 4}, {1, 2, 1, 2, 3, 4, 3, 4})));
    EXPECT_EQ(OpTester("Tile").input(m).constant(i64({2}, {0, 2})).run().shape(), (Shape{0, 4}));
    // opset 1: scalar tiles along a scalar axis
    EXPECT_TRUE(
        tensors_near(OpTester("Tile", 1).input(f32({2}, {1, 2})).constant(i64({}, {2})).constant(i64({}, {0})).run(),
                     f32({4}, {1, 2, 1, 2})));
    EXPECT_THROW_MESSAGE(OpTester("Tile").input(m).constant(i64({2}, {kInt64Max, 2})).run(), ModelError,
                         "size 9223372036854775807 * 2 overflows int64");
    EXPECT_THROW_MESSAGE(OpTester("Tile").input(m).constant(i64({1}, {2})).run(), ModelError,
                         "repeats [2] must have one entry per input dimension (input shape (2, 2))");
}

TEST(TensorOpsTest, Range) {
    // np.arange(0, 1, 0.25), np.arange(10, 4, -3), np.arange(0, 0, 1)
    EXPECT_TRUE(tensors_near(OpTester("Range").input(f32({}, {0})).input(f32({}, {1})).input(f32({}, {0.25})).run(),
                             f32({4}, {0, 0.25, 0.5, 0.75})));
    EXPECT_TRUE(tensors_near(OpTester("Range").input(i32({}, {10})).input(i32({}, {4})).input(i32({}, {-3})).run(),
                             i32({2}, {10, 7})));
    EXPECT_TRUE(tensors_near(OpTester("Range").input(i64({}, {0})).input(i64({}, {0})).input(i64({}, {1})).run(),
                             i64({0}, {})));
    EXPECT_TRUE(tensors_near(OpTester("Range").input(i64({}, {0})).input(i64({}, {7})).input(i64({}, {3})).run(),
                             i64({3}, {0, 3, 6})));
    EXPECT_THROW_MESSAGE(OpTester("Range").input(i64({}, {0})).input(i64({}, {5})).input(i64({}, {0})).run(),
                         ModelError, "Node 'node' (Range): delta must not be 0");
    EXPECT_THROW_MESSAGE(OpTester("Range").input(i64({}, {0})).input(i32({}, {5})).input(i64({}, {1})).run(),
                         ModelError,
                         "start, limit and delta must have the same data type, but limit is int32 and start is int64");
}

TEST(TensorOpsTest, PadModes) {
    const Tensor x = iota(DataType::kFloat32, {2, 3});
    // np.pad(x, ((0, 1), (1, 0)), constant_values=9)
    EXPECT_TRUE(tensors_near(OpTester("Pad", 13).input(x).constant(i64({4}, {0, 1, 1, 0})).constant(f32({}, {9})).run(),
                             f32({3, 4}, {9, 0, 1, 2, 9, 3, 4, 5, 9, 9, 9, 9})));
    // np.pad(x, ((0, 0), (2, 2)), 'reflect')
    EXPECT_TRUE(
        tensors_near(OpTester("Pad", 13).input(x).constant(i64({4}, {0, 2, 0, 2})).attr("mode", "reflect").run(),
                     f32({2, 7}, {2, 1, 0, 1, 2, 1, 0, 5, 4, 3, 4, 5, 4, 3})));
    // np.pad(x, ((1, 0), (0, 1)), 'edge')
    EXPECT_TRUE(tensors_near(OpTester("Pad", 13).input(x).constant(i64({4}, {1, 0, 0, 1})).attr("mode", "edge").run(),
                             f32({3, 4}, {0, 1, 2, 2, 0, 1, 2, 2, 3, 4, 5, 5})));
    // np.pad(x, ((0, 0), (1, 1)), 'wrap')
    EXPECT_TRUE(tensors_near(OpTester("Pad", 19).input(x).constant(i64({4}, {0, 1, 0, 1})).attr("mode", "wrap").run(),
                             f32({2, 5}, {2, 0, 1, 2, 0, 5, 3, 4, 5, 3})));
    // negative pads crop: x[:, 1:]
    EXPECT_TRUE(
        tensors_near(OpTester("Pad", 13).input(x).constant(i64({4}, {0, -1, 0, 0})).run(), f32({2, 2}, {1, 2, 4, 5})));
    // opset 2: attributes
    EXPECT_TRUE(tensors_near(OpTester("Pad", 2).input(x).ints("pads", {0, 1, 0, 1}).attr("value", 7.0).run(),
                             f32({2, 5}, {7, 0, 1, 2, 7, 7, 3, 4, 5, 7})));
    // opset 18: axes
    EXPECT_TRUE(
        tensors_near(OpTester("Pad", 18).input(x).constant(i64({2}, {1, 1})).omit().constant(i64({1}, {1})).run(),
                     f32({2, 5}, {0, 0, 1, 2, 0, 0, 3, 4, 5, 0})));
    // zero-size input, constant padding
    EXPECT_TRUE(
        tensors_near(OpTester("Pad", 13).input(f32({0}, {})).constant(i64({2}, {1, 1})).run(), f32({2}, {0, 0})));
    EXPECT_THROW_MESSAGE(OpTester("Pad", 13).input(x).constant(i64({4}, {0, kInt64Max, 0, 1})).run(), ModelError,
                         "overflows int64");
    // huge padding of an empty tensor: nothing to build
    EXPECT_EQ(OpTester("Pad", 13).input(f32({0, 3}, {})).constant(i64({4}, {0, 0, 0, 1e15})).run().shape(),
              (Shape{0, 1000000000000003}));
    EXPECT_THROW_MESSAGE(OpTester("Pad", 13).input(x).constant(i64({4}, {0, -5, 0, 0})).run(), ModelError,
                         "pads [0, -5, 0, 0] crop axis 1 of the input (2, 3) below size 0");
    EXPECT_THROW_MESSAGE(OpTester("Pad", 13).input(x).constant(i64({3}, {1, 1, 1})).run(), ModelError,
                         "pads [1, 1, 1] must have 4 entries (begin and end for 2 axes)");
    EXPECT_THROW_MESSAGE(OpTester("Pad", 13).input(x).constant(i64({4}, {0, 0, 0, 0})).attr("mode", "mirror").run(),
                         ModelError,
                         "attribute 'mode' must be \"constant\", \"reflect\", \"edge\" or \"wrap\", got \"mirror\"");
}

TEST(TensorOpsTest, ConstantAttributes) {
    EXPECT_TRUE(tensors_near(OpTester("Constant").ints("value_ints", {1, 2}).run(), i64({2}, {1, 2})));
    EXPECT_TRUE(tensors_near(OpTester("Constant").attr("value_float", 1.5).run(), f32({}, {1.5})));
    EXPECT_TRUE(tensors_near(OpTester("Constant").attr("value_int", int64_t{-3}).run(), i64({}, {-3})));
    EXPECT_TRUE(tensors_near(OpTester("Constant").floats("value_floats", {0.5f}).run(), f32({1}, {0.5})));
    EXPECT_TRUE(tensors_near(OpTester("Constant").attr("value_string", "hi").run(), strings({}, {"hi"})));
    EXPECT_TRUE(tensors_near(OpTester("Constant").attr("value", i32({2}, {4, 5})).run(), i32({2}, {4, 5})));
    onnx::AttributeProto list;
    list.set_name("value_strings");
    list.set_type(onnx::AttributeProto::STRINGS);
    list.add_strings("a");
    list.add_strings("b");
    EXPECT_TRUE(tensors_near(OpTester("Constant").raw_attr(list).run(), strings({2}, {"a", "b"})));
    EXPECT_THROW_MESSAGE(OpTester("Constant").attr("value_int", int64_t{1}).attr("value_float", 1.0).run(), ModelError,
                         "Node 'node' (Constant): exactly one value attribute must be set, found 2");
    EXPECT_THROW_MESSAGE(OpTester("Constant").run(), ModelError, "exactly one value attribute must be set, found 0");
}

TEST(TensorOpsTest, Trilu) {
    const Tensor x = iota(DataType::kFloat32, {3, 3});
    // np.triu(x), np.tril(x, -1), np.triu(x, 1)
    EXPECT_TRUE(tensors_near(OpTester("Trilu").input(x).run(), f32({3, 3}, {0, 1, 2, 0, 4, 5, 0, 0, 8})));
    EXPECT_TRUE(tensors_near(OpTester("Trilu").input(x).constant(i64({}, {-1})).attr("upper", 0).run(),
                             f32({3, 3}, {0, 0, 0, 3, 0, 0, 6, 7, 0})));
    EXPECT_TRUE(tensors_near(OpTester("Trilu").input(x).constant(i64({}, {1})).run(),
                             f32({3, 3}, {0, 1, 2, 0, 0, 5, 0, 0, 0})));
    // batched: np.triu(np.arange(8).reshape(2, 2, 2))
    EXPECT_TRUE(tensors_near(OpTester("Trilu").input(iota(DataType::kInt64, {2, 2, 2})).run(),
                             i64({2, 2, 2}, {0, 1, 0, 3, 4, 5, 0, 7})));
    EXPECT_THROW_MESSAGE(OpTester("Trilu").input(f32({2}, {1, 2})).run(), ModelError,
                         "input must have rank >= 2, but it has shape (2,)");
}

TEST(TensorOpsTest, OneHot) {
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

TEST(TensorOpsTest, NonZero) {
    // np.array(np.nonzero([[1, 0], [0, 3]]))
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(f32({2, 2}, {1, 0, 0, 3})).run(), i64({2, 2}, {0, 1, 0, 1})));
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(boolean({3}, {0, 1, 1})).run(), i64({1, 2}, {1, 2})));
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(i32({2, 2}, {0, 0, 0, 0})).run(), i64({2, 0}, {})));
    EXPECT_TRUE(tensors_near(OpTester("NonZero").input(f32({}, {5})).run(), i64({1, 1}, {0})));
}

TEST(TensorOpsTest, ScatterNDAndScatterElements) {
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

TEST(TensorOpsTest, DepthToSpaceAndSpaceToDepth) {
    // The ONNX operator documentation's example: x = np.arange(...) laid out as (1, 8, 2, 3)
    const Tensor x = f32(
        {1, 8, 2, 3}, {0,  1,  2,  3,  4,  5,  9,  10, 11, 12, 13, 14, 18, 19, 20, 21, 22, 23, 27, 28, 29, 30, 31, 32,
                       36, 37, 38, 39, 40, 41, 45, 46, 47, 48, 49, 50, 54, 55, 56, 57, 58, 59, 63, 64, 65, 66, 67, 68});
    const Tensor dcr = OpTester("DepthToSpace", 13).input(x).attr("blocksize", 2).run();
    EXPECT_TRUE(tensors_near(dcr, f32({1, 2, 4, 6}, {0,  18, 1,  19, 2,  20, 36, 54, 37, 55, 38, 56, 3,  21, 4,  22,
                                                     5,  23, 39, 57, 40, 58, 41, 59, 9,  27, 10, 28, 11, 29, 45, 63,
                                                     46, 64, 47, 65, 12, 30, 13, 31, 14, 32, 48, 66, 49, 67, 50, 68})));
    EXPECT_TRUE(tensors_near(OpTester("DepthToSpace", 13).input(x).attr("blocksize", 2).attr("mode", "CRD").run(),
                             f32({1, 2, 4, 6}, {0,  9,  1,  10, 2,  11, 18, 27, 19, 28, 20, 29, 3,  12, 4,  13,
                                                5,  14, 21, 30, 22, 31, 23, 32, 36, 45, 37, 46, 38, 47, 54, 63,
                                                55, 64, 56, 65, 39, 48, 40, 49, 41, 50, 57, 66, 58, 67, 59, 68})));
    // SpaceToDepth undoes DepthToSpace (DCR)
    EXPECT_TRUE(tensors_near(OpTester("SpaceToDepth").input(dcr).attr("blocksize", 2).run(), x));
    EXPECT_TRUE(
        tensors_near(OpTester("SpaceToDepth").input(iota(DataType::kFloat32, {1, 1, 2, 2})).attr("blocksize", 2).run(),
                     f32({1, 4, 1, 1}, {0, 1, 2, 3})));
    EXPECT_THROW_MESSAGE(
        OpTester("DepthToSpace").input(iota(DataType::kFloat32, {1, 3, 1, 1})).attr("blocksize", 2).run(), ModelError,
        "channels (3) must be a multiple of blocksize^2 (4)");
    EXPECT_THROW_MESSAGE(OpTester("SpaceToDepth").input(iota(DataType::kFloat32, {1, 1, 2, 2})).run(), ModelError,
                         "attribute 'blocksize' must be >= 1, got 0");
}

}  // namespace
}  // namespace polygraphy::ref
