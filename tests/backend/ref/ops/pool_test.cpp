#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/fused_ops.h"
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

/// [N, C, H, W] -> the channel-blocked [N, C/B, H, W, B].
Tensor to_blocked(const Tensor& x, int64_t block) {
    const Shape& s = x.shape();
    Tensor y(DataType::kFloat32, {s[0], s[1] / block, s[2], s[3], block});
    const int64_t plane = s[2] * s[3];
    for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t nc = i / plane, pos = i % plane, n = nc / s[1], c = nc % s[1];
        y.data_as<float>()[((n * (s[1] / block) + c / block) * plane + pos) * block + c % block] =
            x.data_as<float>()[i];
    }
    return y;
}

constexpr int64_t kBlocks[] = {ref::kNarrowChannelBlock, ref::kWideChannelBlock};

// The blocked kernel (whole 3x3 windows unrolled, the rest through the general loop) against the
// plain one, with a NaN at each of the nine taps of one window in turn: strides 1 and 2, pads 0 and
// 1, ceil_mode, sizes that leave partial windows at the edges; blocks of 8 and 16 channels, and a
// 2x2 window (the general loop only).
TEST(MaxPoolOp, BlockedMatchesThePlainKernelAndKeepsEveryNaN) {
    for (int64_t block : kBlocks)
        for (int64_t window : {3, 2})
            for (int64_t stride : {1, 2})
                for (int64_t pad : {0, 1})
                    for (int64_t tap = -1; tap < window * window; ++tap) {  // -1: no NaN
                        Tensor x = random_tensor({2, 32, 9, 10}, 3, -5.0f, 5.0f);
                        // channel 9 (in the second block of 8, the first of 16), around row 2, column 2
                        if (tap >= 0)
                            x.data_as<float>()[9 * 90 + 2 * 10 + 2 + (tap / window) * 10 + tap % window] = NAN;
                        auto pool = [&](bool blocked) {
                            KernelHarness h(blocked ? "BlockedMaxPool" : "MaxPool", 12);
                            if (blocked) h.node().set_domain(ref::kRuntimeDomain);
                            set_attr(h.node(), "kernel_shape", std::vector<int64_t>{window, window});
                            set_attr(h.node(), "strides", std::vector<int64_t>{stride, stride});
                            set_attr(h.node(), "pads", std::vector<int64_t>{pad, pad, pad, pad});
                            set_attr(h.node(), "ceil_mode", int64_t{1});
                            if (blocked) set_attr(h.node(), std::string(ref::kBlockedInputAttr), block);
                            h.input(blocked ? to_blocked(x, block) : x);
                            return h.run()[0];
                        };
                        const Tensor plain = pool(false), blocked = pool(true);
                        const Tensor expected = to_blocked(plain, block);
                        ASSERT_EQ(blocked.shape(), expected.shape());
                        int64_t nans = 0;
                        for (int64_t i = 0; i < blocked.numel(); ++i) {
                            const float got = blocked.data_as<float>()[i], want = expected.data_as<float>()[i];
                            nans += std::isnan(want) ? 1 : 0;
                            ASSERT_TRUE(got == want || (std::isnan(got) && std::isnan(want)))
                                << "block " << block << " window " << window << " stride " << stride << " pad " << pad
                                << " tap " << tap << " at " << i;
                        }
                        EXPECT_EQ(nans > 0, tap >= 0);
                    }
}

