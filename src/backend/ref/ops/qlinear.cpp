// ONNX Runtime's quantized operators of the QOperator format (com.microsoft), uint8 or int8 with a
// per-tensor scale and zero point for each input and the output: QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat, QLinearGlobalAveragePool and
// QLinearAveragePool. Each is the float operator between a dequantization of its inputs, (q - zero
// point) * scale, and a quantization of its result, round-half-even(y / scale) + zero point saturated,
// as ONNX Runtime's CPU kernels define them. The float operators that have a standard twin (Softmax,
// AveragePool) run the same kernel `--ref` runs for it.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/broadcast.h"
#include "backend/ref/ops/families.h"
#include "backend/ref/ops/twin_kernel.h"

namespace polygraphy::ref {
namespace {

/// A per-tensor quantization: scale and zero point (0 when the input is omitted).
struct Quantization {
    float scale = 1.0f;
    int32_t zero_point = 0;
};

bool is_8bit(DataType dtype) {
    return dtype == DataType::kUInt8 || dtype == DataType::kInt8;
}

/// The scale at input `scale_index` and the zero point at `zero_index` (omitted: 0), both scalars,
/// the zero point of type `dtype`.
Quantization quantization(const NodeInfo& node, KernelContext& context, std::size_t scale_index, std::size_t zero_index,
                          DataType dtype) {
    const Tensor& scale = context.required_input(scale_index);
    if (scale.dtype() != DataType::kFloat32 || scale.numel() != 1)
        node.fail(fmt::format("input {} (a scale) must be a float32 scalar, but it is {} of shape {}", scale_index,
                              dtype_name(scale.dtype()), shape_to_string(scale.shape())));
    Quantization q{scale.data_as<float>()[0], 0};
    if (const Tensor* zero = context.input(zero_index); zero != nullptr && zero->defined()) {
        if (zero->dtype() != dtype || zero->numel() != 1)
            node.fail(fmt::format("input {} (a zero point) must be a {} scalar, but it is {} of shape {}", zero_index,
                                  dtype_name(dtype), dtype_name(zero->dtype()), shape_to_string(zero->shape())));
        q.zero_point = static_cast<int32_t>(zero->value_as_double(0));
    }
    return q;
}

/// The quantized input at `index`: uint8 or int8, of the same type as `dtype` when that is defined.
const Tensor& quantized_input(const NodeInfo& node, KernelContext& context, std::size_t index, DataType dtype) {
    const Tensor& tensor = context.required_input(index);
    if (!is_8bit(tensor.dtype()) || (dtype != DataType::kUndefined && tensor.dtype() != dtype))
        node.fail(fmt::format("input {} must be {}, but it is {}", index,
                              dtype == DataType::kUndefined ? "uint8 or int8" : dtype_name(dtype),
                              dtype_name(tensor.dtype())));
    return tensor;
}

int32_t code_at(const Tensor& q, int64_t i) {
    return q.dtype() == DataType::kUInt8 ? q.data_as<uint8_t>()[i] : q.data_as<int8_t>()[i];
}

/// round-half-even(value) + zero point, saturated to `dtype` (uint8 or int8).
int32_t quantize_value(float value, int32_t zero_point, DataType dtype) {
    const float low = dtype == DataType::kUInt8 ? 0.0f : -128.0f, high = dtype == DataType::kUInt8 ? 255.0f : 127.0f;
    const float shifted = std::nearbyint(value) + static_cast<float>(zero_point);
    if (std::isnan(shifted)) return static_cast<int32_t>(std::max(low, 0.0f));
    return static_cast<int32_t>(std::clamp(shifted, low, high));
}

void set_code(Tensor& q, int64_t i, int32_t code) {
    if (q.dtype() == DataType::kUInt8)
        q.data_as<uint8_t>()[i] = static_cast<uint8_t>(code);
    else
        q.data_as<int8_t>()[i] = static_cast<int8_t>(code);
}

Tensor dequantize(const Tensor& q, const Quantization& quant) {
    Tensor out(DataType::kFloat32, q.shape());
    float* values = out.data_as<float>();
    for (int64_t i = 0; i < q.numel(); ++i)
        values[i] = static_cast<float>(code_at(q, i) - quant.zero_point) * quant.scale;
    return out;
}

Tensor quantize(const Tensor& y, const Quantization& quant, DataType dtype) {
    Tensor out(dtype, y.shape());
    const float* values = y.data_as<float>();
    for (int64_t i = 0; i < y.numel(); ++i)
        set_code(out, i, quantize_value(values[i] / quant.scale, quant.zero_point, dtype));
    return out;
}

// ---- QLinearAdd, QLinearMul: (A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale, C_zero_point?) ----

/// The binary operators: the rescaling of each operand folded into one factor per operand (Add) or
/// one for the product (Mul), as ONNX Runtime's kernels compute them.
template <bool kMultiply>
class QLinearBinaryKernel final : public Kernel {
public:
    explicit QLinearBinaryKernel(const NodeInfo&) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a = quantized_input(node, context, 0, DataType::kUndefined);
        const Tensor& b = quantized_input(node, context, 3, a.dtype());
        const DataType dtype = a.dtype();
        const Quantization qa = quantization(node, context, 1, 2, dtype), qb = quantization(node, context, 4, 5, dtype);
        const Quantization qc = quantization(node, context, 6, 7, dtype);
        const Shape out_shape = broadcast_shapes(node, {a.shape(), b.shape()});
        Tensor c(dtype, out_shape);
        const std::vector<int64_t> sa = broadcast_strides(a.shape(), out_shape),
                                   sb = broadcast_strides(b.shape(), out_shape);
        const float ratio_a = qa.scale / qc.scale, ratio_b = qb.scale / qc.scale;
        const float ratio = qa.scale * qb.scale / qc.scale;
        std::vector<int64_t> index(out_shape.size(), 0);
        for (int64_t i = 0; i < c.numel(); ++i) {
            int64_t ia = 0, ib = 0;
            for (std::size_t d = 0; d < index.size(); ++d) {
                ia += index[d] * sa[d];
                ib += index[d] * sb[d];
            }
            const float va = static_cast<float>(code_at(a, ia) - qa.zero_point);
            const float vb = static_cast<float>(code_at(b, ib) - qb.zero_point);
            const float value = kMultiply ? va * vb * ratio : va * ratio_a + vb * ratio_b;
            set_code(c, i, quantize_value(value, qc.zero_point, dtype));
            for (std::size_t d = index.size(); d-- > 0;) {
                if (++index[d] < out_shape[d]) break;
                index[d] = 0;
            }
        }
        context.set_output(0, std::move(c));
    }
};

// ---- QLinearSigmoid, QLinearLeakyRelu: (X, X_scale, X_zero_point?, Y_scale, Y_zero_point?) ------------------

/// An element-wise function through a table of its 256 results, built per run from the quantizations.
class QLinearLookupKernel final : public Kernel {
public:
    explicit QLinearLookupKernel(const NodeInfo& node)
        : leaky_(node.op_type() == "QLinearLeakyRelu"), alpha_(node.attr_float("alpha", 0.01f)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = quantized_input(node, context, 0, DataType::kUndefined);
        const Quantization qx = quantization(node, context, 1, 2, x.dtype());
        const Quantization qy = quantization(node, context, 3, 4, x.dtype());
        const int32_t first = x.dtype() == DataType::kUInt8 ? 0 : -128;
        int32_t table[256];
        for (int32_t code = first; code < first + 256; ++code) {
            const float value = static_cast<float>(code - qx.zero_point) * qx.scale;
            const float y = leaky_ ? (value >= 0.0f ? value : alpha_ * value) : 1.0f / (1.0f + std::exp(-value));
            table[code - first] = quantize_value(y / qy.scale, qy.zero_point, x.dtype());
        }
        Tensor y(x.dtype(), x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) set_code(y, i, table[code_at(x, i) - first]);
        context.set_output(0, std::move(y));
    }

private:
    bool leaky_;
    float alpha_;
};

// ---- QLinearSoftmax (X, X_scale, x_zero_point?, y_scale, y_zero_point), QLinearAveragePool, ----------------
// ---- QLinearGlobalAveragePool (X, x_scale, x_zero_point?, y_scale, y_zero_point?) -----------------------------

/// Dequantize, the float twin, quantize. The pools' `channels_last` input is NHWC (rank 3 or more):
/// the twin runs on its NCHW transpose.
class QLinearThroughFloatKernel final : public Kernel {
public:
    QLinearThroughFloatKernel(const NodeInfo& node, const char* float_op, int64_t opset)
        : twin_(node, float_op, opset), channels_last_(node.attr_int("channels_last", 0) != 0) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = quantized_input(node, context, 0, DataType::kUndefined);
        const Quantization qx = quantization(node, context, 1, 2, x.dtype());
        const Quantization qy = quantization(node, context, 3, 4, x.dtype());
        Tensor values = dequantize(x, qx);
        if (channels_last_) values = move_channels(node, values, true);
        Tensor y = std::move(twin_.run({&values}, 1, context.num_threads())[0]);
        if (channels_last_) y = move_channels(node, y, false);
        context.set_output(0, quantize(y, qy, x.dtype()));
    }

private:
    // NHWC -> NCHW (`to_first`) or back, for float32 tensors of rank 3 or more.
    static Tensor move_channels(const NodeInfo& node, const Tensor& t, bool to_first) {
        const int64_t rank = t.rank();
        if (rank < 3)
            node.fail(fmt::format("a channels_last input must have rank 3 or more, but it has shape {}",
                                  shape_to_string(t.shape())));
        const int64_t batch = t.shape()[0];
        const int64_t channels = to_first ? t.shape()[rank - 1] : t.shape()[1];
        const int64_t spatial = t.numel() / std::max<int64_t>(batch * channels, 1);
        Shape shape = t.shape();
        if (to_first) {
            shape.erase(shape.end() - 1);
            shape.insert(shape.begin() + 1, channels);
        } else {
            shape.erase(shape.begin() + 1);
            shape.push_back(channels);
        }
        Tensor out(DataType::kFloat32, shape);
        const float* in = t.data_as<float>();
        float* o = out.data_as<float>();
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t s = 0; s < spatial; ++s) {
                    const int64_t nchw = (n * channels + c) * spatial + s, nhwc = (n * spatial + s) * channels + c;
                    if (to_first)
                        o[nchw] = in[nhwc];
                    else
                        o[nhwc] = in[nchw];
                }
        return out;
    }

    TwinKernel twin_;
    bool channels_last_;
};

