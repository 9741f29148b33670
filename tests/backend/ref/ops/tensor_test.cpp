// Tensor (data movement) operators (src/backend/ref/ops/tensor.cpp). Expected values carry the numpy
// expression; x = np.arange(n).reshape(shape) unless said otherwise.
#include <algorithm>
#include <limits>
#include <memory>

#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

constexpr double kInt64Max = static_cast<double>(std::numeric_limits<int64_t>::max());
constexpr double kInt64Min = static_cast<double>(std::numeric_limits<int64_t>::min());

TEST(TensorOps, Transpose) {
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

TEST(TensorOps, LargeTransposeMatchesItsDefinition) {
    const Tensor x = iota(DataType::kFloat32, {64, 33, 40});
    const Tensor y = OpTester("Transpose").input(x).ints("perm", {2, 0, 1}).run();
    ASSERT_EQ(y.shape(), (Shape{40, 64, 33}));
    for (int64_t k = 0; k < 40; k += 7)
        for (int64_t i = 0; i < 64; i += 5)
            for (int64_t j = 0; j < 33; j += 4)
                ASSERT_EQ(y.data_as<float>()[(k * 64 + i) * 33 + j], x.data_as<float>()[(i * 33 + j) * 40 + k]);
}

/// Row-major strides (in elements) of `shape`.
std::vector<int64_t> row_major_strides(const Shape& shape) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    return strides;
}

TEST(TensorOps, TransposeOfEveryPermutationMatchesItsDefinitionForEveryElementSize) {
    // Sizes off the 16-element tiles, each element size the copy dispatches on, at 1 and 2 threads.
    const std::vector<std::pair<Shape, std::vector<std::vector<int64_t>>>> cases = {
        {{5, 17, 33}, {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}},
        {{2, 19, 3, 21}, {{0, 2, 1, 3}, {0, 2, 3, 1}, {3, 1, 2, 0}, {1, 3, 0, 2}}},
        {{40, 1}, {{1, 0}}},
    };
    for (DataType dtype : {DataType::kUInt8, DataType::kFloat16, DataType::kFloat32, DataType::kFloat64}) {
        for (const auto& [shape, perms] : cases) {
            const Tensor x = iota(dtype, shape);
            const std::vector<int64_t> in_strides = row_major_strides(shape);
            for (const auto& perm : perms) {
                for (int threads : {1, 2}) {
                    KernelHarness h("Transpose", 13);
                    set_attr(h.node(), "perm", perm);
                    h.input(x);
                    const Tensor y = h.run(threads)[0];
                    Shape out;
                    for (int64_t p : perm) out.push_back(shape[static_cast<std::size_t>(p)]);
                    ASSERT_EQ(y.shape(), out);
                    const std::vector<int64_t> out_strides = row_major_strides(out);
                    for (int64_t i = 0; i < y.numel(); ++i) {
                        int64_t source = 0;
                        for (std::size_t d = 0; d < out.size(); ++d)
                            source += (i / out_strides[d]) % out[d] * in_strides[static_cast<std::size_t>(perm[d])];
                        ASSERT_EQ(y.value_as_double(i), x.value_as_double(source))
                            << dtype_name(dtype) << " " << shape_to_string(shape) << " perm " << perm.size() << " at "
                            << i;
                    }
                }
            }
        }
    }
}

TEST(TensorOps, Concat) {
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
    EXPECT_THROW_MESSAGE(OpTester("Concat").input(a).run(), ModelError,
                         "it lacks the required attribute 'axis' of Concat");
}

