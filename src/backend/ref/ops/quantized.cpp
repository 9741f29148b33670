// Quantization and quantized linear algebra: QuantizeLinear and DequantizeLinear (per-tensor, per-axis from opset 13,
// blocked from opset 21; int4/int8/int16/int32 and float8), QLinearMatMul, QLinearConv, ConvInteger and
// DynamicQuantizeLinear; ONNX Runtime's com.microsoft QuantizeLinear and DequantizeLinear (the standard ones at opset
// 21). Products accumulate exactly in int64 (values fit int32 for real models); requantization
// multiplies by a_scale * b_scale / y_scale computed in the scales' own type (as the ONNX reference does), rounds half
// to even and saturates to the output type, as the spec says (the 1.17 test data of int8 QLinearMatMul wraps instead:
// see the conformance expected failures).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/compute/small_types.h"
#include "backend/ref/compute/window_util.h"
#include "backend/ref/ops/elementwise.h"
#include "backend/ref/ops/families.h"
#include "backend/ref/ops/twin_kernel.h"

namespace polygraphy::ref {
namespace {

bool is_quant_type(DataType dtype) {
    return dtype == DataType::kInt8 || dtype == DataType::kUInt8;
}

void require_quant_type(const NodeInfo& node, const Tensor& tensor, std::string_view name) {
    if (!is_quant_type(tensor.dtype()))
        node.fail(fmt::format("input {} must be int8 or uint8, but it is {}", name, dtype_name(tensor.dtype())));
}

// Zero point per index of an axis (or one for all): values as int64.
std::vector<int64_t> zero_points(const NodeInfo& node, const Tensor* zero_point, const Tensor& operand,
                                 int64_t per_axis_count, std::string_view name) {
    if (!zero_point || !zero_point->defined()) return {0};
    if (zero_point->dtype() != operand.dtype())
        node.fail(fmt::format("input {} must have the data type of its operand ({}), but it is {}", name,
                              dtype_name(operand.dtype()), dtype_name(zero_point->dtype())));
    if (zero_point->numel() != 1 && (zero_point->rank() != 1 || zero_point->numel() != per_axis_count))
        node.fail(fmt::format("input {} must be a scalar or hold {} values, but it has shape {}", name, per_axis_count,
                              shape_to_string(zero_point->shape())));
    std::vector<int64_t> values;
    for (int64_t i = 0; i < zero_point->numel(); ++i)
        values.push_back(static_cast<int64_t>(zero_point->value_as_double(i)));
    return values;
}

std::vector<double> scales(const NodeInfo& node, const Tensor& scale, int64_t per_axis_count, std::string_view name) {
    if (!dtype_is_floating(scale.dtype()))
        node.fail(fmt::format("input {} must be floating point, but it is {}", name, dtype_name(scale.dtype())));
    if (scale.numel() != 1 && (scale.rank() != 1 || scale.numel() != per_axis_count))
        node.fail(fmt::format("input {} must be a scalar or hold {} values, but it has shape {}", name, per_axis_count,
                              shape_to_string(scale.shape())));
    std::vector<double> values;
    for (int64_t i = 0; i < scale.numel(); ++i) values.push_back(scale.value_as_double(i));
    return values;
}

// `value` rounded to `dtype` (float16/bfloat16/float32 scales multiply in their own precision).
double round_to(double value, DataType dtype) {
    if (dtype == DataType::kFloat64) return value;
    return Tensor::from_doubles(dtype, {}, {value}).value_as_double(0);
}

double saturate(double value, DataType dtype) {
    const double low = dtype == DataType::kInt8 ? -128.0 : 0.0, high = dtype == DataType::kInt8 ? 127.0 : 255.0;
    return std::max(low, std::min(high, value));
}

Tensor to_quant(const std::vector<double>& values, DataType dtype, const Shape& shape) {
    Tensor out(dtype, shape);
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (dtype == DataType::kInt8)
            out.data_as<int8_t>()[i] = static_cast<int8_t>(values[i]);
        else
            out.data_as<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
    }
    return out;
}

// ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------------------

/// Where each element of x finds its scale: x viewed as (outer, channels, inner).
struct QuantLayout {
    enum class Kind { kTensor, kAxis, kBlocked } kind = Kind::kTensor;
    int64_t outer = 1, channels = 1, inner = 1, block = 1, scale_channels = 1;

