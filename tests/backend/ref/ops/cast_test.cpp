// Cast and CastLike (src/backend/ref/ops/cast.cpp). Expected values carry the numpy expression.
#include <cmath>
#include <limits>

#include "op_test_util.h"
#include "polygraphy/common/float16.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

TEST(CastOps, CastBetweenNumbersBoolsHalvesAndStrings) {
    // np.array([1.7, -1.7, 0]).astype(np.int32) truncates
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(f32({3}, {1.7, -1.7, 0})).attr("to", int64_t{6}).run(),
                             i32({3}, {1, -1, 0})));
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(f32({3}, {1.7, 0, -2})).attr("to", int64_t{9}).run(),
                             boolean({3}, {1, 0, 1})));
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(i64({2}, {3, 70000})).attr("to", int64_t{10}).run(),
                             make(DataType::kFloat16, {2}, {3, kInf})));
    // Opset 1 names the type.
    EXPECT_TRUE(tensors_near(OpTester("Cast", 1).input(f32({1}, {2.5})).attr("to", "INT64").run(), i64({1}, {2})));
    // Strings: np.array(["1.5", "-inf"]).astype(np.float32), and back
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(strings({2}, {"1.5", "-inf"})).attr("to", int64_t{1}).run(),
                             f32({2}, {1.5, -kInf})));
    EXPECT_TRUE(
        tensors_near(OpTester("Cast").input(strings({1}, {"-42"})).attr("to", int64_t{7}).run(), i64({1}, {-42})));
    EXPECT_TRUE(tensors_near(OpTester("Cast").input(f32({4}, {1.5, 2, kNaN, 0.1})).attr("to", int64_t{8}).run(),
                             strings({4}, {"1.5", "2.0", "nan", "0.1"})));
    EXPECT_TRUE(
        tensors_near(OpTester("Cast").input(i32({1}, {-3})).attr("to", int64_t{8}).run(), strings({1}, {"-3"})));
    EXPECT_THROW_MESSAGE(OpTester("Cast").input(strings({1}, {"abc"})).attr("to", int64_t{1}).run(), ModelError,
                         "Node 'node' (Cast): cannot convert the string 'abc' to float32");
    EXPECT_THROW_MESSAGE(OpTester("Cast").input(f32({1}, {1})).attr("to", int64_t{999}).run(), ModelError,
                         "attribute 'to' has an invalid data type 999");
    EXPECT_THROW_MESSAGE(OpTester("Cast").input(f32({1}, {1})).run(), ModelError,
                         "it lacks the required attribute 'to' of Cast");
    // CastLike takes the type of its second input.
    EXPECT_TRUE(tensors_near(OpTester("CastLike", 15).input(f32({2}, {1.9, -0.5})).input(i64({0}, {})).run(),
                             i64({2}, {1, 0})));
}

}  // namespace
}  // namespace polygraphy::testing
