// postprocess_func::top_k and Comparator::postprocess.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "polygraphy/common/exception.h"
#include "polygraphy/comparator/comparator.h"

namespace polygraphy {
namespace {

std::vector<int64_t> values_of(const Tensor& tensor) {
    EXPECT_EQ(tensor.dtype(), DataType::kInt64);
    const auto* data = tensor.data_as<int64_t>();
    return std::vector<int64_t>(data, data + tensor.numel());
}

IterationResult one_output(const std::string& name, Tensor tensor) {
    IterationResult result;
    result.outputs.set(name, std::move(tensor));
    return result;
}

TEST(TopK, KeepsIndicesOfTheLargestValuesLargestFirstTiesInIndexOrder) {
    IterationResult result = one_output("p", Tensor::from_doubles(DataType::kFloat32, {2, 4},
                                                                  {0.1, 0.7, 0.7, 0.2,  //
                                                                   5, -1, 3, 4}));
    postprocess_func::top_k(3)(result);
    const Tensor& indices = result.outputs.at("p");
    EXPECT_EQ(indices.shape(), Shape({2, 3}));
    EXPECT_EQ(values_of(indices), (std::vector<int64_t>{1, 2, 3, 0, 3, 2}));
}

TEST(TopK, AlongAnotherAxisClampedToItsLength) {
    // Shape (3, 2): top-5 along axis 0 keeps all 3 rows, per column.
    IterationResult result = one_output("p", Tensor::from_doubles(DataType::kInt32, {3, 2}, {1, 9, 3, 8, 2, 7}));
    postprocess_func::top_k(5, 0)(result);
    EXPECT_EQ(result.outputs.at("p").shape(), Shape({3, 2}));
    EXPECT_EQ(values_of(result.outputs.at("p")), (std::vector<int64_t>{1, 0, 2, 1, 0, 2}));
}

TEST(TopK, NaNsSortLast) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    IterationResult result = one_output("p", Tensor::from_doubles(DataType::kFloat32, {4}, {nan, 1, nan, 2}));
    postprocess_func::top_k(4)(result);
    EXPECT_EQ(values_of(result.outputs.at("p")), (std::vector<int64_t>{3, 1, 0, 2}));
}

TEST(TopK, PerOutputSettingsWithoutDefaultLeaveOtherOutputsAlone) {
    IterationResult result = one_output("a", Tensor::from_doubles(DataType::kFloat32, {3}, {1, 3, 2}));
    result.outputs.set("b", Tensor::from_doubles(DataType::kFloat32, {3}, {1, 3, 2}));
    postprocess_func::top_k(PerOutput<TopK>{{"a", TopK{1, -1}}})(result);
    EXPECT_EQ(values_of(result.outputs.at("a")), (std::vector<int64_t>{1}));
    EXPECT_EQ(result.outputs.at("b").dtype(), DataType::kFloat32);
    // k = 0 leaves the output unchanged, as Polygraphy's falsy k does.
    postprocess_func::top_k(PerOutput<TopK>{{"", TopK{0, -1}}})(result);
    EXPECT_EQ(result.outputs.at("b").dtype(), DataType::kFloat32);
}

TEST(TopK, BadInputsAreErrors) {
    IterationResult result = one_output("p", Tensor::from_doubles(DataType::kFloat32, {3}, {1, 2, 3}));
    try {
        postprocess_func::top_k(2, 1)(result);
        ADD_FAILURE();
    } catch (const PolygraphyException& error) {
        EXPECT_STREQ(error.what(), "Top-K axis 1 is out of range for output 'p' of shape (3,)");
    }
    try {
        postprocess_func::top_k(-1);
        ADD_FAILURE();
    } catch (const UsageError& error) {
        EXPECT_STREQ(error.what(), "Top-K: k must not be negative.\nNote: given: -1");
    }
    Tensor strings(DataType::kString, {1});
    IterationResult text = one_output("s", strings);
    try {
        postprocess_func::top_k(1)(text);
        ADD_FAILURE();
    } catch (const PolygraphyException& error) {
        EXPECT_STREQ(error.what(), "Top-K cannot be applied to output 's': it holds strings");
    }
}

TEST(ComparatorPostprocess, AppliesToEveryIterationOfEveryRunner) {
    RunResults results;
    for (const char* runner : {"a", "b"}) {
        std::vector<IterationResult> iterations;
        for (int i = 0; i < 2; ++i)
            iterations.push_back(one_output("p", Tensor::from_doubles(DataType::kFloat32, {3}, {1, 3, 2 + i * 5.0})));
        results.add(iterations, runner);
    }
    RunResults& same = Comparator::postprocess(results, postprocess_func::top_k(1));
    EXPECT_EQ(&same, &results);
    for (const auto& [name, iterations] : results) {
        EXPECT_EQ(values_of(iterations[0].outputs.at("p")), (std::vector<int64_t>{1}));
        EXPECT_EQ(values_of(iterations[1].outputs.at("p")), (std::vector<int64_t>{2}));
    }
    EXPECT_TRUE(static_cast<bool>(Comparator::compare_accuracy(results, compare_func::indices())));
    EXPECT_THROW(Comparator::postprocess(results, PostprocessFunc()), PolygraphyException);
}

}  // namespace
}  // namespace polygraphy
