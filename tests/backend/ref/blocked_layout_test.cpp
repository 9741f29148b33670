// Channel-blocked layouts (src/backend/ref/blocked_layout.cpp): which tensors stay blocked between
// convolutions, pools and Concats, and that blocked and NCHW sessions compute the same values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/blocked_layout.h"
#include "backend/ref/compute/blocked_conv.h"
#include "backend/ref/fused_ops.h"
#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "rewrite_test_util.h"

namespace polygraphy::ref {
namespace {

using namespace rewrite_testing;

// What the layout pass chooses on the graph as written: the tensors kept blocked, and per node the
// flags it set ("in", "out", "in+out").
struct LayoutChoice {
    Names blocked;
    std::map<std::string, std::string> flags;
};

// The flags name a block of 16 ("in16", "out16"); "in" and "out" are blocks of 8.
LayoutChoice choose_layouts(const ModelBuilder& builder, const std::map<std::string, Names>& implicit_inputs = {},
                            int64_t widest_block = kNarrowChannelBlock) {
    const OnnxModel model = builder.build();
    std::vector<onnx::NodeProto> nodes(model->graph().node().begin(), model->graph().node().end());
    std::vector<std::vector<std::string>> node_inputs;
    for (const auto& node : nodes) {
        node_inputs.emplace_back(node.input().begin(), node.input().end());
        if (auto found = implicit_inputs.find(node.name()); found != implicit_inputs.end())
            node_inputs.back().insert(node_inputs.back().end(), found->second.begin(), found->second.end());
    }
    LayoutChoice choice;
    choice.blocked = choose_blocked_layouts(nodes, node_inputs, model->graph(), widest_block);
    auto block = [](int64_t value) -> std::string {
        if (value == kNarrowChannelBlock) return "";
        if (value == kWideChannelBlock) return "16";
        return "(unexpected block " + std::to_string(value) + ")";
    };
    for (const auto& node : nodes) {
        std::string flags;
        for (const auto& attr : node.attribute()) {
            if (attr.name() == kBlockedInputAttr) flags += "in" + block(attr.i());
            if (attr.name() == kBlockedOutputAttr) flags += (flags.empty() ? "out" : "+out") + block(attr.i());
        }
        if (!flags.empty()) choice.flags[node.name()] = flags;
    }
    return choice;
}

onnx::NodeProto& add_conv(ModelBuilder& builder, const std::string& x, const Shape& w_shape, const std::string& y,
                          uint32_t seed, int64_t pads = 0) {
    const std::string w = y + "_w", b = y + "_b";
    builder.initializer(w, random_tensor(w_shape, seed, -0.5f, 0.5f));  // keeps values of deep chains ~1-10
    builder.initializer(b, random_tensor({w_shape[0]}, seed + 100));
    onnx::NodeProto& conv = builder.node("Conv", {x, w, b}, {y}, "conv_" + y);
    if (pads > 0) set_attr(conv, "pads", std::vector<int64_t>{pads, pads, pads, pads});
    return conv;
}

// A MobileNetV2-style block: 3x3 Conv + Relu, depthwise 3x3 + Clip, 1x1 Conv + residual Add, then a
// strided 3x3 Conv whose Relu is the graph output. x is (2, 8, 10, 10).
ModelBuilder inverted_residual_model() {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 8, 10, 10});
    add_conv(builder, "x", {16, 8, 3, 3}, "c1", 10, 1);
    builder.node("Relu", {"c1"}, {"r1"}, "relu1");
    set_attr(add_conv(builder, "r1", {16, 1, 3, 3}, "c2", 20, 1), "group", int64_t{16});
    builder.initializer("lo", scalar(0.0f));
    builder.initializer("hi", scalar(0.5f));
    builder.node("Clip", {"c2", "lo", "hi"}, {"r2"}, "clip2");
    add_conv(builder, "r2", {16, 16, 1, 1}, "c3", 30);
    builder.node("Add", {"c3", "r1"}, {"s"}, "add3");
    set_attr(add_conv(builder, "s", {24, 16, 3, 3}, "c4", 40, 1), "strides", std::vector<int64_t>{2, 2});
    builder.node("Relu", {"c4"}, {"y"}, "relu4");
    builder.output("y", DataType::kFloat32, Shape{2, 24, 5, 5});
    return builder;
}

