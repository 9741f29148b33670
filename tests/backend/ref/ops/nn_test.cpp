#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

// x = (np.arange(12.).reshape(2, 2, 3) * 0.5 - 2).astype(np.float32) in the Softmax tests;
// softmax(v, axis) = np.exp(v - v.max(axis, keepdims=True)) / (same).sum(axis, keepdims=True)
Tensor softmax_input() { return f32({2, 2, 3}, arange(12, -2, 0.5)); }

TEST(SoftmaxOp, Opset13LastAxis) {
    KernelHarness h("Softmax", 13);
    h.input(softmax_input());
    const std::vector<double> row = {0.186323723, 0.307195886, 0.506480391};
    std::vector<double> expected;
    for (int i = 0; i < 4; ++i) expected.insert(expected.end(), row.begin(), row.end());
    expect_close(h.run()[0], {2, 2, 3}, expected);
}

TEST(SoftmaxOp, Opset13InnerAxis) {
    // softmax(x, axis=1): a middle axis with elements 3 apart.
    KernelHarness h("Softmax", 13);
    set_attr(h.node(), "axis", int64_t{1});
    h.input(softmax_input());
    const double lo = 0.182425524, hi = 0.817574476;
    expect_close(h.run()[0], {2, 2, 3}, {lo, lo, lo, hi, hi, hi, lo, lo, lo, hi, hi, hi});
}

TEST(SoftmaxOp, Opset11CoercesTo2D) {
    // Softmax-11, axis=1: softmax(x.reshape(2, 6), 1).reshape(2, 2, 3)
    KernelHarness h("Softmax", 11);
    h.input(softmax_input());
    const std::vector<double> row = {0.0339902028, 0.0560403704, 0.0923949506, 0.15233352, 0.251155515, 0.41408544};
    std::vector<double> expected = row;
    expected.insert(expected.end(), row.begin(), row.end());
    expect_close(h.run()[0], {2, 2, 3}, expected);
    // float64 takes the plain loop and must agree.
    KernelHarness d("Softmax", 11);
    d.input(softmax_input().cast(DataType::kFloat64));
    expect_close(d.run()[0], {2, 2, 3}, expected, 1e-8, 1e-9);
}

TEST(LogSoftmaxOp, Opset13) {
    // np.log(softmax(x, -1))
    KernelHarness h("LogSoftmax", 13);
    h.input(softmax_input());
    const std::vector<double> row = {-1.68026967, -1.18026967, -0.680269671};
    std::vector<double> expected;
    for (int i = 0; i < 4; ++i) expected.insert(expected.end(), row.begin(), row.end());
    expect_close(h.run()[0], {2, 2, 3}, expected);
    KernelHarness half("LogSoftmax", 13);
    half.input(softmax_input().cast(DataType::kFloat16));
    expect_close(half.run()[0], {2, 2, 3}, expected, 1e-3, 1e-3);
}

TEST(HardmaxOp, FirstMaximumWins) {
    // np.eye(4)[np.argmax(x, -1)] for x = [[1, 3, 3, 2], [4, 0, 1, 4]]
    KernelHarness h("Hardmax", 13);
    h.input(f32({2, 4}, {1, 3, 3, 2, 4, 0, 1, 4}));
    expect_close(h.run()[0], {2, 4}, {0, 1, 0, 0, 1, 0, 0, 0});
}

TEST(SoftmaxOp, RejectsAxisOutOfRangeAndAcceptsEmpty) {
    KernelHarness h("Softmax", 13);
    set_attr(h.node(), "axis", int64_t{3});
    h.input(softmax_input());
    expect_error([&] { h.run(); }, "Node 'node' (Softmax): attribute 'axis' is out of range for an input of rank 3");
    KernelHarness empty("Softmax", 13);
    empty.input(Tensor(DataType::kFloat32, {0, 5}));
    EXPECT_EQ(empty.run()[0].shape(), (Shape{0, 5}));
}

