// Private helpers of the elementwise families (unary.cpp, activation.cpp, binary.cpp, cast.cpp,
// quantized.cpp): wrapping integer arithmetic, dtype checks, and UnaryKernel, the one template
// that runs every unary operator.
//
// A unary operator is a scalar function object (as in ggml's unary-ops.cpp / binary-ops.cpp):
//
//     struct SqrtOp : FloatOnly {
//         template <typename T>
//         T operator()(T x) const { return std::sqrt(x); }
//     };
//     registry.add("", "Sqrt", 1, kMaxOpset, make_factory<UnaryKernel<SqrtOp>>());
//
// `kSupports<T>` (from a base: FloatOnly, NumericOnly, ...) says which dispatched types it takes;
// an operator with attributes reads them in a constructor taking the NodeInfo. float16/bfloat16
// inputs are computed in float32 and rounded back once; an operator deriving from FloatInDouble
// computes every float type in double instead (one rounding to the input's type). An operator with
// a oneDNN eltwise equivalent declares `static constexpr dnnl::algorithm kDnnl` and runs vectorized
// on float32.
#pragma once

#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/kernel_util.h"

namespace polygraphy::ref {

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

/// Fails unless `a` and `b` have the same dtype (`what` names them in the message).
inline void require_same_dtype(const NodeInfo& node, const Tensor& a, const Tensor& b,
                               std::string_view what = "inputs") {
    if (a.dtype() != b.dtype())
        node.fail(fmt::format("{} must have the same data type, but they are {} and {}", what, dtype_name(a.dtype()),
                              dtype_name(b.dtype())));
}

/// A result computed in float32 (or float64) for a float16/bfloat16 input, rounded back once.
inline Tensor narrow_if_half(Tensor tensor, DataType original) {
    const bool widened = tensor.dtype() == DataType::kFloat32 || tensor.dtype() == DataType::kFloat64;
    return is_half(original) && widened ? tensor.cast(original) : tensor;
}

/// Opset 19's 'saturate' of Cast and QuantizeLinear (float8 targets only): 1 clamps out-of-range
/// values to the largest finite value.
inline bool saturate_attr(const NodeInfo& node) {
    if (node.opset() < 19) return true;
    const int64_t saturate = node.attr_int("saturate", 1);
    if (saturate != 0 && saturate != 1)
        node.fail(fmt::format("attribute 'saturate' must be 0 or 1, but it is {}", saturate));
    return saturate == 1;
}

/// The operator object of a node: Op(node) when Op reads attributes, else Op{}.
template <typename Op>
Op make_op(const NodeInfo& node) {
    if constexpr (std::is_constructible_v<Op, const NodeInfo&>)
        return Op(node);
    else
        return Op{};
}

// ---- which types an operator takes -------------------------------------------------------------

/// Float types only.
struct FloatOnly {
    template <typename T>
    static constexpr bool kSupports = kIsFloat<T>;
};
/// Float types, computed in double whatever the input's float type.
struct FloatInDouble : FloatOnly {
    static constexpr bool kHalfInDouble = true;
};
/// Floats and integers (not bool).
struct NumericOnly {
    template <typename T>
    static constexpr bool kSupports = kIsNumeric<T>;
};
/// Floats and signed integers.
struct SignedOnly {
    template <typename T>
    static constexpr bool kSupports = kIsSignedNumeric<T>;
};
/// Integers (not bool).
struct IntegerOnly {
    template <typename T>
    static constexpr bool kSupports = kIsInt<T>;
};
/// bool only.
struct BoolOnly {
    template <typename T>
    static constexpr bool kSupports = std::is_same_v<T, bool>;
};

// ---- UnaryKernel --------------------------------------------------------------------------------

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

template <typename Op, typename = void>
struct HalfInDouble : std::false_type {};
template <typename Op>
struct HalfInDouble<Op, std::void_t<decltype(Op::kHalfInDouble)>> : std::bool_constant<Op::kHalfInDouble> {};

/// y = op(x) elementwise (see the top of this file).
template <typename Op>
class UnaryKernel final : public Kernel {
public:
    explicit UnaryKernel(const NodeInfo& node) : op_(make_op<Op>(node)), eltwise_(dnnl_algorithm_of<Op>()) {}

    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& input = ctx.required_input(0);
        const Tensor x =
            HalfInDouble<Op>::value && is_half(input.dtype()) ? input.cast(DataType::kFloat64) : widen_half(input);
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
                for_each_index(n, n >= kParallelThreshold, threads, [&](int64_t i) { out[i] = op_(in[i]); });
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

}  // namespace polygraphy::ref