TEST(TensorOps, ConcatTakesAnOfferedOutputOnlyWhenItsInputsAreItsSlices) {
    // np.concatenate([a, b], axis=1) for a (1, 2, 3) and b (1, 3, 3), with an offered (1, 5, 3) buffer.
    const Tensor a_values = iota(DataType::kFloat32, {1, 2, 3});
    const Tensor b_values = f32({1, 3, 3}, {10, 11, 12, 13, 14, 15, 16, 17, 18});
    const Tensor expected = f32({1, 5, 3}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15, 16, 17, 18});
    auto concat = [](const Tensor& a, const Tensor& b, const Tensor& offered) {
        KernelHarness h("Concat", 13);
        set_attr(h.node(), "axis", int64_t{1});
        h.input(a).input(b).offer_output(0, offered);
        return h.run()[0];
    };
    // Views of a buffer: `first_at` and `second_at` floats into it.
    auto slices = [&](const Tensor& buffer, int64_t first_at, int64_t second_at) {
        auto owner = std::make_shared<Tensor>(buffer);
        std::shared_ptr<void> keep(owner, owner->data());
        float* base = owner->data_as<float>();
        Tensor a = Tensor::wrap(DataType::kFloat32, {1, 2, 3}, keep, base + first_at);
        Tensor b = Tensor::wrap(DataType::kFloat32, {1, 3, 3}, keep, base + second_at);
        std::copy_n(a_values.data_as<float>(), 6, a.data_as<float>());
        std::copy_n(b_values.data_as<float>(), 9, b.data_as<float>());
        return std::pair<Tensor, Tensor>(a, b);
    };
    auto sentinel = [] {
        Tensor buffer = Tensor::uninitialized(DataType::kFloat32, {1, 5, 3});
        std::fill_n(buffer.data_as<float>(), 15, -1.0f);
        return buffer;
    };

    // The inputs are the slices they would be copied to: the buffer is the output, nothing is copied.
    Tensor buffer = sentinel();
    auto [a, b] = slices(buffer, 0, 6);
    Tensor y = concat(a, b, buffer);
    EXPECT_EQ(y.data(), buffer.data());
    EXPECT_TRUE(tensors_near(y, expected, 0.0));

    // Inputs of their own: a new output; the offered buffer is not written.
    buffer = sentinel();
    y = concat(a_values, b_values, buffer);
    EXPECT_NE(y.data(), buffer.data());
    EXPECT_TRUE(tensors_near(y, expected, 0.0));
    EXPECT_TRUE(std::all_of(buffer.data_as<float>(), buffer.data_as<float>() + 15, [](float v) { return v == -1.0f; }));

    // Slices of the buffer in the wrong places (b first, then a): copied into a new output.
    buffer = sentinel();
    auto [late_a, early_b] = slices(buffer, 9, 0);
    y = concat(late_a, early_b, buffer);
    EXPECT_NE(y.data(), buffer.data());
    EXPECT_TRUE(tensors_near(y, expected, 0.0));

    // An offered buffer of another shape is ignored.
    y = concat(a_values, b_values, Tensor::uninitialized(DataType::kFloat32, {1, 6, 3}));
    EXPECT_TRUE(tensors_near(y, expected, 0.0));
}

TEST(TensorOps, SplitByOpset) {
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

TEST(TensorOps, Slice) {
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

TEST(TensorOps, PadModes) {
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

TEST(TensorOps, Tile) {
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

TEST(TensorOps, Trilu) {
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

TEST(TensorOps, CenterCropPad) {
    // crop axis 0 from 3 to 1 (row 1), pad axis 1 from 2 to 4 (one zero each side):
    // np.pad(x[1:2], ((0, 0), (1, 1)))
    EXPECT_TRUE(
        tensors_near(OpTester("CenterCropPad", 18).input(f32({3, 2}, {1, 2, 3, 4, 5, 6})).input(i64({2}, {1, 4})).run(),
                     f32({1, 4}, {0, 3, 4, 0})));
    EXPECT_THROW_MESSAGE(
        OpTester("CenterCropPad", 18).input(f32({3, 2}, {1, 2, 3, 4, 5, 6})).input(i64({1}, {1})).run(), ModelError,
        "shape must have 2 elements, but it has 1");
}

TEST(TensorOps, ReverseSequence) {
    const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    // time_axis 0, batch_axis 1, lens [3, 1]: column 0 reversed fully, column 1 unchanged
    EXPECT_TRUE(tensors_near(OpTester("ReverseSequence", 10).input(x).input(i64({2}, {3, 1})).run(),
                             f32({3, 2}, {5, 2, 3, 4, 1, 6})));
    EXPECT_THROW_MESSAGE(OpTester("ReverseSequence", 10).input(x).input(i64({2}, {3, 1})).attr("batch_axis", 0).run(),
                         ModelError, "attributes 'batch_axis' and 'time_axis' must be 0 and 1 in some order");
}

}  // namespace
}  // namespace polygraphy::testing
