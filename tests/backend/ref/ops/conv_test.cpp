#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/ops/families.h"
#include "onnxrt_reference.h"
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

struct Window {
    std::vector<int64_t> strides, dilations, pad_begin, pad_end;
};

/// Direct definition of ONNX Conv in double: y[n, m, o] = B[m] + sum_{c, k} x[n, g*C/g + c, o*s - pb + k*d] * W[m, c, k].
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, int64_t group, const Window& win) {
    const Shape& xs = x.shape();
    const Shape& ws = w.shape();
    const std::size_t rank = xs.size() - 2;
    const int64_t n_count = xs[0], c_count = xs[1], m_count = ws[0];
    const int64_t cg = c_count / group, mg = m_count / group;
    std::vector<int64_t> in(xs.begin() + 2, xs.end()), kernel(ws.begin() + 2, ws.end()), out(rank);
    for (std::size_t d = 0; d < rank; ++d) {
        out[d] = (in[d] + win.pad_begin[d] + win.pad_end[d] - ((kernel[d] - 1) * win.dilations[d] + 1)) / win.strides[d] + 1;
    }
    Shape ys = {n_count, m_count};
    ys.insert(ys.end(), out.begin(), out.end());
    std::vector<double> y(static_cast<std::size_t>(shape_volume(ys)));
    const int64_t in_size = shape_volume(in), out_size = shape_volume(out), k_size = shape_volume(kernel);
    for (int64_t n = 0; n < n_count; ++n) {
        for (int64_t m = 0; m < m_count; ++m) {
            const int64_t g = m / mg;
            for (int64_t o = 0; o < out_size; ++o) {
                const auto oi = unravel(o, out);
                double acc = b != nullptr ? b->value_as_double(m) : 0.0;
                for (int64_t c = 0; c < cg; ++c) {
                    for (int64_t k = 0; k < k_size; ++k) {
                        const auto ki = unravel(k, kernel);
                        int64_t offset = 0;
                        bool inside = true;
                        for (std::size_t d = 0; d < rank; ++d) {
                            const int64_t pos = oi[d] * win.strides[d] - win.pad_begin[d] + ki[d] * win.dilations[d];
                            inside = inside && pos >= 0 && pos < in[d];
                            offset = offset * in[d] + pos;
                        }
                        if (!inside) continue;
                        acc += x.value_as_double((n * c_count + g * cg + c) * in_size + offset) *
                               w.value_as_double((m * cg + c) * k_size + k);
                    }
                }
                y[static_cast<std::size_t>((n * m_count + m) * out_size + o)] = acc;
            }
        }
    }
    return Tensor::from_doubles(DataType::kFloat64, ys, y);
}

/// Direct definition of ONNX ConvTranspose in double: every x[n, c, i] * W[c, m, k] lands on output
/// position i*s - pb + k*d of channel g*M/g + m (when inside the output).
Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b, int64_t group, const Window& win,
                            const std::vector<int64_t>& out) {
    const Shape& xs = x.shape();
    const Shape& ws = w.shape();
    const std::size_t rank = xs.size() - 2;
    const int64_t n_count = xs[0], c_count = xs[1], mg = ws[1], m_count = mg * group, cg = c_count / group;
    std::vector<int64_t> in(xs.begin() + 2, xs.end()), kernel(ws.begin() + 2, ws.end());
    Shape ys = {n_count, m_count};
    ys.insert(ys.end(), out.begin(), out.end());
    const int64_t in_size = shape_volume(in), out_size = shape_volume(out), k_size = shape_volume(kernel);
    std::vector<double> y(static_cast<std::size_t>(shape_volume(ys)), 0.0);
    for (int64_t n = 0; n < n_count; ++n) {
        for (int64_t m = 0; m < m_count; ++m) {
            for (int64_t o = 0; o < out_size; ++o) {
                y[static_cast<std::size_t>((n * m_count + m) * out_size + o)] = b != nullptr ? b->value_as_double(m) : 0.0;
            }
        }
        for (int64_t c = 0; c < c_count; ++c) {
            const int64_t g = c / cg;
            for (int64_t i = 0; i < in_size; ++i) {
                const auto ii = unravel(i, in);
                const double xv = x.value_as_double((n * c_count + c) * in_size + i);
                for (int64_t m = 0; m < mg; ++m) {
                    for (int64_t k = 0; k < k_size; ++k) {
                        const auto ki = unravel(k, kernel);
                        int64_t offset = 0;
                        bool inside = true;
                        for (std::size_t d = 0; d < rank; ++d) {
                            const int64_t pos = ii[d] * win.strides[d] - win.pad_begin[d] + ki[d] * win.dilations[d];
                            inside = inside && pos >= 0 && pos < out[d];
                            offset = offset * out[d] + pos;
                        }
                        if (!inside) continue;
                        y[static_cast<std::size_t>((n * m_count + g * mg + m) * out_size + offset)] +=
                            xv * w.value_as_double((c * mg + m) * k_size + k);
                    }
                }
            }
        }
    }
    return Tensor::from_doubles(DataType::kFloat64, ys, y);
}


// ---- Conv ---------------------------------------------------------------------------------------------

