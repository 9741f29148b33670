// Activations: Relu, LeakyRelu, PRelu, Elu, Selu, Celu, Gelu, Mish, Sigmoid, HardSigmoid,
// HardSwish, Softplus, Softsign, Tanh, ThresholdedRelu, Shrink and Clip; and the com.microsoft ones
// ONNX Runtime's fusions write: Gelu, QuickGelu, FastGelu and BiasGelu. The unary ones are
// scalar functions run by UnaryKernel (elementwise.h); Gelu, Mish, Celu, ThresholdedRelu and the
// contrib ones compute in double. Activations folded into a convolution or matmul are dnnl_util.h's
// FusedActivation.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/ops/elementwise.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

constexpr double kPi = 3.14159265358979323846;

// NaN stays NaN.
struct ReluOp : SignedOnly {
    template <typename T>
    T operator()(T x) const {
        return x < T(0) ? T(0) : x;
    }
};
struct LeakyReluOp : FloatOnly {
    explicit LeakyReluOp(const NodeInfo& node) : alpha_(node.attr_float("alpha", 0.01f)) {}
    template <typename T>
    T operator()(T x) const {
        return x < T(0) ? static_cast<T>(alpha_) * x : x;
    }
    float alpha_;
};
struct EluOp : FloatOnly {
    explicit EluOp(const NodeInfo& node) : alpha_(node.attr_float("alpha", 1.0f)) {}
    template <typename T>
    T operator()(T x) const {
        return x < T(0) ? static_cast<T>(alpha_) * std::expm1(x) : x;
    }
    float alpha_;
};
struct SeluOp : FloatOnly {
    explicit SeluOp(const NodeInfo& node)
        : alpha_(node.attr_float("alpha", 1.67326319217681884765625f)),
          gamma_(node.attr_float("gamma", 1.05070102214813232421875f)) {}
    template <typename T>
    T operator()(T x) const {
        return x > T(0) ? static_cast<T>(gamma_) * x
                        : static_cast<T>(gamma_) * (static_cast<T>(alpha_) * std::exp(x) - static_cast<T>(alpha_));
    }
    float alpha_, gamma_;
};
struct CeluOp : FloatInDouble {
    explicit CeluOp(const NodeInfo& node) : alpha_(node.attr_float("alpha", 1.0f)) {
        if (alpha_ == 0) node.fail("attribute 'alpha' must not be 0");
    }
    template <typename T>
    T operator()(T x) const {
        const double v = x;
        return static_cast<T>(std::max(0.0, v) + std::min(0.0, alpha_ * (std::exp(v / alpha_) - 1)));
    }
    double alpha_;
};
struct GeluOp : FloatInDouble {
    explicit GeluOp(const NodeInfo& node) {
        const std::string approximate = node.attr_string("approximate", "none");
        if (approximate == "tanh")
            tanh_ = true;
        else if (approximate != "none")
            node.fail("attribute 'approximate' must be 'none' or 'tanh', but it is '" + approximate + "'");
    }
    template <typename T>
    T operator()(T x) const {
        const double v = x;
        if (tanh_) return static_cast<T>(0.5 * v * (1 + std::tanh(std::sqrt(2 / kPi) * (v + 0.044715 * v * v * v))));
        return static_cast<T>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    }
    bool tanh_ = false;
};
struct MishOp : FloatInDouble {
    template <typename T>
    T operator()(T x) const {
        const double v = x;
        return static_cast<T>(v * std::tanh(std::log1p(std::exp(v))));
    }
};
struct ThresholdedReluOp : FloatInDouble {
    explicit ThresholdedReluOp(const NodeInfo& node) : alpha_(node.attr_float("alpha", 1.0f)) {}
    template <typename T>
    T operator()(T x) const {
        return static_cast<double>(x) > alpha_ ? x : T(0);
    }
    double alpha_;
};
// Split at 0 so that exp never overflows.
struct SigmoidOp : FloatOnly {
    static constexpr dnnl::algorithm kDnnl = dnnl::algorithm::eltwise_logistic;
    template <typename T>
    T operator()(T x) const {
        return x >= T(0) ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
    }
};
struct HardSigmoidOp : FloatOnly {
    explicit HardSigmoidOp(const NodeInfo& node)
        : alpha_(node.attr_float("alpha", 0.2f)), beta_(node.attr_float("beta", 0.5f)) {}
    template <typename T>
    T operator()(T x) const {
        return std::max(T(0), std::min(T(1), static_cast<T>(alpha_) * x + static_cast<T>(beta_)));
    }
    float alpha_, beta_;
};
struct HardSwishOp : FloatOnly {
    template <typename T>
    T operator()(T x) const {
        return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5)));
    }
};
struct SoftplusOp : FloatOnly {
    template <typename T>
    T operator()(T x) const {
        return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
};
struct SoftsignOp : FloatOnly {
    template <typename T>
    T operator()(T x) const {
        return x / (T(1) + std::abs(x));
    }
};
struct TanhOp : FloatOnly {
    static constexpr dnnl::algorithm kDnnl = dnnl::algorithm::eltwise_tanh;
    template <typename T>
    T operator()(T x) const {
        return std::tanh(x);
    }
};
struct ShrinkOp : NumericOnly {
    explicit ShrinkOp(const NodeInfo& node)
        : lambd_(node.attr_float("lambd", 0.5f)), bias_(node.attr_float("bias", 0.0f)) {
        if (lambd_ < 0) node.fail("attribute 'lambd' must be non-negative, but it is " + std::to_string(lambd_));
    }
    template <typename T>
    T operator()(T x) const {
        const double v = static_cast<double>(x);
        return v < -lambd_ ? static_cast<T>(v + bias_) : v > lambd_ ? static_cast<T>(v - bias_) : T(0);
    }
    double lambd_, bias_;
};

// com.microsoft.QuickGelu: x * sigmoid(alpha * x).
struct QuickGeluOp : FloatInDouble {
    explicit QuickGeluOp(const NodeInfo& node) : alpha_(node.attr_float("alpha", 1.702f)) {}
    template <typename T>
    T operator()(T x) const {
        const double v = x;
        const double a = alpha_ * v;
        const double sigmoid = a >= 0 ? 1 / (1 + std::exp(-a)) : std::exp(a) / (1 + std::exp(a));
        return static_cast<T>(v * sigmoid);
    }
    double alpha_;
};

// The tanh approximation of GELU, as com.microsoft.FastGelu computes it.
double fast_gelu(double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / kPi) * (v + 0.044715 * v * v * v)));
}
double erf_gelu(double v) {
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
}

