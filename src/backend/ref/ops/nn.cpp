// Softmax, LogSoftmax, Hardmax, Dropout and the normalizations: BatchNormalization (inference),
// LayerNormalization (also at opsets 1-16 and SimplifiedLayerNormalization, which ONNX Runtime
// registers in the default domain), com.microsoft Skip(Simplified)LayerNormalization,
// InstanceNormalization, GroupNormalization, LRN, MeanVarianceNormalization, LpNormalization.
// float32 Softmax/LogSoftmax use oneDNN (vectorized exp); statistics accumulate in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

const char* const kFloatTypes = "float32, float64, float16, bfloat16";

void require_float(const NodeInfo& node, const Tensor& tensor, const char* what) {
    if (!is_float_type(tensor.dtype())) onednn::fail_dtype(node, what, tensor.dtype(), kFloatTypes);
}

/// Normalizes attribute `name` into [0, rank); fails naming the attribute and the allowed range.
int64_t normalize_axis_attr(const NodeInfo& node, int64_t axis, int64_t rank, const char* name = "axis") {
    if (axis < -rank || axis >= rank) {
        node.fail(std::string("attribute '") + name + "' is out of range for an input of rank " + std::to_string(rank) +
                  "\nNote: " + name + " = " + std::to_string(axis) + ", allowed [" + std::to_string(-rank) + ", " +
                  std::to_string(rank - 1) + "]");
    }
    return axis < 0 ? axis + rank : axis;
}

/// Runs `body(T{}, xt, yt)` in the type T the operator computes in and gives the result in x's dtype:
/// float64 and float32 directly (T is double or float), float16/bfloat16 through a float32 copy.
/// yt starts uninitialized: `body` writes every element.
template <typename Body>
void in_compute_type(KernelContext& context, const Tensor& x, const Shape& out_shape, Body&& body) {
    if (x.dtype() == DataType::kFloat64 || x.dtype() == DataType::kFloat32) {
        Tensor& y = context.allocate_uninitialized_output(0, x.dtype(), out_shape);
        if (x.dtype() == DataType::kFloat64)
            body(double{}, x, y);
        else
            body(float{}, x, y);
        return;
    }
    const Tensor x32 = x.cast(DataType::kFloat32);
    Tensor y32 = Tensor::uninitialized(DataType::kFloat32, out_shape);
    body(float{}, x32, y32);
    context.set_output(0, y32.cast(x.dtype()));
}

// ---- Softmax / LogSoftmax / Hardmax --------------------------------------------------------------------

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

/// The softmax problem as [outer, length, inner]: normalize over `length` with elements `inner` apart.
struct SoftmaxView {
    int64_t outer;
    int64_t length;
    int64_t inner;
};

template <typename T>
void softmax_loop(SoftmaxKind kind, const SoftmaxView& v, const T* x, T* y, int threads) {
    onednn::parallel_for(v.outer * v.inner, threads, v.length * 8, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            const int64_t base = (row / v.inner) * v.length * v.inner + row % v.inner;
            const T* xr = x + base;
            T* yr = y + base;
            if (kind == SoftmaxKind::kHardmax) {
                int64_t best = 0;
                for (int64_t i = 1; i < v.length; ++i) {
                    if (xr[i * v.inner] > xr[best * v.inner]) best = i;
                }
                for (int64_t i = 0; i < v.length; ++i) yr[i * v.inner] = static_cast<T>(i == best ? 1 : 0);
                continue;
            }
            double max_value = -std::numeric_limits<double>::infinity();
            for (int64_t i = 0; i < v.length; ++i) max_value = std::max(max_value, static_cast<double>(xr[i * v.inner]));
            double sum = 0;
            for (int64_t i = 0; i < v.length; ++i) sum += std::exp(static_cast<double>(xr[i * v.inner]) - max_value);
            const double log_sum = std::log(sum);
            for (int64_t i = 0; i < v.length; ++i) {
                const double shifted = static_cast<double>(xr[i * v.inner]) - max_value;
                yr[i * v.inner] = static_cast<T>(kind == SoftmaxKind::kSoftmax ? std::exp(shifted) / sum : shifted - log_sum);
            }
        }
    });
}

struct DnnlSoftmaxPlan {
    dnnl::softmax_v2_forward primitive;
    dnnl::memory::desc desc;
};

