// Elementwise operators: unary math and activations, broadcasting binary arithmetic, comparisons
// and logic, variadic Max/Min/Sum/Mean, Where, Clip, Cast/CastLike, Identity, Dropout, PRelu,
// BitShift, QuantizeLinear/DequantizeLinear, and the small normalizations MeanVarianceNormalization
// and LpNormalization. float16/bfloat16 are computed in float32 and rounded back once.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <type_traits>

#include <fmt/format.h>

#include "backend/ref/ops/broadcast.h"
#include "backend/ref/ops/dnnl_util.h"
#include "backend/ref/ops/families.h"
#include "backend/ref/ops/kernel_util.h"
#include "backend/ref/ops/small_types.h"

namespace polygraphy::ref {
namespace {

// Signed integer arithmetic wraps (as numpy does) instead of overflowing into undefined behaviour.
template <typename T>
T wrap_add(T a, T b) {
    if constexpr (kIsInt<T>)
        return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
    else
        return a + b;
}
template <typename T>
T wrap_sub(T a, T b) {
    if constexpr (kIsInt<T>)
        return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) - static_cast<std::make_unsigned_t<T>>(b));
    else
        return a - b;
}
template <typename T>
T wrap_mul(T a, T b) {
    if constexpr (kIsInt<T>) {
        using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
        return static_cast<T>(static_cast<U>(static_cast<std::make_unsigned_t<T>>(a)) *
                              static_cast<U>(static_cast<std::make_unsigned_t<T>>(b)));
    } else {
        return a * b;
    }
}
template <typename T>
T wrap_neg(T a) {
    return wrap_sub(T{0}, a);
}

/// double -> T without undefined behaviour: NaN -> 0, out-of-range values saturate.
template <typename T>
T saturating_cast(double value) {
    if constexpr (kIsFloat<T>) {
        return static_cast<T>(value);
    } else if constexpr (std::is_same_v<T, bool>) {
        return value != 0.0;
    } else {
        if (std::isnan(value)) return T{0};
        if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
        if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
        return static_cast<T>(value);
    }
}

void require_same_dtype(const NodeInfo& node, const Tensor& a, const Tensor& b, std::string_view what = "inputs") {
    if (a.dtype() != b.dtype())
        node.fail(fmt::format("{} must have the same data type, but they are {} and {}", what, dtype_name(a.dtype()),
                              dtype_name(b.dtype())));
}

Tensor narrow_if_half(Tensor tensor, DataType original) {
    return is_half(original) && tensor.dtype() == DataType::kFloat32 ? tensor.cast(original) : tensor;
}

// ---------------------------------------------------------------------------------------------
// Unary operators.

/// Ops with a oneDNN eltwise equivalent over float32 declare `static constexpr dnnl::algorithm kDnnl`.
template <typename Op, typename = void>
struct HasDnnlAlgorithm : std::false_type {};
template <typename Op>
struct HasDnnlAlgorithm<Op, std::void_t<decltype(Op::kDnnl)>> : std::true_type {};

template <typename Op>
dnnl::algorithm dnnl_algorithm_of() {
    if constexpr (HasDnnlAlgorithm<Op>::value)
        return Op::kDnnl;
    else
        return dnnl::algorithm::undef;
}

template <typename Op>
class UnaryKernel final : public Kernel {
public:
    explicit UnaryKernel(const NodeInfo& node) : op_(node), eltwise_(dnnl_algorithm_of<Op>()) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& input = ctx.required_input(0);
        const Tensor x = widen_half(input);
        dispatch_dtype(node, x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (Op::template kSupports<T>) {
                using R = decltype(std::declval<const Op&>()(T{}));
                Tensor y = Tensor::uninitialized(dtype_of<R>(), x.shape());
                const T* in = x.data_as<T>();
                R* out = y.data_as<R>();
                const int64_t n = x.numel();
                const int threads = ctx.num_threads();
                if constexpr (std::is_same_v<T, float> && std::is_same_v<R, float> && HasDnnlAlgorithm<Op>::value) {
                    // oneDNN's JIT-vectorized version (much faster than a libm loop).
                    if (eltwise_.run(in, out, n, threads)) {
                        ctx.set_output(0, narrow_if_half(std::move(y), input.dtype()));
                        return;
                    }
                }
#pragma omp parallel for if (threads > 1 && n >= kParallelThreshold) num_threads(threads)
                for (int64_t i = 0; i < n; ++i) out[i] = op_(in[i]);
                ctx.set_output(0, narrow_if_half(std::move(y), input.dtype()));
            } else {
                unsupported_dtype(node, input.dtype());
            }
        });
    }

private:
    Op op_;
    onednn::Eltwise eltwise_;  ///< used when Op has kDnnl
};