// A 1-D bias of the last dimension's size, added along that dimension (the contrib operators' bias).
void require_last_dim_bias(const NodeInfo& node, const Tensor& x, const Tensor& bias, const char* what) {
    if (x.rank() == 0 || bias.rank() != 1 || bias.shape()[0] != x.shape().back())
        node.fail(fmt::format("{} must be 1-D with the size of the input's last dimension ({}), but it has shape {}",
                              what, x.rank() == 0 ? 0 : x.shape().back(), shape_to_string(bias.shape())));
    if (bias.dtype() != x.dtype())
        node.fail(fmt::format("{} is {}, but the input is {}", what, dtype_name(bias.dtype()), dtype_name(x.dtype())));
}

void require_float(const NodeInfo& node, const Tensor& x) {
    if (!dtype_is_floating(x.dtype()) || x.dtype() == DataType::kFloat8E4M3FN || x.dtype() == DataType::kFloat8E5M2)
        unsupported_dtype(node, x.dtype());
}

/// FastGelu (X, optional bias) and BiasGelu (A, B): the activation of the input plus a bias along
/// its last dimension. float32 runs in float32 through oneDNN's vectorized function of the same formula
/// (as ONNX Runtime's kernels compute in float32); the other types in double, rounded once.
class BiasedGeluKernel final : public Kernel {
public:
    BiasedGeluKernel(const NodeInfo&, double (*activation)(double), dnnl::algorithm algorithm, bool bias_required)
        : activation_(activation), eltwise_(algorithm), bias_required_(bias_required) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x0 = ctx.required_input(0);
        require_float(node, x0);
        const Tensor* bias0 = bias_required_ ? &ctx.required_input(1) : ctx.input(1);
        if (bias0 && !bias0->defined()) bias0 = nullptr;
        if (bias0) require_last_dim_bias(node, x0, *bias0, "the bias");
        if (x0.dtype() == DataType::kFloat32 && run_float32(ctx, x0, bias0)) return;
        const Tensor x = x0.cast(DataType::kFloat64);
        const Tensor bias = bias0 ? bias0->cast(DataType::kFloat64) : Tensor();
        Tensor y = Tensor::uninitialized(DataType::kFloat64, x.shape());
        const double* in = x.data_as<double>();
        const double* b = bias0 ? bias.data_as<double>() : nullptr;
        double* out = y.data_as<double>();
        const int64_t n = x.numel();
        const int64_t width = x.rank() == 0 ? 1 : x.shape().back();
        for_each_index(n, n >= kParallelThreshold, ctx.num_threads(),
                       [&](int64_t i) { out[i] = activation_(b ? in[i] + b[i % width] : in[i]); });
        ctx.set_output(0, y.cast(x0.dtype()));
    }

