#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

Tensor i64(const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kInt64, {static_cast<int64_t>(values.size())}, values);
}

struct Expected {
    std::string op;
    std::vector<double> axis1_keep;    // axes [1], keepdims 1 -> shape (2, 1, 4)
    std::vector<double> axes02_drop;   // axes [0, 2], keepdims 0 -> shape (3,)
};

// numpy, x = np.arange(24.).reshape(2, 3, 4) / 8 - 1 (x + 2 for ReduceLogSum):
//   ReduceSum x.sum(axis, keepdims)        ReduceMean x.mean(...)        ReduceMax x.max(...)   ReduceMin x.min(...)
//   ReduceProd x.prod(...)                 ReduceL1 np.abs(x).sum(...)   ReduceL2 np.sqrt((x * x).sum(...))
//   ReduceLogSum np.log((x + 2).sum(...))  ReduceLogSumExp np.log(np.exp(x).sum(...))  ReduceSumSquare (x * x).sum(...)
std::vector<Expected> expected_values() {
    return {
        {"ReduceSum", {-1.5, -1.125, -0.75, -0.375, 3.0, 3.375, 3.75, 4.125}, {-0.5, 3.5, 7.5}},
        {"ReduceMean", {-0.5, -0.375, -0.25, -0.125, 1.0, 1.125, 1.25, 1.375}, {-0.0625, 0.4375, 0.9375}},
        {"ReduceMax", {0.0, 0.125, 0.25, 0.375, 1.5, 1.625, 1.75, 1.875}, {0.875, 1.375, 1.875}},
        {"ReduceMin", {-1.0, -0.875, -0.75, -0.625, 0.5, 0.625, 0.75, 0.875}, {-1.0, -0.5, 0.0}},
        {"ReduceProd", {0.0, 0.041015625, 0.046875, 0.029296875, 0.75, 1.14257812, 1.640625, 2.25585938},
         {0.0841140747, 0.0113296509, 0.0}},
        {"ReduceL1", {1.5, 1.375, 1.25, 1.125, 3.0, 3.375, 3.75, 4.125}, {6.0, 6.0, 7.5}},
        {"ReduceL2", {1.11803399, 0.960143218, 0.829156198, 0.739509973, 1.87082869, 2.07289049, 2.27760839, 2.48432586},
         {2.16506351, 2.48746859, 3.41869858}},
        {"ReduceLogSum", {1.5040774, 1.5841201, 1.65822808, 1.72722095, 2.19722458, 2.23804657, 2.27726729, 2.31500761},
         {2.74084002, 2.97041447, 3.15700042}},
        {"ReduceLogSumExp",
         {0.680269671, 0.805269671, 0.930269671, 1.05526967, 2.18026967, 2.30526967, 2.43026967, 2.55526967},
         {2.28495173, 2.78495173, 3.28495173}},
        {"ReduceSumSquare", {1.25, 0.921875, 0.6875, 0.546875, 3.5, 4.296875, 5.1875, 6.171875}, {4.6875, 6.1875, 11.6875}},
    };
}

Tensor reduce_input(const std::string& op) { return f32({2, 3, 4}, arange(24, op == "ReduceLogSum" ? 1.0 : -1.0, 0.125)); }

/// Axes as an attribute (before ReduceSum-13 / Reduce*-18) or as the second input (from then on).
void set_axes(KernelHarness& h, const std::string& op, int64_t opset, const std::vector<int64_t>& axes, bool constant) {
    const bool as_input = op == "ReduceSum" ? opset >= 13 : opset >= 18;
    if (as_input) {
        std::vector<double> values(axes.begin(), axes.end());
        h.input(i64(values), constant);
    } else {
        set_attr(h.node(), "axes", axes);
    }
}

TEST(ReduceOps, EveryOpMatchesNumpyAcrossOpsets) {
    for (const Expected& e : expected_values()) {
        for (int64_t opset : {11, 13, 18}) {
            SCOPED_TRACE(e.op + " opset " + std::to_string(opset));
            KernelHarness keep(e.op, opset);
            keep.input(reduce_input(e.op));
            set_axes(keep, e.op, opset, {1}, true);
            expect_close(keep.run()[0], {2, 1, 4}, e.axis1_keep, 1e-6, 1e-7);

            KernelHarness drop(e.op, opset);
            set_attr(drop.node(), "keepdims", int64_t{0});
            drop.input(reduce_input(e.op));
            set_axes(drop, e.op, opset, {0, -1}, false);  // -1 == 2
            expect_close(drop.run()[0], {3}, e.axes02_drop, 1e-6, 1e-7);
        }
    }
}