struct FloatOnly {
    template <typename T>
    static constexpr bool kSupports = kIsFloat<T>;
};

#define POLYGRAPHY_FLOAT_UNARY(Name, expression) \
    struct Name : FloatOnly {                    \
        explicit Name(const NodeInfo&) {}        \
        template <typename T>                    \
        T operator()(T x) const {                \
            return expression;                   \
        }                                        \
    };

POLYGRAPHY_FLOAT_UNARY(SqrtOp, std::sqrt(x))
POLYGRAPHY_FLOAT_UNARY(ReciprocalOp, T(1) / x)
POLYGRAPHY_FLOAT_UNARY(ExpOp, std::exp(x))
POLYGRAPHY_FLOAT_UNARY(LogOp, std::log(x))
POLYGRAPHY_FLOAT_UNARY(ErfOp, std::erf(x))
struct TanhOp : FloatOnly {
    static constexpr dnnl::algorithm kDnnl = dnnl::algorithm::eltwise_tanh;
    explicit TanhOp(const NodeInfo&) {}
    template <typename T>
    T operator()(T x) const {
        return std::tanh(x);
    }
};
// Split at 0 so that exp never overflows.
struct SigmoidOp : FloatOnly {
    static constexpr dnnl::algorithm kDnnl = dnnl::algorithm::eltwise_logistic;
    explicit SigmoidOp(const NodeInfo&) {}
    template <typename T>
    T operator()(T x) const {
        return x >= T(0) ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
    }
};
POLYGRAPHY_FLOAT_UNARY(SinOp, std::sin(x))
POLYGRAPHY_FLOAT_UNARY(CosOp, std::cos(x))
POLYGRAPHY_FLOAT_UNARY(TanOp, std::tan(x))
POLYGRAPHY_FLOAT_UNARY(AsinOp, std::asin(x))
POLYGRAPHY_FLOAT_UNARY(AcosOp, std::acos(x))
POLYGRAPHY_FLOAT_UNARY(AtanOp, std::atan(x))
POLYGRAPHY_FLOAT_UNARY(SinhOp, std::sinh(x))
POLYGRAPHY_FLOAT_UNARY(CoshOp, std::cosh(x))
POLYGRAPHY_FLOAT_UNARY(AsinhOp, std::asinh(x))
POLYGRAPHY_FLOAT_UNARY(AcoshOp, std::acosh(x))
POLYGRAPHY_FLOAT_UNARY(AtanhOp, std::atanh(x))
POLYGRAPHY_FLOAT_UNARY(SoftplusOp, x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
POLYGRAPHY_FLOAT_UNARY(SoftsignOp, x / (T(1) + std::abs(x)))
POLYGRAPHY_FLOAT_UNARY(FloorOp, std::floor(x))
POLYGRAPHY_FLOAT_UNARY(CeilOp, std::ceil(x))
POLYGRAPHY_FLOAT_UNARY(RoundOp, std::nearbyint(x))  // default rounding mode: half to even
POLYGRAPHY_FLOAT_UNARY(HardSwishOp, x* std::max(T(0), std::min(T(1), x / T(6) + T(0.5))))
#undef POLYGRAPHY_FLOAT_UNARY

struct NegOp {
    explicit NegOp(const NodeInfo&) {}
    template <typename T>
    static constexpr bool kSupports = kIsSignedNumeric<T>;
    template <typename T>
    T operator()(T x) const {
        return wrap_neg(x);
    }
};

struct AbsOp {
    explicit AbsOp(const NodeInfo&) {}
    template <typename T>
    static constexpr bool kSupports = kIsNumeric<T>;
    template <typename T>
    T operator()(T x) const {
        if constexpr (kIsFloat<T>)
            return std::abs(x);
        else if constexpr (std::is_signed_v<T>)
            return x < 0 ? wrap_neg(x) : x;
        else
            return x;
    }
};

struct SignOp {
    explicit SignOp(const NodeInfo&) {}
    template <typename T>
    static constexpr bool kSupports = kIsNumeric<T>;
    template <typename T>
    T operator()(T x) const {
        if constexpr (kIsFloat<T>)
            return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;  // keeps 0, -0 and NaN
        else if constexpr (std::is_signed_v<T>)
            return static_cast<T>((x > 0) - (x < 0));
        else
            return static_cast<T>(x > 0);
    }
};

struct ReluOp {
    explicit ReluOp(const NodeInfo&) {}
    template <typename T>
    static constexpr bool kSupports = kIsSignedNumeric<T>;
    template <typename T>
    T operator()(T x) const {
        return x < T(0) ? T(0) : x;  // NaN stays NaN
    }
};

struct NotOp {
    explicit NotOp(const NodeInfo&) {}
    template <typename T>
    static constexpr bool kSupports = std::is_same_v<T, bool>;
    template <typename T>
    bool operator()(T x) const {
        return !x;
    }
};

struct IsNaNOp : FloatOnly {
    explicit IsNaNOp(const NodeInfo&) {}
    template <typename T>
    bool operator()(T x) const {
        return std::isnan(x);
    }
};

struct IsInfOp : FloatOnly {
    explicit IsInfOp(const NodeInfo& node)
        : negative_(node.attr_int("detect_negative", 1) != 0), positive_(node.attr_int("detect_positive", 1) != 0) {}
    template <typename T>
    bool operator()(T x) const {
        return std::isinf(x) && (x > 0 ? positive_ : negative_);
    }
    bool negative_, positive_;
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

struct HardSigmoidOp : FloatOnly {
    explicit HardSigmoidOp(const NodeInfo& node)
        : alpha_(node.attr_float("alpha", 0.2f)), beta_(node.attr_float("beta", 0.5f)) {}
    template <typename T>
    T operator()(T x) const {
        return std::max(T(0), std::min(T(1), static_cast<T>(alpha_) * x + static_cast<T>(beta_)));
    }
    float alpha_, beta_;
};

// ---------------------------------------------------------------------------------------------
// Binary operators with numpy broadcasting (and the `broadcast`/`axis` attributes before opset 7).

/// Before opset 7, B is broadcast to A only with broadcast=1, aligned at `axis` (default: suffix).
struct LegacyBroadcast {
    explicit LegacyBroadcast(const NodeInfo& node) {
        if (node.opset() >= 7) return;
        enabled = node.attr_int("broadcast", 0) != 0;
        if (node.has_attr("axis")) axis = node.attr_int("axis", 0);
    }
    /// Shape to read B with, given A's shape.
    Shape shape_of_b(const NodeInfo& node, const Shape& a, const Shape& b) const {
        if (!enabled || !axis) return b;
        const int64_t rank_a = static_cast<int64_t>(a.size()), rank_b = static_cast<int64_t>(b.size());
        const int64_t start = *axis < 0 ? *axis + rank_a : *axis;
        if (start < 0 || start + rank_b > rank_a)
            node.fail(fmt::format("attribute 'axis' ({}) cannot align B of shape {} with A of shape {}", *axis,
                                  shape_to_string(b), shape_to_string(a)));
        Shape aligned(static_cast<std::size_t>(rank_a - start), 1);
        std::copy(b.begin(), b.end(), aligned.begin());
        return aligned;
    }
    bool enabled = false;
    std::optional<int64_t> axis;
};

struct BinaryOpBase {
    static constexpr bool kStrings = false;
    template <typename T>
    void check(const NodeInfo&, const T*, int64_t) const {}
};

template <typename Op>
class BinaryKernel final : public Kernel {
public:
    explicit BinaryKernel(const NodeInfo& node) : op_(node), legacy_(node) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& a0 = ctx.required_input(0);
        const Tensor& b0 = ctx.required_input(1);
        require_same_dtype(node, a0, b0);
        const Shape shape_b = legacy_.shape_of_b(node, a0.shape(), b0.shape());
        const Shape out = broadcast_shapes(node, {a0.shape(), shape_b});
        if (a0.dtype() == DataType::kString) {
            if constexpr (Op::kStrings) {
                Tensor y(DataType::kBool, out);
                broadcast_binary(out, a0.shape(), shape_b, a0.strings().data(), b0.strings().data(), y.data_as<bool>(),
                                 op_, 1);
                ctx.set_output(0, std::move(y));
                return;
            }
            unsupported_dtype(node, a0.dtype());
        }
        const Tensor a = widen_half(a0), b = widen_half(b0);
        dispatch_dtype(node, a.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (Op::template kSupports<T>) {
                op_.check(node, b.data_as<T>(), b.numel());
                using R = decltype(std::declval<const Op&>()(T{}, T{}));
                Tensor y = Tensor::uninitialized(dtype_of<R>(), out);
                broadcast_binary(out, a.shape(), shape_b, a.data_as<T>(), b.data_as<T>(), y.data_as<R>(), op_,
                                 ctx.num_threads());
                ctx.set_output(0, narrow_if_half(std::move(y), a0.dtype()));
            } else {
                unsupported_dtype(node, a0.dtype());
            }
        });
    }

private:
    Op op_;
    LegacyBroadcast legacy_;
};

