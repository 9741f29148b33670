// 2:4 sparsity: candidates, checking and pruning (backend/onnx/sparsity.h).
#include "polygraphy/backend/onnx/sparsity.h"

#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "parity_models.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;

Tensor floats(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kFloat32, shape, values);
}

std::vector<double> values_of(const Tensor& tensor) {
    std::vector<double> values;
    for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.value_as_double(i));
    return values;
}

TEST(Sparsity, PruneKeepsTheTwoLargestMagnitudesOfEachGroup) {
    Tensor tensor = floats({2, 4}, {1, -5, 3, 2, -0.5, 0.25, 7, -8});
    prune_2_4(tensor, 1);
    EXPECT_THAT(values_of(tensor), ElementsAre(0, -5, 3, 0, 0, 0, 7, -8));
    EXPECT_TRUE(is_2_4_sparse(tensor, 1));
}

TEST(Sparsity, GroupsRunAlongTheAxis) {
    // Axis 0 of a [4, 2] tensor: the groups are the two columns.
    Tensor tensor = floats({4, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
    EXPECT_FALSE(is_2_4_sparse(tensor, 0));
    prune_2_4(tensor, 0);
    EXPECT_THAT(values_of(tensor), ElementsAre(0, 0, 0, 0, 3, 30, 4, 40));
    EXPECT_TRUE(is_2_4_sparse(tensor, 0));
    EXPECT_FALSE(is_2_4_sparse(floats({4, 2}, {0, 0, 0, 1, 1, 1, 1, 1}), 0));  // column 1 has one zero
}

TEST(Sparsity, TiesGoToTheFirstValueAndNanIsNeverTheSmallest) {
    Tensor ties = floats({4}, {2, 2, 2, 2});
    prune_2_4(ties, 0);
    EXPECT_THAT(values_of(ties), ElementsAre(0, 0, 2, 2));
    Tensor with_nan = floats({4}, {std::nan(""), 1, 2, 3});
    prune_2_4(with_nan, 0);
    const std::vector<double> values = values_of(with_nan);
    EXPECT_TRUE(std::isnan(values[0]));
    EXPECT_THAT(std::vector<double>(values.begin() + 1, values.end()), ElementsAre(0, 0, 3));
    EXPECT_FALSE(is_2_4_sparse(floats({4}, {std::nan(""), std::nan(""), 0, 1}), 0));  // NaN is not a zero
}

TEST(Sparsity, HalfPrecisionTypesArePruned) {
    for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
        Tensor tensor = floats({4}, {0.5, -4, 0.25, 3}).cast(dtype);
        prune_2_4(tensor, 0);
        EXPECT_THAT(values_of(tensor), ElementsAre(0, -4, 0, 3)) << dtype_name(dtype);
    }
}

TEST(Sparsity, BadAxesAndTypesAreErrors) {
    Tensor tensor = floats({2, 6}, std::vector<double>(12, 1));
    EXPECT_THROW(prune_2_4(tensor, 1), PolygraphyException);  // 6 is not a multiple of 4
    EXPECT_THROW(is_2_4_sparse(tensor, 2), PolygraphyException);
    EXPECT_THROW(is_2_4_sparse(tensor, -1), PolygraphyException);
    Tensor ints = Tensor::from_doubles(DataType::kInt32, {4}, {1, 2, 3, 4});
    try {
        prune_2_4(ints, 0);
        FAIL() << "expected an error";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), ::testing::HasSubstr("Cannot prune a tensor of type int32"));
    }
}

TEST(Sparsity, CandidatesFollowPolygraphysRules) {
    const OnnxModel model = testing::sparsity_model().build();
    std::vector<std::string> names;
    std::vector<int64_t> axes;
    for (const auto& candidate : find_sparsity_candidates(*model)) {
        names.push_back(candidate.name);
        axes.push_back(candidate.axis);
    }
    // w_int8 (type), w_odd (axis of 6) and w_scaled (behind a Mul) are not candidates.
    EXPECT_THAT(names, ElementsAre("w_matmul", "w_gemm", "w_transposed", "w_cast", "w_conv", "w_half"));
    EXPECT_THAT(axes, ElementsAre(0, 1, 1, 0, 1, 0));
    EXPECT_THAT(check_sparsity(*model), ElementsAre("w_conv"));

    const auto skipped = find_sparsity_candidates(*model, {"w_matmul", "w_conv"});
    EXPECT_EQ(skipped.size(), 4u);
}

TEST(Sparsity, PruningAModelMakesEveryCandidateSparse) {
    OnnxModel model = testing::sparsity_model().build();
    const onnx::ModelProto original = *model;
    EXPECT_EQ(prune_model_2_4(*model, {"w_gemm"}), 5u);
    EXPECT_EQ(model->producer_name(), "polygraphy surgeon prune");
    EXPECT_EQ(model->opset_import_size(), original.opset_import_size());
    EXPECT_THAT(check_sparsity(*model), ElementsAre("w_cast", "w_conv", "w_half", "w_matmul", "w_transposed"));
    for (int i = 0; i < model->graph().initializer_size(); ++i) {
        const auto& pruned = model->graph().initializer(i);
        EXPECT_EQ(pruned.name(), original.graph().initializer(i).name());
        EXPECT_EQ(pruned.data_type(), original.graph().initializer(i).data_type());
        if (pruned.name() == "w_gemm" || pruned.name() == "w_odd" || pruned.name() == "w_int8") {
            EXPECT_TRUE(tensor_from_proto(pruned).equals(tensor_from_proto(original.graph().initializer(i))));
        }
    }
    // Nothing to prune: the model is left as it is.
    onnx::ModelProto untouched = original;
    untouched.mutable_graph()->clear_node();
    EXPECT_EQ(prune_model_2_4(untouched), 0u);
    EXPECT_EQ(untouched.producer_name(), original.producer_name());
}

}  // namespace
}  // namespace polygraphy