    int64_t scale_index(int64_t o, int64_t c, int64_t i) const {
        switch (kind) {
            case Kind::kTensor:
                return 0;
            case Kind::kAxis:
                return c;
            default:
                return (o * scale_channels + c / block) * inner + i;
        }
    }
};

QuantLayout quant_layout(const NodeInfo& node, const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                         int64_t axis_attr, int64_t block_size) {
    QuantLayout layout;
    // A one-element zero point goes with a one-element scale whatever their ranks.
    if (zero_point && zero_point->shape() != scale.shape() &&
        !(zero_point->numel() == 1 && scale.numel() == 1 && zero_point->rank() <= 1 && scale.rank() <= 1))
        node.fail(fmt::format("zero point of shape {} must have the shape of the scale {}",
                              shape_to_string(zero_point->shape()), shape_to_string(scale.shape())));
    const bool scalar = scale.rank() == 0 || (scale.rank() == 1 && scale.numel() == 1 && block_size == 0);
    layout.outer = x.numel();
    if (scalar) return layout;
    if (node.opset() < 13) node.fail("scale must be a scalar before opset 13");
    const int64_t axis = normalize_axis(node, axis_attr, x.rank());
    layout.outer = 1;
    for (int64_t d = 0; d < axis; ++d) layout.outer *= x.shape()[d];
    layout.channels = x.shape()[axis];
    for (int64_t d = axis + 1; d < x.rank(); ++d) layout.inner *= x.shape()[d];
    if (block_size > 0) {
        layout.kind = QuantLayout::Kind::kBlocked;
        layout.block = block_size;
        layout.scale_channels = layout.channels > 0 ? (layout.channels - 1) / block_size + 1 : 0;
        Shape expected = x.shape();
        expected[axis] = layout.scale_channels;
        if (scale.shape() != expected)
            node.fail(fmt::format("blocked scale must have shape {} for input {} and block_size {}, got {}",
                                  shape_to_string(expected), shape_to_string(x.shape()), block_size,
                                  shape_to_string(scale.shape())));
        return layout;
    }
    if (scale.rank() != 1 || scale.numel() != layout.channels)
        node.fail(fmt::format("per-axis scale must be 1-D with {} elements (axis {} of input {}), got shape {}",
                              layout.channels, axis, shape_to_string(x.shape()), shape_to_string(scale.shape())));
    layout.kind = QuantLayout::Kind::kAxis;
    return layout;
}

template <typename Fn>
void for_each_quant_element(const QuantLayout& layout, Fn&& fn) {
    int64_t index = 0;
    for (int64_t o = 0; o < layout.outer; ++o)
        for (int64_t c = 0; c < layout.channels; ++c)
            for (int64_t i = 0; i < layout.inner; ++i, ++index) fn(index, layout.scale_index(o, c, i));
}

std::pair<double, double> quant_range(DataType dtype) {
    switch (dtype) {
        case DataType::kUInt8:
            return {0, 255};
        case DataType::kInt8:
            return {-128, 127};
        case DataType::kUInt16:
            return {0, 65535};
        case DataType::kInt16:
            return {-32768, 32767};
        case DataType::kUInt4:
            return {0, 15};
        case DataType::kInt4:
            return {-8, 7};
        case DataType::kInt32:
            return {-2147483648.0, 2147483647.0};
        default:
            return {0, -1};
    }
}

class QuantizeLinearKernel final : public Kernel {
public:
    explicit QuantizeLinearKernel(const NodeInfo& node)
        : axis_(node.opset() >= 13 ? node.attr_int("axis", 1) : 1),
          block_size_(node.opset() >= 21 ? node.attr_int("block_size", 0) : 0),
          output_dtype_(node.opset() >= 21 ? static_cast<int32_t>(node.attr_int("output_dtype", 0)) : 0),
          saturate_(saturate_attr(node)) {
        if (block_size_ < 0) node.fail(fmt::format("attribute 'block_size' must be >= 0, got {}", block_size_));
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x0 = ctx.required_input(0);
        const Tensor& scale0 = ctx.required_input(1);
        const Tensor* zp = ctx.input(2);
        if (zp && !zp->defined()) zp = nullptr;
        DataType out_dtype = DataType::kUInt8;
        if (zp)
            out_dtype = zp->dtype();
        else if (output_dtype_ != 0)
            out_dtype = dtype_from_onnx(output_dtype_);
        if (is_float8(out_dtype)) {
            ctx.set_output(0, quantize_float8(node, x0, scale0, zp, out_dtype));
            return;
        }
        // Not a structured binding: clang before 16 cannot capture those in the lambda below.
        const auto range = quant_range(out_dtype);
        const double lo = range.first, hi = range.second;
        if (lo > hi) unsupported_dtype(node, out_dtype, "quantized output");
        const QuantLayout layout = quant_layout(node, x0, scale0, zp, axis_, block_size_);
        const Tensor x = x0.cast(DataType::kFloat32), scale = scale0.cast(DataType::kFloat32);
        const Tensor zero = zp ? zp->cast(DataType::kFloat64) : Tensor();
        Tensor q(DataType::kFloat64, x.shape());
        const float* in = x.data_as<float>();
        const float* s = scale.data_as<float>();
        double* out = q.data_as<double>();
        for_each_quant_element(layout, [&](int64_t index, int64_t scale_index) {
            double value = std::nearbyint(static_cast<double>(in[index] / s[scale_index]));
            if (zp) value += zero.data_as<double>()[scale_index];
            out[index] = std::isnan(value) ? 0.0 : std::min(hi, std::max(lo, value));
        });
        ctx.set_output(0, is_int4(out_dtype) ? cast_to_small_type(q, out_dtype, true) : q.cast(out_dtype));
    }

private:
    // Float8 outputs: x / scale (+ zero point) rounded to the float8 type, saturating per the attribute.
    Tensor quantize_float8(const NodeInfo& node, const Tensor& x0, const Tensor& scale0, const Tensor* zp,
                           DataType out_dtype) const {
        const QuantLayout layout = quant_layout(node, x0, scale0, zp, axis_, block_size_);
        const Tensor x = x0.cast(DataType::kFloat32), scale = scale0.cast(DataType::kFloat32);
        const Tensor zero = zp ? zp->cast(DataType::kFloat32) : Tensor();
        Tensor q(out_dtype, x.shape());
        const float* in = x.data_as<float>();
        const float* s = scale.data_as<float>();
        auto* out = static_cast<uint8_t*>(q.data());
        for_each_quant_element(layout, [&](int64_t index, int64_t scale_index) {
            float value = in[index] / s[scale_index];
            if (zp) value += zero.data_as<float>()[scale_index];
            out[index] = double_to_float8(value, out_dtype, saturate_);
        });
        return q;
    }