class SoftmaxKernel final : public Kernel {
public:
    SoftmaxKernel(const NodeInfo& node, SoftmaxKind kind) : kind_(kind), legacy_(node.opset() < 13) {
        axis_ = node.attr_int("axis", legacy_ ? 1 : -1);
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        require_float(node, x, "input");
        const Shape& shape = x.shape();
        const int64_t rank = x.rank();
        if (rank == 0) node.fail("input must have rank >= 1");
        const int64_t axis = normalize_axis_attr(node, axis_, rank);
        SoftmaxView view;
        view.outer = product(shape, 0, static_cast<std::size_t>(axis));
        if (legacy_) {
            // Opset < 13: the input is coerced to 2-D [outer, rest] and normalized over `rest`.
            view.length = product(shape, static_cast<std::size_t>(axis), shape.size());
            view.inner = 1;
        } else {
            view.length = shape[static_cast<std::size_t>(axis)];
            view.inner = product(shape, static_cast<std::size_t>(axis) + 1, shape.size());
        }
        const int threads = context.num_threads();
        if (x.numel() == 0) {
            context.allocate_output(0, x.dtype(), shape);
            return;
        }
        in_compute_type(context, x, shape, [&](auto type, const Tensor& xt, Tensor& yt) {
            using T = decltype(type);
            if constexpr (std::is_same_v<T, float>)
                if (kind_ != SoftmaxKind::kHardmax && run_dnnl(view, xt, yt, threads)) return;
            softmax_loop<T>(kind_, view, xt.data_as<T>(), yt.data_as<T>(), threads);
        });
    }

private:
    bool run_dnnl(const SoftmaxView& view, const Tensor& x, Tensor& y, int threads) const {
        threads = onednn::resolve_threads(threads);
        onednn::ThreadScope scope(threads);
        auto plan = cache_.get({view.outer, view.length, view.inner, threads}, [&]() -> std::shared_ptr<const DnnlSoftmaxPlan> {
            auto plan = std::make_shared<DnnlSoftmaxPlan>();
            plan->desc = view.inner == 1 ? onednn::plain_desc({view.outer, view.length})
                                         : onednn::plain_desc({view.outer, view.length, view.inner});
            try {
                const auto algorithm = kind_ == SoftmaxKind::kSoftmax ? dnnl::algorithm::softmax_accurate
                                                                      : dnnl::algorithm::softmax_log;
                dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, plan->desc, plan->desc, 1);
                plan->primitive = dnnl::softmax_v2_forward(dnnl::softmax_v2_forward::primitive_desc(desc, onednn::cpu_engine()));
            } catch (const dnnl::error&) {
                return nullptr;
            }
            return plan;
        });
        if (plan == nullptr) return false;
        onednn::execute(plan->primitive, {{DNNL_ARG_SRC, onednn::wrap_memory(plan->desc, x.data())},
                                          {DNNL_ARG_DST, onednn::wrap_memory(plan->desc, y.data())}});
        return true;
    }

    SoftmaxKind kind_;
    bool legacy_;
    int64_t axis_;
    onednn::PrimitiveCache<DnnlSoftmaxPlan> cache_;
};

// ---- per-channel helpers -------------------------------------------------------------------------------

/// A parameter tensor as float64 values, checked to have `count` elements.
std::vector<double> read_param(const NodeInfo& node, const Tensor& tensor, const char* name, int64_t count,
                               const std::string& expected) {
    if (!is_float_type(tensor.dtype())) onednn::fail_dtype(node, std::string("input ") + name, tensor.dtype(), kFloatTypes);
    if (tensor.numel() != count) {
        node.fail(std::string("input ") + name + " must have " + expected + " (" + std::to_string(count) +
                  " values)\nNote: " + name + " shape = " + shape_to_string(tensor.shape()));
    }
    const Tensor values = tensor.cast(DataType::kFloat64);
    return std::vector<double>(values.data_as<double>(), values.data_as<double>() + count);
}

/// y = x * a[channel] + b[channel] for x viewed as [outer, channels, inner].
template <typename T>
void channel_affine(const T* x, T* y, int64_t outer, int64_t channels, int64_t inner, const std::vector<double>& a,
                    const std::vector<double>& b, int threads) {
    onednn::parallel_for(outer * channels, threads, inner, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            const std::size_t c = static_cast<std::size_t>(row % channels);
            const T scale = static_cast<T>(a[c]);
            const T shift = static_cast<T>(b[c]);
            const T* xr = x + row * inner;
            T* yr = y + row * inner;
            for (int64_t i = 0; i < inner; ++i) yr[i] = xr[i] * scale + shift;
        }
    });
}

/// Mean and 1/sqrt(var + epsilon) of `count` contiguous values (two passes in double).
template <typename T>
std::pair<double, double> moments(const T* x, int64_t count, double epsilon) {
    if (count == 0) return {0.0, 1.0 / std::sqrt(epsilon)};
    const double mean = onednn::lane_sum(x, count) / static_cast<double>(count);
    const double squares = onednn::lane_fold<double>(
        x, count, 0.0,
        [mean](T v) {
            const double d = static_cast<double>(v) - mean;
            return d * d;
        },
        [](double a, double b) { return a + b; });
    return {mean, 1.0 / std::sqrt(squares / static_cast<double>(count) + epsilon)};
}

// ---- BatchNormalization -------------------------------------------------------------------------------

