// ONNX Runtime's QOperator-format operators (com.microsoft QLinear*) against its own CPU kernels.
// Quantized results may differ by one code where the two runtimes round a value that lies within a
// float's rounding of a half-way point; everything else must be equal.
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

using ::testing::HasSubstr;

Tensor scalar(DataType dtype, double value) {
    return Tensor::from_doubles(dtype, {}, {value});
}

/// A model of one com.microsoft node `op` whose inputs are `inputs` in order: a name starting with
/// "x" is a graph input (fed from `feed`), "" is omitted, the others are initializers from
/// `constants`; the output "y" has `dtype`.
void expect_qlinear_matches_onnxrt(const std::string& op, const std::vector<std::string>& inputs, const TensorMap& feed,
                                   const std::map<std::string, Tensor>& constants, DataType dtype,
                                   const std::function<void(onnx::NodeProto&)>& attributes = {}) {
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    std::set<std::string> declared;
    for (const std::string& name : inputs) {
        if (name.empty() || !declared.insert(name).second) continue;
        if (name[0] == 'x')
            builder.input(name, feed.at(name).dtype(), feed.at(name).shape());
        else
            builder.initializer(name, constants.at(name));
    }
    onnx::NodeProto& node = builder.node(op, inputs, {"y"}, "q", "com.microsoft");
    if (attributes) attributes(node);
    builder.output("y", dtype, Shape{}, false);
    expect_matches_onnxrt(builder, feed, 0.0, 1.0);
}

std::map<std::string, Tensor> quant_params(DataType dtype) {
    return {{"sa", scalar(DataType::kFloat32, 0.05)}, {"za", scalar(dtype, dtype == DataType::kUInt8 ? 120 : 3)},
            {"sb", scalar(DataType::kFloat32, 0.02)}, {"zb", scalar(dtype, dtype == DataType::kUInt8 ? 130 : -7)},
            {"sc", scalar(DataType::kFloat32, 0.07)}, {"zc", scalar(dtype, dtype == DataType::kUInt8 ? 128 : 0)}};
}

TEST(QLinear, AddAndMulWithBroadcastMatchOnnxRuntimeAndOmittedZeroPointsAreZero) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (DataType dtype : {DataType::kUInt8, DataType::kInt8}) {
        for (const char* op : {"QLinearMul", "QLinearAdd"}) {
            SCOPED_TRACE(std::string(op) + " " + std::string(dtype_name(dtype)));
            TensorMap feed;
            feed.set("xa", random_codes(dtype, {2, 3, 4}, 1));
            feed.set("xb", random_codes(dtype, {4}, 2));
            const auto params = quant_params(dtype);
            expect_qlinear_matches_onnxrt(op, {"xa", "sa", "za", "xb", "sb", "zb", "sc", "zc"}, feed, params, dtype);
            // Omitted zero points are 0. (ONNX Runtime 1.30's type inference refuses such a node.)
            auto zeros = params;
            zeros["za"] = zeros["zb"] = scalar(dtype, 0);
            const auto run = [&](const std::vector<std::string>& inputs) {
                ModelBuilder builder(17);
                builder.opset_import("com.microsoft", 1);
                builder.input("xa", dtype, feed.at("xa").shape()).input("xb", dtype, feed.at("xb").shape());
                for (const char* name : {"sa", "za", "sb", "zb", "sc", "zc"}) builder.initializer(name, zeros.at(name));
                builder.node(op, inputs, {"y"}, "q", "com.microsoft");
                builder.output("y", dtype, Shape{}, false);
                return ref::Session(*builder.build()).run(feed).at("y");
            };
            EXPECT_TRUE(tensors_near(run({"xa", "sa", "", "xb", "sb", "", "sc", "zc"}),
                                     run({"xa", "sa", "za", "xb", "sb", "zb", "sc", "zc"}), 0.0));
        }
    }
}

TEST(QLinear, SigmoidAndLeakyReluMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (DataType dtype : {DataType::kUInt8, DataType::kInt8}) {
        SCOPED_TRACE(dtype_name(dtype));
        TensorMap feed;
        feed.set("xa", random_codes(dtype, {3, 50}, 3));
        const auto params = quant_params(dtype);
        expect_qlinear_matches_onnxrt("QLinearSigmoid", {"xa", "sa", "za", "sc", "zc"}, feed, params, dtype);
        expect_qlinear_matches_onnxrt("QLinearLeakyRelu", {"xa", "sa", "za", "sc", "zc"}, feed, params, dtype,
                                      [](onnx::NodeProto& node) { set_attr(node, "alpha", 0.1f); });
    }
}