// ---- QLinearConcat (Y_scale, Y_zero_point, then X_i, X_i_scale, X_i_zero_point for each input) ---------------

class QLinearConcatKernel final : public Kernel {
public:
    explicit QLinearConcatKernel(const NodeInfo& node) : axis_(node.attr_int("axis", 0)) {
        if (!node.has_attr("axis")) node.fail("it lacks the required attribute 'axis'");
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        if (context.num_inputs() < 5 || (context.num_inputs() - 2) % 3 != 0)
            node.fail(
                fmt::format("it takes Y_scale, Y_zero_point and then three inputs (X, scale, zero point) per "
                            "tensor, but it has {} inputs",
                            context.num_inputs()));
        const Tensor& first = quantized_input(node, context, 2, DataType::kUndefined);
        const DataType dtype = first.dtype();
        const Quantization qy = quantization(node, context, 0, 1, dtype);
        std::vector<Tensor> parts;
        for (std::size_t i = 2; i < context.num_inputs(); i += 3) {
            const Tensor& x = quantized_input(node, context, i, dtype);
            const Quantization qx = quantization(node, context, i + 1, i + 2, dtype);
            parts.push_back(
                qx.scale == qy.scale && qx.zero_point == qy.zero_point ? x : quantize(dequantize(x, qx), qy, dtype));
        }
        const int64_t rank = parts[0].rank();
        const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
        if (axis < 0 || axis >= rank)
            node.fail(fmt::format("attribute axis {} is out of range for inputs of rank {}", axis_, rank));
        Shape shape = parts[0].shape();
        shape[static_cast<std::size_t>(axis)] = 0;
        for (const Tensor& part : parts) {
            Shape expected = parts[0].shape();
            expected[static_cast<std::size_t>(axis)] =
                part.rank() == rank ? part.shape()[static_cast<std::size_t>(axis)] : -1;
            if (part.shape() != expected)
                node.fail(fmt::format("inputs of shapes {} and {} differ outside axis {}",
                                      shape_to_string(parts[0].shape()), shape_to_string(part.shape()), axis));
            shape[static_cast<std::size_t>(axis)] += part.shape()[static_cast<std::size_t>(axis)];
        }
        Tensor y(dtype, shape);
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
        for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[static_cast<std::size_t>(d)];
        auto* out = static_cast<uint8_t*>(y.data());
        const int64_t row = shape[static_cast<std::size_t>(axis)] * inner;
        int64_t offset = 0;
        for (const Tensor& part : parts) {
            const int64_t width = part.shape()[static_cast<std::size_t>(axis)] * inner;
            const auto* in = static_cast<const uint8_t*>(part.data());
            for (int64_t o = 0; o < outer; ++o) std::copy(in + o * width, in + (o + 1) * width, out + o * row + offset);
            offset += width;
        }
        context.set_output(0, std::move(y));
    }

private:
    int64_t axis_;
};

}  // namespace