class BatchNormKernel final : public Kernel {
public:
    explicit BatchNormKernel(const NodeInfo& node) {
        epsilon_ = node.attr_float("epsilon", 1e-5f);
        if (node.opset() >= 14) {
            const int64_t training = node.attr_int("training_mode", 0);
            if (training != 0 && training != 1)
                node.fail("attribute 'training_mode' must be 0 or 1\nNote: training_mode = " + std::to_string(training));
            training_ = training == 1;
            momentum_ = node.attr_float("momentum", 0.9f);
        }
        if (node.opset() < 9) {
            const int64_t spatial = node.attr_int("spatial", 1);
            if (spatial != 0 && spatial != 1) node.fail("attribute 'spatial' must be 0 or 1\nNote: spatial = " + std::to_string(spatial));
            spatial_ = spatial == 1;
        }
        const auto& outputs = node.proto().output();
        for (int i = 1; i < outputs.size() && !training_; ++i) {
            if (!outputs[i].empty()) {
                throw UnsupportedError("Node '" + node.name() +
                                       "' (BatchNormalization): only inference is supported, but output " +
                                       std::to_string(i) + " ('" + outputs[i] + "') of training mode is requested");
            }
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        require_float(node, x, "input X");
        if (x.rank() < 1) node.fail("input X must have rank >= 1");
        const Shape& shape = x.shape();
        const int64_t outer = shape[0];
        const int64_t channels = spatial_ ? (x.rank() > 1 ? shape[1] : 1) : product(shape, 1, shape.size());
        const int64_t inner = spatial_ ? (x.rank() > 2 ? product(shape, 2, shape.size()) : 1) : 1;
        const std::string expected = spatial_ ? "one value per channel" : "the shape of X without N";
        const auto scale = read_param(node, context.required_input(1), "scale", channels, expected);
        const auto bias = read_param(node, context.required_input(2), "B", channels, expected);
        const auto mean = read_param(node, context.required_input(3), "input_mean", channels, expected);
        const auto var = read_param(node, context.required_input(4), "input_var", channels, expected);
        if (training_) {
            compute_training(context, x, outer, channels, inner, scale, bias, mean, var);
            return;
        }
        std::vector<double> a(static_cast<std::size_t>(channels));
        std::vector<double> b(static_cast<std::size_t>(channels));
        for (std::size_t c = 0; c < a.size(); ++c) {
            a[c] = scale[c] / std::sqrt(var[c] + static_cast<double>(epsilon_));
            b[c] = bias[c] - mean[c] * a[c];
        }
        const int threads = context.num_threads();
        in_compute_type(context, x, shape, [&](auto type, const Tensor& xt, Tensor& yt) {
            using T = decltype(type);
            channel_affine<T>(xt.data_as<T>(), yt.data_as<T>(), outer, channels, inner, a, b, threads);
        });
    }

private:
    // Training mode (opset 14+): normalizes with the batch statistics (population variance) and
    // outputs the running statistics blended with `momentum`.
    template <typename Values>
    void compute_training(KernelContext& context, const Tensor& x, int64_t outer, int64_t channels, int64_t inner,
                          const Values& scale, const Values& bias, const Values& mean, const Values& var) const {
        const Tensor xd = x.cast(DataType::kFloat64);
        const double* in = xd.data_as<double>();
        const double count = static_cast<double>(outer * inner);
        std::vector<double> batch_mean(static_cast<std::size_t>(channels), 0.0), batch_var(batch_mean);
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t i = 0; i < inner; ++i) batch_mean[c] += in[(o * channels + c) * inner + i];
        for (double& m : batch_mean) m /= count;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t i = 0; i < inner; ++i) {
                    const double d = in[(o * channels + c) * inner + i] - batch_mean[c];
                    batch_var[c] += d * d;
                }
        for (double& v : batch_var) v /= count;
        Tensor y(DataType::kFloat64, x.shape());
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t c = 0; c < channels; ++c) {
                const double a = scale[c] / std::sqrt(batch_var[c] + static_cast<double>(epsilon_));
                for (int64_t i = 0; i < inner; ++i) {
                    const int64_t k = (o * channels + c) * inner + i;
                    y.data_as<double>()[k] = (in[k] - batch_mean[c]) * a + bias[c];
                }
            }
        context.set_output(0, y.cast(x.dtype()));
        const double m = momentum_;
        const DataType stats_type = context.required_input(3).dtype();
        for (std::size_t output = 1; output < 3 && output < context.num_outputs(); ++output) {
            Tensor running(DataType::kFloat64, {channels});
            for (int64_t c = 0; c < channels; ++c)
                running.data_as<double>()[c] = output == 1 ? mean[c] * m + batch_mean[c] * (1 - m)
                                                           : var[c] * m + batch_var[c] * (1 - m);
            context.set_output(output, running.cast(stats_type));
        }
    }

    float epsilon_ = 1e-5f;
    float momentum_ = 0.9f;
    bool training_ = false;
    bool spatial_ = true;
};

// ---- LayerNormalization -------------------------------------------------------------------------------

/// `param` broadcast (numpy, unidirectional) to `shape`, as float64 values.
std::vector<double> broadcast_param(const NodeInfo& node, const Tensor& param, const Shape& shape, const char* name) {
    if (!is_float_type(param.dtype())) onednn::fail_dtype(node, std::string("input ") + name, param.dtype(), kFloatTypes);
    std::optional<std::vector<double>> values = unidirectional_broadcast_values(param, shape);
    if (!values) {
        node.fail(std::string("input ") + name + " cannot be broadcast to the normalized shape " +
                  shape_to_string(shape) + "\nNote: " + name + " shape = " + shape_to_string(param.shape()));
    }
    return std::move(*values);
}