    int64_t axis_, block_size_;
    int32_t output_dtype_;
    bool saturate_;
};

class DequantizeLinearKernel final : public Kernel {
public:
    explicit DequantizeLinearKernel(const NodeInfo& node)
        : axis_(node.opset() >= 13 ? node.attr_int("axis", 1) : 1),
          block_size_(node.opset() >= 21 ? node.attr_int("block_size", 0) : 0) {
        if (block_size_ < 0) node.fail(fmt::format("attribute 'block_size' must be >= 0, got {}", block_size_));
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x0 = ctx.required_input(0);
        const Tensor& scale0 = ctx.required_input(1);
        const Tensor* zp = ctx.input(2);
        if (zp && !zp->defined()) zp = nullptr;
        const auto [lo, hi] = quant_range(x0.dtype());
        if (lo > hi && !is_float8(x0.dtype())) unsupported_dtype(node, x0.dtype(), "quantized input");
        if (zp) require_same_dtype(node, x0, *zp, "x and x_zero_point");
        const QuantLayout layout = quant_layout(node, x0, scale0, zp, axis_, block_size_);
        const Tensor x = x0.cast(DataType::kFloat32), scale = scale0.cast(DataType::kFloat32);
        const Tensor zero = zp ? zp->cast(DataType::kFloat32) : Tensor();
        Tensor y(DataType::kFloat32, x.shape());
        const float* in = x.data_as<float>();
        const float* s = scale.data_as<float>();
        float* out = y.data_as<float>();
        for_each_quant_element(layout, [&](int64_t index, int64_t scale_index) {
            out[index] = (in[index] - (zp ? zero.data_as<float>()[scale_index] : 0.0f)) * s[scale_index];
        });
        ctx.set_output(0, y.cast(scale0.dtype()));
    }

private:
    int64_t axis_, block_size_;
};

// ---- QLinearMatMul -----------------------------------------------------------------------------------

class QLinearMatMulKernel final : public Kernel {
public:
    explicit QLinearMatMulKernel(const NodeInfo&) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a = context.required_input(0);
        const Tensor& b = context.required_input(3);
        const Tensor& y_zero_point = context.required_input(7);
        require_quant_type(node, a, "a");
        require_quant_type(node, b, "b");
        require_quant_type(node, y_zero_point, "y_zero_point");
        if (a.rank() < 2 || b.rank() < 2)
            node.fail(fmt::format("inputs a and b must have rank 2 or more, but they have shapes {} and {}",
                                  shape_to_string(a.shape()), shape_to_string(b.shape())));
        const int64_t m = a.shape()[a.rank() - 2], k = a.shape().back(), n = b.shape().back();
        if (b.shape()[b.rank() - 2] != k)
            node.fail(fmt::format("inner dimensions of a {} and b {} differ", shape_to_string(a.shape()),
                                  shape_to_string(b.shape())));
        const Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
        const Shape batch = [&] {
            const std::size_t rank = std::max(batch_a.size(), batch_b.size());
            Shape out(rank, 1);
            for (std::size_t i = 0; i < rank; ++i) {
                const int64_t da = i + batch_a.size() >= rank ? batch_a[i + batch_a.size() - rank] : 1;
                const int64_t db = i + batch_b.size() >= rank ? batch_b[i + batch_b.size() - rank] : 1;
                if (da != db && da != 1 && db != 1)
                    node.fail(fmt::format("batch dimensions of a {} and b {} do not broadcast",
                                          shape_to_string(a.shape()), shape_to_string(b.shape())));
                out[i] = std::max(da, db);
            }
            return out;
        }();
        const Tensor& a_scale = context.required_input(1);
        const Tensor& b_scale = context.required_input(4);
        const Tensor& y_scale = context.required_input(6);
        const std::vector<double> sa = scales(node, a_scale, m, "a_scale"), sb = scales(node, b_scale, n, "b_scale");
        const std::vector<double> sy = scales(node, y_scale, 1, "y_scale");
        const std::vector<int64_t> za = zero_points(node, context.input(2), a, m, "a_zero_point");
        const std::vector<int64_t> zb = zero_points(node, context.input(5), b, n, "b_zero_point");
        const int64_t zy = static_cast<int64_t>(y_zero_point.value_as_double(0));
        const DataType scale_type = a_scale.dtype();