TEST(QLinear, SoftmaxAtOpset13And11MatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (DataType dtype : {DataType::kUInt8, DataType::kInt8}) {
        SCOPED_TRACE(dtype_name(dtype));
        TensorMap feed;
        feed.set("xa", random_codes(dtype, {2, 3, 8}, 4));
        auto params = quant_params(dtype);
        // ONNX Runtime's kernel takes the output scale 1/256 with zero point 0 (uint8) or -128 (int8).
        params["sc"] = scalar(DataType::kFloat32, 1.0 / 256.0);
        params["zc"] = scalar(dtype, dtype == DataType::kUInt8 ? 0 : -128);
        expect_qlinear_matches_onnxrt("QLinearSoftmax", {"xa", "sa", "za", "sc", "zc"}, feed, params, dtype,
                                      [](onnx::NodeProto& node) {
                                          set_attr(node, "opset", int64_t{13});
                                          set_attr(node, "axis", int64_t{-1});
                                      });
        expect_qlinear_matches_onnxrt("QLinearSoftmax", {"xa", "sa", "za", "sc", "zc"}, feed, params, dtype,
                                      [](onnx::NodeProto& node) {
                                          set_attr(node, "opset", int64_t{11});
                                          set_attr(node, "axis", int64_t{1});
                                      });
    }
}

TEST(QLinear, ConcatRequantizesEachInputAndMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (DataType dtype : {DataType::kUInt8, DataType::kInt8}) {
        SCOPED_TRACE(dtype_name(dtype));
        TensorMap feed;
        feed.set("xa", random_codes(dtype, {2, 3, 4}, 5));
        feed.set("xb", random_codes(dtype, {2, 1, 4}, 6));
        feed.set("xc", random_codes(dtype, {2, 2, 4}, 7));
        const auto params = quant_params(dtype);
        // The third input shares the output's quantization: copied as it is.
        expect_qlinear_matches_onnxrt("QLinearConcat",
                                      {"sc", "zc", "xa", "sa", "za", "xb", "sb", "zb", "xc", "sc", "zc"}, feed, params,
                                      dtype, [](onnx::NodeProto& node) { set_attr(node, "axis", int64_t{1}); });
    }
}

TEST(QLinear, PoolsInBothLayoutsMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (DataType dtype : {DataType::kUInt8, DataType::kInt8}) {
        SCOPED_TRACE(dtype_name(dtype));
        const auto params = quant_params(dtype);
        for (int64_t channels_last : {0, 1}) {
            SCOPED_TRACE(channels_last ? "NHWC" : "NCHW");
            TensorMap feed;
            feed.set("xa", random_codes(dtype, channels_last ? Shape{2, 7, 6, 3} : Shape{2, 3, 7, 6}, 8));
            expect_qlinear_matches_onnxrt(
                "QLinearGlobalAveragePool", {"xa", "sa", "za", "sc", "zc"}, feed, params, dtype,
                [&](onnx::NodeProto& node) { set_attr(node, "channels_last", channels_last); });
            for (int64_t include_pad : {0, 1})
                for (int64_t ceil_mode : {0, 1}) {
                    SCOPED_TRACE(::testing::Message()
                                 << "count_include_pad " << include_pad << " ceil_mode " << ceil_mode);
                    expect_qlinear_matches_onnxrt("QLinearAveragePool", {"xa", "sa", "za", "sc", "zc"}, feed, params,
                                                  dtype, [&](onnx::NodeProto& node) {
                                                      set_attr(node, "kernel_shape", std::vector<int64_t>{3, 2});
                                                      set_attr(node, "strides", std::vector<int64_t>{2, 2});
                                                      set_attr(node, "pads", std::vector<int64_t>{1, 0, 1, 1});
                                                      set_attr(node, "count_include_pad", include_pad);
                                                      set_attr(node, "ceil_mode", ceil_mode);
                                                      set_attr(node, "channels_last", channels_last);
                                                  });
                }
        }
    }
}

TEST(QLinear, AScaleThatIsNotAFloatScalarOrAZeroPointOfAnotherTypeIsOneLine) {
    const auto run = [](const Tensor& scale, const Tensor& zero_point) {
        OpTester("QLinearSigmoid", 17, "com.microsoft")
            .input(random_codes(DataType::kUInt8, {4}, 1))
            .input(scale)
            .input(zero_point)
            .input(scalar(DataType::kFloat32, 0.1))
            .run();
    };
    EXPECT_THAT(error_message<ModelError>([&] {
                    run(f32({2}, {0.1, 0.2}), scalar(DataType::kUInt8, 1));
                }),
                HasSubstr("input 1 (a scale) must be a float32 scalar, but it is float32 of shape (2,)"));
    EXPECT_THAT(error_message<ModelError>([&] { run(scalar(DataType::kFloat32, 0.1), scalar(DataType::kInt8, 1)); }),
                HasSubstr("input 2 (a zero point) must be a uint8 scalar, but it is int8 of shape ()"));
}

}  // namespace
}  // namespace polygraphy::testing