/// The normalizations compute in float32 only: any other 'stash_type' is unsupported.
void require_float32_stash(const NodeInfo& node) {
    const int64_t stash = node.attr_int("stash_type", 1);
    if (stash != 1) {
        throw UnsupportedError("Node '" + node.name() + "' (" + node.op_type() +
                               "): attribute 'stash_type' must be 1 (float32)\nNote: stash_type = " + std::to_string(stash));
    }
}

class LayerNormKernel final : public Kernel {
public:
    explicit LayerNormKernel(const NodeInfo& node) {
        axis_ = node.attr_int("axis", -1);
        epsilon_ = node.attr_float("epsilon", 1e-5f);
        require_float32_stash(node);
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        require_float(node, x, "input X");
        const Shape& shape = x.shape();
        if (x.rank() == 0) node.fail("input X must have rank >= 1");
        const int64_t axis = normalize_axis_attr(node, axis_, x.rank());
        const Shape normalized(shape.begin() + axis, shape.end());
        const int64_t rows = product(shape, 0, static_cast<std::size_t>(axis));
        const int64_t length = shape_volume(normalized);
        const auto scale = broadcast_param(node, context.required_input(1), normalized, "Scale");
        const Tensor* b = context.input(2);
        const auto bias = (b != nullptr && b->defined()) ? broadcast_param(node, *b, normalized, "B")
                                                         : std::vector<double>(static_cast<std::size_t>(length), 0.0);
        Shape stat_shape = shape;
        for (std::size_t d = static_cast<std::size_t>(axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
        float* mean_out = nullptr;
        float* inv_out = nullptr;
        if (context.num_outputs() > 1 && !node.proto().output(1).empty()) {
            mean_out = context.allocate_output(1, DataType::kFloat32, stat_shape).data_as<float>();
        }
        if (context.num_outputs() > 2 && !node.proto().output(2).empty()) {
            inv_out = context.allocate_output(2, DataType::kFloat32, stat_shape).data_as<float>();
        }
        const int threads = context.num_threads();
        const double epsilon = static_cast<double>(epsilon_);
        auto run = [&](auto tag, const Tensor& xt, Tensor& yt) {
            using T = decltype(tag);
            const T* xp = xt.template data_as<T>();
            T* yp = yt.template data_as<T>();
            const std::vector<T> scale_t(scale.begin(), scale.end());
            const std::vector<T> bias_t(bias.begin(), bias.end());
            onednn::parallel_for(rows, threads, length * 4, [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                    const auto [mean, inv] = moments(xp + r * length, length, epsilon);
                    if (mean_out != nullptr) mean_out[r] = static_cast<float>(mean);
                    if (inv_out != nullptr) inv_out[r] = static_cast<float>(inv);
                    // y = x * (inv * scale) + (bias - mean * inv * scale), in T.
                    const T* xr = xp + r * length;
                    T* yr = yp + r * length;
                    const T* sc = scale_t.data();
                    const T* bi = bias_t.data();
                    const T inv_t = static_cast<T>(inv);
                    const T mean_t = static_cast<T>(mean);
                    for (int64_t i = 0; i < length; ++i) yr[i] = (xr[i] - mean_t) * inv_t * sc[i] + bi[i];
                }
            });
        };
        in_compute_type(context, x, shape, run);
    }

private:
    int64_t axis_ = -1;
    float epsilon_ = 1e-5f;
};

// ---- ONNX Runtime's normalizations: SimplifiedLayerNormalization, (Skip)(Simplified)LayerNormalization --

/// SimplifiedLayerNormalization (RMSNorm, in ONNX Runtime's registration of the default domain):
/// Y = X / sqrt(mean(X^2) + epsilon) * scale over the dimensions from `axis` on, in double, rounded
/// once to X's type; the optional output inv_std_var (float32, X's shape with those dimensions 1).
class SimplifiedLayerNormKernel final : public Kernel {
public:
    explicit SimplifiedLayerNormKernel(const NodeInfo& node)
        : axis_(node.attr_int("axis", -1)), epsilon_(node.attr_float("epsilon", 1e-5f)) {
        require_float32_stash(node);
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        require_float(node, x, "input X");
        if (x.rank() == 0) node.fail("input X must have rank >= 1");
        const int64_t axis = normalize_axis_attr(node, axis_, x.rank());
        const Shape normalized(x.shape().begin() + axis, x.shape().end());
        const int64_t rows = product(x.shape(), 0, static_cast<std::size_t>(axis));
        const int64_t length = shape_volume(normalized);
        const std::vector<double> scale = broadcast_param(node, context.required_input(1), normalized, "scale");
        Shape stat_shape = x.shape();
        for (std::size_t d = static_cast<std::size_t>(axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
        float* inv_out = nullptr;
        if (context.num_outputs() > 1 && !node.proto().output(1).empty())
            inv_out = context.allocate_output(1, DataType::kFloat32, stat_shape).data_as<float>();
        const Tensor x64 = x.cast(DataType::kFloat64);
        Tensor y = Tensor::uninitialized(DataType::kFloat64, x.shape());
        const double* xp = x64.data_as<double>();
        double* yp = y.data_as<double>();
        onednn::parallel_for(rows, context.num_threads(), length * 4, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                const double* row = xp + r * length;
                double squares = 0;
                for (int64_t i = 0; i < length; ++i) squares += row[i] * row[i];
                const double inv = 1 / std::sqrt(squares / static_cast<double>(length) + epsilon_);
                if (inv_out) inv_out[r] = static_cast<float>(inv);
                for (int64_t i = 0; i < length; ++i) yp[r * length + i] = row[i] * inv * scale[i];
            }
        });
        context.set_output(0, y.cast(x.dtype()));
    }

private:
    int64_t axis_;
    double epsilon_;
};

/// com.microsoft SkipLayerNormalization (input, skip, gamma, beta?, bias?) and
/// SkipSimplifiedLayerNormalization: s = input + skip (+ bias), normalized over the last dimension
/// (as LayerNormalization, or as RMSNorm when simplified), times gamma (+ beta); output 3 is s. skip
/// may have fewer elements than input, repeating (ONNX Runtime reads it modulo its size). As in ONNX
/// Runtime's CPU kernel, outputs 1 and 2 (mean, inv_std_var) are not written: a node that names
/// them is refused.
class SkipLayerNormKernel final : public Kernel {
public:
    SkipLayerNormKernel(const NodeInfo& node, bool simplified)
        : simplified_(simplified), epsilon_(node.attr_float("epsilon", 1e-12f)) {
        if (epsilon_ < 0) node.fail(fmt::format("attribute 'epsilon' must not be negative, but it is {}", epsilon_));
        const auto& outputs = node.proto().output();
        for (int i : {1, 2})
            if (outputs.size() > i && !outputs.Get(i).empty())
                throw UnsupportedError(fmt::format(
                    "Node '{}' ({}): output {} ({}) is not computed; ONNX Runtime's CPU kernel does not write it "
                    "either",
                    node.name(), node.op_type(), i, i == 1 ? "mean" : "inv_std_var"));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& input = context.required_input(0);
        require_float(node, input, "input");
        if (input.rank() < 2 || input.rank() > 3)
            node.fail(fmt::format("input must have rank 2 or 3, but it has shape {}", shape_to_string(input.shape())));
        const int64_t hidden = input.shape().back();
        const Tensor& skip0 = context.required_input(1);
        if (skip0.dtype() != input.dtype() || skip0.numel() == 0 || skip0.shape().back() != hidden ||
            input.numel() % skip0.numel() != 0)
            node.fail(
                fmt::format("skip ({} of shape {}) must have the input's type and last dimension, and a size "
                            "that divides the input's ({} of shape {})",
                            dtype_name(skip0.dtype()), shape_to_string(skip0.shape()), dtype_name(input.dtype()),
                            shape_to_string(input.shape())));
        const auto vector_of = [&](std::size_t index, const char* name) -> std::vector<double> {
            const Tensor* t = context.input(index);
            if (!t || !t->defined()) return {};
            if (t->rank() != 1 || t->shape()[0] != hidden || t->dtype() != input.dtype())
                node.fail(fmt::format("{} must be a 1-D {} of the hidden size {}, but it is {} of shape {}", name,
                                      dtype_name(input.dtype()), hidden, dtype_name(t->dtype()),
                                      shape_to_string(t->shape())));
            const Tensor values = t->cast(DataType::kFloat64);
            return {values.data_as<double>(), values.data_as<double>() + hidden};
        };
        const std::vector<double> gamma = vector_of(2, "gamma");
        if (gamma.empty()) node.fail("input gamma is required");
        // The simplified form has no beta: its bias is input 3.
        const std::vector<double> beta = simplified_ ? std::vector<double>{} : vector_of(3, "beta");
        const std::vector<double> bias = vector_of(simplified_ ? 3 : 4, "bias");

        const Tensor x = input.cast(DataType::kFloat64), skip = skip0.cast(DataType::kFloat64);
        const double* xp = x.data_as<double>();
        const double* sp = skip.data_as<double>();
        const int64_t skip_size = skip.numel(), rows = input.numel() / hidden;
        Tensor y = Tensor::uninitialized(DataType::kFloat64, input.shape());
        Tensor sum = Tensor::uninitialized(DataType::kFloat64, input.shape());
        double* yp = y.data_as<double>();
        double* sum_p = sum.data_as<double>();
        onednn::parallel_for(rows, context.num_threads(), hidden * 4, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                double* row = sum_p + r * hidden;
                double mean = 0;
                for (int64_t h = 0; h < hidden; ++h) {
                    const int64_t i = r * hidden + h;
                    row[h] = xp[i] + sp[i % skip_size] + (bias.empty() ? 0.0 : bias[h]);
                    mean += row[h];
                }
                mean = simplified_ ? 0.0 : mean / static_cast<double>(hidden);
                double squares = 0;
                for (int64_t h = 0; h < hidden; ++h) squares += (row[h] - mean) * (row[h] - mean);
                const double inv = 1 / std::sqrt(squares / static_cast<double>(hidden) + epsilon_);
                for (int64_t h = 0; h < hidden; ++h)
                    yp[r * hidden + h] = (row[h] - mean) * inv * gamma[h] + (beta.empty() ? 0.0 : beta[h]);
            }
        });
        context.set_output(0, y.cast(input.dtype()));
        if (context.num_outputs() > 3 && !node.proto().output(3).empty())
            context.set_output(3, sum.cast(input.dtype()));
    }