        Shape out_shape = batch;
        out_shape.push_back(m);
        out_shape.push_back(n);
        const int64_t batches = shape_volume(batch);
        std::vector<double> values(static_cast<std::size_t>(batches * m * n));
        auto batch_offset = [&](const Shape& own, int64_t flat) {
            int64_t offset = 0, stride = 1;
            for (std::size_t i = batch.size(); i-- > 0;) {
                const int64_t index = flat % batch[i];
                flat /= batch[i];
                const std::size_t shift = batch.size() - own.size();
                if (i >= shift) {
                    const int64_t dim = own[i - shift];
                    offset += (dim == 1 ? 0 : index) * stride;
                    stride *= dim;
                }
            }
            return offset;
        };
        // Operands minus their zero points (per row of a, per column of b), and the requantization
        // multiplier per (row scale, column scale) pair, computed once.
        std::vector<int32_t> ac(static_cast<std::size_t>(a.numel())), bc(static_cast<std::size_t>(b.numel()));
        for (int64_t i = 0; i < a.numel(); ++i)
            ac[i] = static_cast<int32_t>(a.value_as_double(i)) -
                    static_cast<int32_t>(za.size() == 1 ? za[0] : za[(i / std::max<int64_t>(k, 1)) % m]);
        for (int64_t i = 0; i < b.numel(); ++i)
            bc[i] =
                static_cast<int32_t>(b.value_as_double(i)) - static_cast<int32_t>(zb.size() == 1 ? zb[0] : zb[i % n]);
        std::vector<double> multipliers(sa.size() * sb.size());
        for (std::size_t x = 0; x < sa.size(); ++x)
            for (std::size_t z = 0; z < sb.size(); ++z)
                multipliers[x * sb.size() + z] = round_to(round_to(sa[x] * sb[z], scale_type) / sy[0], scale_type);
        std::vector<int64_t> row(static_cast<std::size_t>(n));
        for (int64_t t = 0; t < batches; ++t) {
            const int64_t a_base = batch_offset(batch_a, t) * m * k, b_base = batch_offset(batch_b, t) * k * n;
            for (int64_t i = 0; i < m; ++i) {
                std::fill(row.begin(), row.end(), 0);
                for (int64_t p = 0; p < k; ++p) {
                    const int64_t av = ac[a_base + i * k + p];
                    const int32_t* bp = bc.data() + b_base + p * n;
                    for (int64_t j = 0; j < n; ++j) row[j] += av * bp[j];
                }
                for (int64_t j = 0; j < n; ++j) {
                    const double multiplier =
                        multipliers[(sa.size() == 1 ? 0 : i) * sb.size() + (sb.size() == 1 ? 0 : j)];
                    const double value =
                        std::nearbyint(static_cast<double>(row[j]) * multiplier) + static_cast<double>(zy);
                    values[(t * m + i) * n + j] = saturate(value, y_zero_point.dtype());
                }
            }
        }
        context.set_output(0, to_quant(values, y_zero_point.dtype(), out_shape));
    }
};