TEST(ReduceOps, NoAxesReducesEverything) {
    // numpy: x.sum(keepdims=True) = 10.5, x.mean() = 0.4375 for x = np.arange(24.) / 8 - 1
    KernelHarness attr_form("ReduceSum", 11);
    attr_form.input(reduce_input("ReduceSum"));
    expect_close(attr_form.run()[0], {1, 1, 1}, {10.5});
    KernelHarness input_form("ReduceMean", 18);
    set_attr(input_form.node(), "keepdims", int64_t{0});
    input_form.input(reduce_input("ReduceMean")).omitted_input();
    expect_close(input_form.run()[0], Shape{}, {0.4375});
    KernelHarness empty_axes("ReduceMax", 18);
    empty_axes.input(reduce_input("ReduceMax")).input(Tensor(DataType::kInt64, {0}));
    expect_close(empty_axes.run()[0], {1, 1, 1}, {1.875});
}

TEST(ReduceOps, NoopWithEmptyAxes) {
    // noop_with_empty_axes=1 reduces over no axis: ReduceSum is the identity, ReduceSumSquare squares
    // (onnx.reference: np.square(data)).
    const Tensor x = f32({2, 2}, {1, -2, 3, 0.5});
    KernelHarness sum("ReduceSum", 13);
    set_attr(sum.node(), "noop_with_empty_axes", int64_t{1});
    sum.input(x);
    expect_close(sum.run()[0], {2, 2}, {1, -2, 3, 0.5});
    KernelHarness square("ReduceSumSquare", 18);
    set_attr(square.node(), "noop_with_empty_axes", int64_t{1});
    square.input(x).input(Tensor(DataType::kInt64, {0}));
    expect_close(square.run()[0], {2, 2}, {1, 4, 9, 0.25});
}

TEST(ReduceOps, EmptySetReductions) {
    // numpy over a zero-length axis: sum 0, prod 1, max -inf (ONNX), mean nan, logsumexp -inf
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<std::pair<std::string, double>> cases = {
        {"ReduceSum", 0.0}, {"ReduceProd", 1.0}, {"ReduceMax", -inf}, {"ReduceMin", inf},
        {"ReduceMean", nan}, {"ReduceLogSumExp", -inf}, {"ReduceL2", 0.0}};
    for (const auto& [op, value] : cases) {
        SCOPED_TRACE(op);
        KernelHarness h(op, 18);
        h.input(Tensor(DataType::kFloat32, {2, 0, 3})).input(i64({1}));
        expect_close(h.run()[0], {2, 1, 3}, std::vector<double>(6, value));
    }
    KernelHarness zero_out("ReduceSum", 13);
    zero_out.input(Tensor(DataType::kFloat32, {0, 4})).input(i64({1}));
    EXPECT_EQ(zero_out.run()[0].shape(), (Shape{0, 1}));
}

TEST(ReduceOps, IntegerAndBoolTypes) {
    // numpy: np.array([[1, -2, 3], [4, 5, -6]], np.int32).sum(axis=1) = [2, 3]; .prod(axis=1) = [-6, -120]
    const std::vector<double> values = {1, -2, 3, 4, 5, -6};
    KernelHarness sum("ReduceSum", 13);
    set_attr(sum.node(), "keepdims", int64_t{0});
    sum.input(Tensor::from_doubles(DataType::kInt32, {2, 3}, values)).input(i64({1}));
    const Tensor y = sum.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kInt32);
    expect_close(y, {2}, {2, 3}, 0, 0);
    KernelHarness prod("ReduceProd", 13);
    set_attr(prod.node(), "axes", std::vector<int64_t>{1});
    prod.input(Tensor::from_doubles(DataType::kInt64, {2, 3}, values));
    expect_close(prod.run()[0], {2, 1}, {-6, -120}, 0, 0);
    KernelHarness max8("ReduceMax", 13);
    set_attr(max8.node(), "axes", std::vector<int64_t>{0});
    max8.input(Tensor::from_doubles(DataType::kInt8, {2, 3}, values));
    expect_close(max8.run()[0], {1, 3}, {4, 5, 3}, 0, 0);
    KernelHarness any("ReduceMax", 20);
    any.input(Tensor::from_doubles(DataType::kBool, {2, 2}, {0, 1, 0, 0})).input(i64({1}));
    const Tensor b = any.run()[0];
    EXPECT_EQ(b.dtype(), DataType::kBool);
    expect_close(b, {2, 1}, {1, 0}, 0, 0);
}