private:
    bool simplified_;
    double epsilon_;
};

// ---- InstanceNormalization / GroupNormalization ---------------------------------------------------------

/// Normalizes x viewed as [N, groups, group_size] where each group holds `channels_per_group`
/// channels of `spatial` values; scale/bias are per channel.
template <typename T>
void group_normalize(const T* x, T* y, int64_t batch, int64_t groups, int64_t channels_per_group, int64_t spatial,
                     const std::vector<double>& scale, const std::vector<double>& bias, double epsilon, int threads) {
    const int64_t group_size = channels_per_group * spatial;
    onednn::parallel_for(batch * groups, threads, group_size * 4, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            const int64_t group = row % groups;
            const T* xr = x + row * group_size;
            T* yr = y + row * group_size;
            const auto [mean, inv] = moments(xr, group_size, epsilon);
            for (int64_t c = 0; c < channels_per_group; ++c) {
                const std::size_t channel = static_cast<std::size_t>(group * channels_per_group + c);
                const double a = inv * scale[channel];
                const double b = bias[channel] - mean * a;
                for (int64_t i = 0; i < spatial; ++i) {
                    yr[c * spatial + i] = static_cast<T>(static_cast<double>(xr[c * spatial + i]) * a + b);
                }
            }
        }
    });
}