// ---- ConvInteger and QLinearConv ---------------------------------------------------------------------

// Direct integer convolution: x and w already minus their zero points; returns int64 sums (N, M, out...).
std::vector<int64_t> integer_conv(const NodeInfo& node, const window::WindowAttrs& attrs, int64_t group,
                                  const Tensor& x, const std::vector<int64_t>& x_values, const Tensor& w,
                                  const std::vector<int64_t>& w_values, Shape& out_shape) {
    if (x.rank() < 3 || w.rank() != x.rank())
        node.fail(fmt::format("inputs x and w must have the same rank (3 or more), but they have shapes {} and {}",
                              shape_to_string(x.shape()), shape_to_string(w.shape())));
    const int64_t batch = x.shape()[0], channels = x.shape()[1], filters = w.shape()[0];
    if (group <= 0 || channels % group != 0 || filters % group != 0 || w.shape()[1] * group != channels)
        node.fail(fmt::format("group {} does not divide input channels {} and filters {} (weights {})", group, channels,
                              filters, shape_to_string(w.shape())));
    const std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
    const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
    const window::Geometry g = window::resolve_geometry(node, attrs, spatial, kernel);
    out_shape = {batch, filters};
    for (int64_t d : g.output) out_shape.push_back(d);
    const std::size_t rank = g.rank();
    int64_t out_points = 1, in_points = 1, kernel_points = 1;
    for (std::size_t d = 0; d < rank; ++d) {
        out_points *= g.output[d];
        in_points *= g.input[d];
        kernel_points *= g.kernel[d];
    }
    const int64_t per_group_in = channels / group, per_group_out = filters / group;
    std::vector<int64_t> result(static_cast<std::size_t>(batch * filters * out_points), 0);
    std::vector<int64_t> out_index(rank), kernel_index(rank);
    for (int64_t n = 0; n < batch; ++n)
        for (int64_t f = 0; f < filters; ++f) {
            const int64_t gi = f / per_group_out;
            for (int64_t o = 0; o < out_points; ++o) {
                int64_t rest = o;
                for (std::size_t d = rank; d-- > 0;) {
                    out_index[d] = rest % g.output[d];
                    rest /= g.output[d];
                }
                int64_t sum = 0;
                for (int64_t c = 0; c < per_group_in; ++c)
                    for (int64_t kp = 0; kp < kernel_points; ++kp) {
                        int64_t krest = kp, offset = 0;
                        bool inside = true;
                        for (std::size_t d = rank; d-- > 0;) {
                            kernel_index[d] = krest % g.kernel[d];
                            krest /= g.kernel[d];
                        }
                        for (std::size_t d = 0; d < rank; ++d) {
                            const int64_t pos =
                                out_index[d] * g.strides[d] - g.pad_begin[d] + kernel_index[d] * g.dilations[d];
                            if (pos < 0 || pos >= g.input[d]) {
                                inside = false;
                                break;
                            }
                            offset = offset * g.input[d] + pos;
                        }
                        if (!inside) continue;
                        const int64_t xv = x_values[(n * channels + gi * per_group_in + c) * in_points + offset];
                        const int64_t wv = w_values[(f * per_group_in + c) * kernel_points + kp];
                        sum += xv * wv;
                    }
                result[(n * filters + f) * out_points + o] = sum;
            }
        }
    return result;
}