TEST(BlockedLayout, ActivationsBetweenConvolutionsStayBlockedAndMatchTheNchwGraph) {
    const ModelBuilder builder = inverted_residual_model();
    const LayoutChoice choice = choose_layouts(builder);
    // The graph output's class (c4, y) stays as declared; everything before it is blocked.
    EXPECT_EQ(choice.blocked, (Names{"c1", "r1", "c2", "r2", "c3", "s"}));
    EXPECT_EQ(choice.flags, (std::map<std::string, std::string>{
                                {"conv_c1", "out"}, {"conv_c2", "in+out"}, {"conv_c3", "in+out"}, {"conv_c4", "in"}}));

    const TensorMap feed{{"x", random_tensor({2, 8, 10, 10}, 3, -2.0f, 2.0f)}};
    EXPECT_EQ(expect_same_values_on(builder, "y", kBlockedLayoutTolerance, feed),
              (Names{"conv_c1", "conv_c2", "conv_c3", "conv_c4"}));
    // The session runs the pass on the folded graph: r1, r2 and s (c3 took the residual Add's name).
    const Severity previous = logger().severity();
    logger().set_severity(Severity::kExtraVerbose);
    ::testing::internal::CaptureStdout();
    SessionOptions options;
    options.num_threads = 2;
    const Session session(*builder.build(), options);
    const std::string log = ::testing::internal::GetCapturedStdout();
    logger().set_severity(previous);
    EXPECT_NE(log.find("3 tensors stay channel-blocked"), std::string::npos) << log;
    // Bit-identical from run to run at a fixed thread count, on more than one thread too.
    const Tensor first = session.run(feed).at("y"), second = session.run(feed).at("y");
    ASSERT_EQ(first.numel(), second.numel());
    for (int64_t i = 0; i < first.numel(); ++i)
        ASSERT_EQ(first.data_as<float>()[i], second.data_as<float>()[i]) << "y[" << i << "]";
}

// ResNet's deep 3x3 convolutions (128 channels at 14x14, a residual, one at stride 2) run on the
// runtime's own kernel (blocked_conv.h) in blocks of 8, also where the graph holds their input or output as NCHW
// (the first reads the graph input; the last one's sum with a residual is the graph output), and
// match the graph as written, at 1 and 2 threads alike.
TEST(BlockedLayout, DeepThreeByThreeConvolutionsRunOnTheOwnKernelAndMatchTheNchwGraph) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 128, 14, 14});
    auto conv = [&](const std::string& x, const Shape& w_shape, const std::string& y, uint32_t seed, int64_t stride) {
        builder.initializer(y + "_w", random_tensor(w_shape, seed, -0.05f, 0.05f));  // values stay ~1
        builder.initializer(y + "_b", random_tensor({w_shape[0]}, seed + 100));
        onnx::NodeProto& node = builder.node("Conv", {x, y + "_w", y + "_b"}, {y}, "conv_" + y);
        const int64_t pad = w_shape[2] / 2;
        set_attr(node, "pads", std::vector<int64_t>{pad, pad, pad, pad});
        set_attr(node, "strides", std::vector<int64_t>{stride, stride});
    };
    conv("x", {128, 128, 3, 3}, "a", 1, 1);
    builder.node("Relu", {"a"}, {"ra"}, "relu_a");
    conv("ra", {128, 128, 3, 3}, "b", 2, 1);
    builder.node("Add", {"b", "ra"}, {"s"}, "add_b");
    builder.node("Relu", {"s"}, {"rs"}, "relu_s");
    conv("rs", {128, 128, 3, 3}, "c", 3, 2);
    builder.node("Relu", {"c"}, {"rc"}, "relu_c");
    conv("rc", {128, 128, 3, 3}, "d", 4, 1);
    conv("rs", {128, 128, 1, 1}, "e", 5, 2);  // the shortcut
    builder.node("Add", {"d", "e"}, {"de"}, "add_d");
    builder.node("Relu", {"de"}, {"y"}, "relu_y");
    builder.output("y", DataType::kFloat32, Shape{2, 128, 7, 7});
    EXPECT_EQ(choose_layouts(builder).flags,
              (std::map<std::string, std::string>{
                  {"conv_a", "out"}, {"conv_b", "in+out"}, {"conv_c", "in+out"}, {"conv_d", "in"}, {"conv_e", "in"}}));
    const TensorMap feed{{"x", random_tensor({2, 128, 14, 14}, 5, -2.0f, 2.0f)}};
    expect_same_values_on(builder, "y", kBlockedLayoutTolerance, feed);

    const Severity previous = logger().severity();
    logger().set_severity(Severity::kSuperVerbose);
    ::testing::internal::CaptureStdout();
    SessionOptions options;
    options.num_threads = 1;
    options.max_channel_block = kNarrowChannelBlock;  // the own kernel's block
    const OnnxModel model = builder.build();
    const Session one(*model, options);
    const Tensor first = one.run(feed).at("y");
    const std::string log = ::testing::internal::GetCapturedStdout();
    logger().set_severity(previous);
    if (blocked_conv::cpu_supported()) {
        for (const std::string node : {"conv_a", "conv_b", "conv_c", "conv_d"})
            EXPECT_NE(log.find("'" + node + "' (FusedConv): runs on the runtime's own blocked convolution"),
                      std::string::npos)
                << node << "\n"
                << log;
        EXPECT_EQ(log.find("'conv_e' (FusedConv): runs on the runtime's own"), std::string::npos) << log;
    }
    options.num_threads = 2;
    const Tensor second = one.run(feed).at("y"), two = Session(*model, options).run(feed).at("y");
    ASSERT_EQ(first.numel(), two.numel());
    for (int64_t i = 0; i < first.numel(); ++i) {
        ASSERT_EQ(first.data_as<float>()[i], second.data_as<float>()[i]) << "y[" << i << "]";
        ASSERT_EQ(first.data_as<float>()[i], two.data_as<float>()[i]) << "y[" << i << "]";
    }
}