void register_qlinear_ops(OpRegistry& registry) {
    registry.add(kMicrosoftDomain, "QLinearAdd", 1, kMaxOpset, make_factory<QLinearBinaryKernel<false>>());
    registry.add(kMicrosoftDomain, "QLinearMul", 1, kMaxOpset, make_factory<QLinearBinaryKernel<true>>());
    registry.add(kMicrosoftDomain, "QLinearSigmoid", 1, kMaxOpset, make_factory<QLinearLookupKernel>());
    registry.add(kMicrosoftDomain, "QLinearLeakyRelu", 1, kMaxOpset, make_factory<QLinearLookupKernel>());
    registry.add(kMicrosoftDomain, "QLinearConcat", 1, kMaxOpset, make_factory<QLinearConcatKernel>());
    registry.add(kMicrosoftDomain, "QLinearSoftmax", 1, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
        // The Softmax it quantizes: its `opset` attribute says which (before 13, the axis flattens).
        if (!node.has_attr("opset")) node.fail("it lacks the required attribute 'opset'");
        const int64_t opset = node.attr_int("opset", 13);
        if (opset < 1 || opset > kMaxOpset)
            node.fail(
                fmt::format("attribute opset must name a Softmax opset (1 to {}), but it is {}", kMaxOpset, opset));
        return std::make_unique<QLinearThroughFloatKernel>(node, "Softmax", opset);
    });
    registry.add(kMicrosoftDomain, "QLinearGlobalAveragePool", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<QLinearThroughFloatKernel>(node, "GlobalAveragePool", 1);
                 });
    // AveragePool at opset 19: ceil_mode, count_include_pad and dilations as ONNX Runtime reads them.
    registry.add(kMicrosoftDomain, "QLinearAveragePool", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<QLinearThroughFloatKernel>(node, "AveragePool", 19);
                 });
}

}  // namespace polygraphy::ref