// The blocked GlobalAveragePool writes each channel's mean where the blocked layout puts it, the
// same bytes as the plain [N, C, 1, 1] output, in blocks of 8 and 16, with plane sizes that leave
// a remainder after the four-way sums.
TEST(GlobalAveragePoolOp, BlockedMatchesThePlainKernel) {
    for (int64_t block : kBlocks)
        for (int64_t size : {3, 4, 7}) {
            const Tensor x = random_tensor({2, 48, size, size}, 5, -5.0f, 5.0f);
            auto pool = [&](bool blocked) {
                KernelHarness h(blocked ? "BlockedGlobalAveragePool" : "GlobalAveragePool", 1);
                if (blocked) {
                    h.node().set_domain(ref::kRuntimeDomain);
                    set_attr(h.node(), std::string(ref::kBlockedInputAttr), block);
                    set_attr(h.node(), std::string(ref::kBlockedOutputAttr), block);
                }
                h.input(blocked ? to_blocked(x, block) : x);
                return h.run()[0];
            };
            const Tensor plain = pool(false), blocked = pool(true);
            ASSERT_EQ(blocked.shape(), (Shape{2, 48 / block, 1, 1, block}));
            for (int64_t i = 0; i < plain.numel(); ++i)
                ASSERT_EQ(blocked.data_as<float>()[i], plain.data_as<float>()[i])
                    << "block " << block << " size " << size << " at " << i;
        }
}

TEST(MaxPoolOp, BasicWithIndices) {
    // numpy: x = np.arange(16.).reshape(4, 4); y = x.reshape(2, 2, 2, 2).max(axis=(1, 3))
    KernelHarness h("MaxPool", 12, 2);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    h.input(f32({1, 1, 4, 4}, arange(16)));
    const auto outputs = h.run();
    expect_close(outputs[0], {1, 1, 2, 2}, {5, 7, 13, 15});
    EXPECT_EQ(outputs[1].dtype(), DataType::kInt64);
    expect_close(outputs[1], {1, 1, 2, 2}, {5, 7, 13, 15});
}

TEST(MaxPoolOp, ColumnMajorIndices) {
    // storage_order=1: index = h + w * H (the maxima sit at (1,1), (1,3), (3,1), (3,3)).
    KernelHarness h("MaxPool", 12, 2);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "storage_order", int64_t{1});
    h.input(f32({1, 1, 4, 4}, arange(16)));
    expect_close(h.run()[1], {1, 1, 2, 2}, {5, 13, 7, 15});
}

TEST(MaxPoolOp, CeilModeDropsWindowStartingInPadding) {
    // PyTorch: nn.MaxPool2d(2, 2, padding=1, ceil_mode=True)(x) on 3x3 gives 2x2 (not 3x3).
    KernelHarness h("MaxPool", 12);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "pads", std::vector<int64_t>{1, 1, 1, 1});
    set_attr(h.node(), "ceil_mode", int64_t{1});
    h.input(f32({1, 1, 3, 3}, arange(9)));
    expect_close(h.run()[0], {1, 1, 2, 2}, {0, 2, 6, 8});
}

TEST(MaxPoolOp, Int8AndNaN) {
    KernelHarness h("MaxPool", 12);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2});
    h.input(Tensor::from_doubles(DataType::kInt8, {1, 1, 4}, {-128, -5, 7, 3}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kInt8);
    expect_close(y, {1, 1, 3}, {-5, 7, 7});
    // NaN propagates (PyTorch max_pool semantics).
    KernelHarness n("MaxPool", 12);
    set_attr(n.node(), "kernel_shape", std::vector<int64_t>{2});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    n.input(f32({1, 1, 4}, {1, nan, 3, 2}));
    expect_close(n.run()[0], {1, 1, 3}, {nan, nan, 3});
}

TEST(AveragePoolOp, CountIncludePad) {
    // numpy: xp = np.pad(np.arange(16.).reshape(4, 4), 1); include: xp[i:i+3, j:j+3].sum() / 9;
    // exclude: divided by np.pad(np.ones((4, 4)), 1)[i:i+3, j:j+3].sum()
    for (int include = 0; include <= 1; ++include) {
        KernelHarness h("AveragePool", 11);
        set_attr(h.node(), "kernel_shape", std::vector<int64_t>{3, 3});
        set_attr(h.node(), "pads", std::vector<int64_t>{1, 1, 1, 1});
        set_attr(h.node(), "count_include_pad", int64_t{include});
        h.input(f32({1, 1, 4, 4}, arange(16)));
        if (include == 0) {
            expect_close(h.run()[0], {1, 1, 4, 4},
                         {2.5, 3.0, 4.0, 4.5, 4.5, 5.0, 6.0, 6.5, 8.5, 9.0, 10.0, 10.5, 10.5, 11.0, 12.0, 12.5});
        } else {
            expect_close(h.run()[0], {1, 1, 4, 4},
                         {1.111111, 2.0, 2.666667, 2.0, 3.0, 5.0, 6.0, 4.333333, 5.666667, 9.0, 10.0, 7.0, 4.666667,
                          7.333333, 8.0, 5.555556});
        }
    }
}