class GroupNormKernel final : public Kernel {
public:
    /// Instance normalization is group normalization with one group per channel.
    GroupNormKernel(const NodeInfo& node, bool instance) : instance_(instance) {
        epsilon_ = node.attr_float("epsilon", 1e-5f);
        if (!instance_) {
            if (!node.has_attr("num_groups")) node.fail("attribute 'num_groups' is required");
            num_groups_ = node.attr_int("num_groups", 1);
            if (num_groups_ < 1) node.fail("attribute 'num_groups' must be >= 1\nNote: num_groups = " + std::to_string(num_groups_));
            require_float32_stash(node);
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        require_float(node, x, "input X");
        if (x.rank() < 2) node.fail("input X must have rank >= 2 (N, C, ...)\nNote: X shape = " + shape_to_string(x.shape()));
        const Shape& shape = x.shape();
        const int64_t batch = shape[0];
        const int64_t channels = shape[1];
        const int64_t spatial = product(shape, 2, shape.size());
        const int64_t groups = instance_ ? channels : num_groups_;
        if (channels % groups != 0) {
            node.fail("the channel count (" + std::to_string(channels) + ") is not divisible by attribute 'num_groups' (" +
                      std::to_string(groups) + ")");
        }
        const int64_t per_group = channels / groups;
        std::vector<double> scale;
        std::vector<double> bias;
        const Tensor& scale_t = context.required_input(1);
        const Tensor& bias_t = context.required_input(2);
        if (!instance_ && scale_t.numel() == groups && groups != channels) {
            // GroupNormalization-18: one scale/bias per group.
            const auto gs = read_param(node, scale_t, "scale", groups, "one value per group or per channel");
            const auto gb = read_param(node, bias_t, "bias", groups, "one value per group or per channel");
            for (int64_t c = 0; c < channels; ++c) {
                scale.push_back(gs[static_cast<std::size_t>(c / per_group)]);
                bias.push_back(gb[static_cast<std::size_t>(c / per_group)]);
            }
        } else {
            const std::string expected = instance_ ? "one value per channel" : "one value per group or per channel";
            scale = read_param(node, scale_t, "scale", channels, expected);
            bias = read_param(node, bias_t, instance_ ? "B" : "bias", channels, expected);
        }
        const int threads = context.num_threads();
        const double epsilon = static_cast<double>(epsilon_);
        in_compute_type(context, x, shape, [&](auto type, const Tensor& xt, Tensor& yt) {
            using T = decltype(type);
            group_normalize<T>(xt.data_as<T>(), yt.data_as<T>(), batch, groups, per_group, spatial, scale, bias,
                               epsilon, threads);
        });
    }

private:
    bool instance_;
    float epsilon_ = 1e-5f;
    int64_t num_groups_ = 1;
};

// ---- LRN ----------------------------------------------------------------------------------------------

class LrnKernel final : public Kernel {
public:
    explicit LrnKernel(const NodeInfo& node) {
        if (!node.has_attr("size")) node.fail("attribute 'size' is required");
        size_ = node.attr_int("size", 1);
        if (size_ < 1) node.fail("attribute 'size' must be >= 1\nNote: size = " + std::to_string(size_));
        alpha_ = node.attr_float("alpha", 1e-4f);
        beta_ = node.attr_float("beta", 0.75f);
        bias_ = node.attr_float("bias", 1.0f);
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        require_float(node, x, "input X");
        if (x.rank() < 2) node.fail("input X must have rank >= 2 (N, C, ...)\nNote: X shape = " + shape_to_string(x.shape()));
        const Shape& shape = x.shape();
        const int64_t batch = shape[0];
        const int64_t channels = shape[1];
        const int64_t spatial = product(shape, 2, shape.size());
        const int64_t before = (size_ - 1) / 2;  // floor((size - 1) / 2) channels before, ceil after
        const int64_t after = size_ - 1 - before;
        const double alpha_over_size = static_cast<double>(alpha_) / static_cast<double>(size_);
        auto run = [&](auto tag, const Tensor& xt, Tensor& yt) {
            using T = decltype(tag);
            const T* xp = xt.template data_as<T>();
            T* yp = yt.template data_as<T>();
            onednn::parallel_for(batch * channels, context.num_threads(), spatial * size_, [&](int64_t begin, int64_t end) {
                for (int64_t row = begin; row < end; ++row) {
                    const int64_t n = row / channels;
                    const int64_t c = row % channels;
                    const int64_t lo = std::max<int64_t>(0, c - before);
                    const int64_t hi = std::min<int64_t>(channels - 1, c + after);
                    for (int64_t i = 0; i < spatial; ++i) {
                        double square_sum = 0;
                        for (int64_t k = lo; k <= hi; ++k) {
                            const double v = static_cast<double>(xp[(n * channels + k) * spatial + i]);
                            square_sum += v * v;
                        }
                        const double denom = std::pow(static_cast<double>(bias_) + alpha_over_size * square_sum,
                                                      static_cast<double>(beta_));
                        yp[row * spatial + i] = static_cast<T>(static_cast<double>(xp[row * spatial + i]) / denom);
                    }
                }
            });
        };
        in_compute_type(context, x, shape, run);
    }

private:
    int64_t size_ = 1;
    float alpha_ = 1e-4f;
    float beta_ = 0.75f;
    float bias_ = 1.0f;
};

template <SoftmaxKind kKind>
KernelFactory softmax_factory() {
    return [](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<SoftmaxKernel>(node, kKind); };
}

// ---- MeanVarianceNormalization / LpNormalization (float types) -----------------------------------------

class MeanVarianceNormalizationKernel final : public Kernel {
public:
    explicit MeanVarianceNormalizationKernel(const NodeInfo& node) : axes_(node.attr_ints("axes", {0, 2, 3})) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x0 = ctx.required_input(0);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        const Tensor x = x0.cast(DataType::kFloat64);
        const std::vector<int64_t> axes = normalize_axes(node, axes_, x.rank());
        Shape group_shape = x.shape();
        for (int64_t axis : axes) group_shape[axis] = 1;
        const int64_t groups = shape_volume(group_shape);
        const int64_t per_group = groups > 0 ? x.numel() / groups : 0;
        std::vector<double> mean(groups, 0.0), variance(groups, 0.0);
        StridedLoop<1> loop(x.shape(), {broadcast_strides(group_shape, x.shape())});
        const double* in = x.data_as<double>();
        auto visit = [&](auto&& fn) {
            loop.for_each_row([&](const auto& off, int64_t out_offset, int64_t count, const auto& st) {
                for (int64_t i = 0; i < count; ++i) fn(out_offset + i, off[0] + i * st[0]);
            });
        };
        visit([&](int64_t i, int64_t g) { mean[g] += in[i]; });
        for (double& m : mean) m /= static_cast<double>(per_group);
        visit([&](int64_t i, int64_t g) { variance[g] += (in[i] - mean[g]) * (in[i] - mean[g]); });
        for (double& v : variance) v /= static_cast<double>(per_group);
        Tensor y(DataType::kFloat64, x.shape());
        double* out = y.data_as<double>();
        // ONNX's function body: (X - mean) / (sqrt(variance) + 1e-9).
        visit([&](int64_t i, int64_t g) { out[i] = (in[i] - mean[g]) / (std::sqrt(variance[g]) + 1e-9); });
        ctx.set_output(0, y.cast(x0.dtype()));
    }

private:
    std::vector<int64_t> axes_;
};