TEST(BatchNormalizationOp, Inference) {
    // numpy: X = np.arange(12.).reshape(2, 3, 2) - 5; (X - mean) / np.sqrt(var + 1e-5) * scale + B per channel,
    // scale = [1, 2, 0.5], B = [0, 1, -1], mean = [0.5, -1, 2], var = [1, 4, 0.25]
    for (int64_t opset : {9, 15}) {
        KernelHarness h("BatchNormalization", opset);
        h.input(f32({2, 3, 2}, arange(12, -5)))
            .input(f32({3}, {1, 2, 0.5}), true)
            .input(f32({3}, {0, 1, -1}), true)
            .input(f32({3}, {0.5, -1, 2}), true)
            .input(f32({3}, {1, 4, 0.25}), true);
        expect_close(h.run()[0], {2, 3, 2},
                     {-5.4999725, -4.4999775, -0.9999975, 1.24999766e-06, -3.99994, -2.99996, 0.4999975, 1.4999925,
                      4.999995, 5.99999375, 1.99994, 2.99992},
                     1e-5, 1e-5);
    }
}

TEST(BatchNormalizationOp, TrainingModeUsesBatchStatisticsAndBlendsRunningOnes) {
    // numpy: x = [[[1, 3]], [[5, 7]]] (N=2, C=1, 2); mean 4, var 5 (population)
    // y = (x - 4) / sqrt(5 + 1e-5) * 2 + 1; running_mean = 0 * 0.8 + 4 * 0.2; running_var = 1 * 0.8 + 5 * 0.2
    KernelHarness h("BatchNormalization", 15, 3);
    set_attr(h.node(), "training_mode", int64_t{1});
    set_attr(h.node(), "momentum", 0.8f);
    h.input(f32({2, 1, 2}, {1, 3, 5, 7})).input(f32({1}, {2})).input(f32({1}, {1})).input(f32({1}, {0})).input(f32({1}, {1}));
    const auto outputs = h.run();
    const double s = 2.0 / std::sqrt(5.0 + 1e-5);
    expect_close(outputs[0], {2, 1, 2}, {1 - 3 * s, 1 - s, 1 + s, 1 + 3 * s}, 1e-5, 1e-5);
    expect_close(outputs[1], {1}, {0.8});
    expect_close(outputs[2], {1}, {1.8});
}

TEST(BatchNormalizationOp, RejectsABadTrainingModeAndBadParameterSize) {
    KernelHarness h("BatchNormalization", 15);
    set_attr(h.node(), "training_mode", int64_t{2});
    expect_error([&] { h.create(); }, "attribute 'training_mode' must be 0 or 1");
    KernelHarness p("BatchNormalization", 15);
    p.input(f32({1, 2, 1}, {1, 2})).input(f32({3}, {1, 1, 1})).input(f32({2}, {0, 0})).input(f32({2}, {0, 0})).input(f32({2}, {1, 1}));
    expect_error([&] { p.run(); }, "input scale must have one value per channel (2 values)");
}

TEST(LayerNormalizationOp, LastAxisWithStatistics) {
    // numpy: L = [[1, 2, 4], [-1, 0, 5]]; m = L.mean(-1, keepdims=True); inv = 1 / np.sqrt(L.var(-1, keepdims=True) + 1e-5)
    // y = (L - m) * inv * [1, 0.5, 2] + [0, 1, -1]
    KernelHarness h("LayerNormalization", 17, 3);
    h.input(f32({2, 3}, {1, 2, 4, -1, 0, 5})).input(f32({3}, {1, 0.5, 2}), true).input(f32({3}, {0, 1, -1}), true);
    const auto outputs = h.run();
    expect_close(outputs[0], {2, 3}, {-1.06904153, 0.866369809, 1.67260383, -0.889000244, 0.74599993, 1.79400077});
    expect_close(outputs[1], {2, 1}, {2.33333333, 1.33333333});
    expect_close(outputs[2], {2, 1}, {0.801781149, 0.381000104});
}

TEST(LayerNormalizationOp, AxisOneWithoutBias) {
    // numpy: L3 = np.arange(8.).reshape(2, 2, 2) ** 1.5; normalized over axes (1, 2), scale 1
    std::vector<double> x;
    for (int i = 0; i < 8; ++i) x.push_back(std::pow(static_cast<double>(i), 1.5));
    KernelHarness h("LayerNormalization", 17);
    set_attr(h.node(), "axis", int64_t{1});
    h.input(f32({2, 2, 2}, x)).input(f32({1}, {1}));
    expect_close(h.run()[0], {2, 2, 2},
                 {-1.14100774, -0.635274377, 0.28942222, 1.4868599, -1.29918454, -0.488920379, 0.407013359, 1.38109157});
    KernelHarness bad("LayerNormalization", 17);
    set_attr(bad.node(), "axis", int64_t{-4});
    bad.input(f32({2, 2, 2}, x)).input(f32({1}, {1}));
    expect_error([&] { bad.run(); }, "attribute 'axis' is out of range for an input of rank 3");
}