struct Arithmetic : BinaryOpBase {
    template <typename T>
    static constexpr bool kSupports = kIsNumeric<T>;
};

struct AddOp : Arithmetic {
    explicit AddOp(const NodeInfo&) {}
    template <typename T>
    T operator()(T a, T b) const {
        return wrap_add(a, b);
    }
};
struct SubOp : Arithmetic {
    explicit SubOp(const NodeInfo&) {}
    template <typename T>
    T operator()(T a, T b) const {
        return wrap_sub(a, b);
    }
};
struct MulOp : Arithmetic {
    explicit MulOp(const NodeInfo&) {}
    template <typename T>
    T operator()(T a, T b) const {
        return wrap_mul(a, b);
    }
};

template <typename T>
void check_no_zero_divisor(const NodeInfo& node, const T* divisor, int64_t n) {
    if constexpr (kIsInt<T>) {
        for (int64_t i = 0; i < n; ++i)
            if (divisor[i] == 0) node.fail("integer division by zero");
    }
}

struct DivOp : Arithmetic {
    explicit DivOp(const NodeInfo&) {}
    template <typename T>
    void check(const NodeInfo& node, const T* b, int64_t n) const {
        check_no_zero_divisor(node, b, n);
    }
    template <typename T>
    T operator()(T a, T b) const {
        if constexpr (kIsInt<T> && std::is_signed_v<T>) {
            if (b == -1) return wrap_neg(a);  // INT_MIN / -1 traps on x86
        }
        return static_cast<T>(a / b);
    }
};