TEST(AveragePoolOp, CeilModeDividesByWindowInsideInput) {
    // PyTorch: nn.AvgPool2d(2, 2, ceil_mode=True, count_include_pad=True)(arange(25.).view(1, 1, 5, 5))
    KernelHarness h("AveragePool", 11);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "ceil_mode", int64_t{1});
    set_attr(h.node(), "count_include_pad", int64_t{1});
    h.input(f32({1, 1, 5, 5}, arange(25)));
    expect_close(h.run()[0], {1, 1, 3, 3}, {3.0, 5.0, 6.5, 13.0, 15.0, 16.5, 20.5, 22.5, 24.0});
}

TEST(LpPoolOp, P2AndP1) {
    // numpy: sqrt((x[i:i+2, j:j+2] ** 2).sum()) and np.abs(x[i:i+2, j:j+2] - 7).sum(), x = arange(16.).reshape(4, 4)
    KernelHarness h("LpPool", 18);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    h.input(f32({1, 1, 4, 4}, arange(16)));
    expect_close(h.run()[0], {1, 1, 2, 2}, {6.48074069840786, 9.899494936611665, 21.400934559032695, 25.337718918639855});
    KernelHarness p1("LpPool", 18);
    set_attr(p1.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(p1.node(), "strides", std::vector<int64_t>{2, 2});
    set_attr(p1.node(), "p", int64_t{1});
    p1.input(f32({1, 1, 4, 4}, arange(16, -7)));
    expect_close(p1.run()[0], {1, 1, 2, 2}, {18, 10, 14, 22});
}

TEST(GlobalPoolOps, AverageAndMax) {
    // numpy: g = np.arange(24.).reshape(2, 3, 2, 2) * 0.5 - 3; g.mean(axis=(2, 3)), g.max(axis=(2, 3))
    const Tensor x = f32({2, 3, 2, 2}, arange(24, -3, 0.5));
    KernelHarness avg("GlobalAveragePool", 1);
    avg.input(x);
    expect_close(avg.run()[0], {2, 3, 1, 1}, {-2.25, -0.25, 1.75, 3.75, 5.75, 7.75});
    KernelHarness max("GlobalMaxPool", 1);
    max.input(x);
    expect_close(max.run()[0], {2, 3, 1, 1}, {-1.5, 0.5, 2.5, 4.5, 6.5, 8.5});
    KernelHarness half("GlobalAveragePool", 1);
    half.input(x.cast(DataType::kFloat16));
    const Tensor y = half.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kFloat16);
    expect_close(y, {2, 3, 1, 1}, {-2.25, -0.25, 1.75, 3.75, 5.75, 7.75});
}

// ---- random data against a direct definition ----------------------------------------------------------

struct PoolCase {
    std::string name;
    Shape x_shape;
    std::vector<int64_t> kernel, strides, dilations, pads;
    std::string auto_pad;
    bool ceil_mode = false;
};

/// Window geometry per the ONNX spec (written out independently of the kernel's helper).
struct RefGeometry {
    std::vector<int64_t> in, out, kernel, strides, dilations, pad_begin, pad_end;
};

