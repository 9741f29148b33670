// Generators (src/backend/ref/ops/generator.cpp). Expected values carry the numpy expression.
#include <limits>

#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

TEST(GeneratorOps, ConstantAttributes) {
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

TEST(GeneratorOps, ConstantOfShapeAndExpand) {
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

TEST(GeneratorOps, Range) {
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

TEST(GeneratorOps, EyeLike) {
    // np.eye(2, 3, k=1)
    EXPECT_TRUE(tensors_near(OpTester("EyeLike", 9).input(f32({2, 3}, {5, 5, 5, 5, 5, 5})).attr("k", 1).run(),
                             f32({2, 3}, {0, 1, 0, 0, 0, 1})));
}

}  // namespace
}  // namespace polygraphy::testing