struct ModOp : Arithmetic {
    explicit ModOp(const NodeInfo& node) : fmod_(node.attr_int("fmod", 0) != 0) {}
    template <typename T>
    void check(const NodeInfo& node, const T* b, int64_t n) const {
        check_no_zero_divisor(node, b, n);
    }
    template <typename T>
    T operator()(T a, T b) const {
        if constexpr (kIsFloat<T>) {
            T r = std::fmod(a, b);
            if (!fmod_ && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;  // numpy: sign of the divisor
            return r;
        } else {
            if constexpr (std::is_signed_v<T>) {
                if (b == -1) return T{0};
            }
            T r = static_cast<T>(a % b);
            if constexpr (std::is_signed_v<T>) {
                if (!fmod_ && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
            }
            return r;
        }
    }
    bool fmod_;
};

struct BitShiftOp : BinaryOpBase {
    explicit BitShiftOp(const NodeInfo& node) {
        const std::string direction = node.attr_string("direction", "");
        if (direction != "LEFT" && direction != "RIGHT")
            node.fail(fmt::format("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"{}\"", direction));
        left_ = direction == "LEFT";
    }
    template <typename T>
    static constexpr bool kSupports = kIsInt<T>&& std::is_unsigned_v<T>;
    template <typename T>
    T operator()(T a, T b) const {
        if (b >= sizeof(T) * 8) return T{0};
        return static_cast<T>(left_ ? a << b : a >> b);
    }
    bool left_ = true;
};

struct LogicOp : BinaryOpBase {
    template <typename T>
    static constexpr bool kSupports = std::is_same_v<T, bool>;
};
struct AndOp : LogicOp {
    explicit AndOp(const NodeInfo&) {}
    bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp : LogicOp {
    explicit OrOp(const NodeInfo&) {}
    bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp : LogicOp {
    explicit XorOp(const NodeInfo&) {}
    bool operator()(bool a, bool b) const { return a != b; }
};

struct Comparison : BinaryOpBase {
    template <typename T>
    static constexpr bool kSupports = true;
};
struct EqualOp : Comparison {
    static constexpr bool kStrings = true;
    explicit EqualOp(const NodeInfo&) {}
    template <typename T>
    bool operator()(const T& a, const T& b) const {
        return a == b;
    }
};
struct LessOp : Comparison {
    explicit LessOp(const NodeInfo&) {}
    template <typename T>
    bool operator()(T a, T b) const {
        return a < b;
    }
};
struct GreaterOp : Comparison {
    explicit GreaterOp(const NodeInfo&) {}
    template <typename T>
    bool operator()(T a, T b) const {
        return a > b;
    }
};
struct LessOrEqualOp : Comparison {
    explicit LessOrEqualOp(const NodeInfo&) {}
    template <typename T>
    bool operator()(T a, T b) const {
        return a <= b;
    }
};
struct GreaterOrEqualOp : Comparison {
    explicit GreaterOrEqualOp(const NodeInfo&) {}
    template <typename T>
    bool operator()(T a, T b) const {
        return a >= b;
    }
};

/// Integer power by squaring (wraps on overflow like numpy); negative exponents truncate toward 0.
template <typename T>
T integer_power(T base, int64_t exponent) {
    if (exponent < 0) {
        if (base == T(1)) return T(1);
        if constexpr (std::is_signed_v<T>) {
            if (base == T(-1)) return (exponent % 2 == 0) ? T(1) : T(-1);
        }
        return T(0);
    }
    T result = T(1);
    while (exponent > 0) {
        if (exponent & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
        exponent >>= 1;
    }
    return result;
}

/// Pow: base and exponent may have different types (opset 12+); the output has the base's type.
class PowKernel final : public Kernel {
public:
    explicit PowKernel(const NodeInfo& node) : legacy_(node) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& base0 = ctx.required_input(0);
        const Tensor& exponent0 = ctx.required_input(1);
        if (node.opset() < 12) require_same_dtype(node, base0, exponent0, "base and exponent");
        const Shape shape_e = legacy_.shape_of_b(node, base0.shape(), exponent0.shape());
        const Shape out = broadcast_shapes(node, {base0.shape(), shape_e});
        const Tensor base = widen_half(base0);
        const int threads = ctx.num_threads();
        if (exponent0.dtype() == DataType::kString || exponent0.dtype() == DataType::kBool)
            unsupported_dtype(node, exponent0.dtype(), "exponent");
        dispatch_dtype(node, base.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (kIsFloat<T>) {
                const Tensor exponent = exponent0.cast(base.dtype());
                Tensor y(base.dtype(), out);
                broadcast_binary(
                    out, base.shape(), shape_e, base.data_as<T>(), exponent.data_as<T>(), y.data_as<T>(),
                    [](T a, T b) { return std::pow(a, b); }, threads);
                ctx.set_output(0, narrow_if_half(std::move(y), base0.dtype()));
            } else if constexpr (kIsInt<T>) {
                Tensor y(base.dtype(), out);
                if (dtype_is_integer(exponent0.dtype())) {
                    const Tensor exponent = exponent0.cast(DataType::kInt64);
                    broadcast_binary(
                        out, base.shape(), shape_e, base.data_as<T>(), exponent.data_as<int64_t>(), y.data_as<T>(),
                        [](T a, int64_t b) { return integer_power(a, b); }, threads);
                } else {
                    const Tensor exponent = exponent0.cast(DataType::kFloat64);
                    broadcast_binary(
                        out, base.shape(), shape_e, base.data_as<T>(), exponent.data_as<double>(), y.data_as<T>(),
                        [](T a, double b) { return saturating_cast<T>(std::pow(static_cast<double>(a), b)); }, threads);
                }
                ctx.set_output(0, std::move(y));
            } else {
                unsupported_dtype(node, base0.dtype(), "base");
            }
        });
    }

private:
    LegacyBroadcast legacy_;
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
                Tensor y(x.dtype(), out);
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

// ---------------------------------------------------------------------------------------------
// Variadic Max, Min, Sum, Mean (broadcasting from opset 8; earlier opsets are accepted the same way).

enum class Variadic { kMax, kMin, kSum, kMean };

template <Variadic kind>
class VariadicKernel final : public Kernel {
public:
    explicit VariadicKernel(const NodeInfo& node) {
        if (node.proto().input_size() < 1) node.fail("needs at least one input");
    }

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& first = ctx.required_input(0);
        std::vector<Tensor> inputs;
        std::vector<Shape> shapes;
        for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
            const Tensor& input = ctx.required_input(i);
            require_same_dtype(node, first, input);
            inputs.push_back(widen_half(input));
            shapes.push_back(input.shape());
        }
        const Shape out = broadcast_shapes(node, shapes);
        const int threads = ctx.num_threads();
        dispatch_dtype(node, inputs[0].dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            constexpr bool supported = kind == Variadic::kMean ? kIsFloat<T> : kIsNumeric<T>;
            if constexpr (supported) {
                Tensor y(inputs[0].dtype(), out);
                strided_copy(inputs[0], 0, out, broadcast_strides(inputs[0].shape(), out), y);
                for (std::size_t i = 1; i < inputs.size(); ++i)
                    broadcast_accumulate(
                        out, inputs[i].shape(), inputs[i].data_as<T>(), y.data_as<T>(),
                        [](T acc, T v) { return combine(acc, v); }, threads);
                if constexpr (kind == Variadic::kMean) {
                    T* data = y.data_as<T>();
                    const T count = static_cast<T>(inputs.size());
                    for (int64_t i = 0; i < y.numel(); ++i) data[i] /= count;
                }
                ctx.set_output(0, narrow_if_half(std::move(y), first.dtype()));
            } else {
                unsupported_dtype(node, first.dtype());
            }
        });
    }

private:
    template <typename T>
    static T combine(T acc, T v) {
        if constexpr (kind == Variadic::kMax) {
            if constexpr (kIsFloat<T>)
                return (acc > v || std::isnan(acc)) ? acc : v;  // NaN propagates
            else
                return acc > v ? acc : v;
        } else if constexpr (kind == Variadic::kMin) {
            if constexpr (kIsFloat<T>)
                return (acc < v || std::isnan(acc)) ? acc : v;
            else
                return acc < v ? acc : v;
        } else {
            return wrap_add(acc, v);
        }
    }
};

// ---------------------------------------------------------------------------------------------
// Where, Clip.

class WhereKernel final : public Kernel {
public:
    explicit WhereKernel(const NodeInfo&) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& cond = ctx.required_input(0);
        const Tensor& x = ctx.required_input(1);
        const Tensor& y = ctx.required_input(2);
        if (cond.dtype() != DataType::kBool)
            node.fail(fmt::format("condition must be a bool tensor, but it is {}", dtype_name(cond.dtype())));
        require_same_dtype(node, x, y, "X and Y");
        const Shape out = broadcast_shapes(node, {cond.shape(), x.shape(), y.shape()});
        Tensor result(x.dtype(), out);
        StridedLoop<3> loop(out, {broadcast_strides(cond.shape(), out), broadcast_strides(x.shape(), out),
                                  broadcast_strides(y.shape(), out)});
        const bool* c = cond.data_as<bool>();
        auto select = [&](const auto* a, const auto* b, auto* o, int threads) {
            loop.for_each_row(
                [&](const auto& off, int64_t out_offset, int64_t count, const auto& st) {
                    for (int64_t i = 0; i < count; ++i)
                        o[out_offset + i] = c[off[0] + i * st[0]] ? a[off[1] + i * st[1]] : b[off[2] + i * st[2]];
                },
                threads);
        };
        dispatch_storage(node, x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            // Strings are copied single-threaded.
            select(storage<T>(x), storage<T>(y), storage<T>(result),
                   std::is_same_v<T, std::string> ? 1 : ctx.num_threads());
        });
        ctx.set_output(0, std::move(result));
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
#pragma omp parallel for if (threads > 1 && n >= kParallelThreshold) num_threads(threads)
                for (int64_t i = 0; i < n; ++i) {
                    T v = in[i] < lo ? lo : in[i];  // NaN stays NaN; min > max gives max
                    out[i] = v > hi ? hi : v;
                }
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

// ---------------------------------------------------------------------------------------------
// Cast, CastLike, Identity, Dropout.

// Shortest text that reads back as the same value of the source type (numpy's str()).
std::string number_to_string(double value, DataType source) {
    if (!dtype_is_floating(source)) return fmt::format("{}", static_cast<int64_t>(value));
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    std::string text =
        source == DataType::kFloat64 ? fmt::format("{}", value) : fmt::format("{}", static_cast<float>(value));
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
}

Tensor cast_tensor(const NodeInfo& node, const Tensor& input, DataType to, bool saturate = true) {
    if (input.dtype() == to) return input;
    if (to == DataType::kBFloat16 && dtype_is_floating(input.dtype()) && !is_float8(input.dtype())) {
        // The ONNX reference (and its test data) cast to bfloat16 by truncating float32 to its
        // upper 16 bits; the spec leaves the rounding open.
        const Tensor wide = input.cast(DataType::kFloat32);
        Tensor result(DataType::kBFloat16, input.shape());
        const auto* bits = static_cast<const uint32_t*>(wide.data());
        auto* out = static_cast<uint16_t*>(result.data());
        for (int64_t i = 0; i < wide.numel(); ++i) {
            const bool nan = (bits[i] & 0x7FFFFFFFu) > 0x7F800000u;  // keep NaN a NaN (quiet bit set)
            out[i] = static_cast<uint16_t>((bits[i] >> 16) | (nan ? 0x0040u : 0u));
        }
        return result;
    }
    if ((is_float8(to) || is_int4(to)) && input.dtype() != DataType::kString) {
        if (input.dtype() == DataType::kComplex64 || input.dtype() == DataType::kComplex128)
            unsupported_dtype(node, input.dtype());
        return cast_to_small_type(input, to, saturate);
    }
    if (to == DataType::kString) {
        Tensor result(DataType::kString, input.shape());
        auto& out = result.strings();
        for (int64_t i = 0; i < input.numel(); ++i) {
            if (input.dtype() == DataType::kBool)
                out[i] = input.data_as<bool>()[i] ? "True" : "False";
            else if (input.dtype() == DataType::kInt64)
                out[i] = fmt::format("{}", input.data_as<int64_t>()[i]);
            else if (input.dtype() == DataType::kUInt64)
                out[i] = fmt::format("{}", input.data_as<uint64_t>()[i]);
            else
                out[i] = number_to_string(input.value_as_double(i), input.dtype());
        }
        return result;
    }
    if (input.dtype() == DataType::kString) {
        const auto& in = input.strings();
        const bool floating = dtype_is_floating(to);
        Tensor parsed(floating ? DataType::kFloat64 : DataType::kInt64, input.shape());
        for (int64_t i = 0; i < input.numel(); ++i) {
            const std::string& text = in[i];
            char* end = nullptr;
            errno = 0;
            if (to == DataType::kBool && (text == "True" || text == "true")) {
                parsed.data_as<int64_t>()[i] = 1;
                continue;
            }
            if (to == DataType::kBool && (text == "False" || text == "false")) {
                parsed.data_as<int64_t>()[i] = 0;
                continue;
            }
            if (floating)
                parsed.data_as<double>()[i] = std::strtod(text.c_str(), &end);
            else
                parsed.data_as<int64_t>()[i] = std::strtoll(text.c_str(), &end, 10);
            if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
                node.fail(fmt::format("cannot convert the string '{}' to {}", text, dtype_name(to)));
        }
        return parsed.cast(to);
    }
    return input.cast(to);
}

DataType cast_target(const NodeInfo& node) {
    const onnx::AttributeProto* attr = node.attr("to");
    if (!attr) node.fail("attribute 'to' is required");
    int32_t onnx_type = 0;
    if (node.opset() < 6 && attr->type() == onnx::AttributeProto::STRING) {
        // Opset 1 named the type ("FLOAT", "INT64"...).
        onnx::TensorProto_DataType parsed;
        if (!onnx::TensorProto_DataType_Parse(attr->s(), &parsed))
            node.fail(fmt::format("attribute 'to' names an unknown data type '{}'", attr->s()));
        onnx_type = parsed;
    } else {
        onnx_type = static_cast<int32_t>(node.attr_int("to", 0));
    }
    const DataType dtype = dtype_from_onnx(onnx_type);
    if (dtype == DataType::kUndefined) node.fail(fmt::format("attribute 'to' has an invalid data type {}", onnx_type));
    return dtype;
}

// Opset 19's 'saturate' (float8 targets only): 1 clamps out-of-range values to the largest finite value.
bool saturate_attr(const NodeInfo& node) {
    if (node.opset() < 19) return true;
    const int64_t saturate = node.attr_int("saturate", 1);
    if (saturate != 0 && saturate != 1)
        node.fail(fmt::format("attribute 'saturate' must be 0 or 1, but it is {}", saturate));
    return saturate == 1;
}

class CastKernel final : public Kernel {
public:
    explicit CastKernel(const NodeInfo& node) : to_(cast_target(node)), saturate_(saturate_attr(node)) {}
    void compute(KernelContext& ctx) const override {
        ctx.set_output(0, cast_tensor(ctx.node(), ctx.required_input(0), to_, saturate_));
    }

private:
    DataType to_;
    bool saturate_;
};

class CastLikeKernel final : public Kernel {
public:
    explicit CastLikeKernel(const NodeInfo& node) : saturate_(saturate_attr(node)) {}
    void compute(KernelContext& ctx) const override {
        ctx.set_output(0, cast_tensor(ctx.node(), ctx.required_input(0), ctx.required_input(1).dtype(), saturate_));
    }

private:
    bool saturate_;
};

class IdentityKernel final : public Kernel {
public:
    explicit IdentityKernel(const NodeInfo&) {}
    // Any value: tensors, sequences (opset 14+) and optionals (opset 16+) pass through.
    void compute(KernelContext& ctx) const override {
        Value value = ctx.input_value(0);
        if (!value.defined()) ctx.node().fail("required input 0 is missing");
        ctx.set_output_value(0, std::move(value));
    }
};

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

// ---------------------------------------------------------------------------------------------
// QuantizeLinear / DequantizeLinear: per-tensor, per-axis (opset 13) and blocked (opset 21) scales.

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

// ---------------------------------------------------------------------------------------------
// MeanVarianceNormalization and LpNormalization (float types).

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

}  // namespace