TEST(InstanceNormalizationOp, PerChannel) {
    // numpy: I = [[[1, 2, 3], [2, 4, 8]]]; (I - I.mean(-1, keepdims=True)) / np.sqrt(I.var(-1, keepdims=True) + 1e-5)
    // * [1, 2] + [0, 1] per channel
    KernelHarness h("InstanceNormalization", 6);
    h.input(f32({1, 2, 3}, {1, 2, 3, 2, 4, 8})).input(f32({2}, {1, 2})).input(f32({2}, {0, 1}));
    expect_close(h.run()[0], {1, 2, 3}, {-1.22473569, 0.0, 1.22473569, -1.13808822, 0.465477946, 3.67261027}, 1e-5, 1e-6);
}

TEST(GroupNormalizationOp, PerGroupAndPerChannelParameters) {
    // numpy: G = [[[1, 2], [3, 5], [-1, 0], [2, 6]]]; Gg = G.reshape(1, 2, 4);
    // norm = ((Gg - Gg.mean(-1, keepdims=True)) / np.sqrt(Gg.var(-1, keepdims=True) + 1e-5)).reshape(1, 4, 2)
    const Tensor x = f32({1, 4, 2}, {1, 2, 3, 5, -1, 0, 2, 6});
    KernelHarness v18("GroupNormalization", 18);  // scale/bias per group: norm * [2, 2, .5, .5] + [1, 1, -1, -1]
    set_attr(v18.node(), "num_groups", int64_t{2});
    v18.input(x).input(f32({2}, {2, 0.5})).input(f32({2}, {1, -1}));
    expect_close(v18.run()[0], {1, 4, 2},
                 {-1.3664265, -0.0141827875, 1.33806093, 4.04254836, -1.51287729, -1.32637646, -0.953374792, -0.207371464});
    KernelHarness v21("GroupNormalization", 21);  // per channel: norm * [1, 2, 3, 4] + [0, 1, 0, 1]
    set_attr(v21.node(), "num_groups", int64_t{2});
    v21.input(x).input(f32({4}, {1, 2, 3, 4})).input(f32({4}, {0, 1, 0, 1}));
    expect_close(v21.run()[0], {1, 4, 2},
                 {-1.18321325, -0.507091394, 1.33806093, 4.04254836, -3.07726373, -1.95825874, 1.37300166, 7.34102828});
    KernelHarness missing("GroupNormalization", 21);
    expect_error([&] { missing.create(); }, "attribute 'num_groups' is required");
    KernelHarness indivisible("GroupNormalization", 21);
    set_attr(indivisible.node(), "num_groups", int64_t{3});
    indivisible.input(x).input(f32({4}, {1, 1, 1, 1})).input(f32({4}, {0, 0, 0, 0}));
    expect_error([&] { indivisible.run(); }, "the channel count (4) is not divisible by attribute 'num_groups' (3)");
}

TEST(LrnOp, AcrossChannels) {
    // numpy: R = np.arange(8.).reshape(1, 4, 1, 2) - 3; sq[c] = (R[:, lo:hi+1] ** 2).sum(1) with
    // lo = c - 1, hi = c + 1 (clipped); R / (1 + 0.01 / 3 * sq) ** 0.75
    KernelHarness h("LRN", 13);
    set_attr(h.node(), "size", int64_t{3});
    set_attr(h.node(), "alpha", 0.01f);
    h.input(f32({1, 4, 1, 2}, arange(8, -3)));
    expect_close(h.run()[0], {1, 4, 1, 2},
                 {-2.92712268, -1.98023052, -0.973353622, 0.0, 0.973353622, 1.90549781, 2.92712268, 3.81099561});
    KernelHarness bad("LRN", 13);
    expect_error([&] { bad.create(); }, "attribute 'size' is required");
}