// Operand values minus the zero point (per channel of `axis` 1 for x, 0 for w).
std::vector<int64_t> centered(const Tensor& t, const std::vector<int64_t>& zero, int64_t axis) {
    std::vector<int64_t> values(static_cast<std::size_t>(t.numel()));
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.shape()[d];
    const int64_t channels = t.shape()[axis];
    for (int64_t i = 0; i < t.numel(); ++i)
        values[i] =
            static_cast<int64_t>(t.value_as_double(i)) - (zero.size() == 1 ? zero[0] : zero[(i / inner) % channels]);
    return values;
}

// What ConvInteger and QLinearConv read alike: the window attributes and a positive group, and
// quantized x and w of rank 3 or more.
class IntegerConvolutionKernel : public Kernel {
protected:
    explicit IntegerConvolutionKernel(const NodeInfo& node)
        : attrs_(window::parse_window_attrs(node, false, true, false)), group_(node.attr_int("group", 1)) {
        if (group_ <= 0) node.fail(fmt::format("attribute 'group' must be positive, but it is {}", group_));
    }

    static void require_operands(const NodeInfo& node, const Tensor& x, const Tensor& w) {
        require_quant_type(node, x, "x");
        require_quant_type(node, w, "w");
        if (x.rank() < 3 || w.rank() < 3)
            node.fail(fmt::format("inputs x and w must have rank 3 or more, but they have shapes {} and {}",
                                  shape_to_string(x.shape()), shape_to_string(w.shape())));
    }

    window::WindowAttrs attrs_;
    int64_t group_;
};

class ConvIntegerKernel final : public IntegerConvolutionKernel {
public:
    explicit ConvIntegerKernel(const NodeInfo& node) : IntegerConvolutionKernel(node) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& w = context.required_input(1);
        require_operands(node, x, w);
        const std::vector<int64_t> zx = zero_points(node, context.input(2), x, 1, "x_zero_point");
        const std::vector<int64_t> zw = zero_points(node, context.input(3), w, w.shape()[0], "w_zero_point");
        Shape out_shape;
        const std::vector<int64_t> sums =
            integer_conv(node, attrs_, group_, x, centered(x, zx, 1), w, centered(w, zw, 0), out_shape);
        Tensor& y = context.allocate_output(0, DataType::kInt32, out_shape);
        for (std::size_t i = 0; i < sums.size(); ++i) y.data_as<int32_t>()[i] = static_cast<int32_t>(sums[i]);
    }
};