private:
    // y = f(x + bias) in float32; false (nothing set) when oneDNN has no kernel for f here.
    bool run_float32(KernelContext& ctx, const Tensor& x, const Tensor* bias) const {
        Tensor y = ctx.output_buffer(0, DataType::kFloat32, x.shape());
        const float* in = x.data_as<float>();
        float* out = y.data_as<float>();
        const int64_t n = x.numel();
        if (bias != nullptr) {
            const float* b = bias->data_as<float>();
            const int64_t width = x.rank() == 0 ? 1 : x.shape().back();
            for (int64_t row = 0; row < n; row += width)
                for (int64_t j = 0; j < width; ++j) out[row + j] = in[row + j] + b[j];
            in = out;
        }
        if (!eltwise_.run(in, out, n, ctx.num_threads())) return false;
        ctx.set_output(0, std::move(y));
        return true;
    }

    double (*activation_)(double);
    onednn::Eltwise eltwise_;
    bool bias_required_;
};

/// PRelu: slope broadcasts to X (unidirectionally). Before opset 7 a 1-D slope of C values applies
/// to the channel axis 1.
class PReluKernel final : public Kernel {
public:
    explicit PReluKernel(const NodeInfo&) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x0 = ctx.required_input(0);
        const Tensor& slope0 = ctx.required_input(1);
        require_same_dtype(node, x0, slope0, "X and slope");
        Shape slope_shape = slope0.shape();
        if (node.opset() < 7 && slope_shape.size() == 1 && x0.rank() > 2 && slope_shape[0] == x0.shape()[1] &&
            slope_shape[0] != 1) {
            slope_shape.assign(static_cast<std::size_t>(x0.rank() - 1), 1);
            slope_shape[0] = x0.shape()[1];
        }
        const Shape out = broadcast_shapes(node, {x0.shape(), slope_shape});
        if (out != x0.shape())
            node.fail(fmt::format("slope of shape {} cannot be broadcast to X of shape {}",
                                  shape_to_string(slope0.shape()), shape_to_string(x0.shape())));
        const Tensor x = widen_half(x0), slope = widen_half(slope0);
        dispatch_dtype(node, x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (kIsSignedNumeric<T>) {
                Tensor y = Tensor::uninitialized(x.dtype(), out);
                broadcast_binary(
                    out, x.shape(), slope_shape, x.data_as<T>(), slope.data_as<T>(), y.data_as<T>(),
                    [](T v, T s) { return v < T(0) ? wrap_mul(s, v) : v; }, ctx.num_threads());
                ctx.set_output(0, narrow_if_half(std::move(y), x0.dtype()));
            } else {
                unsupported_dtype(node, x0.dtype());
            }
        });
    }
};

