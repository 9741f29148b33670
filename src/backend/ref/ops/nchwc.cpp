// ONNX Runtime's channel-blocked operators (domain com.microsoft.nchwc), which its optimizer writes at
// level `all` on x86 CPUs: ReorderInput, ReorderOutput, Conv, MaxPool, AveragePool, GlobalMaxPool,
// GlobalAveragePool and Upsample. A blocked tensor of logical shape (N, C, H, W) has the shape
// (N, Cp, H, W), Cp being C rounded up to the block size B, and is stored as [N][Cp/B][H][W][B]. The
// standard operators ONNX Runtime leaves on blocked tensors (Add, Concat on channels, Relu, the
// Reshape pairs) read that buffer as it is, so only these operators need the layout: each converts to
// plain NCHW, runs the kernel `--ref` runs for the standard operator, and converts back. B is the
// block ONNX Runtime uses on this CPU (16 with AVX-512, else 8): the saved graph's reordered weights
// are laid out for the CPU that wrote it.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/ops/families.h"
#include "backend/ref/ops/twin_kernel.h"

namespace polygraphy::ref {
namespace {

constexpr const char* kNchwcDomain = "com.microsoft.nchwc";

int64_t block_size() {
    static const int64_t block = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") ? int64_t{16} : int64_t{8};
    }();
    return block;
}

int64_t round_up(int64_t value, int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

const Tensor& float_4d(const NodeInfo& node, const Tensor& tensor, const char* name) {
    if (tensor.dtype() != DataType::kFloat32 || tensor.rank() != 4)
        node.fail(fmt::format("input {} must be a 4-D float32 tensor, but it is {} of shape {}", name,
                              dtype_name(tensor.dtype()), shape_to_string(tensor.shape())));
    return tensor;
}

/// A blocked tensor (N, Cp, H, W) as plain NCHW of the same shape (padding channels kept).
Tensor unblock(const NodeInfo& node, const Tensor& blocked) {
    float_4d(node, blocked, "X");
    const int64_t b = block_size(), n = blocked.shape()[0], c = blocked.shape()[1];
    const int64_t spatial = blocked.shape()[2] * blocked.shape()[3];
    if (c % b != 0)
        node.fail(fmt::format("a channel-blocked input must have a multiple of {} channels, but it has shape {}", b,
                              shape_to_string(blocked.shape())));
    Tensor plain = Tensor::uninitialized(DataType::kFloat32, blocked.shape());
    const float* in = blocked.data_as<float>();
    float* out = plain.data_as<float>();
    for (int64_t i = 0; i < n; ++i)
        for (int64_t cb = 0; cb < c / b; ++cb)
            for (int64_t s = 0; s < spatial; ++s)
                for (int64_t ci = 0; ci < b; ++ci)
                    out[((i * c) + cb * b + ci) * spatial + s] = in[((i * (c / b) + cb) * spatial + s) * b + ci];
    return plain;
}

/// Plain NCHW (any C) as a blocked tensor (N, Cp, H, W), the padding channels zero.
Tensor block(const Tensor& plain) {
    const int64_t b = block_size(), n = plain.shape()[0], c = plain.shape()[1];
    const int64_t padded = round_up(c, b), spatial = plain.shape()[2] * plain.shape()[3];
    Tensor blocked(DataType::kFloat32, {n, padded, plain.shape()[2], plain.shape()[3]});
    const float* in = plain.data_as<float>();
    float* out = blocked.data_as<float>();
    for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t s = 0; s < spatial; ++s)
                out[((i * (padded / b) + ch / b) * spatial + s) * b + ch % b] = in[(i * c + ch) * spatial + s];
    return blocked;
}

/// NHWC <-> NCHW of a 4-D float tensor.
Tensor transpose_channels(const Tensor& t, bool to_nchw) {
    const Shape& s = t.shape();
    const int64_t n = s[0], h = to_nchw ? s[1] : s[2], w = to_nchw ? s[2] : s[3], c = to_nchw ? s[3] : s[1];
    Tensor out = Tensor::uninitialized(DataType::kFloat32, to_nchw ? Shape{n, c, h, w} : Shape{n, h, w, c});
    const float* in = t.data_as<float>();
    float* o = out.data_as<float>();
    for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t p = 0; p < h * w; ++p) {
                const int64_t nchw = (i * c + ch) * h * w + p, nhwc = (i * h * w + p) * c + ch;
                if (to_nchw)
                    o[nchw] = in[nhwc];
                else
                    o[nhwc] = in[nchw];
            }
    return out;
}