// A SiLU or a Clip folded into a convolution on the own kernel: Clip at its store, SiLU by the pass
// after it; both match the nodes as written.
TEST(BlockedLayout, SiluAndClipFoldIntoAConvolutionOnTheOwnKernel) {
    for (const std::string activation : {"Silu", "Clip"}) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1, 128, 7, 7});
        builder.initializer("w", random_tensor({128, 128, 3, 3}, 1, -0.05f, 0.05f));
        builder.initializer("b", random_tensor({128}, 2));
        set_attr(builder.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
        if (activation == "Silu") {
            builder.node("Sigmoid", {"c"}, {"s"}, "sigmoid");
            builder.node("Mul", {"c", "s"}, {"a"}, "mul");
        } else {
            builder.initializer("lo", scalar(-0.5f));
            builder.initializer("hi", scalar(0.5f));
            builder.node("Clip", {"c", "lo", "hi"}, {"a"}, "clip");
        }
        add_conv(builder, "a", {8, 128, 1, 1}, "y", 3);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 7, 7});
        EXPECT_EQ(choose_layouts(builder).flags.at("conv"), "out");
        EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 128, 7, 7}), (Names{"conv", "conv_y"}))
            << activation;
    }
}

TEST(BlockedLayout, TensorsThatOtherOperatorsReadOrThatLackEightChannelMultiplesStayNchw) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 6, 6});
    add_conv(builder, "x", {12, 8, 1, 1}, "a", 1);  // 12 channels: not a multiple of 8
    add_conv(builder, "a", {16, 12, 1, 1}, "b", 2);
    builder.node("Transpose", {"b"}, {"t"}, "transpose");  // another operator reads b
    add_conv(builder, "b", {16, 16, 1, 1}, "c", 3);
    builder.initializer("per_channel", random_tensor({1, 16, 1, 1}, 4));
    builder.node("Add", {"c", "per_channel"}, {"d"}, "add");  // a constant that is not a scalar
    add_conv(builder, "d", {16, 16, 1, 1}, "e", 5);
    builder.initializer("two", scalar(2.0f));
    builder.node("Mul", {"two", "e"}, {"f"}, "mul");  // a scalar constant, in either operand
    add_conv(builder, "f", {8, 16, 1, 1}, "y", 6);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 6, 6});
    builder.output("t", DataType::kFloat32, Shape{6, 6, 16, 1});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"e", "f"}));
    EXPECT_EQ(choice.flags, (std::map<std::string, std::string>{{"conv_e", "out"}, {"conv_y", "in"}}));
    const TensorMap feed{{"x", random_tensor({1, 8, 6, 6}, 7, -2.0f, 2.0f)}};
    expect_same_values_on(builder, "y", kBlockedLayoutTolerance, feed);
    expect_same_values_on(builder, "t", kBlockedLayoutTolerance, feed);

    // A value that a subgraph reads (an implicit input of the node holding it) stays as written.
    const LayoutChoice read_by_subgraph = choose_layouts(builder, {{"mul", {"d"}}});
    EXPECT_EQ(read_by_subgraph.blocked, Names{});
}