class ClipKernel final : public Kernel {
public:
    explicit ClipKernel(const NodeInfo& node) : from_inputs_(node.opset() >= 11) {
        if (!from_inputs_) {
            // Opsets 1-10: attributes, defaulting to the float range (so +-inf are clipped to it).
            min_ = node.attr_float("min", std::numeric_limits<float>::lowest());
            max_ = node.attr_float("max", std::numeric_limits<float>::max());
        }
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x0 = ctx.required_input(0);
        const Tensor x = widen_half(x0);
        Tensor bounds[2];
        if (from_inputs_) {
            for (std::size_t i = 1; i <= 2; ++i) {
                const Tensor* bound = ctx.input(i);
                if (!bound || !bound->defined()) continue;
                const char* what = i == 1 ? "min" : "max";
                require_scalar(node, *bound, what);
                require_same_dtype(node, x0, *bound, fmt::format("input and {}", what));
                bounds[i - 1] = widen_half(*bound);
            }
        }
        dispatch_dtype(node, x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (kIsNumeric<T>) {
                T lo = kIsFloat<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
                T hi = kIsFloat<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
                if (!from_inputs_) {
                    if constexpr (!kIsFloat<T>) unsupported_dtype(node, x0.dtype());
                    lo = static_cast<T>(min_);
                    hi = static_cast<T>(max_);
                }
                if (bounds[0].defined()) lo = bounds[0].data_as<T>()[0];
                if (bounds[1].defined()) hi = bounds[1].data_as<T>()[0];
                Tensor y = Tensor::uninitialized(x.dtype(), x.shape());
                const T* in = x.data_as<T>();
                T* out = y.data_as<T>();
                const int64_t n = x.numel();
                const int threads = ctx.num_threads();
                for_each_index(n, n >= kParallelThreshold, threads, [&](int64_t i) {
                    T v = in[i] < lo ? lo : in[i];  // NaN stays NaN; min > max gives max
                    out[i] = v > hi ? hi : v;
                });
                ctx.set_output(0, narrow_if_half(std::move(y), x0.dtype()));
            } else {
                unsupported_dtype(node, x0.dtype());
            }
        });
    }

private:
    bool from_inputs_;
    float min_ = 0, max_ = 0;
};

}  // namespace

void register_activation_ops(OpRegistry& registry) {
    registry.add("", "Relu", 1, kMaxOpset, make_factory<UnaryKernel<ReluOp>>());
    registry.add("", "LeakyRelu", 1, kMaxOpset, make_factory<UnaryKernel<LeakyReluOp>>());
    registry.add("", "PRelu", 1, kMaxOpset, make_factory<PReluKernel>());
    registry.add("", "Elu", 1, kMaxOpset, make_factory<UnaryKernel<EluOp>>());
    registry.add("", "Selu", 1, kMaxOpset, make_factory<UnaryKernel<SeluOp>>());
    registry.add("", "Celu", 12, kMaxOpset, make_factory<UnaryKernel<CeluOp>>());
    registry.add("", "Gelu", 20, kMaxOpset, make_factory<UnaryKernel<GeluOp>>());
    registry.add("", "Mish", 18, kMaxOpset, make_factory<UnaryKernel<MishOp>>());
    registry.add("", "ThresholdedRelu", 10, kMaxOpset, make_factory<UnaryKernel<ThresholdedReluOp>>());
    registry.add("", "Sigmoid", 1, kMaxOpset, make_factory<UnaryKernel<SigmoidOp>>());
    registry.add("", "HardSigmoid", 1, kMaxOpset, make_factory<UnaryKernel<HardSigmoidOp>>());
    registry.add("", "HardSwish", 14, kMaxOpset, make_factory<UnaryKernel<HardSwishOp>>());
    registry.add("", "Softplus", 1, kMaxOpset, make_factory<UnaryKernel<SoftplusOp>>());
    registry.add("", "Softsign", 1, kMaxOpset, make_factory<UnaryKernel<SoftsignOp>>());
    registry.add("", "Tanh", 1, kMaxOpset, make_factory<UnaryKernel<TanhOp>>());
    registry.add("", "Shrink", 9, kMaxOpset, make_factory<UnaryKernel<ShrinkOp>>());
    registry.add("", "Clip", 1, kMaxOpset, make_factory<ClipKernel>());

    registry.add(kMicrosoftDomain, "Gelu", 1, kMaxOpset, make_factory<UnaryKernel<GeluOp>>());
    registry.add(kMicrosoftDomain, "QuickGelu", 1, kMaxOpset, make_factory<UnaryKernel<QuickGeluOp>>());
    registry.add(kMicrosoftDomain, "FastGelu", 1, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<BiasedGeluKernel>(node, fast_gelu, dnnl::algorithm::eltwise_gelu_tanh, false);
    });
    registry.add(kMicrosoftDomain, "BiasGelu", 1, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<BiasedGeluKernel>(node, erf_gelu, dnnl::algorithm::eltwise_gelu_erf, true);
    });
}

}  // namespace polygraphy::ref