TEST(ReduceOps, Float16ComputesInFloat32) {
    KernelHarness h("ReduceMean", 18);
    h.input(reduce_input("ReduceMean").cast(DataType::kFloat16)).input(i64({1}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kFloat16);
    expect_close(y, {2, 1, 4}, {-0.5, -0.375, -0.25, -0.125, 1.0, 1.125, 1.25, 1.375}, 1e-3, 0);
}

/// Sum, max and log-sum-exp over `axes` in double, for random-data checks of every memory layout.
std::vector<double> naive_reduce(const Tensor& x, const std::vector<int64_t>& axes, const std::string& op) {
    const Shape& s = x.shape();
    std::vector<bool> reduced(s.size(), false);
    for (int64_t a : axes) reduced[static_cast<std::size_t>(a)] = true;
    int64_t outputs = 1;
    for (std::size_t d = 0; d < s.size(); ++d) if (!reduced[d]) outputs *= s[d];
    std::vector<std::vector<double>> groups(static_cast<std::size_t>(outputs));
    for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t rest = i, slot = 0, stride = 1;
        for (std::size_t d = s.size(); d-- > 0;) {
            const int64_t index = rest % s[d];
            rest /= s[d];
            if (!reduced[d]) {
                slot += index * stride;
                stride *= s[d];
            }
        }
        groups[static_cast<std::size_t>(slot)].push_back(x.value_as_double(i));
    }
    std::vector<double> result;
    for (const auto& g : groups) {
        double sum = 0, max = -std::numeric_limits<double>::infinity();
        for (double v : g) max = std::max(max, v);
        for (double v : g) sum += op == "ReduceLogSumExp" ? std::exp(v - max) : v;
        result.push_back(op == "ReduceMax" ? max : op == "ReduceLogSumExp" ? std::log(sum) + max : sum);
    }
    return result;
}

TEST(ReduceOps, RandomLayoutsMatchNaiveReference) {
    struct Case {
        Shape shape;
        std::vector<int64_t> axes;
    };
    const std::vector<Case> cases = {
        {{64, 1000}, {0}},           // innermost kept: rows of contiguous vectors
        {{64, 1000}, {1}},           // innermost reduced: contiguous runs
        {{3, 70000}, {0, 1}},        // one output, split across threads
        {{4, 5, 6, 7}, {0, 2}},      // alternating kept/reduced
        {{4, 5, 6, 7}, {1, 3}},
        {{2, 1, 3, 1, 5}, {1, 2}},   // size-1 dims merged away
        {{7, 3000}, {1}},            // few outputs, long runs
    };
    for (const auto& c : cases) {
        const Tensor x = random_tensor(c.shape, 41);
        for (const std::string op : {"ReduceSum", "ReduceMax", "ReduceLogSumExp"}) {
            SCOPED_TRACE(op + " " + shape_to_string(c.shape));
            KernelHarness h(op, 18);
            set_attr(h.node(), "keepdims", int64_t{0});
            std::vector<double> axes(c.axes.begin(), c.axes.end());
            h.input(x).input(i64(axes));
            Shape out;
            for (std::size_t d = 0; d < c.shape.size(); ++d) {
                if (std::find(c.axes.begin(), c.axes.end(), static_cast<int64_t>(d)) == c.axes.end()) out.push_back(c.shape[d]);
            }
            expect_close(h.run(2)[0], out, naive_reduce(x, c.axes, op), 1e-6, 1e-6);
        }
    }
}