TEST(ConvOp, BasicWithPaddingMatchesOnnxExample) {
    // numpy: xp = np.pad(np.arange(25.).reshape(5, 5), 1); y[i, j] = xp[i:i+3, j:j+3].sum()
    KernelHarness h("Conv", 11);
    set_attr(h.node(), "pads", std::vector<int64_t>{1, 1, 1, 1});
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{3, 3});
    h.input(f32({1, 1, 5, 5}, arange(25))).input(f32({1, 1, 3, 3}, std::vector<double>(9, 1.0)), true);
    expect_close(h.run()[0], {1, 1, 5, 5},
                 {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
}

TEST(ConvOp, StridesWithoutPadding) {
    // numpy: x = np.arange(35.).reshape(7, 5); y[i, j] = x[2i:2i+3, 2j:2j+3].sum()
    KernelHarness h("Conv", 17);
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    h.input(f32({1, 1, 7, 5}, arange(35))).input(f32({1, 1, 3, 3}, std::vector<double>(9, 1.0)));
    expect_close(h.run()[0], {1, 1, 3, 2}, {54, 72, 144, 162, 234, 252});
}

struct ConvCase {
    std::string name;
    Shape x_shape;
    Shape w_shape;
    int64_t group = 1;
    std::vector<int64_t> strides, dilations, pads;  // empty: attribute not set
    std::string auto_pad;                           // empty: not set
    bool bias = false;
    bool constant_weight = true;
};

/// Pads the spec's auto_pad rules give (SAME_*: output ceil(in / stride); VALID: none).
Window expected_window(const ConvCase& c) {
    const std::size_t rank = c.x_shape.size() - 2;
    Window win;
    win.strides = c.strides.empty() ? std::vector<int64_t>(rank, 1) : c.strides;
    win.dilations = c.dilations.empty() ? std::vector<int64_t>(rank, 1) : c.dilations;
    win.pad_begin.assign(rank, 0);
    win.pad_end.assign(rank, 0);
    for (std::size_t d = 0; d < rank; ++d) {
        const int64_t in = c.x_shape[d + 2];
        const int64_t extent = (c.w_shape[d + 2] - 1) * win.dilations[d] + 1;
        if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
            const int64_t out = (in + win.strides[d] - 1) / win.strides[d];
            const int64_t total = std::max<int64_t>(0, (out - 1) * win.strides[d] + extent - in);
            win.pad_begin[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            win.pad_end[d] = total - win.pad_begin[d];
        } else if (c.auto_pad.empty() && !c.pads.empty()) {
            win.pad_begin[d] = c.pads[d];
            win.pad_end[d] = c.pads[d + rank];
        }
    }
    return win;
}

void run_conv_case(const ConvCase& c, DataType dtype, double rtol, int threads = 2) {
    SCOPED_TRACE(c.name + " " + std::string(dtype_name(dtype)));
    const Tensor x32 = random_tensor(c.x_shape, 1);
    const Tensor w32 = random_tensor(c.w_shape, 2);
    const Tensor b32 = random_tensor({c.w_shape[0]}, 3);
    KernelHarness h("Conv", 17);
    if (c.group != 1) set_attr(h.node(), "group", c.group);
    if (!c.strides.empty()) set_attr(h.node(), "strides", c.strides);
    if (!c.dilations.empty()) set_attr(h.node(), "dilations", c.dilations);
    if (!c.pads.empty()) set_attr(h.node(), "pads", c.pads);
    if (!c.auto_pad.empty()) set_attr(h.node(), "auto_pad", c.auto_pad);
    h.input(x32.cast(dtype)).input(w32.cast(dtype), c.constant_weight);
    if (c.bias) h.input(b32.cast(dtype));
    // Two runs: the second reuses the cached primitive and packed weights.
    const Tensor y = h.run(threads, 2)[0];
    EXPECT_EQ(y.dtype(), dtype);
    // The reference sees the same (possibly rounded) inputs.
    const Tensor bias = b32.cast(dtype);
    const Tensor expected = naive_conv(x32.cast(dtype), w32.cast(dtype), c.bias ? &bias : nullptr, c.group, expected_window(c));
    expect_close(y, expected, rtol, rtol);
}

std::vector<ConvCase> conv_cases() {
    return {
        {"2d plain", {1, 3, 9, 9}, {4, 3, 3, 3}, 1, {}, {}, {}, "", false, true},
        {"2d bias computed weight", {2, 5, 8, 7}, {6, 5, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, false},
        {"2d stride asym pads", {1, 4, 11, 10}, {8, 4, 3, 2}, 1, {2, 3}, {}, {1, 0, 2, 1}, "", true, true},
        {"2d dilation", {1, 2, 12, 12}, {3, 2, 3, 3}, 1, {1, 1}, {2, 3}, {2, 2, 2, 2}, "", false, true},
        {"2d groups", {1, 6, 7, 7}, {4, 3, 3, 3}, 2, {1, 1}, {}, {1, 1, 1, 1}, "", true, true},
        {"depthwise", {2, 8, 10, 10}, {8, 1, 3, 3}, 8, {2, 2}, {}, {1, 1, 1, 1}, "", true, true},
        {"depthwise multiplier", {1, 4, 9, 9}, {8, 1, 5, 5}, 4, {}, {}, {2, 2, 2, 2}, "", true, false},
        // The direct depthwise kernel: register blocks and tails, asymmetric and negative-free pads,
        // strides 2 and 3 with dilation, SAME padding.
        {"depthwise wide 5x5", {1, 3, 23, 41}, {3, 1, 5, 5}, 3, {}, {}, {2, 2, 2, 2}, "", true, true},
        {"depthwise stride dilation asym pads", {1, 4, 17, 19}, {4, 1, 3, 3}, 4, {3, 2}, {2, 1}, {0, 2, 1, 0}, "", false, false},
        {"depthwise same upper", {2, 5, 14, 14}, {5, 1, 5, 5}, 5, {2, 2}, {}, {}, "SAME_UPPER", true, true},
        {"same upper", {1, 3, 10, 9}, {4, 3, 4, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", true, true},
        {"same lower", {1, 3, 10, 9}, {4, 3, 4, 3}, 1, {2, 2}, {}, {}, "SAME_LOWER", true, true},
        {"valid", {1, 3, 10, 9}, {4, 3, 3, 2}, 1, {3, 2}, {}, {}, "VALID", false, true},
        {"1x1", {1, 16, 5, 5}, {32, 16, 1, 1}, 1, {}, {}, {}, "", true, true},
        {"1d", {2, 3, 20}, {5, 3, 4}, 1, {2}, {2}, {1, 3}, "", true, true},
        {"3d", {1, 2, 6, 7, 5}, {4, 2, 3, 2, 3}, 1, {1, 2, 1}, {}, {1, 0, 1, 1, 1, 0}, "", true, true},
        {"4d spatial (reference loop)", {1, 2, 4, 3, 4, 3}, {3, 2, 2, 2, 2, 2}, 1, {}, {}, {}, "", true, true},
        {"resnet-like", {1, 64, 14, 14}, {64, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true},
    };
}

TEST(ConvOp, MatchesNaiveReferenceFloat32) {
    for (const ConvCase& c : conv_cases()) run_conv_case(c, DataType::kFloat32, 1e-5);
}

TEST(ConvOp, MatchesNaiveReferenceSingleThread) {
    run_conv_case(conv_cases()[2], DataType::kFloat32, 1e-5, 1);
    run_conv_case(conv_cases()[5], DataType::kFloat32, 1e-5, 1);
    run_conv_case(conv_cases()[8], DataType::kFloat32, 1e-5, 1);
}

TEST(ConvOp, MatchesNaiveReferenceFloat64) {
    for (const ConvCase& c : conv_cases()) run_conv_case(c, DataType::kFloat64, 1e-12);
}

TEST(ConvOp, Float16ComputesInFloat32) {
    // float32 accumulation of float16 inputs, rounded once to float16 (rel. error ~1e-3).
    run_conv_case(conv_cases()[1], DataType::kFloat16, 2e-3);
    run_conv_case(conv_cases()[5], DataType::kFloat16, 2e-3);
}

/// The activations a graph pass may fold into a fused convolution (fused_ops.h kActivationAttr), in
/// double.
double activation(const std::string& name, double x) {
    if (name == "Relu") return x > 0 ? x : 0;
    if (name == "Clip") return std::min(std::max(x, 0.0), 6.0);
    if (name == "Gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    return x / (1 + std::exp(-x));  // Silu
}

TEST(ConvOp, FusedActivationMatchesConvThenActivation) {
    for (const std::string name : {"Relu", "Clip", "Gelu", "Silu"}) {
        for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
            SCOPED_TRACE(name + " " + std::string(dtype_name(dtype)));
            const Tensor x = random_tensor({1, 4, 7, 7}, 51, -3, 3), w = random_tensor({5, 4, 3, 3}, 52), b = random_tensor({5}, 53);
            KernelHarness h("FusedConv", 17);
            h.node().set_domain(ref::kRuntimeDomain);
            set_attr(h.node(), "pads", std::vector<int64_t>{1, 1, 1, 1});
            set_attr(h.node(), std::string(ref::kActivationAttr), name);
            if (name == "Clip")
                set_attr(h.node(), std::string(ref::kActivationParamsAttr), std::vector<float>{0.0f, 6.0f});
            h.input(x.cast(dtype)).input(w.cast(dtype), true).input(b.cast(dtype), true);
            Window win{{1, 1}, {1, 1}, {1, 1}, {1, 1}};
            const Tensor plain = naive_conv(x, w, &b, 1, win);
            std::vector<double> expected;
            for (double v : values_of(plain)) expected.push_back(activation(name, v));
            expect_close(h.run(2, 2)[0], plain.shape(), expected, 1e-5, 1e-5);
        }
    }
    KernelHarness bad("FusedConv", 17);
    bad.node().set_domain(ref::kRuntimeDomain);
    set_attr(bad.node(), std::string(ref::kActivationAttr), std::string("Tanh"));
    expect_error([&] { bad.create(); }, "attribute 'activation' has an unknown value 'Tanh'");
    KernelHarness bad_clip("FusedConv", 17);
    bad_clip.node().set_domain(ref::kRuntimeDomain);
    set_attr(bad_clip.node(), std::string(ref::kActivationAttr), std::string("Clip"));
    set_attr(bad_clip.node(), std::string(ref::kActivationParamsAttr), std::vector<float>{0.0f});
    expect_error([&] { bad_clip.create(); }, "attribute 'activation_params' of Clip must hold 2 values");

    // A standard Conv is only Conv: an attribute of the fused operator's means nothing to it.
    const Tensor x = random_tensor({1, 4, 5, 5}, 54, -3, 3), w = random_tensor({5, 4, 3, 3}, 55);
    KernelHarness plain("Conv", 17);
    set_attr(plain.node(), std::string(ref::kActivationAttr), std::string("Relu"));
    plain.input(x).input(w, true);
    const Tensor expected = naive_conv(x, w, nullptr, 1, Window{{1, 1}, {1, 1}, {0, 0}, {0, 0}});
    expect_close(plain.run()[0], expected.shape(), values_of(expected), 1e-5, 1e-5);
}

/// The Conv family alone, for tests that build the runtime's fused convolutions (blocked layouts,
/// folded residuals) and run them on KernelContexts of their own.
const ref::OpRegistry& conv_registry() {
    static const ref::OpRegistry registry = [] {
        ref::OpRegistry r;
        ref::register_conv_ops(r);
        return r;
    }();
    return registry;
}

// A pointwise convolution between channel-blocked tensors on a small image runs, on 2+ threads, as one
// single-threaded primitive per share of the output channels (with the bias, the residual and Relu of
// its share), all at once: every element against a double definition, at 1, 2 and 4 threads, run
// after run, strided ones included (determinism_test.cpp runs ResNet's downsample path in a graph),
// in blocks of 8 and of 16 channels.
TEST(ConvOp, BlockedPointwiseSplitByOutputChannelsMatchesTheDefinition) {
    const ref::OpRegistry& registry = conv_registry();
    struct Case {
        int64_t c, m, out_h, out_w, stride;
        bool residual;
    };
    for (const int64_t block : {ref::kNarrowChannelBlock, ref::kWideChannelBlock})
        for (const Case& s : {Case{64, 32, 7, 7, 1, true}, Case{32, 64, 14, 14, 1, false}, Case{16, 64, 5, 3, 1, true},
                              Case{128, 256, 14, 14, 2, false}, Case{256, 512, 7, 7, 2, true}}) {
            const int64_t in_h = (s.out_h - 1) * s.stride + 1, in_w = (s.out_w - 1) * s.stride + 1;
            const int64_t pixels = s.out_h * s.out_w, in_pixels = in_h * in_w;
            const Tensor x = random_tensor({1, s.c / block, in_h, in_w, block}, 1);
            const Tensor w = random_tensor({s.m, s.c, 1, 1}, 2);
            const Tensor b = random_tensor({s.m}, 3);
            const Tensor r = random_tensor({1, s.m / block, s.out_h, s.out_w, block}, 4);
            onnx::NodeProto proto;
            proto.set_op_type("FusedConv");
            proto.set_domain(ref::kRuntimeDomain);
            for (const char* name : {"x", "w", "b"}) proto.add_input(name);
            if (s.residual) proto.add_input("r");
            proto.add_output("y");
            set_attr(proto, "strides", std::vector<int64_t>{s.stride, s.stride});
            set_attr(proto, std::string(ref::kBlockedInputAttr), block);
            set_attr(proto, std::string(ref::kBlockedOutputAttr), block);
            set_attr(proto, std::string(ref::kActivationAttr), std::string("Relu"));
            const ref::NodeInfo info(proto, 17, "node", {nullptr, &w, &b, nullptr});
            // Blocked index of (channel, pixel) in an image of `count` pixels: [channel / B, pixel, channel % B].
            auto at = [block](int64_t channel, int64_t pixel, int64_t count) {
                return (channel / block * count + pixel) * block + channel % block;
            };
            std::vector<double> expected(static_cast<std::size_t>(s.m * pixels));
            for (int64_t m = 0; m < s.m; ++m)
                for (int64_t pixel = 0; pixel < pixels; ++pixel) {
                    const int64_t source = pixel / s.out_w * s.stride * in_w + pixel % s.out_w * s.stride;
                    double sum = b.data_as<float>()[m];
                    for (int64_t c = 0; c < s.c; ++c)
                        sum += double(w.data_as<float>()[m * s.c + c]) * x.data_as<float>()[at(c, source, in_pixels)];
                    if (s.residual) sum += r.data_as<float>()[at(m, pixel, pixels)];
                    expected[static_cast<std::size_t>(m * pixels + pixel)] = std::max(sum, 0.0);
                }
            for (int threads : {1, 2, 4}) {
                const auto kernel = registry.find(ref::kRuntimeDomain, "FusedConv", 17)->factory(info);
                for (int run = 0; run < 4; ++run) {
                    std::vector<const Tensor*> inputs{&x, &w, &b};
                    if (s.residual) inputs.push_back(&r);
                    ref::KernelContext context(info, inputs, 1, threads);
                    kernel->compute(context);
                    const Tensor& y = context.output(0);
                    ASSERT_EQ(y.shape(), r.shape());
                    for (int64_t m = 0; m < s.m; ++m)
                        for (int64_t pixel = 0; pixel < pixels; ++pixel)
                            ASSERT_NEAR(y.data_as<float>()[at(m, pixel, pixels)],
                                        expected[static_cast<std::size_t>(m * pixels + pixel)], 1e-4)
                                << "block " << block << " C" << s.c << " M" << s.m << " stride " << s.stride
                                << " threads " << threads << " run " << run << " channel " << m << " pixel " << pixel;
                }
            }
        }
}

// A 1x1 convolution of single-pixel images (a squeeze-excite block's) is a matrix-vector product
// per image: every element against a double definition, with or without bias, residual and each
// foldable activation, channel tails, batches, ranks 1-3, plain or channel-blocked; bit-identical at
// 1, 2 and 4 threads and run after run.
TEST(ConvOp, SinglePixelPointwiseMatchesTheDefinition) {
    const ref::OpRegistry& registry = conv_registry();
    struct Case {
        int64_t batch, c, m, rank, stride;
        bool bias, residual;
        int64_t block;           // 0: plain
        std::string activation;  // "" for none
    };
    for (const Case& s :
         {Case{1, 1152, 48, 2, 1, true, false, 8, "Silu"}, Case{1, 48, 1152, 2, 1, true, false, 16, "Relu"},
          Case{1, 20, 480, 2, 1, false, true, 0, "Clip"}, Case{3, 13, 7, 1, 1, true, true, 0, "Gelu"},
          Case{2, 64, 96, 3, 2, true, true, 0, ""}, Case{2, 64, 96, 2, 2, false, true, 16, "Silu"},
          Case{1, 1280, 1000, 2, 1, true, false, 0, "Relu"}}) {
        SCOPED_TRACE("C" + std::to_string(s.c) + " M" + std::to_string(s.m) + " " + s.activation);
        Shape x_shape = {s.batch, s.c}, w_shape = {s.m, s.c}, y_shape = {s.batch, s.m};
        for (int64_t d = 0; d < s.rank; ++d) {
            x_shape.push_back(1);
            w_shape.push_back(1);
            y_shape.push_back(1);
        }
        if (s.block != 0) {  // [N, C/B, 1, 1, B]: the same bytes as [N, C, 1, 1]
            x_shape = {s.batch, s.c / s.block, 1, 1, s.block};
            y_shape = {s.batch, s.m / s.block, 1, 1, s.block};
        }
        const Tensor x = random_tensor(x_shape, 11, -3, 3), w = random_tensor(w_shape, 12),
                     b = random_tensor({s.m}, 13);
        const Tensor r = random_tensor(y_shape, 14);
        onnx::NodeProto proto;
        proto.set_op_type("FusedConv");
        proto.set_domain(ref::kRuntimeDomain);
        proto.add_input("x");
        proto.add_input("w");
        proto.add_input(s.bias ? "b" : "");
        if (s.residual) proto.add_input("r");
        proto.add_output("y");
        set_attr(proto, "strides", std::vector<int64_t>(static_cast<std::size_t>(s.rank), s.stride));
        if (s.block != 0) {
            set_attr(proto, std::string(ref::kBlockedInputAttr), s.block);
            set_attr(proto, std::string(ref::kBlockedOutputAttr), s.block);
        }
        if (!s.activation.empty()) set_attr(proto, std::string(ref::kActivationAttr), s.activation);
        if (s.activation == "Clip")
            set_attr(proto, std::string(ref::kActivationParamsAttr), std::vector<float>{0.0f, 6.0f});
        const ref::NodeInfo info(proto, 17, "node", {nullptr, &w, s.bias ? &b : nullptr, nullptr});
        std::vector<double> expected;
        for (int64_t n = 0; n < s.batch; ++n)
            for (int64_t m = 0; m < s.m; ++m) {
                double sum = s.bias ? b.data_as<float>()[m] : 0.0;
                for (int64_t c = 0; c < s.c; ++c)
                    sum += double(w.data_as<float>()[m * s.c + c]) * x.data_as<float>()[n * s.c + c];
                if (s.residual) sum += r.data_as<float>()[n * s.m + m];
                expected.push_back(s.activation.empty() ? sum : activation(s.activation, sum));
            }
        std::vector<float> first;
        for (int threads : {1, 2, 4}) {
            const auto kernel = registry.find(ref::kRuntimeDomain, "FusedConv", 17)->factory(info);
            for (int run = 0; run < 3; ++run) {
                std::vector<const Tensor*> inputs{&x, &w, s.bias ? &b : nullptr};
                if (s.residual) inputs.push_back(&r);
                ref::KernelContext context(info, inputs, 1, threads);
                kernel->compute(context);
                const Tensor& y = context.output(0);
                ASSERT_EQ(y.shape(), y_shape);
                const std::vector<float> got(y.data_as<float>(), y.data_as<float>() + y.numel());
                if (first.empty()) {
                    first = got;
                    for (std::size_t i = 0; i < got.size(); ++i)
                        ASSERT_NEAR(got[i], expected[i], 1e-4 * (1 + std::abs(expected[i]))) << "element " << i;
                } else {
                    ASSERT_EQ(got, first) << "threads " << threads << " run " << run;
                }
            }
        }
    }
}

TEST(ConvOp, ZeroBatchGivesEmptyOutput) {
    KernelHarness h("Conv", 17);
    set_attr(h.node(), "pads", std::vector<int64_t>{1, 1, 1, 1});
    h.input(Tensor(DataType::kFloat32, {0, 3, 5, 5})).input(random_tensor({4, 3, 3, 3}, 1), true);
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.shape(), (Shape{0, 4, 5, 5}));
}

TEST(ConvOp, RejectsNegativePads) {
    KernelHarness h("Conv", 17);
    set_attr(h.node(), "pads", std::vector<int64_t>{1, -1, 1, 1});
    h.input(random_tensor({1, 1, 5, 5}, 1)).input(random_tensor({1, 1, 3, 3}, 2), true);
    expect_error([&] { h.create(); }, "Node 'node' (Conv): attribute 'pads' must have values >= 0");
}

TEST(ConvOp, RejectsKernelShapeRankMismatch) {
    KernelHarness h("Conv", 17);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{3, 3, 3});
    h.input(random_tensor({1, 1, 5, 5}, 1)).input(random_tensor({1, 1, 3, 3}, 2), true);
    expect_error([&] { h.create(); }, "attribute 'kernel_shape' [3, 3, 3] does not match the weight's spatial dims [3, 3]");
}

TEST(ConvOp, RejectsUnknownAutoPadAndBadGroup) {
    KernelHarness a("Conv", 17);
    set_attr(a.node(), "auto_pad", std::string("SAME"));
    expect_error([&] { a.create(); }, "attribute 'auto_pad' has an unknown value 'SAME'");
    KernelHarness g("Conv", 17);
    set_attr(g.node(), "group", int64_t{2});
    g.input(random_tensor({1, 3, 5, 5}, 1)).input(random_tensor({4, 1, 3, 3}, 2));
    expect_error([&] { g.run(); }, "input channels (3) are not divisible by attribute 'group' (2)");
}

TEST(ConvOp, RejectsChannelMismatchAndSmallInput) {
    KernelHarness h("Conv", 17);
    h.input(random_tensor({1, 3, 5, 5}, 1)).input(random_tensor({4, 2, 3, 3}, 2));
    expect_error([&] { h.run(); }, "weight dim 1 (2) times group (1) must equal the input channels (3)");
    KernelHarness s("Conv", 17);
    s.input(random_tensor({1, 1, 2, 5}, 1)).input(random_tensor({1, 1, 3, 3}, 2));
    expect_error([&] { s.run(); }, "is smaller than the window");
}

TEST(ConvOp, RejectsIntegerInput) {
    KernelHarness h("Conv", 17);
    h.input(Tensor(DataType::kInt32, {1, 1, 3, 3})).input(Tensor(DataType::kInt32, {1, 1, 1, 1}));
    try {
        h.run();
        ADD_FAILURE() << "expected UnsupportedError";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("input X has unsupported data type int32"), std::string::npos) << e.what();
    }
}

// ---- ConvTranspose ---------------------------------------------------------------------------------------

TEST(ConvTransposeOp, BasicMatchesOnnxExample) {
    // numpy: y = zeros((5, 5)); for i, j: y[i:i+3, j:j+3] += np.arange(9.).reshape(3, 3)[i, j]  (both channels)
    KernelHarness h("ConvTranspose", 11);
    h.input(f32({1, 1, 3, 3}, arange(9))).input(f32({1, 2, 3, 3}, std::vector<double>(18, 1.0)), true);
    const std::vector<double> plane = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
    std::vector<double> expected = plane;
    expected.insert(expected.end(), plane.begin(), plane.end());
    expect_close(h.run()[0], {1, 2, 5, 5}, expected);
}

TEST(ConvTransposeOp, PadsMatchOnnxExample) {
    // onnx backend test "test_convtranspose_pads" (strides [3, 2], pads [1, 2, 1, 2]).
    KernelHarness h("ConvTranspose", 11);
    set_attr(h.node(), "strides", std::vector<int64_t>{3, 2});
    set_attr(h.node(), "pads", std::vector<int64_t>{1, 2, 1, 2});
    h.input(f32({1, 1, 3, 3}, arange(9))).input(f32({1, 2, 3, 3}, std::vector<double>(18, 1.0)));
    const std::vector<double> plane = {1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
    std::vector<double> expected = plane;
    expected.insert(expected.end(), plane.begin(), plane.end());
    expect_close(h.run()[0], {1, 2, 7, 3}, expected);
}

struct TransposeCase {
    std::string name;
    Shape x_shape;
    Shape w_shape;
    int64_t group = 1;
    std::vector<int64_t> strides, dilations, pads, output_padding, output_shape;
    std::string auto_pad;
    bool bias = false;
    bool constant_weight = true;
};

void run_transpose_case(const TransposeCase& c, DataType dtype, double rtol) {
    SCOPED_TRACE(c.name + " " + std::string(dtype_name(dtype)));
    const std::size_t rank = c.x_shape.size() - 2;
    Window win;
    win.strides = c.strides.empty() ? std::vector<int64_t>(rank, 1) : c.strides;
    win.dilations = c.dilations.empty() ? std::vector<int64_t>(rank, 1) : c.dilations;
    win.pad_begin.assign(rank, 0);
    win.pad_end.assign(rank, 0);
    std::vector<int64_t> out(rank);
    for (std::size_t d = 0; d < rank; ++d) {
        const int64_t op = c.output_padding.empty() ? 0 : c.output_padding[d];
        const int64_t full = win.strides[d] * (c.x_shape[d + 2] - 1) + op + (c.w_shape[d + 2] - 1) * win.dilations[d] + 1;
        const bool same = c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER";
        if (!c.output_shape.empty() || same) {
            // ONNX spec: total = full - output_shape; SAME_UPPER puts the odd pad at the end.
            out[d] = !c.output_shape.empty() ? c.output_shape[d] : c.x_shape[d + 2] * win.strides[d];
            const int64_t total = full - out[d];
            const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            win.pad_begin[d] = c.auto_pad == "SAME_UPPER" ? half : total - half;
            win.pad_end[d] = total - win.pad_begin[d];
        } else {
            if (!c.pads.empty()) {
                win.pad_begin[d] = c.pads[d];
                win.pad_end[d] = c.pads[d + rank];
            }
            out[d] = full - win.pad_begin[d] - win.pad_end[d];
        }
    }
    const Tensor x32 = random_tensor(c.x_shape, 4);
    const Tensor w32 = random_tensor(c.w_shape, 5);
    const Tensor b32 = random_tensor({c.w_shape[1] * c.group}, 6);
    KernelHarness h("ConvTranspose", 17);
    if (c.group != 1) set_attr(h.node(), "group", c.group);
    if (!c.strides.empty()) set_attr(h.node(), "strides", c.strides);
    if (!c.dilations.empty()) set_attr(h.node(), "dilations", c.dilations);
    if (!c.pads.empty()) set_attr(h.node(), "pads", c.pads);
    if (!c.output_padding.empty()) set_attr(h.node(), "output_padding", c.output_padding);
    if (!c.output_shape.empty()) set_attr(h.node(), "output_shape", c.output_shape);
    if (!c.auto_pad.empty()) set_attr(h.node(), "auto_pad", c.auto_pad);
    h.input(x32.cast(dtype)).input(w32.cast(dtype), c.constant_weight);
    const Tensor bias = b32.cast(dtype);
    if (c.bias) h.input(bias);
    const Tensor y = h.run(2, 2)[0];
    const Tensor expected = naive_conv_transpose(x32.cast(dtype), w32.cast(dtype), c.bias ? &bias : nullptr, c.group, win, out);
    expect_close(y, expected, rtol, rtol);
}

std::vector<TransposeCase> transpose_cases() {
    return {
        {"plain", {1, 3, 5, 5}, {3, 4, 3, 3}, 1, {}, {}, {}, {}, {}, "", false, true},
        {"stride 2 pads bias", {2, 4, 6, 5}, {4, 3, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, {}, {}, "", true, true},
        {"output_padding", {1, 3, 5, 6}, {3, 2, 3, 3}, 1, {2, 3}, {}, {1, 0, 1, 1}, {1, 2}, {}, "", true, false},
        {"output_padding beyond pads", {1, 2, 4, 4}, {2, 2, 3, 3}, 1, {2, 2}, {}, {0, 0, 0, 0}, {1, 1}, {}, "", true, true},
        {"groups", {1, 6, 5, 5}, {6, 2, 3, 3}, 3, {2, 1}, {}, {1, 1, 0, 0}, {}, {}, "", true, true},
        {"depthwise", {1, 4, 6, 6}, {4, 1, 4, 4}, 4, {2, 2}, {}, {1, 1, 1, 1}, {}, {}, "", true, true},
        {"dilation", {1, 2, 5, 5}, {2, 3, 3, 3}, 1, {1, 2}, {2, 2}, {1, 1, 1, 1}, {}, {}, "", false, true},
        {"output_shape", {1, 2, 4, 4}, {2, 3, 3, 3}, 1, {2, 2}, {}, {}, {}, {10, 8}, "", true, true},
        {"output_shape same_upper", {1, 2, 4, 4}, {2, 3, 3, 3}, 1, {2, 2}, {}, {}, {}, {8, 9}, "SAME_UPPER", true, true},
        {"same_upper", {1, 2, 5, 4}, {2, 3, 3, 4}, 1, {2, 2}, {}, {}, {}, {}, "SAME_UPPER", true, true},
        {"same_lower", {1, 2, 5, 4}, {2, 3, 3, 4}, 1, {2, 2}, {}, {}, {}, {}, "SAME_LOWER", true, true},
        {"valid", {1, 2, 5, 4}, {2, 3, 3, 4}, 1, {2, 1}, {}, {}, {}, {}, "VALID", true, true},
        {"1d", {2, 3, 7}, {3, 2, 4}, 1, {3}, {}, {1, 2}, {1}, {}, "", true, true},
        {"3d", {1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, 1, {2, 1, 2}, {}, {0, 1, 0, 0, 1, 1}, {}, {}, "", true, true},
    };
}

TEST(ConvTransposeOp, MatchesNaiveReferenceFloat32) {
    for (const TransposeCase& c : transpose_cases()) run_transpose_case(c, DataType::kFloat32, 1e-5);
}

TEST(ConvTransposeOp, MatchesNaiveReferenceFloat64) {
    for (const TransposeCase& c : transpose_cases()) run_transpose_case(c, DataType::kFloat64, 1e-12);
}

TEST(ConvTransposeOp, RejectsNegativeOutputPaddingAndChannelMismatch) {
    KernelHarness h("ConvTranspose", 17);
    set_attr(h.node(), "output_padding", std::vector<int64_t>{0, -1});
    expect_error([&] { h.create(); }, "attribute 'output_padding' must have values >= 0");
    KernelHarness c("ConvTranspose", 17);
    c.input(random_tensor({1, 3, 4, 4}, 1)).input(random_tensor({2, 2, 3, 3}, 2));
    expect_error([&] { c.run(); }, "weight dim 0 (2) must equal the input channels (3)");
}

TEST(ConvTransposeOp, ZeroBatchGivesEmptyOutput) {
    KernelHarness h("ConvTranspose", 17);
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    h.input(Tensor(DataType::kFloat32, {0, 3, 4, 4})).input(random_tensor({3, 5, 3, 3}, 1), true);
    EXPECT_EQ(h.run()[0].shape(), (Shape{0, 5, 9, 9}));
}

TEST(DeformConvOp, ZeroOffsetsAreAPlainConvolutionAndOffsetsShiftTaps) {
    // 1x1 kernel of weight 2 over a 2x2 image; zero offsets: y = 2x. An offset of +1 column makes
    // every output read its right neighbour (0 beyond the edge); the mask halves the first point.
    KernelHarness h("DeformConv", 19);
    h.input(f32({1, 1, 2, 2}, {1, 2, 3, 4}))
        .input(f32({1, 1, 1, 1}, {2}))
        .input(f32({1, 2, 2, 2}, std::vector<double>(8, 0)));
    expect_close(h.run()[0], {1, 1, 2, 2}, {2, 4, 6, 8});
    KernelHarness shifted("DeformConv", 19);
    shifted.input(f32({1, 1, 2, 2}, {1, 2, 3, 4}))
        .input(f32({1, 1, 1, 1}, {2}))
        .input(f32({1, 2, 2, 2}, {0, 0, 0, 0, 1, 1, 1, 1}))
        .omitted_input()
        .input(f32({1, 1, 2, 2}, {0.5, 1, 1, 1}));
    expect_close(shifted.run()[0], {1, 1, 2, 2}, {2, 0, 8, 0});
}

TEST(DeformConvOp, NaNOffsetsReadZero) {
    KernelHarness h("DeformConv", 19);
    h.input(f32({1, 1, 1, 1}, {3})).input(f32({1, 1, 1, 1}, {2})).input(f32({1, 2, 1, 1}, {std::nan(""), 0}));
    expect_close(h.run()[0], {1, 1, 1, 1}, {0});
}

TEST(DeformConvOp, RejectsAnOffsetOfTheWrongShape) {
    KernelHarness h("DeformConv", 19);
    h.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).input(f32({1, 1, 1, 1}, {2})).input(f32({1, 1, 2, 2}, {0, 0, 0, 0}));
    expect_error([&] { h.run(); }, "offset must have shape (1, 2, 2, 2), but it has shape (1, 1, 2, 2)");
    KernelHarness g("DeformConv", 19);
    set_attr(g.node(), "offset_group", int64_t{0});
    expect_error([&] { g.create(); }, "attributes 'group' (1) and 'offset_group' (0) must be positive");
}

// ---- com.microsoft.FusedConv, against ONNX Runtime's CPU kernel -------------------------------------

// x (1, 8, 9, 9) -> FusedConv 3x3 (16 filters, pads 1) with a bias, `activation` and its
// parameters, and with `with_z` a Z input of the output's shape.
void expect_fused_conv_matches_onnxrt(const std::string& activation, const std::vector<float>& params, bool with_z,
                                      int64_t group = 1) {
    SCOPED_TRACE(activation + (with_z ? " with Z" : ""));
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 9, 9});
    builder.initializer("w", random_tensor({16, 8 / group, 3, 3}, 51));
    builder.initializer("b", random_tensor({16}, 52));
    std::vector<std::string> inputs = {"x", "w", "b"};
    if (with_z) {
        builder.input("z", DataType::kFloat32, Shape{1, 16, 9, 9});
        inputs.push_back("z");
    }
    onnx::NodeProto& node = builder.node("FusedConv", inputs, {"y"}, "conv", "com.microsoft");
    set_attr(node, "pads", std::vector<int64_t>{1, 1, 1, 1});
    set_attr(node, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(node, "group", group);
    set_attr(node, "activation", activation);
    if (!params.empty()) set_attr(node, "activation_params", params);
    builder.output("y", DataType::kFloat32, Shape{1, 16, 9, 9});
    TensorMap feed;
    feed.set("x", random_tensor({1, 8, 9, 9}, 53, -1.0f, 1.0f));
    if (with_z) feed.set("z", random_tensor({1, 16, 9, 9}, 54, -1.0f, 1.0f));
    expect_matches_onnxrt(builder, feed, 1e-4, 1e-5);
}

TEST(FusedConv, ConvolutionThenActivationAndSumMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    expect_fused_conv_matches_onnxrt("Relu", {}, false);
    expect_fused_conv_matches_onnxrt("Relu", {}, true);
    expect_fused_conv_matches_onnxrt("Clip", {0.0f, 6.0f}, false);
    expect_fused_conv_matches_onnxrt("LeakyRelu", {0.1f}, true);
    expect_fused_conv_matches_onnxrt("Sigmoid", {}, false, 2);
    expect_fused_conv_matches_onnxrt("HardSigmoid", {0.2f, 0.5f}, false);
    expect_fused_conv_matches_onnxrt("Tanh", {}, true);
}

}  // namespace
}  // namespace polygraphy::testing