TEST(BlockedLayout, SqueezeExciteStaysBlockedThroughGlobalAveragePoolAndTheBroadcastingMul) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 7, 7});
    add_conv(builder, "x", {16, 8, 3, 3}, "c", 1, 1);
    builder.node("Relu", {"c"}, {"r"}, "relu");
    builder.node("GlobalAveragePool", {"r"}, {"p"}, "pool");
    add_conv(builder, "p", {8, 16, 1, 1}, "f", 2);
    builder.node("Relu", {"f"}, {"fr"}, "relu_f");
    add_conv(builder, "fr", {16, 8, 1, 1}, "g", 3);
    builder.node("Sigmoid", {"g"}, {"s"}, "sigmoid");
    builder.node("Mul", {"r", "s"}, {"m"}, "scale");
    add_conv(builder, "m", {8, 16, 1, 1}, "y", 4);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 7, 7});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"c", "r", "p", "f", "fr", "g", "s", "m"}));
    EXPECT_EQ(choice.flags.at("pool"), "in+out");
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 8, 7, 7}),
              (Names{"conv_c", "pool", "conv_f", "conv_g", "sigmoid", "scale", "conv_y"}));
}

// A classifier's tail (ResNet, MobileNetV2): GlobalAveragePool's output goes to Flatten and Gemm,
// which want NCHW; its input, and the convolutions before it, stay blocked, and the pool writes the
// plain [N, C, 1, 1] (the same bytes). A plain input still gives a plain output.
TEST(BlockedLayout, GlobalAveragePoolGivesAPlainOutputFromABlockedInput) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 8, 7, 7});
    add_conv(builder, "x", {16, 8, 3, 3}, "c", 1, 1);
    builder.node("Relu", {"c"}, {"r"}, "relu");
    add_conv(builder, "r", {16, 16, 3, 3}, "d", 2, 1);
    builder.node("GlobalAveragePool", {"d"}, {"p"}, "pool");
    builder.node("Flatten", {"p"}, {"f"}, "flatten");
    builder.initializer("fc_w", random_tensor({10, 16}, 3));
    set_attr(builder.node("Gemm", {"f", "fc_w"}, {"y"}, "fc"), "transB", int64_t{1});
    builder.output("y", DataType::kFloat32, Shape{2, 10});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"c", "r", "d"}));
    EXPECT_EQ(choice.flags.at("pool"), "in");
    EXPECT_EQ(choice.flags.at("conv_d"), "in+out");
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {2, 8, 7, 7}),
              (Names{"conv_c", "conv_d", "pool", "flatten", "fc"}));

    // The pool's input a graph output: plain, so the pool's output is plain and its reader as written.
    ModelBuilder plain_input = builder;
    plain_input.output("d", DataType::kFloat32, Shape{2, 16, 7, 7});
    add_conv(plain_input, "p", {8, 16, 1, 1}, "e", 4);
    plain_input.output("e", DataType::kFloat32, Shape{2, 8, 1, 1});
    const LayoutChoice plain_choice = choose_layouts(plain_input);
    EXPECT_EQ(plain_choice.blocked, (Names{"c", "r"}));
    EXPECT_FALSE(plain_choice.flags.contains("pool"));
}

// SqueezeNet's MaxPool, named "pool": 3x3, stride 2, ceil_mode.
void add_squeezenet_max_pool(ModelBuilder& builder, const std::string& x, const std::string& y) {
    onnx::NodeProto& pool = builder.node("MaxPool", {x}, {y}, "pool");
    set_attr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(pool, "strides", std::vector<int64_t>{2, 2});
    set_attr(pool, "ceil_mode", int64_t{1});
}

