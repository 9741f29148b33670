// Binary and variadic operators with numpy broadcasting: arithmetic (Add, Sub, Mul, Div, Mod, Pow),
// bitwise (BitShift, BitwiseAnd/Or/Xor), logic (And, Or, Xor), comparisons, Max/Min/Sum/Mean, and
// Where. Each binary operator is a scalar function run by BinaryKernel, the one template (as in
// ggml's binary-ops.cpp); float16/bfloat16 are computed in float32 and rounded back once.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "backend/ref/compute/broadcast.h"
#include "backend/ref/ops/elementwise.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

// ---- BinaryKernel ---------------------------------------------------------------------------------

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

/// What a binary operator has unless it says otherwise: no string inputs, no check of B.
struct BinaryOpBase {
    static constexpr bool kStrings = false;
    template <typename T>
    void check(const NodeInfo&, const T*, int64_t) const {}
};

/// y = op(a, b) with numpy broadcasting. `Op` is a scalar function object as for UnaryKernel
/// (elementwise.h), deriving from BinaryOpBase; `check(node, b, n)` may reject values of B.
template <typename Op>
class BinaryKernel final : public Kernel {
public:
    explicit BinaryKernel(const NodeInfo& node) : op_(make_op<Op>(node)), legacy_(node) {}

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
        // Asked before the copies below share the buffers.
        const std::array<const Tensor*, 2> donated{ctx.donated_input(0), ctx.donated_input(1)};
        const Tensor a = widen_half(a0), b = widen_half(b0);
        dispatch_dtype(node, a.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (Op::template kSupports<T>) {
                op_.check(node, b.data_as<T>(), b.numel());
                using R = decltype(std::declval<const Op&>()(T{}, T{}));
                // The result may take the place of a full-size operand the graph no longer needs (each
                // element is read before it is written): one buffer fewer, and one still in cache.
                Tensor y;
                if constexpr (std::is_same_v<R, T>) {
                    if (a.dtype() == a0.dtype())
                        for (const Tensor* operand : donated)
                            if (operand && operand->shape() == out) {
                                y = *operand;
                                break;
                            }
                }
                if (!y.defined()) y = Tensor::uninitialized(dtype_of<R>(), out);
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

// ---- arithmetic ---------------------------------------------------------------------------------

struct Arithmetic : BinaryOpBase, NumericOnly {};

// One line per operator, as a table.
// clang-format off
struct AddOp : Arithmetic { template <typename T> T operator()(T a, T b) const { return wrap_add(a, b); } };
struct SubOp : Arithmetic { template <typename T> T operator()(T a, T b) const { return wrap_sub(a, b); } };
struct MulOp : Arithmetic { template <typename T> T operator()(T a, T b) const { return wrap_mul(a, b); } };
// clang-format on

template <typename T>
void check_no_zero_divisor(const NodeInfo& node, const T* divisor, int64_t n) {
    if constexpr (kIsInt<T>) {
        for (int64_t i = 0; i < n; ++i)
            if (divisor[i] == 0) node.fail("integer division by zero");
    }
}

struct DivOp : Arithmetic {
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

/// y = x^exponent for one exponent value with a cheaper exact form: 2 (x*x), 1 (x) and 0.5 (sqrt).
/// Returns false, writing nothing, for any other exponent. x*x and sqrt are correctly rounded; glibc's
/// pow is within 0.52 ulp, so on rare inputs it is one ulp off where these are not (ONNX Runtime and
/// numpy also square for 2). Special values match std::pow: pow(-0, 0.5) and pow(-inf, 0.5) are +0
/// and +inf where sqrt gives -0 and NaN.
template <typename T>
bool pow_by_constant_exponent(const T* x, T exponent, T* y, int64_t n, int threads) {
    const bool parallel = threads > 1 && n >= kParallelThreshold;
    if (exponent == T(2)) {
        for_each_index(n, parallel, threads, [&](int64_t i) { y[i] = x[i] * x[i]; });
    } else if (exponent == T(1)) {
        std::copy(x, x + n, y);
    } else if (exponent == T(0.5)) {
        constexpr T kInf = std::numeric_limits<T>::infinity();
        for_each_index(n, parallel, threads, [&](int64_t i) {
            y[i] = x[i] == -kInf ? kInf : std::sqrt(x[i]) + T(0);  // + 0: -0 to +0
        });
    } else {
        return false;
    }
    return true;
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
                Tensor y = Tensor::uninitialized(base.dtype(), out);
                // One exponent value (RMSNorm's x^2): the output is the base's elements in order.
                const bool done =
                    exponent.numel() == 1 && pow_by_constant_exponent(base.data_as<T>(), exponent.data_as<T>()[0],
                                                                      y.data_as<T>(), y.numel(), threads);
                if (!done)
                    broadcast_binary(
                        out, base.shape(), shape_e, base.data_as<T>(), exponent.data_as<T>(), y.data_as<T>(),
                        [](T a, T b) { return std::pow(a, b); }, threads);
                ctx.set_output(0, narrow_if_half(std::move(y), base0.dtype()));
            } else if constexpr (kIsInt<T>) {
                Tensor y = Tensor::uninitialized(base.dtype(), out);
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

// ---- bitwise ------------------------------------------------------------------------------------

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

struct Bitwise : BinaryOpBase, IntegerOnly {};
// One line per operator, as a table.
// clang-format off
struct BitwiseAndOp : Bitwise { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a & b); } };
struct BitwiseOrOp : Bitwise { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a | b); } };
struct BitwiseXorOp : Bitwise { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); } };
// clang-format on