TEST(NormalizationOps, RejectIntegerInput) {
    KernelHarness h("InstanceNormalization", 6);
    h.input(Tensor(DataType::kInt32, {1, 2, 3})).input(f32({2}, {1, 1})).input(f32({2}, {0, 0}));
    expect_error([&] { h.run(); }, "input X has unsupported data type int32");
}

TEST(DropoutOp, IdentityAndDropout) {
    const Tensor x = f32({2}, {1, 2});
    EXPECT_TRUE(tensors_near(unary("Identity", x), x));
    // Inference-mode Dropout is the identity; the mask is all true (bool from opset 10)
    const auto out = OpTester("Dropout", 13).input(x).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(out[0], x));
    EXPECT_TRUE(tensors_near(out[1], boolean({2}, {1, 1})));
    const auto old = OpTester("Dropout", 7).input(x).attr("ratio", 0.3).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(old[1], f32({2}, {1, 1})));
    EXPECT_THROW_MESSAGE(OpTester("Dropout", 13).input(x).constant(f32({}, {1.5})).constant(boolean({}, {1})).run(),
                         ModelError, "ratio must be in [0, 1), got 1.5");
    EXPECT_THROW_MESSAGE(OpTester("Dropout", 7).input(x).attr("ratio", 1.5).run(), ModelError,
                         "attribute 'ratio' must be in [0, 1), got 1.5");
}

TEST(DropoutOp, TrainingDropoutKeepsAndScalesWhatTheMaskKeeps) {
    const Tensor x = f32({1000}, std::vector<double>(1000, 2.0));
    const auto out = OpTester("Dropout", 13).input(x).constant(f32({}, {0.75})).constant(boolean({}, {1})).outputs(2).run_all();
    ASSERT_EQ(out[1].dtype(), DataType::kBool);
    int64_t kept = 0;
    for (int64_t i = 0; i < 1000; ++i) {
        const bool keep = out[1].data_as<bool>()[i];
        kept += keep;
        EXPECT_EQ(out[0].value_as_double(i), keep ? 8.0 : 0.0);  // 2 / (1 - 0.75)
    }
    EXPECT_NEAR(static_cast<double>(kept), 250.0, 60.0);  // binomial(1000, 0.25): sd 13.7
}

TEST(NormalizationOps, MeanVarianceAndLpNormalization) {
    // (x - x.mean()) / (x.std() + 1e-9) over axes [0, 2, 3] of (1, 1, 1, 4)
    const Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
    const double sd = std::sqrt(1.25);
    EXPECT_TRUE(tensors_near(unary("MeanVarianceNormalization", x, 13),
                             f32({1, 1, 1, 4}, {-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd}), 1e-5));
    // x / np.linalg.norm(x, axis=-1, keepdims=True); zero rows stay zero
    EXPECT_TRUE(tensors_near(unary("LpNormalization", f32({2, 2}, {3, 4, 0, 0})), f32({2, 2}, {0.6, 0.8, 0, 0})));
    EXPECT_TRUE(
        tensors_near(OpTester("LpNormalization").input(f32({2, 2}, {1, 3, -1, 1})).attr("axis", 0).attr("p", 1).run(),
                     f32({2, 2}, {0.5, 0.75, -0.5, 0.25})));
    EXPECT_THROW_MESSAGE(OpTester("LpNormalization").input(x).attr("p", 3).run(), ModelError,
                         "attribute 'p' must be 1 or 2, got 3");
}

// ---- the normalizations ONNX Runtime adds, against its CPU kernels ---------------------------------

// One node of `op` in `domain` reading float32 inputs of the given shapes (an empty name leaves an
// optional input out); outputs "y" and, with `sum_output`, "sum" as output 3.
ModelBuilder normalization_model(const std::string& op, const std::string& domain, int64_t opset,
                                 const std::vector<std::pair<std::string, Shape>>& inputs, bool sum_output = false) {
    ModelBuilder builder(opset);
    if (!domain.empty()) builder.opset_import(domain, 1);
    std::vector<std::string> names;
    for (const auto& [name, shape] : inputs) {
        names.push_back(name);
        if (!name.empty()) builder.input(name, DataType::kFloat32, shape);
    }
    std::vector<std::string> outputs = {"y"};
    if (sum_output) outputs = {"y", "", "", "sum"};
    builder.node(op, names, outputs, "norm", domain);
    builder.output("y", DataType::kFloat32, inputs.front().second);
    if (sum_output) builder.output("sum", DataType::kFloat32, inputs.front().second);
    return builder;
}