// A SqueezeNet fire module after a ceil-mode MaxPool: the pool and the channel Concat keep the
// blocked layout; a MaxPool with Indices and a Concat along another axis do not.
TEST(BlockedLayout, MaxPoolAndChannelConcatStayBlocked) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 9, 9});
    add_conv(builder, "x", {16, 8, 3, 3}, "c", 1, 1);
    add_squeezenet_max_pool(builder, "c", "p");
    add_conv(builder, "p", {8, 16, 1, 1}, "s", 2);
    add_conv(builder, "s", {16, 8, 1, 1}, "e1", 3);
    add_conv(builder, "s", {16, 8, 3, 3}, "e3", 4, 1);
    set_attr(builder.node("Concat", {"e1", "e3"}, {"cat"}, "concat"), "axis", int64_t{1});
    add_conv(builder, "cat", {8, 32, 1, 1}, "y", 5);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 4, 4});
    const LayoutChoice choice = choose_layouts(builder);
    EXPECT_EQ(choice.blocked, (Names{"c", "p", "s", "e1", "e3", "cat"}));
    EXPECT_EQ(choice.flags.at("pool"), "in");
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 8, 9, 9}).size(), 7u);

    ModelBuilder other_axis = builder;
    other_axis.node("MaxPool", {"e1"}, {"q", "q_indices"}, "pool_with_indices");
    set_attr(other_axis.node("Concat", {"e1", "e3"}, {"rows"}, "concat_rows"), "axis", int64_t{2});
    EXPECT_EQ(choose_layouts(other_axis).blocked, (Names{"c", "p", "s"}));
}

