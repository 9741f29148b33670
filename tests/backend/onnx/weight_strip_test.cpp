// Weight stripping and reconstruction (backend/onnx/weight_strip.h).
#include "polygraphy/backend/onnx/weight_strip.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "parity_models.h"
#include "polygraphy/backend/onnx/sparsity.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const onnx::TensorProto& initializer(const onnx::ModelProto& model, const std::string& name) {
    for (const auto& tensor : model.graph().initializer())
        if (tensor.name() == name) return tensor;
    throw std::runtime_error("no initializer " + name);
}

TEST(WeightStrip, PatternsChooseTheWeights) {
    const OnnxModel model = testing::strip_model().build();
    EXPECT_THAT(find_strippable_weights(*model), ElementsAre("conv_w", "conv_b", "gemm_w", "gemm_b", "table", "sliced",
                                                             "quantized_w", "transposed_w", "plugin_w"));
    EXPECT_THAT(find_strippable_weights(*model, {"table", "conv_b"}),
                ElementsAre("conv_w", "gemm_w", "gemm_b", "sliced", "quantized_w", "transposed_w", "plugin_w"));
}

TEST(WeightStrip, AChainWithAnotherReaderIsNotAPattern) {
    testing::ModelBuilder builder = testing::strip_model();
    builder.node("Relu", {"tw"}, {"tw_relu"}, "second_reader");  // the Transpose output now has two readers
    builder.output("tw_relu", DataType::kFloat32, Shape{16, 4});
    const auto names = find_strippable_weights(*builder.build());
    EXPECT_EQ(std::find(names.begin(), names.end(), "transposed_w"), names.end());
}

TEST(WeightStrip, StrippingClearsEveryDataFieldAndMarksSparsity) {
    testing::ModelBuilder builder = testing::strip_model();
    // A weight stored in float_data rather than raw_data is stripped too.
    for (auto& tensor : *builder.proto().mutable_graph()->mutable_initializer())
        if (tensor.name() == "conv_b") {
            const Tensor values = tensor_from_proto(tensor);
            tensor.clear_raw_data();
            for (int64_t i = 0; i < values.numel(); ++i)
                tensor.add_float_data(static_cast<float>(values.value_as_double(i)));
        }
    OnnxModel model = builder.build();
    model->set_doc_string("exported");
    EXPECT_EQ(strip_weights(*model, {"gemm_b"}), 8u);
    EXPECT_EQ(model->doc_string(), "exported-TRT_WEIGHTLESS");
    EXPECT_EQ(initializer(*model, "gemm_w").doc_string(), "TRT_WEIGHTLESS/SPARSE_2_4");
    EXPECT_EQ(initializer(*model, "conv_w").doc_string(), "TRT_WEIGHTLESS/");
    EXPECT_EQ(initializer(*model, "conv_b").float_data_size(), 0);
    EXPECT_TRUE(initializer(*model, "conv_w").raw_data().empty());
    EXPECT_FALSE(initializer(*model, "gemm_b").raw_data().empty());
    EXPECT_FALSE(initializer(*model, "small_table").raw_data().empty());
    EXPECT_THAT(initializer(*model, "table").dims(), ElementsAre(300, 4));

    // Reconstruction fills them again and prunes the sparse one; it is repeatable for a seed.
    onnx::ModelProto again = *model;
    EXPECT_EQ(reconstruct_weights(*model, 7), 8u);
    EXPECT_EQ(reconstruct_weights(again, 7), 8u);
    for (const char* name : {"conv_w", "conv_b", "gemm_w", "table", "plugin_w"}) {
        const Tensor values = tensor_from_proto(initializer(*model, name));
        EXPECT_EQ(values.dtype(), DataType::kFloat32) << name;
        EXPECT_TRUE(values.equals(tensor_from_proto(initializer(again, name)))) << name;
    }
    EXPECT_TRUE(is_2_4_sparse(tensor_from_proto(initializer(*model, "gemm_w")), 0));
    EXPECT_FALSE(is_2_4_sparse(tensor_from_proto(initializer(*model, "conv_w")), 1));
}

TEST(WeightStrip, NothingToStripLeavesTheDocString) {
    testing::ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    EXPECT_EQ(strip_weights(*model), 0u);
    EXPECT_EQ(model->doc_string(), "");
}

TEST(WeightStrip, ReconstructRefusesMarkedWeightsItCannotHaveWritten) {
    OnnxModel model = testing::strip_model().build();
    strip_weights(*model);
    onnx::ModelProto with_data = *model;
    with_data.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(8 * 4 * 9 * 4, '\0'));
    const onnx::ModelProto before = with_data;
    try {
        reconstruct_weights(with_data);
        FAIL() << "expected an error";
    } catch (const FormatError& error) {
        EXPECT_THAT(error.what(), HasSubstr("Initializer 'conv_w' is marked TRT_WEIGHTLESS but still holds data"));
    }
    EXPECT_EQ(with_data.SerializeAsString(), before.SerializeAsString());  // unchanged

    onnx::ModelProto bad_doc = *model;
    bad_doc.mutable_graph()->mutable_initializer(1)->set_doc_string("TRT_WEIGHTLESS/a/b");
    try {
        reconstruct_weights(bad_doc);
        FAIL() << "expected an error";
    } catch (const FormatError& error) {
        EXPECT_THAT(error.what(), HasSubstr("Initializer 'conv_b' has the doc_string 'TRT_WEIGHTLESS/a/b'"));
    }
}

}  // namespace
}  // namespace polygraphy
