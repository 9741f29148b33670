// Shape operators (src/backend/ref/ops/shape.cpp). Expected values carry the numpy expression;
// x = np.arange(n).reshape(shape) unless said otherwise.
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

Tensor x234() {
    return iota(DataType::kFloat32, {2, 3, 4});
}

TEST(ShapeOps, Reshape) {
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

TEST(ShapeOps, Flatten) {
    EXPECT_EQ(OpTester("Flatten").input(x234()).run().shape(), (Shape{2, 12}));
    EXPECT_EQ(OpTester("Flatten").input(x234()).attr("axis", 0).run().shape(), (Shape{1, 24}));
    EXPECT_EQ(OpTester("Flatten").input(x234()).attr("axis", -1).run().shape(), (Shape{6, 4}));
    EXPECT_EQ(OpTester("Flatten").input(x234()).attr("axis", 3).run().shape(), (Shape{24, 1}));
    EXPECT_THROW_MESSAGE(OpTester("Flatten").input(x234()).attr("axis", 4).run(), ModelError,
                         "axis 4 is out of range for a tensor of rank 3 (expected a value in [-3, 3])");
}

TEST(ShapeOps, SqueezeAndUnsqueeze) {
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
                         "Malformed node 'node' (Unsqueeze, ai.onnx opset 11): it lacks the required attribute "
                         "'axes' of Unsqueeze");
}

TEST(ShapeOps, ShapeAndSize) {
    EXPECT_TRUE(tensors_near(OpTester("Shape").input(x234()).run(), i64({3}, {2, 3, 4})));
    EXPECT_TRUE(tensors_near(OpTester("Shape", 15).input(x234()).attr("start", 1).run(), i64({2}, {3, 4})));
    EXPECT_TRUE(tensors_near(OpTester("Shape", 15).input(x234()).attr("end", -1).run(), i64({2}, {2, 3})));
    EXPECT_TRUE(tensors_near(OpTester("Shape", 15).input(x234()).attr("start", 5).run(), i64({0}, {})));
    EXPECT_TRUE(tensors_near(OpTester("Size").input(x234()).run(), i64({}, {24})));
    EXPECT_TRUE(tensors_near(OpTester("Size").input(f32({0, 3}, {})).run(), i64({}, {0})));
}

TEST(ShapeOps, DepthToSpaceAndSpaceToDepth) {
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
                         "it lacks the required attribute 'blocksize' of SpaceToDepth");
    EXPECT_THROW_MESSAGE(
        OpTester("SpaceToDepth").input(iota(DataType::kFloat32, {1, 1, 2, 2})).attr("blocksize", int64_t{0}).run(),
        ModelError, "attribute 'blocksize' must be >= 1, got 0");
}

}  // namespace
}  // namespace polygraphy::testing