class LpNormalizationKernel final : public Kernel {
public:
    explicit LpNormalizationKernel(const NodeInfo& node) : axis_(node.attr_int("axis", -1)), p_(node.attr_int("p", 2)) {
        if (p_ != 1 && p_ != 2) node.fail(fmt::format("attribute 'p' must be 1 or 2, got {}", p_));
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x0 = ctx.required_input(0);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        const Tensor x = x0.cast(DataType::kFloat64);
        Tensor y(DataType::kFloat64, x.shape());
        if (x.numel() > 0) {
            const int64_t axis = normalize_axis(node, axis_, x.rank());
            int64_t outer = 1, inner = 1;
            for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
            for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
            const int64_t length = x.shape()[axis];
            const double* in = x.data_as<double>();
            double* out = y.data_as<double>();
            for (int64_t o = 0; o < outer; ++o) {
                for (int64_t i = 0; i < inner; ++i) {
                    const int64_t base = o * length * inner + i;
                    double norm = 0;
                    for (int64_t k = 0; k < length; ++k) {
                        const double v = in[base + k * inner];
                        norm += p_ == 1 ? std::abs(v) : v * v;
                    }
                    if (p_ == 2) norm = std::sqrt(norm);
                    for (int64_t k = 0; k < length; ++k)
                        out[base + k * inner] = norm == 0.0 ? 0.0 : in[base + k * inner] / norm;
                }
            }
        }
        ctx.set_output(0, y.cast(x0.dtype()));
    }

private:
    int64_t axis_, p_;
};