// Where oneDNN runs AVX-512 kernels, a class whose convolutions all have 16-channel multiples takes
// blocks of 16 (nChw16c): here a fire module with its pool, its Concat and an Add. A class with
// 8-channel multiples only takes blocks of 8, and the convolutions between the two reorder their
// narrow side.
TEST(BlockedLayout, WideBlocksWhereEveryConvolutionOfAClassTakesThem) {
    auto fire_module = [](int64_t squeeze) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1, 8, 9, 9});
        add_conv(builder, "x", {32, 8, 3, 3}, "c", 1, 1);
        add_squeezenet_max_pool(builder, "c", "p");
        add_conv(builder, "p", {squeeze, 32, 1, 1}, "s", 2);
        builder.node("Relu", {"s"}, {"sr"}, "relu_s");
        add_conv(builder, "sr", {16, squeeze, 1, 1}, "e1", 3);
        add_conv(builder, "sr", {16, squeeze, 3, 3}, "e3", 4, 1);
        set_attr(builder.node("Concat", {"e1", "e3"}, {"cat"}, "concat"), "axis", int64_t{1});
        builder.node("Add", {"cat", "p"}, {"sum"}, "add");
        add_conv(builder, "sum", {8, 32, 1, 1}, "y", 5);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 4, 4});
        return builder;
    };
    using Flags = std::map<std::string, std::string>;
    const Flags narrow_flags{{"conv_c", "out"},     {"pool", "in"},        {"conv_s", "in+out"},
                             {"conv_e1", "in+out"}, {"conv_e3", "in+out"}, {"conv_y", "in"}};
    // A 16-channel squeeze keeps every class at 16; a 24-channel one takes blocks of 8 for its class
    // (s, sr) only.
    const std::pair<int64_t, Flags> cases[] = {{16,
                                                {{"conv_c", "out16"},
                                                 {"pool", "in16"},
                                                 {"conv_s", "in16+out16"},
                                                 {"conv_e1", "in16+out16"},
                                                 {"conv_e3", "in16+out16"},
                                                 {"conv_y", "in16"}}},
                                               {24,
                                                {{"conv_c", "out16"},
                                                 {"pool", "in16"},
                                                 {"conv_s", "in16+out"},
                                                 {"conv_e1", "in+out16"},
                                                 {"conv_e3", "in+out16"},
                                                 {"conv_y", "in16"}}}};
    for (const auto& [squeeze, wide_flags] : cases) {
        const ModelBuilder model = fire_module(squeeze);
        const LayoutChoice wide = choose_layouts(model, {}, kWideChannelBlock);
        EXPECT_EQ(wide.blocked, (Names{"c", "p", "s", "sr", "e1", "e3", "cat", "sum"})) << squeeze;
        EXPECT_EQ(wide.flags, wide_flags) << squeeze;
        EXPECT_EQ(choose_layouts(model, {}, kNarrowChannelBlock).flags, narrow_flags) << squeeze;
        EXPECT_EQ(expect_same_values(model, "y", kBlockedLayoutTolerance, {1, 8, 9, 9}).size(), 8u) << squeeze;
    }

    // An inverted residual block: a 24-channel input, a 48-channel expansion, the projection with
    // the input added. As the fusion pass leaves it (the Add folded into conv_c), only convolutions
    // meet the 24-channel class, all with 24 channels: it takes blocks of 16, the last one padded,
    // as oneDNN and ONNX Runtime pad it. Where another operator reads the sum too (a Mul by 2), the
    // class takes blocks of 8, and conv_b and conv_c run in 16 and reorder their narrow side, conv_c
    // with the residual folded in.
    auto inverted_residual = [](bool shared, bool folded) {
        ModelBuilder block(17);
        block.input("x", DataType::kFloat32, Shape{2, 8, 6, 6});
        add_conv(block, "x", {24, 8, 3, 3}, "a", 11, 1);
        add_conv(block, "a", {48, 24, 1, 1}, "b", 12);
        block.node("Relu", {"b"}, {"br"}, "relu_b");
        onnx::NodeProto& conv_c = add_conv(block, "br", {24, 48, 1, 1}, folded ? "sum" : "c", 13);
        if (folded) {
            conv_c.set_name("conv_c");
            conv_c.add_input("a");
            conv_c.set_domain(kRuntimeDomain);
            conv_c.set_op_type("FusedConv");
        } else {
            block.node("Add", {"c", "a"}, {"sum"}, "add");
        }
        if (shared) {
            block.initializer("two", scalar(2.0f));
            block.node("Mul", {"sum", "two"}, {"m"}, "double");
        }
        add_conv(block, shared ? "m" : "sum", {16, 24, 3, 3}, "y", 14, 1);
        block.output("y", DataType::kFloat32, Shape{2, 16, 6, 6});
        return block;
    };
    EXPECT_EQ(choose_layouts(inverted_residual(false, true), {}, kWideChannelBlock).flags,
              (Flags{{"conv_a", "out16"}, {"conv_b", "in16+out16"}, {"conv_c", "in16+out16"}, {"conv_y", "in16"}}));
    EXPECT_EQ(choose_layouts(inverted_residual(true, true), {}, kWideChannelBlock).flags,
              (Flags{{"conv_a", "out"}, {"conv_b", "in+out16"}, {"conv_c", "in16+out"}, {"conv_y", "in"}}));
    for (const bool shared : {false, true}) {
        const ModelBuilder block = inverted_residual(shared, false);
        const Names expected = shared ? Names{"conv_a", "conv_b", "conv_c", "double", "conv_y"}
                                      : Names{"conv_a", "conv_b", "conv_c", "conv_y"};
        EXPECT_EQ(expect_same_values(block, "y", kBlockedLayoutTolerance, {2, 8, 6, 6}), expected);
        // No convolution falls back to oneDNN's reference loop (a residual post-op in the narrow
        // layout of a primitive that writes the wide one did, 1000x slower).
        const Severity previous = logger().severity();
        logger().set_severity(Severity::kSuperVerbose);
        ::testing::internal::CaptureStdout();
        Session(*block.build(), with_fusion(true, kWideChannelBlock)).run({{"x", random_tensor({2, 8, 6, 6}, 3)}});
        const std::string log = ::testing::internal::GetCapturedStdout();
        logger().set_severity(previous);
        EXPECT_NE(log.find("'conv_c' (FusedConv): input (2, 48, 6, 6) runs on oneDNN"), std::string::npos) << log;
        EXPECT_NE(log.find("'conv_y' (FusedConv): input (2, 24, 6, 6) runs on oneDNN"), std::string::npos) << log;
        EXPECT_EQ(log.find("runs on oneDNN ref"), std::string::npos) << log;
    }

    // A session takes 0 (the CPU's widest), 8 or 16 only.
    for (const int value : {-1, 4, 32}) {
        try {
            const Session session(*fire_module(16).build(), with_fusion(true, value));
            ADD_FAILURE() << "no error for " << value;
        } catch (const PolygraphyException& error) {
            EXPECT_EQ(std::string(error.what()), "Invalid channel block: " + std::to_string(value) +
                                                     " (expected 0 for the CPU's widest, 8 or 16)");
        }
    }
}