// ---- logic and comparisons ----------------------------------------------------------------------

struct Logic : BinaryOpBase, BoolOnly {};
// One line per operator, as a table.
// clang-format off
struct AndOp : Logic { bool operator()(bool a, bool b) const { return a && b; } };
struct OrOp : Logic { bool operator()(bool a, bool b) const { return a || b; } };
struct XorOp : Logic { bool operator()(bool a, bool b) const { return a != b; } };
// clang-format on

struct Comparison : BinaryOpBase {
    template <typename T>
    static constexpr bool kSupports = true;
};
struct EqualOp : Comparison {
    static constexpr bool kStrings = true;
    template <typename T>
    bool operator()(const T& a, const T& b) const {
        return a == b;
    }
};
// One line per operator, as a table.
// clang-format off
struct LessOp : Comparison { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct GreaterOp : Comparison { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct LessOrEqualOp : Comparison { template <typename T> bool operator()(T a, T b) const { return a <= b; } };
struct GreaterOrEqualOp : Comparison { template <typename T> bool operator()(T a, T b) const { return a >= b; } };
// clang-format on

// ---- variadic Max, Min, Sum, Mean (broadcasting from opset 8; earlier opsets are accepted the same way)

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
                Tensor y = Tensor::uninitialized(inputs[0].dtype(), out);  // input 0, broadcast, fills it
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

// ---- Where --------------------------------------------------------------------------------------

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
        Tensor result = Tensor::uninitialized(x.dtype(), out);
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

}  // namespace

void register_binary_ops(OpRegistry& registry) {
    registry.add("", "Add", 1, kMaxOpset, make_factory<BinaryKernel<AddOp>>());
    registry.add("", "Sub", 1, kMaxOpset, make_factory<BinaryKernel<SubOp>>());
    registry.add("", "Mul", 1, kMaxOpset, make_factory<BinaryKernel<MulOp>>());
    registry.add("", "Div", 1, kMaxOpset, make_factory<BinaryKernel<DivOp>>());
    registry.add("", "Mod", 10, kMaxOpset, make_factory<BinaryKernel<ModOp>>());
    registry.add("", "Pow", 1, kMaxOpset, make_factory<PowKernel>());
    registry.add("", "BitShift", 11, kMaxOpset, make_factory<BinaryKernel<BitShiftOp>>());
    registry.add("", "BitwiseAnd", 18, kMaxOpset, make_factory<BinaryKernel<BitwiseAndOp>>());
    registry.add("", "BitwiseOr", 18, kMaxOpset, make_factory<BinaryKernel<BitwiseOrOp>>());
    registry.add("", "BitwiseXor", 18, kMaxOpset, make_factory<BinaryKernel<BitwiseXorOp>>());
    registry.add("", "And", 1, kMaxOpset, make_factory<BinaryKernel<AndOp>>());
    registry.add("", "Or", 1, kMaxOpset, make_factory<BinaryKernel<OrOp>>());
    registry.add("", "Xor", 1, kMaxOpset, make_factory<BinaryKernel<XorOp>>());
    registry.add("", "Equal", 1, kMaxOpset, make_factory<BinaryKernel<EqualOp>>());
    registry.add("", "Less", 1, kMaxOpset, make_factory<BinaryKernel<LessOp>>());
    registry.add("", "Greater", 1, kMaxOpset, make_factory<BinaryKernel<GreaterOp>>());
    registry.add("", "LessOrEqual", 12, kMaxOpset, make_factory<BinaryKernel<LessOrEqualOp>>());
    registry.add("", "GreaterOrEqual", 12, kMaxOpset, make_factory<BinaryKernel<GreaterOrEqualOp>>());
    registry.add("", "Max", 1, kMaxOpset, make_factory<VariadicKernel<Variadic::kMax>>());
    registry.add("", "Min", 1, kMaxOpset, make_factory<VariadicKernel<Variadic::kMin>>());
    registry.add("", "Sum", 1, kMaxOpset, make_factory<VariadicKernel<Variadic::kSum>>());
    registry.add("", "Mean", 1, kMaxOpset, make_factory<VariadicKernel<Variadic::kMean>>());
    registry.add("", "Where", 9, kMaxOpset, make_factory<WhereKernel>());
}

}  // namespace polygraphy::ref
