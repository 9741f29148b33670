// Smaller operators added after the first families: bitwise logic (BitwiseAnd/Or/Xor/Not), activations
// with attributes (Gelu, Mish, Celu, ThresholdedRelu), and generators (HannWindow, HammingWindow,
// BlackmanWindow, EyeLike), and data selection (Compress, ReverseSequence, CenterCropPad). Float activations compute in double and cast back.
#include <cmath>
#include <string>
#include <vector>

#include "backend/ref/ops/broadcast.h"
#include "backend/ref/ops/families.h"
#include "backend/ref/ops/kernel_util.h"

namespace polygraphy::ref {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ---- Bitwise ----------------------------------------------------------------------------------------

enum class BitOp { kAnd, kOr, kXor };

template <BitOp Op>
class BitwiseKernel final : public Kernel {
public:
    explicit BitwiseKernel(const NodeInfo&) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a = context.required_input(0);
        const Tensor& b = context.required_input(1);
        if (a.dtype() != b.dtype())
            node.fail("inputs must have the same data type, but they are " + std::string(dtype_name(a.dtype())) +
                      " and " + std::string(dtype_name(b.dtype())));
        const Shape out = broadcast_shapes(node, {a.shape(), b.shape()});
        dispatch_dtype(node, a.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (!kIsInt<T>) {
                unsupported_dtype(node, a.dtype());
            } else {
                Tensor& y = context.allocate_output(0, a.dtype(), out);
                broadcast_binary(out, a.shape(), b.shape(), a.data_as<T>(), b.data_as<T>(), y.data_as<T>(),
                                 [](T x, T z) -> T {
                                     if constexpr (Op == BitOp::kAnd) return static_cast<T>(x & z);
                                     else if constexpr (Op == BitOp::kOr) return static_cast<T>(x | z);
                                     else return static_cast<T>(x ^ z);
                                 },
                                 context.num_threads());
            }
        });
    }
};

class BitwiseNotKernel final : public Kernel {
public:
    explicit BitwiseNotKernel(const NodeInfo&) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        dispatch_dtype(node, x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (!kIsInt<T>) {
                unsupported_dtype(node, x.dtype());
            } else {
                Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
                const T* in = x.data_as<T>();
                T* out = y.data_as<T>();
                for (int64_t i = 0; i < x.numel(); ++i) out[i] = static_cast<T>(~in[i]);
            }
        });
    }
};

// ---- Activations with attributes ----------------------------------------------------------------------

/// y = fn(x) for float inputs, computed in double.
template <typename Fn>
void float_unary(KernelContext& context, Fn&& fn) {
    const NodeInfo& node = context.node();
    const Tensor& x = context.required_input(0);
    const DataType dtype = x.dtype();
    if (dtype != DataType::kFloat32 && dtype != DataType::kFloat64 && !is_half(dtype)) unsupported_dtype(node, dtype);
    const Tensor wide = x.cast(DataType::kFloat64);
    Tensor y(DataType::kFloat64, x.shape());
    const double* in = wide.data_as<double>();
    double* out = y.data_as<double>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = fn(in[i]);
    context.set_output(0, y.cast(dtype));
}

class GeluKernel final : public Kernel {
public:
    explicit GeluKernel(const NodeInfo& node) {
        const std::string approximate = node.attr_string("approximate", "none");
        if (approximate == "tanh")
            tanh_ = true;
        else if (approximate != "none")
            node.fail("attribute 'approximate' must be 'none' or 'tanh', but it is '" + approximate + "'");
    }
    void compute(KernelContext& context) const override {
        const bool use_tanh = tanh_;
        float_unary(context, [use_tanh](double x) {
            if (use_tanh) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
            return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        });
    }

private:
    bool tanh_ = false;
};

class MishKernel final : public Kernel {
public:
    explicit MishKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        float_unary(context, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); });
    }
};

class CeluKernel final : public Kernel {
public:
    explicit CeluKernel(const NodeInfo& node) : alpha_(node.attr_float("alpha", 1.0f)) {
        if (alpha_ == 0) node.fail("attribute 'alpha' must not be 0");
    }
    void compute(KernelContext& context) const override {
        const double alpha = alpha_;
        float_unary(context, [alpha](double x) {
            return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1));
        });
    }

private:
    double alpha_;
};

class ThresholdedReluKernel final : public Kernel {
public:
    explicit ThresholdedReluKernel(const NodeInfo& node) : alpha_(node.attr_float("alpha", 1.0f)) {}
    void compute(KernelContext& context) const override {
        const double alpha = alpha_;
        float_unary(context, [alpha](double x) { return x > alpha ? x : 0.0; });
    }

private:
    double alpha_;
};

// ---- Generators ---------------------------------------------------------------------------------------

DataType parse_output_dtype(const NodeInfo& node, const char* attr_name, DataType fallback) {
    if (!node.has_attr(attr_name)) return fallback;
    const int64_t onnx_type = node.attr_int(attr_name, 0);
    const DataType dtype = dtype_from_onnx(static_cast<int32_t>(onnx_type));
    if (dtype == DataType::kUndefined || dtype == DataType::kString)
        node.fail(std::string("attribute '") + attr_name + "' has unsupported data type " + std::to_string(onnx_type));
    return dtype;
}