// As written, a NaN anywhere in a MaxPool window gives NaN; the blocked kernel keeps that.
TEST(BlockedLayout, BlockedMaxPoolGivesNaNForAWindowWithANaN) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 6, 6});
    add_conv(builder, "x", {16, 8, 1, 1}, "c", 1);  // 1x1: a NaN stays at its position
    onnx::NodeProto& pool = builder.node("MaxPool", {"c"}, {"p"}, "pool");
    set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(pool, "strides", std::vector<int64_t>{2, 2});
    std::vector<double> eye(16 * 16, 0.0);  // a Conv that copies the pool's output
    for (std::size_t c = 0; c < 16; ++c) eye[c * 16 + c] = 1.0;
    builder.initializer("eye", Tensor::from_doubles(DataType::kFloat32, {16, 16, 1, 1}, eye));
    builder.node("Conv", {"p", "eye"}, {"y"}, "copy");
    builder.output("y", DataType::kFloat32, Shape{1, 16, 3, 3});
    ASSERT_EQ(choose_layouts(builder).flags.at("pool"), "in");

    Tensor x = random_tensor({1, 8, 6, 6}, 2);
    x.data_as<float>()[1 * 6 + 4] = std::numeric_limits<float>::quiet_NaN();  // in pooling window (0, 2)
    const OnnxModel model = builder.build();
    const Tensor fused = Session(*model, with_fusion(true)).run({{"x", x}}).at("y");
    const Tensor written = Session(*model, with_fusion(false)).run({{"x", x}}).at("y");
    ASSERT_EQ(fused.numel(), 16 * 9);
    for (int64_t i = 0; i < fused.numel(); ++i) {
        const float a = fused.data_as<float>()[i], b = written.data_as<float>()[i];
        EXPECT_EQ(std::isnan(a), i % 9 == 2) << "y[" << i << "]";
        EXPECT_EQ(std::isnan(a), std::isnan(b)) << "y[" << i << "]";
        if (!std::isnan(b)) {
            EXPECT_NEAR(a, b, kBlockedLayoutTolerance) << "y[" << i << "]";
        }
    }
}

TEST(BlockedLayout, WeightSharedThroughIdentityIsAConstantAndTheIdentityDoesNotRun) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 5, 5});
    builder.initializer("w", random_tensor({16, 8, 1, 1}, 1));
    builder.node("Identity", {"w"}, {"w_shared"}, "share");  // as torch exports a shared weight
    builder.node("Conv", {"x", "w_shared"}, {"c"}, "conv1");
    add_conv(builder, "c", {8, 16, 1, 1}, "y", 2);
    builder.output("y", DataType::kFloat32, Shape{1, 8, 5, 5});
    EXPECT_EQ(choose_layouts(builder).blocked, Names{"c"});
    EXPECT_EQ(expect_same_values(builder, "y", kBlockedLayoutTolerance, {1, 8, 5, 5}), (Names{"conv1", "conv_y"}));
}

TEST(BlockedLayout, BadBlockedAttributesFailWithAClearMessage) {
    for (int64_t value : {int64_t{2}, int64_t{1}, kNarrowChannelBlock, kWideChannelBlock}) {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1, 8, 4, 4});
        onnx::NodeProto& conv = add_conv(builder, "x", {8, 8, 1, 1}, "y", 1);
        conv.set_domain(kRuntimeDomain);
        conv.set_op_type("FusedConv");
        set_attr(conv, std::string(kBlockedInputAttr), value);
        builder.output("y", DataType::kFloat32, Shape{1, 8, 4, 4});
        const OnnxModel model = builder.build();
        try {
            // 1 and 2 are refused when the session is made; 8 and 16 on a plain NCHW input when it runs.
            const Session session(*model, with_fusion(false));
            session.run({{"x", random_tensor({1, 8, 4, 4}, 2)}});
            ADD_FAILURE() << "no error for " << value;
        } catch (const std::exception& error) {
            const std::string expected = value < kNarrowChannelBlock
                                             ? "must be 0, 8 or 16, but it is " + std::to_string(value)
                                             : "expected a channel-blocked float32 input [N, C/" +
                                                   std::to_string(value) + ", H, W, " + std::to_string(value) + "]";
            EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
        }
    }
}