void register_elementwise_ops(OpRegistry& registry) {
    auto add = [&](const char* op, int since, KernelFactory factory) {
        registry.add("", op, since, kMaxOpset, std::move(factory));
    };
    // Unary math and activations.
    add("Neg", 1, make_factory<UnaryKernel<NegOp>>());
    add("Abs", 1, make_factory<UnaryKernel<AbsOp>>());
    add("Sign", 9, make_factory<UnaryKernel<SignOp>>());
    add("Sqrt", 1, make_factory<UnaryKernel<SqrtOp>>());
    add("Reciprocal", 1, make_factory<UnaryKernel<ReciprocalOp>>());
    add("Exp", 1, make_factory<UnaryKernel<ExpOp>>());
    add("Log", 1, make_factory<UnaryKernel<LogOp>>());
    add("Erf", 9, make_factory<UnaryKernel<ErfOp>>());
    add("Tanh", 1, make_factory<UnaryKernel<TanhOp>>());
    add("Sigmoid", 1, make_factory<UnaryKernel<SigmoidOp>>());
    add("Sin", 7, make_factory<UnaryKernel<SinOp>>());
    add("Cos", 7, make_factory<UnaryKernel<CosOp>>());
    add("Tan", 7, make_factory<UnaryKernel<TanOp>>());
    add("Asin", 7, make_factory<UnaryKernel<AsinOp>>());
    add("Acos", 7, make_factory<UnaryKernel<AcosOp>>());
    add("Atan", 7, make_factory<UnaryKernel<AtanOp>>());
    add("Sinh", 9, make_factory<UnaryKernel<SinhOp>>());
    add("Cosh", 9, make_factory<UnaryKernel<CoshOp>>());
    add("Asinh", 9, make_factory<UnaryKernel<AsinhOp>>());
    add("Acosh", 9, make_factory<UnaryKernel<AcoshOp>>());
    add("Atanh", 9, make_factory<UnaryKernel<AtanhOp>>());
    add("Floor", 1, make_factory<UnaryKernel<FloorOp>>());
    add("Ceil", 1, make_factory<UnaryKernel<CeilOp>>());
    add("Round", 11, make_factory<UnaryKernel<RoundOp>>());
    add("IsNaN", 9, make_factory<UnaryKernel<IsNaNOp>>());
    add("IsInf", 10, make_factory<UnaryKernel<IsInfOp>>());
    add("Not", 1, make_factory<UnaryKernel<NotOp>>());
    add("Relu", 1, make_factory<UnaryKernel<ReluOp>>());
    add("LeakyRelu", 1, make_factory<UnaryKernel<LeakyReluOp>>());
    add("Elu", 1, make_factory<UnaryKernel<EluOp>>());
    add("Selu", 1, make_factory<UnaryKernel<SeluOp>>());
    add("HardSigmoid", 1, make_factory<UnaryKernel<HardSigmoidOp>>());
    add("HardSwish", 14, make_factory<UnaryKernel<HardSwishOp>>());
    add("Softplus", 1, make_factory<UnaryKernel<SoftplusOp>>());
    add("Softsign", 1, make_factory<UnaryKernel<SoftsignOp>>());
    // Binary.
    add("Add", 1, make_factory<BinaryKernel<AddOp>>());
    add("Sub", 1, make_factory<BinaryKernel<SubOp>>());
    add("Mul", 1, make_factory<BinaryKernel<MulOp>>());
    add("Div", 1, make_factory<BinaryKernel<DivOp>>());
    add("Mod", 10, make_factory<BinaryKernel<ModOp>>());
    add("Pow", 1, make_factory<PowKernel>());
    add("BitShift", 11, make_factory<BinaryKernel<BitShiftOp>>());
    add("And", 1, make_factory<BinaryKernel<AndOp>>());
    add("Or", 1, make_factory<BinaryKernel<OrOp>>());
    add("Xor", 1, make_factory<BinaryKernel<XorOp>>());
    add("Equal", 1, make_factory<BinaryKernel<EqualOp>>());
    add("Less", 1, make_factory<BinaryKernel<LessOp>>());
    add("Greater", 1, make_factory<BinaryKernel<GreaterOp>>());
    add("LessOrEqual", 12, make_factory<BinaryKernel<LessOrEqualOp>>());
    add("GreaterOrEqual", 12, make_factory<BinaryKernel<GreaterOrEqualOp>>());
    add("PRelu", 1, make_factory<PReluKernel>());
    // Variadic.
    add("Max", 1, make_factory<VariadicKernel<Variadic::kMax>>());
    add("Min", 1, make_factory<VariadicKernel<Variadic::kMin>>());
    add("Sum", 1, make_factory<VariadicKernel<Variadic::kSum>>());
    add("Mean", 1, make_factory<VariadicKernel<Variadic::kMean>>());
    // Others.
    add("Where", 9, make_factory<WhereKernel>());
    add("Clip", 1, make_factory<ClipKernel>());
    add("Cast", 1, make_factory<CastKernel>());
    add("CastLike", 15, make_factory<CastLikeKernel>());
    add("Identity", 1, make_factory<IdentityKernel>());
    add("Dropout", 1, make_factory<DropoutKernel>());
    add("QuantizeLinear", 10, make_factory<QuantizeLinearKernel>());
    add("DequantizeLinear", 10, make_factory<DequantizeLinearKernel>());
    add("MeanVarianceNormalization", 9, make_factory<MeanVarianceNormalizationKernel>());
    add("LpNormalization", 1, make_factory<LpNormalizationKernel>());
}

}  // namespace polygraphy::ref