enum class WindowKind { kHann, kHamming, kBlackman };

template <WindowKind Kind>
class WindowKernel final : public Kernel {
public:
    explicit WindowKernel(const NodeInfo& node)
        : dtype_(parse_output_dtype(node, "output_datatype", DataType::kFloat32)),
          periodic_(node.attr_int("periodic", 1) != 0) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& size_tensor = context.required_input(0);
        require_scalar(node, size_tensor, "size");
        const int64_t size = read_ints(node, size_tensor, "size")[0];
        if (size < 0) node.fail("size must be non-negative, but it is " + std::to_string(size));
        const double denominator = periodic_ ? static_cast<double>(size) : static_cast<double>(size - 1);
        std::vector<double> values(static_cast<std::size_t>(size));
        for (int64_t n = 0; n < size; ++n) {
            const double phase = denominator > 0 ? 2 * kPi * static_cast<double>(n) / denominator : 0.0;
            double v = 0.0;
            if constexpr (Kind == WindowKind::kHann) v = 0.5 - 0.5 * std::cos(phase);
            else if constexpr (Kind == WindowKind::kHamming) v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(phase);
            else v = 0.42 - 0.5 * std::cos(phase) + 0.08 * std::cos(2 * phase);
            values[static_cast<std::size_t>(n)] = v;
        }
        context.set_output(0, Tensor::from_doubles(dtype_, {size}, values));
    }

private:
    DataType dtype_;
    bool periodic_;
};

class EyeLikeKernel final : public Kernel {
public:
    explicit EyeLikeKernel(const NodeInfo& node)
        : has_dtype_(node.has_attr("dtype")),
          dtype_(parse_output_dtype(node, "dtype", DataType::kFloat32)),
          k_(node.attr_int("k", 0)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        if (x.rank() != 2) node.fail("input must be 2-D, but it has shape " + shape_to_string(x.shape()));
        const DataType dtype = has_dtype_ ? dtype_ : x.dtype();
        const int64_t rows = x.shape()[0], cols = x.shape()[1];
        std::vector<double> values(static_cast<std::size_t>(rows * cols), 0.0);
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t c = r + k_;
            if (c >= 0 && c < cols) values[static_cast<std::size_t>(r * cols + c)] = 1.0;
        }
        context.set_output(0, Tensor::from_doubles(dtype, x.shape(), values));
    }

private:
    bool has_dtype_;
    DataType dtype_;
    int64_t k_;
};

// ---- Data selection -----------------------------------------------------------------------------------

class CompressKernel final : public Kernel {
public:
    explicit CompressKernel(const NodeInfo& node) : has_axis_(node.has_attr("axis")), axis_(node.attr_int("axis", 0)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& condition = context.required_input(1);
        require_1d(node, condition, "condition");
        if (condition.dtype() != DataType::kBool)
            node.fail("condition must be a bool tensor, but it is " + std::string(dtype_name(condition.dtype())));
        const int64_t axis = has_axis_ ? normalize_axis(node, axis_, x.rank()) : 0;
        int64_t outer = 1, length = x.numel(), inner = 1;
        if (has_axis_) {
            length = x.shape()[static_cast<std::size_t>(axis)];
            for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<std::size_t>(d)];
            for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
        }
        if (condition.numel() > length)
            node.fail("condition has " + std::to_string(condition.numel()) + " elements, more than the " +
                      std::to_string(length) + " of the selected axis");
        std::vector<int64_t> kept;
        const bool* flags = condition.data_as<bool>();
        for (int64_t i = 0; i < condition.numel(); ++i)
            if (flags[i]) kept.push_back(i);
        const auto count = static_cast<int64_t>(kept.size());
        Shape out_shape{count};
        if (has_axis_) {
            out_shape = x.shape();
            out_shape[static_cast<std::size_t>(axis)] = count;
        }
        Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t k = 0; k < count; ++k)
                copy_elements(x, (o * length + kept[static_cast<std::size_t>(k)]) * inner, y, (o * count + k) * inner, inner);
    }

private:
    bool has_axis_;
    int64_t axis_;
};