// A blocked layout is an operator of its own: the layout pass makes the convolutions and pools
// that read or write blocked tensors the runtime's FusedConv, BlockedMaxPool and
// BlockedGlobalAveragePool, and the standard operators stay plain (the kernels of a standard Conv or
// pool read no layout attribute).
TEST(BlockedLayout, BlockedNodesBecomeTheRuntimesOwnOperatorsAndStandardOnesStayPlain) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 8, 8});
    add_conv(builder, "x", {16, 8, 3, 3}, "a", 1, 1);
    onnx::NodeProto& pool = builder.node("MaxPool", {"a"}, {"p"}, "pool");
    set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(pool, "strides", std::vector<int64_t>{2, 2});
    add_conv(builder, "p", {16, 16, 1, 1}, "c", 2);
    builder.node("GlobalAveragePool", {"c"}, {"g"}, "gap");
    builder.output("g", DataType::kFloat32, Shape{1, 16, 1, 1});
    const OnnxModel model = builder.build();
    std::vector<onnx::NodeProto> nodes(model->graph().node().begin(), model->graph().node().end());
    std::vector<std::vector<std::string>> node_inputs;
    for (const auto& node : nodes) node_inputs.emplace_back(node.input().begin(), node.input().end());
    choose_blocked_layouts(nodes, node_inputs, model->graph(), kWideChannelBlock);
    std::vector<std::string> ops;
    for (const auto& node : nodes) ops.push_back(node.domain() + "." + node.op_type());
    EXPECT_EQ(ops, (Names{"ai.polygraphy.ref.FusedConv", "ai.polygraphy.ref.BlockedMaxPool",
                          "ai.polygraphy.ref.FusedConv", "ai.polygraphy.ref.BlockedGlobalAveragePool"}));

    // A layout attribute on a standard operator is not the runtime's: it computes as written.
    for (const std::string op : {"MaxPool", "GlobalAveragePool", "Conv"}) {
        ModelBuilder plain(17);
        plain.input("x", DataType::kFloat32, Shape{1, 8, 4, 4});
        onnx::NodeProto& node =
            op == "Conv" ? add_conv(plain, "x", {8, 8, 1, 1}, "y", 3) : plain.node(op, {"x"}, {"y"}, "node");
        if (op == "MaxPool") set_attr(node, "kernel_shape", std::vector<int64_t>{2, 2});
        set_attr(node, std::string(kBlockedInputAttr), kNarrowChannelBlock);
        plain.output("y", DataType::kFloat32, DynShape{});
        const Session session(*plain.build(), with_fusion(false));
        const Tensor x = random_tensor({1, 8, 4, 4}, 4);
        EXPECT_EQ(session.run({{"x", x}}).at("y").rank(), 4) << op;
    }

    // BlockedGlobalAveragePool writes a blocked output from a blocked input only.
    ModelBuilder bad(17);
    bad.input("x", DataType::kFloat32, Shape{1, 8, 4, 4});
    set_attr(bad.node("BlockedGlobalAveragePool", {"x"}, {"y"}, "pool", kRuntimeDomain),
             std::string(kBlockedOutputAttr), kWideChannelBlock);
    bad.output("y", DataType::kFloat32, DynShape{});
    try {
        const Session session(*bad.build(), with_fusion(false));
        ADD_FAILURE() << "no error for a blocked output of a plain input";
    } catch (const std::exception& error) {
        EXPECT_NE(std::string(error.what()).find("'pool': a channel-blocked output needs a channel-blocked input"),
                  std::string::npos)
            << error.what();
    }
}

}  // namespace
}  // namespace polygraphy::ref
