// Unary math: Neg, Abs, Sign, Sqrt, Reciprocal, Exp, Log, Erf, the trigonometric and hyperbolic
// functions and their inverses, Floor, Ceil, Round, IsNaN, IsInf, Not, BitwiseNot. Each is a
// scalar function run by UnaryKernel (elementwise.h); activations are in activation.cpp.
#include <cmath>

#include "backend/ref/ops/elementwise.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

// One line per operator, as a table (the multi-line ones follow).
// clang-format off
struct NegOp : SignedOnly { template <typename T> T operator()(T x) const { return wrap_neg(x); } };
struct SqrtOp : FloatOnly { template <typename T> T operator()(T x) const { return std::sqrt(x); } };
struct ReciprocalOp : FloatOnly { template <typename T> T operator()(T x) const { return T(1) / x; } };
struct ExpOp : FloatOnly { template <typename T> T operator()(T x) const { return std::exp(x); } };
struct LogOp : FloatOnly { template <typename T> T operator()(T x) const { return std::log(x); } };
struct ErfOp : FloatOnly { template <typename T> T operator()(T x) const { return std::erf(x); } };
struct SinOp : FloatOnly { template <typename T> T operator()(T x) const { return std::sin(x); } };
struct CosOp : FloatOnly { template <typename T> T operator()(T x) const { return std::cos(x); } };
struct TanOp : FloatOnly { template <typename T> T operator()(T x) const { return std::tan(x); } };
struct AsinOp : FloatOnly { template <typename T> T operator()(T x) const { return std::asin(x); } };
struct AcosOp : FloatOnly { template <typename T> T operator()(T x) const { return std::acos(x); } };
struct AtanOp : FloatOnly { template <typename T> T operator()(T x) const { return std::atan(x); } };
struct SinhOp : FloatOnly { template <typename T> T operator()(T x) const { return std::sinh(x); } };
struct CoshOp : FloatOnly { template <typename T> T operator()(T x) const { return std::cosh(x); } };
struct AsinhOp : FloatOnly { template <typename T> T operator()(T x) const { return std::asinh(x); } };
struct AcoshOp : FloatOnly { template <typename T> T operator()(T x) const { return std::acosh(x); } };
struct AtanhOp : FloatOnly { template <typename T> T operator()(T x) const { return std::atanh(x); } };
struct FloorOp : FloatOnly { template <typename T> T operator()(T x) const { return std::floor(x); } };
struct CeilOp : FloatOnly { template <typename T> T operator()(T x) const { return std::ceil(x); } };
// The default rounding mode rounds half to even, as np.round does.
struct RoundOp : FloatOnly { template <typename T> T operator()(T x) const { return std::nearbyint(x); } };
struct IsNaNOp : FloatOnly { template <typename T> bool operator()(T x) const { return std::isnan(x); } };
struct NotOp : BoolOnly { template <typename T> bool operator()(T x) const { return !x; } };
struct BitwiseNotOp : IntegerOnly { template <typename T> T operator()(T x) const { return static_cast<T>(~x); } };
// clang-format on

struct AbsOp : NumericOnly {
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
struct SignOp : NumericOnly {
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
struct IsInfOp : FloatOnly {
    explicit IsInfOp(const NodeInfo& node)
        : negative_(node.attr_int("detect_negative", 1) != 0), positive_(node.attr_int("detect_positive", 1) != 0) {}
    template <typename T>
    bool operator()(T x) const {
        return std::isinf(x) && (x > 0 ? positive_ : negative_);
    }
    bool negative_, positive_;
};

}  // namespace

void register_unary_ops(OpRegistry& registry) {
    registry.add("", "Neg", 1, kMaxOpset, make_factory<UnaryKernel<NegOp>>());
    registry.add("", "Abs", 1, kMaxOpset, make_factory<UnaryKernel<AbsOp>>());
    registry.add("", "Sign", 9, kMaxOpset, make_factory<UnaryKernel<SignOp>>());
    registry.add("", "Sqrt", 1, kMaxOpset, make_factory<UnaryKernel<SqrtOp>>());
    registry.add("", "Reciprocal", 1, kMaxOpset, make_factory<UnaryKernel<ReciprocalOp>>());
    registry.add("", "Exp", 1, kMaxOpset, make_factory<UnaryKernel<ExpOp>>());
    registry.add("", "Log", 1, kMaxOpset, make_factory<UnaryKernel<LogOp>>());
    registry.add("", "Erf", 9, kMaxOpset, make_factory<UnaryKernel<ErfOp>>());
    registry.add("", "Sin", 7, kMaxOpset, make_factory<UnaryKernel<SinOp>>());
    registry.add("", "Cos", 7, kMaxOpset, make_factory<UnaryKernel<CosOp>>());
    registry.add("", "Tan", 7, kMaxOpset, make_factory<UnaryKernel<TanOp>>());
    registry.add("", "Asin", 7, kMaxOpset, make_factory<UnaryKernel<AsinOp>>());
    registry.add("", "Acos", 7, kMaxOpset, make_factory<UnaryKernel<AcosOp>>());
    registry.add("", "Atan", 7, kMaxOpset, make_factory<UnaryKernel<AtanOp>>());
    registry.add("", "Sinh", 9, kMaxOpset, make_factory<UnaryKernel<SinhOp>>());
    registry.add("", "Cosh", 9, kMaxOpset, make_factory<UnaryKernel<CoshOp>>());
    registry.add("", "Asinh", 9, kMaxOpset, make_factory<UnaryKernel<AsinhOp>>());
    registry.add("", "Acosh", 9, kMaxOpset, make_factory<UnaryKernel<AcoshOp>>());
    registry.add("", "Atanh", 9, kMaxOpset, make_factory<UnaryKernel<AtanhOp>>());
    registry.add("", "Floor", 1, kMaxOpset, make_factory<UnaryKernel<FloorOp>>());
    registry.add("", "Ceil", 1, kMaxOpset, make_factory<UnaryKernel<CeilOp>>());
    registry.add("", "Round", 11, kMaxOpset, make_factory<UnaryKernel<RoundOp>>());
    registry.add("", "IsNaN", 9, kMaxOpset, make_factory<UnaryKernel<IsNaNOp>>());
    registry.add("", "IsInf", 10, kMaxOpset, make_factory<UnaryKernel<IsInfOp>>());
    registry.add("", "Not", 1, kMaxOpset, make_factory<UnaryKernel<NotOp>>());
    registry.add("", "BitwiseNot", 18, kMaxOpset, make_factory<UnaryKernel<BitwiseNotOp>>());
}

}  // namespace polygraphy::ref