RefGeometry ref_geometry(const PoolCase& c) {
    const std::size_t rank = c.kernel.size();
    RefGeometry g;
    for (std::size_t d = 2; d < c.x_shape.size(); ++d) g.in.push_back(c.x_shape[d]);
    g.kernel = c.kernel;
    g.strides = c.strides.empty() ? std::vector<int64_t>(rank, 1) : c.strides;
    g.dilations = c.dilations.empty() ? std::vector<int64_t>(rank, 1) : c.dilations;
    for (std::size_t d = 0; d < rank; ++d) {
        const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
        int64_t pb = 0, pe = 0, out;
        if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
            out = (g.in[d] + g.strides[d] - 1) / g.strides[d];
            const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[d] + extent - g.in[d]);
            pb = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
            pe = total - pb;
        } else {
            if (!c.pads.empty() && c.auto_pad.empty()) {
                pb = c.pads[d];
                pe = c.pads[d + rank];
            }
            const double span = static_cast<double>(g.in[d] + pb + pe - extent) / static_cast<double>(g.strides[d]);
            out = static_cast<int64_t>(c.ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
            if (c.ceil_mode && (out - 1) * g.strides[d] >= g.in[d] + pb) --out;
        }
        g.out.push_back(out);
        g.pad_begin.push_back(pb);
        g.pad_end.push_back(pe);
    }
    return g;
}

enum class RefKind { kMax, kAvgExclude, kAvgInclude };

/// Max (value and row-major flat index) or average over each window, straight from the definition.
void ref_pool(const Tensor& x, const RefGeometry& g, RefKind kind, std::vector<double>& values, std::vector<double>& indices) {
    const int64_t planes = x.shape()[0] * x.shape()[1];
    const int64_t in_size = shape_volume(g.in), out_size = shape_volume(g.out), taps = shape_volume(g.kernel);
    for (int64_t p = 0; p < planes; ++p) {
        for (int64_t o = 0; o < out_size; ++o) {
            const auto oi = unravel(o, g.out);
            double best = -std::numeric_limits<double>::infinity(), sum = 0;
            int64_t best_index = -1, valid = 0, padded = 0;
            for (int64_t t = 0; t < taps; ++t) {
                const auto ti = unravel(t, g.kernel);
                bool inside = true, in_padded = true;
                int64_t offset = 0;
                for (std::size_t d = 0; d < g.in.size(); ++d) {
                    const int64_t pos = oi[d] * g.strides[d] - g.pad_begin[d] + ti[d] * g.dilations[d];
                    inside = inside && pos >= 0 && pos < g.in[d];
                    in_padded = in_padded && pos >= -g.pad_begin[d] && pos < g.in[d] + g.pad_end[d];
                    offset = offset * g.in[d] + pos;
                }
                if (in_padded) ++padded;
                if (!inside) continue;
                ++valid;
                const double v = x.value_as_double(p * in_size + offset);
                sum += v;
                // A NaN wins and stays (PyTorch's max_pool).
                if (v > best || (std::isnan(v) && !std::isnan(best))) {
                    best = v;
                    best_index = p * in_size + offset;
                }
            }
            if (kind == RefKind::kMax) {
                values.push_back(best);
                indices.push_back(static_cast<double>(best_index));
            } else {
                values.push_back(sum / static_cast<double>(kind == RefKind::kAvgInclude ? padded : valid));
            }
        }
    }
}