class QLinearConvKernel final : public IntegerConvolutionKernel {
public:
    explicit QLinearConvKernel(const NodeInfo& node) : IntegerConvolutionKernel(node) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& w = context.required_input(3);
        const Tensor& y_zero_point = context.required_input(7);
        require_operands(node, x, w);
        require_quant_type(node, y_zero_point, "y_zero_point");
        const int64_t filters = w.shape()[0];
        const std::vector<double> sx = scales(node, context.required_input(1), 1, "x_scale");
        const std::vector<double> sw = scales(node, context.required_input(4), filters, "w_scale");
        const std::vector<double> sy = scales(node, context.required_input(6), 1, "y_scale");
        const std::vector<int64_t> zx = zero_points(node, context.input(2), x, 1, "x_zero_point");
        const std::vector<int64_t> zw = zero_points(node, context.input(5), w, filters, "w_zero_point");
        const int64_t zy = static_cast<int64_t>(y_zero_point.value_as_double(0));
        const Tensor* bias = context.input(8);
        if (bias && bias->defined() && (bias->dtype() != DataType::kInt32 || bias->numel() != filters))
            node.fail(fmt::format("input B must be int32 with {} values, but it is {} of shape {}", filters,
                                  dtype_name(bias->dtype()), shape_to_string(bias->shape())));
        Shape out_shape;
        const std::vector<int64_t> sums =
            integer_conv(node, attrs_, group_, x, centered(x, zx, 1), w, centered(w, zw, 0), out_shape);
        const int64_t points = shape_volume(out_shape) / std::max<int64_t>(1, out_shape[0] * filters);
        std::vector<double> values(sums.size());
        for (std::size_t i = 0; i < sums.size(); ++i) {
            const int64_t f = static_cast<int64_t>(i) / points % filters;
            const int64_t accumulated = sums[i] + (bias && bias->defined() ? bias->data_as<int32_t>()[f] : 0);
            const double multiplier = sx[0] * sw[sw.size() == 1 ? 0 : f] / sy[0];
            values[i] =
                saturate(std::nearbyint(static_cast<double>(accumulated) * multiplier) + static_cast<double>(zy),
                         y_zero_point.dtype());
        }
        context.set_output(0, to_quant(values, y_zero_point.dtype(), out_shape));
    }
};

// ---- DynamicQuantizeLinear ---------------------------------------------------------------------------

class DynamicQuantizeLinearKernel final : public Kernel {
public:
    explicit DynamicQuantizeLinearKernel(const NodeInfo&) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        if (x0.dtype() != DataType::kFloat32) unsupported_dtype(node, x0.dtype());
        const float* x = x0.data_as<float>();
        float low = 0.0f, high = 0.0f;  // the range always includes 0
        for (int64_t i = 0; i < x0.numel(); ++i) {
            low = std::min(low, x[i]);
            high = std::max(high, x[i]);
        }
        const float scale = (high - low) / 255.0f;
        float zero = 0.0f;
        if (scale != 0.0f) zero = std::max(0.0f, std::min(255.0f, std::nearbyint(0.0f - low / scale)));
        Tensor& y = context.allocate_output(0, DataType::kUInt8, x0.shape());
        for (int64_t i = 0; i < x0.numel(); ++i) {
            const float q = scale != 0.0f ? std::nearbyint(x[i] / scale) + zero : zero;
            y.data_as<uint8_t>()[i] = static_cast<uint8_t>(std::max(0.0f, std::min(255.0f, q)));
        }
        *context.allocate_output(1, DataType::kFloat32, {}).data_as<float>() = scale;
        *context.allocate_output(2, DataType::kUInt8, {}).data_as<uint8_t>() = static_cast<uint8_t>(zero);
    }
};

}  // namespace

void register_quantized_ops(OpRegistry& registry) {
    registry.add("", "QuantizeLinear", 10, kMaxOpset, make_factory<QuantizeLinearKernel>());
    registry.add("", "DequantizeLinear", 10, kMaxOpset, make_factory<DequantizeLinearKernel>());
    registry.add("", "QLinearMatMul", 10, kMaxOpset, make_factory<QLinearMatMulKernel>());
    registry.add("", "QLinearConv", 10, kMaxOpset, make_factory<QLinearConvKernel>());
    registry.add("", "ConvInteger", 10, kMaxOpset, make_factory<ConvIntegerKernel>());
    registry.add("", "DynamicQuantizeLinear", 11, kMaxOpset, make_factory<DynamicQuantizeLinearKernel>());
    // ONNX Runtime's own QuantizeLinear and DequantizeLinear, which took int16, uint16, int4 and uint4
    // before the standard did: the standard operators at opset 21 (per-tensor, or per axis with a 1-D
    // scale).
    for (const char* op : {"QuantizeLinear", "DequantizeLinear"})
        registry.add(kMicrosoftDomain, op, 1, kMaxOpset, [op](const NodeInfo& node) -> std::unique_ptr<Kernel> {
            return std::make_unique<RunAsTwinKernel>(node, op, 21);
        });
}

}  // namespace polygraphy::ref