// ---- Dropout ------------------------------------------------------------------------------------------

/// Inference-mode Dropout: the output is the input; the optional mask is all ones.
class DropoutKernel final : public Kernel {
public:
    explicit DropoutKernel(const NodeInfo& node) {
        if (node.opset() < 12) {
            const float ratio = node.attr_float("ratio", 0.5f);
            if (ratio < 0.0f || ratio >= 1.0f)
                node.fail(fmt::format("attribute 'ratio' must be in [0, 1), got {}", ratio));
        }
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& x = ctx.required_input(0);
        if (node.opset() >= 12) {
            if (const Tensor* training = ctx.input(2); training && training->defined()) {
                require_scalar(node, *training, "training_mode");
                if (training->value_as_double(0) != 0.0) {
                    const Tensor* ratio = ctx.input(1);
                    const double value = ratio && ratio->defined() ? ratio->value_as_double(0) : 0.5;
                    if (value < 0.0 || value >= 1.0) node.fail(fmt::format("ratio must be in [0, 1), got {}", value));
                    if (value != 0.0) {
                        train(ctx, x, value);
                        return;
                    }
                }
            }
        }
        ctx.set_output(0, x);
        if (ctx.num_outputs() > 1) {
            // The mask is bool from opset 10, the input's type before.
            Tensor& mask = ctx.allocate_output(1, node.opset() >= 10 ? DataType::kBool : x.dtype(), x.shape());
            if (mask.dtype() == DataType::kBool) {
                std::fill_n(mask.data_as<bool>(), mask.numel(), true);
            } else {
                mask = Tensor::from_doubles(mask.dtype(), x.shape(), std::vector<double>(x.numel(), 1.0));
            }
        }
    }

private:
    // Training mode: each element is kept with probability 1 - ratio and scaled by 1 / (1 - ratio).
    // The 'seed' attribute makes runs repeat (std::mt19937_64); values cannot match other runtimes.
    static void train(KernelContext& ctx, const Tensor& x, double ratio) {
        const NodeInfo& node = ctx.node();
        if (!dtype_is_floating(x.dtype())) unsupported_dtype(node, x.dtype());
        std::mt19937_64 generator;
        if (node.has_attr("seed")) {
            generator.seed(static_cast<uint64_t>(node.attr_int("seed", 0)));
        } else {
            std::random_device device;
            generator.seed((static_cast<uint64_t>(device()) << 32) ^ device());
        }
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        Tensor y(DataType::kFloat64, x.shape());
        Tensor mask(DataType::kBool, x.shape());
        const double scale = 1.0 / (1.0 - ratio);
        for (int64_t i = 0; i < x.numel(); ++i) {
            const bool keep = uniform(generator) >= ratio;
            mask.data_as<bool>()[i] = keep;
            y.data_as<double>()[i] = keep ? x.value_as_double(i) * scale : 0.0;
        }
        ctx.set_output(0, y.cast(x.dtype()));
        if (ctx.num_outputs() > 1) ctx.set_output(1, mask);
    }
};

template <bool kInstance>
KernelFactory group_norm_factory() {
    return [](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<GroupNormKernel>(node, kInstance); };
}

}  // namespace

void register_nn_ops(OpRegistry& registry) {
    registry.add("", "Softmax", 1, kMaxOpset, softmax_factory<SoftmaxKind::kSoftmax>());
    registry.add("", "LogSoftmax", 1, kMaxOpset, softmax_factory<SoftmaxKind::kLogSoftmax>());
    registry.add("", "Hardmax", 1, kMaxOpset, softmax_factory<SoftmaxKind::kHardmax>());
    registry.add("", "BatchNormalization", 1, kMaxOpset, make_factory<BatchNormKernel>());
    registry.add("", "LayerNormalization", 17, kMaxOpset, make_factory<LayerNormKernel>());
    // ONNX Runtime registers these in the default domain: LayerNormalization before the standard
    // has it (its fusion writes it into opset-16 models), and RMSNorm.
    registry.add("", "LayerNormalization", 1, 16, make_factory<LayerNormKernel>());
    registry.add("", "SimplifiedLayerNormalization", 1, kMaxOpset, make_factory<SimplifiedLayerNormKernel>());
    registry.add(kMicrosoftDomain, "SkipLayerNormalization", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<SkipLayerNormKernel>(node, false);
                 });
    registry.add(kMicrosoftDomain, "SkipSimplifiedLayerNormalization", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<SkipLayerNormKernel>(node, true);
                 });
    registry.add("", "InstanceNormalization", 1, kMaxOpset, group_norm_factory<true>());
    registry.add("", "GroupNormalization", 18, kMaxOpset, group_norm_factory<false>());
    registry.add("", "LRN", 1, kMaxOpset, make_factory<LrnKernel>());
    registry.add("", "MeanVarianceNormalization", 9, kMaxOpset, make_factory<MeanVarianceNormalizationKernel>());
    registry.add("", "LpNormalization", 1, kMaxOpset, make_factory<LpNormalizationKernel>());
    registry.add("", "Dropout", 1, kMaxOpset, make_factory<DropoutKernel>());
}

}  // namespace polygraphy::ref