// ---- ReorderInput, ReorderOutput ----------------------------------------------------------------------------

class ReorderInputKernel final : public Kernel {
public:
    explicit ReorderInputKernel(const NodeInfo& node) : channels_last_(node.attr_int("channels_last", 0) != 0) {}

    void compute(KernelContext& context) const override {
        const Tensor& x = float_4d(context.node(), context.required_input(0), "X");
        context.set_output(0, block(channels_last_ ? transpose_channels(x, true) : x));
    }

private:
    bool channels_last_;
};

class ReorderOutputKernel final : public Kernel {
public:
    explicit ReorderOutputKernel(const NodeInfo& node)
        : channels_(node.attr_int("channels", 0)), channels_last_(node.attr_int("channels_last", 0) != 0) {
        if (channels_ <= 0) node.fail(fmt::format("attribute channels must be positive, but it is {}", channels_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor plain = unblock(node, context.required_input(0));
        const int64_t padded = plain.shape()[1];
        if (channels_ > padded || channels_ <= padded - block_size())
            node.fail(fmt::format("attribute channels ({}) does not fit the {} blocked channels of its input",
                                  channels_, padded));
        Tensor y = Tensor::uninitialized(DataType::kFloat32,
                                         {plain.shape()[0], channels_, plain.shape()[2], plain.shape()[3]});
        const int64_t plane = channels_ * plain.shape()[2] * plain.shape()[3];
        for (int64_t i = 0; i < plain.shape()[0]; ++i)
            std::copy(plain.data_as<float>() + i * padded * plain.shape()[2] * plain.shape()[3],
                      plain.data_as<float>() + i * padded * plain.shape()[2] * plain.shape()[3] + plane,
                      y.data_as<float>() + i * plane);
        context.set_output(0, channels_last_ ? transpose_channels(y, false) : std::move(y));
    }

private:
    int64_t channels_;
    bool channels_last_;
};

// ---- Conv ----------------------------------------------------------------------------------------------------

/// The filter formats ONNX Runtime stores for blocked convolutions (MLAS's reorders): OIHWBiBo for
/// blocked inputs (blocks of B output by B input channels), OIHWBo for a plain NCHW input with fewer
/// channels than a block and for depthwise filters (blocks of B output channels).
enum class FilterFormat { kOIHWBiBo, kOIHWBo };

/// The OIHW filter of a stored (reordered) one of shape (O, I, KH, KW).
Tensor plain_filter(const Tensor& stored, FilterFormat format) {
    const int64_t b = block_size(), o = stored.shape()[0], in = stored.shape()[1];
    const int64_t taps = stored.shape()[2] * stored.shape()[3];
    Tensor plain = Tensor::uninitialized(DataType::kFloat32, stored.shape());
    const float* from = stored.data_as<float>();
    float* to = plain.data_as<float>();
    for (int64_t oc = 0; oc < o; ++oc)
        for (int64_t ic = 0; ic < in; ++ic)
            for (int64_t t = 0; t < taps; ++t) {
                const int64_t at = format == FilterFormat::kOIHWBiBo
                                       ? (((oc / b) * (in / b) + ic / b) * taps + t) * b * b + (ic % b) * b + oc % b
                                       : (((oc / b) * in + ic) * taps + t) * b + oc % b;
                to[(oc * in + ic) * taps + t] = from[at];
            }
    return plain;
}

/// activation(conv(X, W) + B + Sum) on blocked tensors, the convolution being FusedConv's (same
/// attributes) on the plain forms. X is plain NCHW when the filter has fewer input channels than a
/// block (the network's first convolution).
class NchwcConvKernel final : public Kernel {
public:
    explicit NchwcConvKernel(const NodeInfo& node) : group_(node.attr_int("group", 1)) {
        const Tensor* stored = node.constant_input(1);
        if (stored == nullptr)
            node.fail("its filter W must be a constant (ONNX Runtime stores it reordered in the graph)");
        if (stored->dtype() != DataType::kFloat32 || stored->rank() != 4)
            node.fail(fmt::format("filter W must be a 4-D float32 tensor, but it is {} of shape {}",
                                  dtype_name(stored->dtype()), shape_to_string(stored->shape())));
        const int64_t b = block_size(), o = stored->shape()[0], in = stored->shape()[1];
        plain_input_ = group_ == 1 && in < b;
        const bool depthwise = in == 1 && group_ == o;
        const FilterFormat format = plain_input_ || depthwise ? FilterFormat::kOIHWBo : FilterFormat::kOIHWBiBo;
        if (o % b != 0 || (format == FilterFormat::kOIHWBiBo && in % b != 0))
            node.fail(
                fmt::format("filter W of shape {} is not laid out in blocks of {} channels (a graph saved by "
                            "ONNX Runtime on a CPU with another block size?)",
                            shape_to_string(stored->shape()), b));
        filter_ = plain_filter(*stored, format);
        const Tensor* bias = node.constant_input(2);
        conv_ = std::make_unique<TwinKernel>(node, "FusedConv", 1, "com.microsoft",
                                             std::vector<const Tensor*>{nullptr, &filter_, bias});
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = float_4d(node, context.required_input(0), "X");
        const Tensor input = plain_input_ ? x : unblock(node, x);
        Tensor sum;
        if (const Tensor* given = context.input(3); given != nullptr && given->defined()) sum = unblock(node, *given);
        const Tensor* bias = context.input(2);
        std::vector<Tensor> y = conv_->run(
            {&input, &filter_, bias != nullptr && bias->defined() ? bias : nullptr, sum.defined() ? &sum : nullptr}, 1,
            context.num_threads());
        context.set_output(0, block(y[0]));
    }

private:
    int64_t group_;
    bool plain_input_ = false;
    Tensor filter_;
    std::unique_ptr<TwinKernel> conv_;
};

// ---- pools ---------------------------------------------------------------------------------------------------

/// A pool on blocked tensors: the standard operator's kernel (at opset 19, ONNX Runtime's attribute
/// meanings) on the plain form.
class NchwcPoolKernel final : public Kernel {
public:
    NchwcPoolKernel(const NodeInfo& node, const char* op_type) : pool_(node, op_type, 19) {}

    void compute(KernelContext& context) const override {
        const Tensor plain = unblock(context.node(), context.required_input(0));
        std::vector<Tensor> y = pool_.run({&plain}, 1, context.num_threads());
        context.set_output(0, block(y[0]));
    }

private:
    TwinKernel pool_;
};

// ---- Upsample --------------------------------------------------------------------------------------------------

/// Upsampling by integer scales (attribute `scales` [1, 1, sh, sw]): nearest (source y / sh, x / sw) or
/// bilinear, the source coordinate by `coordinate_transformation_mode` (asymmetric, align_corners or
/// half_pixel), as ONNX Runtime's blocked kernel computes them.
class NchwcUpsampleKernel final : public Kernel {
public:
    explicit NchwcUpsampleKernel(const NodeInfo& node)
        : scales_(node.attr_ints("scales")),
          linear_(node.attr_string("mode", "nearest") == "linear"),
          transform_(node.attr_string("coordinate_transformation_mode", "asymmetric")) {
        if (node.attr_string("mode", "nearest") != "nearest" && !linear_)
            node.fail("attribute mode must be 'nearest' or 'linear', but it is '" + node.attr_string("mode", "") + "'");
        if (scales_.size() != 4 || scales_[0] != 1 || scales_[1] != 1 || scales_[2] < 1 || scales_[3] < 1)
            node.fail("attribute scales must be [1, 1, sh, sw] with whole positive sh and sw");
        if (transform_ != "asymmetric" && transform_ != "align_corners" && transform_ != "half_pixel")
            node.fail(
                "attribute coordinate_transformation_mode must be asymmetric, align_corners or half_pixel, but "
                "it is '" +
                transform_ + "'");
    }

    void compute(KernelContext& context) const override {
        const Tensor plain = unblock(context.node(), context.required_input(0));
        const int64_t n = plain.shape()[0], c = plain.shape()[1], h = plain.shape()[2], w = plain.shape()[3];
        const int64_t oh = h * scales_[2], ow = w * scales_[3];
        Tensor y = Tensor::uninitialized(DataType::kFloat32, {n, c, oh, ow});
        const std::vector<Source> rows = sources(h, oh, scales_[2]), cols = sources(w, ow, scales_[3]);
        for (int64_t plane = 0; plane < n * c; ++plane) {
            const float* in = plain.data_as<float>() + plane * h * w;
            float* out = y.data_as<float>() + plane * oh * ow;
            for (int64_t oy = 0; oy < oh; ++oy)
                for (int64_t ox = 0; ox < ow; ++ox) {
                    if (!linear_) {
                        out[oy * ow + ox] = in[(oy / scales_[2]) * w + ox / scales_[3]];
                        continue;
                    }
                    const Source& r = rows[static_cast<std::size_t>(oy)];
                    const Source& q = cols[static_cast<std::size_t>(ox)];
                    const float top =
                        in[r.low * w + q.low] + (in[r.low * w + q.high] - in[r.low * w + q.low]) * q.weight;
                    const float bottom =
                        in[r.high * w + q.low] + (in[r.high * w + q.high] - in[r.high * w + q.low]) * q.weight;
                    out[oy * ow + ox] = top + (bottom - top) * r.weight;
                }
        }
        context.set_output(0, block(y));
    }

private:
    struct Source {
        int64_t low, high;
        float weight;  // of `high`
    };

    std::vector<Source> sources(int64_t in, int64_t out, int64_t scale) const {
        std::vector<Source> result;
        for (int64_t o = 0; o < out; ++o) {
            float x = static_cast<float>(o);
            if (scale == 1)
                x = static_cast<float>(o);
            else if (transform_ == "align_corners")
                x = out > 1 ? static_cast<float>(o) * static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
            else if (transform_ == "half_pixel")
                x = std::max(0.0f, (static_cast<float>(o) + 0.5f) / static_cast<float>(scale) - 0.5f);
            else
                x = static_cast<float>(o) / static_cast<float>(scale);
            const int64_t low = std::min(static_cast<int64_t>(x), in - 1);
            result.push_back({low, std::min(low + 1, in - 1), x - static_cast<float>(low)});
        }
        return result;
    }

    std::vector<int64_t> scales_;
    bool linear_;
    std::string transform_;
};

template <typename K>
KernelFactory pool_of(const char* op_type) {
    return [op_type](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<K>(node, op_type); };
}

}  // namespace

void register_nchwc_ops(OpRegistry& registry) {
    registry.add(kNchwcDomain, "ReorderInput", 1, kMaxOpset, make_factory<ReorderInputKernel>());
    registry.add(kNchwcDomain, "ReorderOutput", 1, kMaxOpset, make_factory<ReorderOutputKernel>());
    registry.add(kNchwcDomain, "Conv", 1, kMaxOpset, make_factory<NchwcConvKernel>());
    for (const char* op : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"})
        registry.add(kNchwcDomain, op, 1, kMaxOpset, pool_of<NchwcPoolKernel>(op));
    registry.add(kNchwcDomain, "Upsample", 1, kMaxOpset, make_factory<NchwcUpsampleKernel>());
}

}  // namespace polygraphy::ref
