// The channel-blocked operators (com.microsoft.nchwc) against ONNX Runtime on graphs ONNX Runtime itself
// wrote: convolutional networks built here are optimized by ONNX Runtime at level `all` and saved
// (SetOptimizedModelFilePath), and both runtimes then run the saved graph as it is.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "polygraphy/backend/onnx/loader.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

/// Adds Conv(x, W, B) with `out` output channels and a k x k kernel (pads k / 2, `group`, `stride`).
std::string conv(ModelBuilder& builder, const std::string& x, int64_t in, int64_t out, int64_t k,
                 const std::string& name, int64_t group = 1, int64_t stride = 1) {
    static uint32_t seed = 100;
    builder.initializer(name + ".w", random_tensor({out, in / group, k, k}, ++seed, -0.3f, 0.3f));
    builder.initializer(name + ".b", random_tensor({out}, ++seed, -0.1f, 0.1f));
    onnx::NodeProto& node = builder.node("Conv", {x, name + ".w", name + ".b"}, {name}, name);
    set_attr(node, "kernel_shape", std::vector<int64_t>{k, k});
    set_attr(node, "pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    set_attr(node, "strides", std::vector<int64_t>{stride, stride});
    if (group != 1) set_attr(node, "group", group);
    return name;
}

std::string op(ModelBuilder& builder, const std::string& type, const std::vector<std::string>& inputs,
               const std::string& name) {
    builder.node(type, inputs, {name}, name);
    return name;
}

/// The graph ONNX Runtime saves for `builder`'s model at level `all`; expects its blocked operators to
/// include every one of `expected`.
OnnxModel saved_at_level_all(const ModelBuilder& builder, const TempDir& dir, const std::set<std::string>& expected) {
    onnxrt::SessionOptions options;
    options.graph_optimization_level = onnxrt::GraphOptimizationLevel::kAll;
    options.optimized_model_path = dir.file("optimized.onnx");
    onnxrt::session_from_onnx(*builder.build(), options);
    OnnxModel saved = onnx_from_path(dir.file("optimized.onnx"));
    std::set<std::string> blocked;
    for (const auto& node : saved->graph().node())
        if (node.domain() == "com.microsoft.nchwc") blocked.insert(node.op_type());
    for (const std::string& type : expected)
        EXPECT_TRUE(blocked.count(type)) << "ONNX Runtime wrote no blocked " << type;
    return saved;
}

/// Both runtimes on `model` (ONNX Runtime without further optimization: the graph as saved).
void expect_saved_graph_matches(const OnnxModel& model, const TensorMap& feed) {
    ref::SessionOptions ours;
    ours.num_threads = 1;
    const TensorMap expected = [&] {
        onnxrt::SessionOptions options;
        options.graph_optimization_level = onnxrt::GraphOptimizationLevel::kDisableAll;
        return onnxrt::session_from_onnx(*model, options)->run(feed);
    }();
    const TensorMap actual = ref::Session(*model, ours).run(feed);
    for (const auto& [name, tensor] : expected) {
        SCOPED_TRACE(name);
        expect_close(actual.at(name), tensor, 1e-4, 1e-4);
    }
}

TEST(Nchwc, AConvolutionalNetworkAsOnnxRuntimeBlocksItMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    TempDir dir;
    ModelBuilder builder(17);
    builder.input("image", DataType::kFloat32, Shape{2, 3, 20, 20});
    // A stem of 3 input channels (plain input, OIHWBo filter), pools, 24 channels padded to a block, a
    // depthwise convolution, a residual Add fused as Sum, a channel Concat.
    std::string x = op(builder, "Relu", {conv(builder, "image", 3, 16, 3, "stem")}, "stem_relu");
    onnx::NodeProto& pool = builder.node("MaxPool", {x}, {"pooled"}, "pool");
    set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(pool, "strides", std::vector<int64_t>{2, 2});
    x = conv(builder, "pooled", 16, 24, 3, "widen");
    x = op(builder, "Relu", {conv(builder, x, 24, 24, 3, "depthwise", 24)}, "depthwise_relu");
    const std::string branch = conv(builder, x, 24, 32, 1, "pointwise");
    const std::string residual = op(builder, "Add", {conv(builder, branch, 32, 32, 3, "body"), branch}, "residual");
    x = op(builder, "Relu", {residual}, "residual_relu");
    onnx::NodeProto& average = builder.node("AveragePool", {x}, {"averaged"}, "average");
    set_attr(average, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(average, "strides", std::vector<int64_t>{2, 2});
    set_attr(average, "pads", std::vector<int64_t>{1, 1, 1, 1});
    onnx::NodeProto& concat =
        builder.node("Concat", {"averaged", conv(builder, "averaged", 32, 16, 1, "side")}, {"joined"}, "concat");
    set_attr(concat, "axis", int64_t{1});
    op(builder, "GlobalAveragePool", {"joined"}, "features");
    builder.output("features", DataType::kFloat32, Shape{2, 48, 1, 1});
    builder.output("averaged", DataType::kFloat32, Shape{2, 32, 5, 5});
    const OnnxModel saved =
        saved_at_level_all(builder, dir, {"ReorderOutput", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool"});
    TensorMap feed;
    feed.set("image", random_tensor({2, 3, 20, 20}, 1));
    expect_saved_graph_matches(saved, feed);
}

TEST(Nchwc, UpsamplingNearestAndBilinearMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (const char* mode : {"nearest", "linear"}) {
        SCOPED_TRACE(mode);
        TempDir dir;
        ModelBuilder builder(17);
        builder.input("image", DataType::kFloat32, Shape{1, 16, 6, 5});
        const std::string x = conv(builder, "image", 16, 16, 3, "conv");
        builder.initializer("scales", Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 2, 3}));
        onnx::NodeProto& resize = builder.node("Resize", {x, "", "scales"}, {"up"}, "resize");
        set_attr(resize, "mode", std::string(mode));
        set_attr(resize, "coordinate_transformation_mode", std::string("asymmetric"));
        if (std::string(mode) == "nearest") set_attr(resize, "nearest_mode", std::string("floor"));
        conv(builder, "up", 16, 16, 1, "after");
        builder.output("after", DataType::kFloat32, Shape{1, 16, 12, 15});
        const OnnxModel saved = saved_at_level_all(builder, dir, {"Upsample", "Conv"});
        TensorMap feed;
        feed.set("image", random_tensor({1, 16, 6, 5}, 2));
        expect_saved_graph_matches(saved, feed);
    }
}

TEST(Nchwc, AFilterNotInBlocksOfThisCpusSizeIsOneLine) {
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft.nchwc", 1);
    builder.input("x", DataType::kFloat32, Shape{1, 24, 4, 4});
    builder.initializer("w", random_tensor({24, 24, 1, 1}, 3));
    builder.node("Conv", {"x", "w"}, {"y"}, "blocked", "com.microsoft.nchwc");
    builder.output("y", DataType::kFloat32, Shape{1, 24, 4, 4});
    const std::string message = error_message<ModelError>([&] { ref::Session(*builder.build()); });
    EXPECT_THAT(message, ::testing::HasSubstr("is not laid out in blocks of"));
    EXPECT_EQ(message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace polygraphy::testing