std::vector<PoolCase> pool_cases() {
    return {
        {"resnet stem", {1, 4, 12, 12}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, "", false},
        {"asym pads ceil", {2, 3, 9, 8}, {3, 2}, {2, 3}, {}, {1, 0, 2, 1}, "", true},
        {"dilation", {1, 2, 11, 10}, {3, 2}, {1, 2}, {2, 3}, {2, 1, 2, 1}, "", false},
        {"dilation ceil", {1, 2, 10, 9}, {2, 3}, {3, 2}, {2, 2}, {1, 1, 0, 1}, "", true},
        {"same upper", {1, 3, 7, 8}, {4, 3}, {2, 3}, {}, {}, "SAME_UPPER", false},
        {"same lower", {1, 3, 7, 8}, {4, 3}, {2, 3}, {}, {}, "SAME_LOWER", false},
        {"valid", {1, 3, 7, 8}, {3, 3}, {2, 2}, {}, {}, "VALID", false},
        {"1d", {2, 3, 17}, {4}, {3}, {}, {2, 1}, "", true},
        {"3d", {1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {}, {1, 1, 0, 0, 1, 1}, "", false},
        // squeezenet1_1's pools (3x3, stride 2, ceil_mode) on odd and even widths; even kernels with stride 2.
        {"squeezenet odd", {1, 3, 13, 13}, {3, 3}, {2, 2}, {}, {}, "", true},
        {"squeezenet even", {1, 2, 12, 14}, {3, 3}, {2, 2}, {}, {}, "", true},
        {"2x2 stride 2", {1, 2, 9, 11}, {2, 2}, {2, 2}, {}, {}, "", false},
        {"4x4 stride 2 pads", {1, 2, 10, 9}, {4, 4}, {2, 2}, {}, {1, 2, 2, 1}, "", true},
        {"3x3 stride 1", {1, 2, 7, 9}, {3, 3}, {1, 1}, {}, {1, 1, 1, 1}, "", false},
    };
}

void set_pool_attrs(KernelHarness& h, const PoolCase& c, bool dilations) {
    set_attr(h.node(), "kernel_shape", c.kernel);
    if (!c.strides.empty()) set_attr(h.node(), "strides", c.strides);
    if (dilations && !c.dilations.empty()) set_attr(h.node(), "dilations", c.dilations);
    if (!c.pads.empty()) set_attr(h.node(), "pads", c.pads);
    if (!c.auto_pad.empty()) set_attr(h.node(), "auto_pad", c.auto_pad);
    if (c.ceil_mode) set_attr(h.node(), "ceil_mode", int64_t{1});
}

/// Random data, and the same with NaNs in the first plane (its first, middle and last elements and
/// an odd position of a middle row), so that both MaxPool paths (planes with and without a NaN) run.
std::vector<Tensor> max_pool_inputs(const PoolCase& c) {
    const Tensor x = random_tensor(c.x_shape, 7);
    Tensor with_nan = x.cast(DataType::kFloat32);
    const Shape spatial(c.x_shape.begin() + 2, c.x_shape.end());
    const int64_t plane = shape_volume(spatial), width = spatial.back();
    float* data = with_nan.data_as<float>();
    for (int64_t i : {int64_t{0}, plane / 2, plane - 1, (plane / width / 2) * width + 1})
        data[i] = std::numeric_limits<float>::quiet_NaN();
    return {x, with_nan};
}

TEST(MaxPoolOp, MatchesDefinitionOnRandomData) {
    for (const PoolCase& c : pool_cases()) {
        for (const Tensor& x : max_pool_inputs(c)) {
            for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
                // With the Indices output, and without (the separable path).
                for (int outputs : {2, 1}) {
                    SCOPED_TRACE(c.name + " " + std::string(dtype_name(dtype)) + " outputs " + std::to_string(outputs));
                    KernelHarness h("MaxPool", 12, outputs);
                    set_pool_attrs(h, c, true);
                    h.input(x.cast(dtype));
                    const auto y = h.run();
                    std::vector<double> values, indices;
                    const RefGeometry g = ref_geometry(c);
                    ref_pool(x, g, RefKind::kMax, values, indices);
                    Shape out_shape = {c.x_shape[0], c.x_shape[1]};
                    out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
                    expect_close(y[0], out_shape, values, 0, 0);
                    if (outputs == 2) expect_close(y[1], out_shape, indices, 0, 0);
                }
            }
        }
    }
}