TensorMap normalization_feed(const std::vector<std::pair<std::string, Shape>>& inputs) {
    TensorMap feed;
    uint32_t seed = 21;
    for (const auto& [name, shape] : inputs)
        if (!name.empty()) feed.set(name, random_tensor(shape, seed++, -3.0f, 3.0f));
    return feed;
}

void expect_normalization_matches_onnxrt(const std::string& op, const std::string& domain, int64_t opset,
                                         const std::vector<std::pair<std::string, Shape>>& inputs,
                                         bool sum_output = false) {
    SCOPED_TRACE(op);
    expect_matches_onnxrt(normalization_model(op, domain, opset, inputs, sum_output), normalization_feed(inputs), 1e-4,
                          1e-5);
}

const Shape kHidden = {2, 4, 32};

TEST(ContribNormalizations, SkipLayerNormalizationWithEveryOptionalInputMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const std::string ms = "com.microsoft";
    expect_normalization_matches_onnxrt("SkipLayerNormalization", ms, 17,
                                        {{"x", kHidden}, {"skip", kHidden}, {"gamma", {32}}});
    expect_normalization_matches_onnxrt("SkipLayerNormalization", ms, 17,
                                        {{"x", kHidden}, {"skip", kHidden}, {"gamma", {32}}, {"beta", {32}}});
    expect_normalization_matches_onnxrt(
        "SkipLayerNormalization", ms, 17,
        {{"x", kHidden}, {"skip", kHidden}, {"gamma", {32}}, {"beta", {32}}, {"bias", {32}}}, true);
    // A skip of one batch's size repeats over the batch.
    expect_normalization_matches_onnxrt("SkipLayerNormalization", ms, 17,
                                        {{"x", kHidden}, {"skip", {4, 32}}, {"gamma", {32}}, {"", {}}, {"bias", {32}}});
}

TEST(ContribNormalizations, SkipSimplifiedLayerNormalizationMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const std::string ms = "com.microsoft";
    expect_normalization_matches_onnxrt("SkipSimplifiedLayerNormalization", ms, 17,
                                        {{"x", kHidden}, {"skip", kHidden}, {"gamma", {32}}}, true);
    expect_normalization_matches_onnxrt("SkipSimplifiedLayerNormalization", ms, 17,
                                        {{"x", kHidden}, {"skip", kHidden}, {"gamma", {32}}, {"bias", {32}}}, true);
}

TEST(ContribNormalizations, DefaultDomainLayerNormalizationsOfOnnxRuntimeMatchIt) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    expect_normalization_matches_onnxrt("SimplifiedLayerNormalization", "", 17, {{"x", kHidden}, {"scale", {32}}});
    // LayerNormalization in an opset-16 model, as ONNX Runtime's fusion writes it.
    expect_normalization_matches_onnxrt("LayerNormalization", "", 16,
                                        {{"x", kHidden}, {"scale", {32}}, {"bias", {32}}});
}

TEST(ContribNormalizations, RefusedInputsAndOutputsAreOneLine) {
    const std::vector<std::pair<std::string, Shape>> inputs = {{"x", kHidden}, {"skip", kHidden}, {"gamma", {16}}};
    const OnnxModel model = normalization_model("SkipLayerNormalization", "com.microsoft", 17, inputs).build();
    EXPECT_EQ(error_message<ModelError>([&] { ref::Session(*model).run(normalization_feed(inputs)); }),
              "Node 'norm' (SkipLayerNormalization): gamma must be a 1-D float32 of the hidden size 32, but it is "
              "float32 of shape (16,)");
    ModelBuilder with_mean = normalization_model("SkipLayerNormalization", "com.microsoft", 17,
                                                 {{"x", kHidden}, {"skip", kHidden}, {"gamma", {32}}});
    with_mean.proto().mutable_graph()->mutable_node(0)->add_output("mean");
    EXPECT_EQ(error_message<UnsupportedError>([&] { ref::Session(*with_mean.build()); }),
              "Node 'norm' (SkipLayerNormalization): output 1 (mean) is not computed; ONNX Runtime's CPU kernel does "
              "not write it either");
}

}  // namespace
}  // namespace polygraphy::testing