TEST(ReduceOps, RejectsBadAxesAndAttributes) {
    KernelHarness range("ReduceSum", 13);
    range.input(reduce_input("ReduceSum")).input(i64({3}));
    expect_error([&] { range.run(); }, "Node 'node' (ReduceSum): axes value 3 is out of range for an input of rank 3");
    KernelHarness repeat("ReduceMean", 13);
    set_attr(repeat.node(), "axes", std::vector<int64_t>{1, -2});
    repeat.input(reduce_input("ReduceMean"));
    expect_error([&] { repeat.run(); }, "axes repeat axis -2");
    KernelHarness keep("ReduceMax", 13);
    set_attr(keep.node(), "keepdims", int64_t{2});
    expect_error([&] { keep.create(); }, "attribute 'keepdims' must be 0 or 1");
    KernelHarness attr("ReduceMean", 18);
    set_attr(attr.node(), "axes", std::vector<int64_t>{1});
    expect_error([&] { attr.create(); }, "attribute 'axes' is not allowed at opset 18 (axes are the second input)");
    KernelHarness type("ReduceSum", 13);
    type.input(Tensor(DataType::kInt8, {2}));
    expect_error([&] { type.run(); }, "input data has unsupported data type int8");
}

// ---- ArgMax / ArgMin -----------------------------------------------------------------------------------------

TEST(ArgOps, KeepdimsAndSelectLastIndex) {
    // numpy: x = [[1, 5, 5, 2], [7, 0, 7, -1]]; np.argmax(x, 1) = [1, 0]; np.argmin(x, 1) = [0, 3];
    // last occurrence: 3 - np.argmax(x[:, ::-1], 1) = [2, 2]; np.argmax(x, 0) = [1, 0, 1, 0]
    const Tensor x = f32({2, 4}, {1, 5, 5, 2, 7, 0, 7, -1});
    KernelHarness max("ArgMax", 13);
    set_attr(max.node(), "axis", int64_t{1});
    max.input(x);
    const Tensor y = max.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kInt64);
    expect_close(y, {2, 1}, {1, 0}, 0, 0);
    KernelHarness last("ArgMax", 13);
    set_attr(last.node(), "axis", int64_t{-1});
    set_attr(last.node(), "select_last_index", int64_t{1});
    last.input(x);
    expect_close(last.run()[0], {2, 1}, {2, 2}, 0, 0);
    KernelHarness min("ArgMin", 13);
    set_attr(min.node(), "axis", int64_t{1});
    set_attr(min.node(), "keepdims", int64_t{0});
    min.input(x.cast(DataType::kInt32));
    expect_close(min.run()[0], {2}, {0, 3}, 0, 0);
    KernelHarness axis0("ArgMax", 11);
    set_attr(axis0.node(), "keepdims", int64_t{0});
    axis0.input(x.cast(DataType::kFloat16));
    expect_close(axis0.run()[0], {4}, {1, 0, 1, 0}, 0, 0);
}

TEST(ArgOps, NaNWinsLikeNumpy) {
    // numpy: np.argmax([1, nan, 3, nan]) = 1; np.argmin(...) = 1
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const std::string op : {"ArgMax", "ArgMin"}) {
        KernelHarness h(op, 13);
        h.input(f32({4}, {1, nan, 3, nan}));
        expect_close(h.run()[0], {1}, {1}, 0, 0);
    }
}

TEST(ArgOps, RejectsBadAxisAndEmptyAxis) {
    KernelHarness axis("ArgMax", 13);
    set_attr(axis.node(), "axis", int64_t{2});
    axis.input(f32({2, 2}, {1, 2, 3, 4}));
    expect_error([&] { axis.run(); }, "Node 'node' (ArgMax): attribute 'axis' is out of range for an input of rank 2");
    KernelHarness empty("ArgMin", 13);
    set_attr(empty.node(), "axis", int64_t{1});
    empty.input(Tensor(DataType::kFloat32, {2, 0}));
    expect_error([&] { empty.run(); }, "cannot take the argmin over an empty axis");
    KernelHarness zero("ArgMax", 13);
    set_attr(zero.node(), "axis", int64_t{1});
    zero.input(Tensor(DataType::kFloat32, {0, 3}));
    EXPECT_EQ(zero.run()[0].shape(), (Shape{0, 1}));
}

}  // namespace
}  // namespace polygraphy::testing