TEST(AveragePoolOp, MatchesDefinitionOnRandomData) {
    for (const PoolCase& c : pool_cases()) {
        for (int include = 0; include <= 1; ++include) {
            SCOPED_TRACE(c.name + (include ? " count_include_pad" : ""));
            const Tensor x = random_tensor(c.x_shape, 8);
            KernelHarness h("AveragePool", 19);
            set_pool_attrs(h, c, true);
            set_attr(h.node(), "count_include_pad", int64_t{include});
            h.input(x);
            std::vector<double> values, unused;
            const RefGeometry g = ref_geometry(c);
            ref_pool(x, g, include ? RefKind::kAvgInclude : RefKind::kAvgExclude, values, unused);
            Shape out_shape = {c.x_shape[0], c.x_shape[1]};
            out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
            expect_close(h.run()[0], out_shape, values, 1e-5, 1e-6);
        }
    }
}

TEST(PoolOps, ZeroBatchGivesEmptyOutput) {
    KernelHarness h("MaxPool", 12);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    h.input(Tensor(DataType::kFloat32, {0, 3, 9, 9}));
    EXPECT_EQ(h.run()[0].shape(), (Shape{0, 3, 4, 4}));
}

TEST(PoolOps, RejectsBadAttributes) {
    KernelHarness pads("MaxPool", 12);
    set_attr(pads.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(pads.node(), "pads", std::vector<int64_t>{2, 0, 0, 0});
    expect_error([&] { pads.create(); }, "Node 'node' (MaxPool): attribute 'pads' must be smaller than the kernel");

    KernelHarness missing("AveragePool", 11);
    expect_error([&] { missing.create(); }, "attribute 'kernel_shape' is required");

    KernelHarness order("MaxPool", 12);
    set_attr(order.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(order.node(), "storage_order", int64_t{2});
    expect_error([&] { order.create(); }, "attribute 'storage_order' must be 0 or 1");

    KernelHarness rank("MaxPool", 12);
    set_attr(rank.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(rank.node(), "strides", std::vector<int64_t>{1, 1, 1});
    expect_error([&] { rank.create(); }, "attribute 'strides' has 3 values but the window has 2 spatial dims");

    KernelHarness dilations("AveragePool", 11);
    set_attr(dilations.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(dilations.node(), "dilations", std::vector<int64_t>{2, 2});
    expect_error([&] { dilations.create(); }, "attribute 'dilations' is not supported before this opset");

    KernelHarness input_rank("MaxPool", 12);
    set_attr(input_rank.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    input_rank.input(random_tensor({1, 1, 4, 4, 4}, 1));
    expect_error([&] { input_rank.run(); }, "attributes describe 2 spatial dims but the input has 3");
}

TEST(MaxUnpoolOp, ScattersToTheFlatIndices) {
    KernelHarness h("MaxUnpool", 11);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    h.input(f32({1, 1, 1, 2}, {5, 6})).input(i64({1, 1, 1, 2}, {1, 6}));
    expect_close(h.run()[0], {1, 1, 2, 4}, {0, 5, 0, 0, 0, 0, 6, 0});
    KernelHarness shaped("MaxUnpool", 11);
    set_attr(shaped.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(shaped.node(), "strides", std::vector<int64_t>{2, 2});
    // Index 6 is (row 1, column 2) of the unpooled 2x4 output and keeps those coordinates in 2x5.
    shaped.input(f32({1, 1, 1, 2}, {5, 6})).input(i64({1, 1, 1, 2}, {1, 6})).input(i64({4}, {1, 1, 2, 5}));
    expect_close(shaped.run()[0], {1, 1, 2, 5}, {0, 5, 0, 0, 0, 0, 0, 6, 0, 0});
}

TEST(MaxUnpoolOp, RejectsIndicesOutOfRangeAndMissingKernel) {
    KernelHarness h("MaxUnpool", 11);
    set_attr(h.node(), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(h.node(), "strides", std::vector<int64_t>{2, 2});
    h.input(f32({1, 1, 1, 2}, {5, 6})).input(i64({1, 1, 1, 2}, {1, 8}));
    expect_error([&] { h.run(); }, "index 8 in I is out of range for an output of 8 elements");
    KernelHarness kernel("MaxUnpool", 11);
    expect_error([&] { kernel.create(); }, "attribute 'kernel_shape' is required");
}

}  // namespace
}  // namespace polygraphy::testing