class ReverseSequenceKernel final : public Kernel {
public:
    explicit ReverseSequenceKernel(const NodeInfo& node)
        : batch_axis_(node.attr_int("batch_axis", 1)), time_axis_(node.attr_int("time_axis", 0)) {
        if (!((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0)))
            node.fail("attributes 'batch_axis' and 'time_axis' must be 0 and 1 in some order, but they are " +
                      std::to_string(batch_axis_) + " and " + std::to_string(time_axis_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        if (x.rank() < 2) node.fail("input must have rank >= 2, but it has shape " + shape_to_string(x.shape()));
        const std::vector<int64_t> lens = read_ints(node, context.required_input(1), "sequence_lens");
        const int64_t batch = x.shape()[static_cast<std::size_t>(batch_axis_)];
        const int64_t time = x.shape()[static_cast<std::size_t>(time_axis_)];
        if (static_cast<int64_t>(lens.size()) != batch)
            node.fail("sequence_lens must have " + std::to_string(batch) + " elements, but it has " +
                      std::to_string(lens.size()));
        int64_t inner = 1;
        for (int64_t d = 2; d < x.rank(); ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
        Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t len = lens[static_cast<std::size_t>(b)];
            if (len < 0 || len > time)
                node.fail("sequence length " + std::to_string(len) + " is out of range [0, " + std::to_string(time) + "]");
            for (int64_t t = 0; t < time; ++t) {
                const int64_t source = t < len ? len - 1 - t : t;
                auto offset = [&](int64_t tt) {
                    return (time_axis_ == 0 ? tt * batch + b : b * time + tt) * inner;
                };
                copy_elements(x, offset(source), y, offset(t), inner);
            }
        }
    }

private:
    int64_t batch_axis_;
    int64_t time_axis_;
};

class CenterCropPadKernel final : public Kernel {
public:
    explicit CenterCropPadKernel(const NodeInfo& node) : axes_(node.attr_ints("axes")) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const std::vector<int64_t> target = read_ints(node, context.required_input(1), "shape");
        const int64_t rank = x.rank();
        std::vector<int64_t> axes;
        if (axes_.empty())
            for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
        else
            axes = normalize_axes(node, axes_, rank);
        if (target.size() != axes.size())
            node.fail("shape must have " + std::to_string(axes.size()) + " elements, but it has " +
                      std::to_string(target.size()));
        Shape out_shape = x.shape();
        for (std::size_t i = 0; i < axes.size(); ++i) {
            if (target[i] < 0) node.fail("shape must be non-negative, but it has " + std::to_string(target[i]));
            out_shape[static_cast<std::size_t>(axes[i])] = target[i];
        }
        Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
        // Copy the overlap: cropped axes start (in - out) / 2 into x, padded axes (out - in) / 2 into y.
        const std::size_t r = static_cast<std::size_t>(rank);
        std::vector<int64_t> region(r), src_start(r), dst_start(r);
        for (std::size_t d = 0; d < r; ++d) {
            const int64_t in = x.shape()[d], out = out_shape[d];
            region[d] = std::min(in, out);
            src_start[d] = in > out ? (in - out) / 2 : 0;
            dst_start[d] = out > in ? (out - in) / 2 : 0;
        }
        if (rank == 0) {
            copy_elements(x, 0, y, 0, 1);
            return;
        }
        for (int64_t v : region)
            if (v == 0) return;
        const std::vector<int64_t> src_strides = contiguous_strides(x.shape()), dst_strides = contiguous_strides(out_shape);
        std::vector<int64_t> index(r, 0);
        while (true) {
            int64_t src = 0, dst = 0;
            for (std::size_t d = 0; d < r; ++d) {
                src += (src_start[d] + index[d]) * src_strides[d];
                dst += (dst_start[d] + index[d]) * dst_strides[d];
            }
            copy_elements(x, src, y, dst, region[r - 1]);
            std::size_t d = r - 1;
            while (d-- > 0) {
                if (++index[d] < region[d]) break;
                index[d] = 0;
            }
            if (d == static_cast<std::size_t>(-1)) break;
        }
    }

private:
    std::vector<int64_t> axes_;
};

}  // namespace

void register_extra_ops(OpRegistry& registry) {
    registry.add("", "BitwiseAnd", 18, kMaxOpset, make_factory<BitwiseKernel<BitOp::kAnd>>());
    registry.add("", "BitwiseOr", 18, kMaxOpset, make_factory<BitwiseKernel<BitOp::kOr>>());
    registry.add("", "BitwiseXor", 18, kMaxOpset, make_factory<BitwiseKernel<BitOp::kXor>>());
    registry.add("", "BitwiseNot", 18, kMaxOpset, make_factory<BitwiseNotKernel>());
    registry.add("", "Gelu", 20, kMaxOpset, make_factory<GeluKernel>());
    registry.add("", "Mish", 18, kMaxOpset, make_factory<MishKernel>());
    registry.add("", "Celu", 12, kMaxOpset, make_factory<CeluKernel>());
    registry.add("", "ThresholdedRelu", 10, kMaxOpset, make_factory<ThresholdedReluKernel>());
    registry.add("", "HannWindow", 17, kMaxOpset, make_factory<WindowKernel<WindowKind::kHann>>());
    registry.add("", "HammingWindow", 17, kMaxOpset, make_factory<WindowKernel<WindowKind::kHamming>>());
    registry.add("", "BlackmanWindow", 17, kMaxOpset, make_factory<WindowKernel<WindowKind::kBlackman>>());
    registry.add("", "EyeLike", 9, kMaxOpset, make_factory<EyeLikeKernel>());
    registry.add("", "Compress", 9, kMaxOpset, make_factory<CompressKernel>());
    registry.add("", "ReverseSequence", 10, kMaxOpset, make_factory<ReverseSequenceKernel>());
    registry.add("", "CenterCropPad", 18, kMaxOpset, make_factory<CenterCropPadKernel>());
}

}  // namespace polygraphy::ref
