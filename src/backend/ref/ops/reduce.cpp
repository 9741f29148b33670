// Reduce* operators and ArgMax/ArgMin. The input is viewed with adjacent reduced/kept dims merged;
// the innermost merged dim is then either reduced (each output sums a contiguous run) or kept (each
// output row accumulates contiguous vectors), so the inner loops are unit-stride. Floating inputs
// accumulate in double, integers in 64 bits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

/// The reduction as merged dims: `outer` dims (each kept or reduced) and one innermost run.
struct ReducePlan {
    int64_t out_count = 1;     ///< number of outputs
    int64_t reduce_count = 1;  ///< elements per output
    bool inner_reduced = false;
    int64_t inner = 1;  ///< length of the innermost merged dim (contiguous)
    std::vector<int64_t> kept_sizes, kept_strides;
    std::vector<int64_t> reduced_sizes, reduced_strides;

    /// Input offset of the `index`-th combination of the reduced outer dims.
    int64_t reduced_offset(int64_t index) const {
        int64_t offset = 0;
        for (std::size_t d = reduced_sizes.size(); d-- > 0;) {
            offset += (index % reduced_sizes[d]) * reduced_strides[d];
            index /= reduced_sizes[d];
        }
        return offset;
    }
    /// Input offset of the `index`-th combination of the kept outer dims.
    int64_t kept_offset(int64_t index) const {
        int64_t offset = 0;
        for (std::size_t d = kept_sizes.size(); d-- > 0;) {
            offset += (index % kept_sizes[d]) * kept_strides[d];
            index /= kept_sizes[d];
        }
        return offset;
    }
    int64_t reduced_outer_count() const { return inner_reduced ? reduce_count / std::max<int64_t>(inner, 1) : reduce_count; }
    int64_t kept_outer_count() const { return inner_reduced ? out_count : out_count / std::max<int64_t>(inner, 1); }
};

ReducePlan make_plan(const Shape& shape, const std::vector<bool>& reduced) {
    // Merge adjacent dims of the same kind, dropping size-1 dims (they change nothing).
    std::vector<int64_t> sizes;
    std::vector<bool> kinds;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1) continue;
        if (!sizes.empty() && kinds.back() == reduced[d]) {
            sizes.back() *= shape[d];
        } else {
            sizes.push_back(shape[d]);
            kinds.push_back(reduced[d]);
        }
    }
    ReducePlan plan;
    if (sizes.empty()) return plan;  // a single element
    std::vector<int64_t> strides(sizes.size(), 1);
    for (std::size_t d = sizes.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * sizes[d + 1];
    plan.inner = sizes.back();
    plan.inner_reduced = kinds.back();
    for (std::size_t d = 0; d + 1 < sizes.size(); ++d) {
        if (kinds[d]) {
            plan.reduced_sizes.push_back(sizes[d]);
            plan.reduced_strides.push_back(strides[d]);
        } else {
            plan.kept_sizes.push_back(sizes[d]);
            plan.kept_strides.push_back(strides[d]);
        }
    }
    for (std::size_t d = 0; d < sizes.size(); ++d) (kinds[d] ? plan.reduce_count : plan.out_count) *= sizes[d];
    return plan;
}

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

/// Accumulator type: double for floating inputs, 64-bit for integers.
template <typename T>
using AccOf = std::conditional_t<kIsFloat<T>, double, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <typename A>
A max_nan(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
    }
    return b > a ? b : a;
}

template <typename A>
A min_nan(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
    }
    return b < a ? b : a;
}

/// Accumulates every output of `plan`: acc[o] = fold(combine, init, map(x, o) over o's elements).
template <typename T, typename A, typename Map, typename Combine>
void reduce_accumulate(const ReducePlan& plan, const T* x, A* acc, A init, Map map, Combine combine, int threads) {
    const int64_t outer_reduced = plan.reduced_outer_count();
    if (plan.inner_reduced) {
        const int64_t inner = plan.inner;
        auto fold_output = [&](int64_t o, int64_t r_begin, int64_t r_end) {
            const T* base = x + plan.kept_offset(o);
            A value = init;
            auto map_o = [&](T v) { return map(v, o); };
            for (int64_t r = r_begin; r < r_end; ++r) {
                value = combine(value, onednn::lane_fold<A>(base + plan.reduced_offset(r), inner, init, map_o, combine));
            }
            return value;
        };
        const int resolved = onednn::resolve_threads(threads);
        if (plan.out_count >= resolved || outer_reduced < resolved) {
            onednn::parallel_for(plan.out_count, threads, plan.reduce_count, [&](int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o) acc[o] = fold_output(o, 0, outer_reduced);
            });
            return;
        }
        // Few outputs, many elements each: split each output's reduction across threads.
        for (int64_t o = 0; o < plan.out_count; ++o) {
            std::vector<A> partial(static_cast<std::size_t>(resolved), init);
            onednn::parallel_for(outer_reduced, threads, inner, [&](int64_t begin, int64_t end) {
                partial[static_cast<std::size_t>(omp_get_thread_num())] = fold_output(o, begin, end);
            });
            A value = init;
            for (const A& p : partial) value = combine(value, p);
            acc[o] = value;
        }
        return;
    }
    // Innermost dim kept: every output row accumulates contiguous vectors, split into column chunks.
    const int64_t inner = plan.inner;
    const int64_t rows = plan.kept_outer_count();
    constexpr int64_t kChunk = 512;
    const int64_t chunks = (inner + kChunk - 1) / kChunk;
    onednn::parallel_for(rows * chunks, threads, std::min(inner, kChunk) * outer_reduced, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
            const int64_t row = task / chunks;
            const int64_t col0 = (task % chunks) * kChunk;
            const int64_t cols = std::min(kChunk, inner - col0);
            A* out = acc + row * inner + col0;
            const int64_t o0 = row * inner + col0;
            std::fill(out, out + cols, init);
            const T* base = x + plan.kept_offset(row) + col0;
            for (int64_t r = 0; r < outer_reduced; ++r) {
                const T* run = base + plan.reduced_offset(r);
                for (int64_t j = 0; j < cols; ++j) out[j] = combine(out[j], map(run[j], o0 + j));
            }
        }
    });
}

template <typename T>
void run_reduce(ReduceOp op, const ReducePlan& plan, const T* x, T* y, int threads) {
    using A = AccOf<T>;
    const int64_t n = plan.out_count;
    std::vector<A> acc(static_cast<std::size_t>(n));
    auto identity = [](T v, int64_t) { return static_cast<A>(v); };
    auto add = [](A a, A b) { return a + b; };
    const double count = static_cast<double>(plan.reduce_count);
    switch (op) {
        case ReduceOp::kMax:
        case ReduceOp::kMin: {
            const bool is_max = op == ReduceOp::kMax;
            A init;
            if constexpr (kIsFloat<T>) init = is_max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
            else init = is_max ? static_cast<A>(std::numeric_limits<T>::lowest()) : static_cast<A>(std::numeric_limits<T>::max());
            if (is_max) reduce_accumulate(plan, x, acc.data(), init, identity, [](A a, A b) { return max_nan(a, b); }, threads);
            else reduce_accumulate(plan, x, acc.data(), init, identity, [](A a, A b) { return min_nan(a, b); }, threads);
            for (int64_t o = 0; o < n; ++o) y[o] = static_cast<T>(acc[static_cast<std::size_t>(o)]);
            return;
        }
        case ReduceOp::kProd:
            reduce_accumulate(plan, x, acc.data(), A{1}, identity, [](A a, A b) { return a * b; }, threads);
            break;
        case ReduceOp::kL1:
            reduce_accumulate(plan, x, acc.data(), A{0}, [](T v, int64_t) {
                if constexpr (std::is_unsigned_v<T>) return static_cast<A>(v);
                else return static_cast<A>(v < 0 ? -static_cast<A>(v) : static_cast<A>(v));
            }, add, threads);
            break;
        case ReduceOp::kL2:
        case ReduceOp::kSumSquare:
            reduce_accumulate(plan, x, acc.data(), A{0}, [](T v, int64_t) { return static_cast<A>(v) * static_cast<A>(v); }, add, threads);
            break;
        case ReduceOp::kLogSumExp: {
            // max first (shifted by it when finite), then log(sum(exp(x - max))) + max.
            std::vector<double> shift(static_cast<std::size_t>(n));
            std::vector<double> maxima(static_cast<std::size_t>(n));
            reduce_accumulate(plan, x, maxima.data(), -std::numeric_limits<double>::infinity(),
                              [](T v, int64_t) { return static_cast<double>(v); }, [](double a, double b) { return max_nan(a, b); },
                              threads);
            for (std::size_t o = 0; o < shift.size(); ++o) shift[o] = std::isfinite(maxima[o]) ? maxima[o] : 0.0;
            std::vector<double> sums(static_cast<std::size_t>(n));
            const double* shift_data = shift.data();
            reduce_accumulate(plan, x, sums.data(), 0.0,
                              [shift_data](T v, int64_t o) { return std::exp(static_cast<double>(v) - shift_data[o]); },
                              [](double a, double b) { return a + b; }, threads);
            for (int64_t o = 0; o < n; ++o) {
                y[o] = static_cast<T>(std::log(sums[static_cast<std::size_t>(o)]) + shift[static_cast<std::size_t>(o)]);
            }
            return;
        }
        default:  // kSum, kMean, kLogSum
            reduce_accumulate(plan, x, acc.data(), A{0}, identity, add, threads);
            break;
    }
    for (int64_t o = 0; o < n; ++o) {
        const A value = acc[static_cast<std::size_t>(o)];
        switch (op) {
            case ReduceOp::kMean:
                if constexpr (kIsFloat<T>) y[o] = static_cast<T>(value / count);
                else y[o] = plan.reduce_count == 0 ? T{0} : static_cast<T>(value / static_cast<A>(plan.reduce_count));
                break;
            case ReduceOp::kL2: y[o] = static_cast<T>(std::sqrt(static_cast<double>(value))); break;
            case ReduceOp::kLogSum: y[o] = static_cast<T>(std::log(static_cast<double>(value))); break;
            default: y[o] = static_cast<T>(value); break;
        }
    }
}

bool reduce_type_ok(ReduceOp op, DataType dtype) {
    if (onednn::is_numeric_dtype(dtype)) return true;
    switch (dtype) {
        case DataType::kInt8:
        case DataType::kUInt8:
        case DataType::kBool: return op == ReduceOp::kMax || op == ReduceOp::kMin;
        default: return false;
    }
}

int64_t normalize_axis(const NodeInfo& node, int64_t axis, int64_t rank, const char* what) {
    if (axis < -rank || axis >= rank) {
        node.fail(std::string(what) + " value " + std::to_string(axis) + " is out of range for an input of rank " +
                  std::to_string(rank) + "\nNote: allowed [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
    }
    return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> read_axes_tensor(const NodeInfo& node, const Tensor& axes) {
    if (axes.dtype() != DataType::kInt64) onednn::fail_dtype(node, "input 'axes'", axes.dtype(), "int64");
    if (axes.rank() > 1) node.fail("input 'axes' must be 1-D\nNote: axes shape = " + shape_to_string(axes.shape()));
    return std::vector<int64_t>(axes.data_as<int64_t>(), axes.data_as<int64_t>() + axes.numel());
}

class ReduceKernel final : public Kernel {
public:
    ReduceKernel(const NodeInfo& node, ReduceOp op) : op_(op) {
        axes_from_input_ = op == ReduceOp::kSum ? node.opset() >= 13 : node.opset() >= 18;
        keepdims_ = node.attr_int("keepdims", 1);
        if (keepdims_ != 0 && keepdims_ != 1) node.fail("attribute 'keepdims' must be 0 or 1\nNote: keepdims = " + std::to_string(keepdims_));
        if (axes_from_input_) {
            if (node.has_attr("axes")) {
                node.fail("attribute 'axes' is not allowed at opset " + std::to_string(node.opset()) +
                          " (axes are the second input)");
            }
            const int64_t noop = node.attr_int("noop_with_empty_axes", 0);
            if (noop != 0 && noop != 1) {
                node.fail("attribute 'noop_with_empty_axes' must be 0 or 1\nNote: noop_with_empty_axes = " + std::to_string(noop));
            }
            noop_with_empty_axes_ = noop == 1;
            if (const Tensor* axes = node.constant_input(1)) read_axes_tensor(node, *axes);
        } else {
            axes_ = node.attr_ints("axes");
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const DataType dtype = x.dtype();
        if (!reduce_type_ok(op_, dtype)) {
            onednn::fail_dtype(node, "input data", dtype,
                               op_ == ReduceOp::kMax || op_ == ReduceOp::kMin
                                   ? std::string(onednn::kNumericTypes) + ", int8, uint8, bool"
                                   : std::string(onednn::kNumericTypes));
        }
        std::vector<int64_t> axes = axes_;
        if (axes_from_input_) {
            const Tensor* axes_input = context.input(1);
            if (axes_input != nullptr && axes_input->defined()) axes = read_axes_tensor(node, *axes_input);
        }
        const int64_t rank = x.rank();
        std::vector<bool> reduced(static_cast<std::size_t>(rank), axes.empty() && !noop_with_empty_axes_);
        for (int64_t axis : axes) {
            const int64_t a = normalize_axis(node, axis, rank, "axes");
            if (reduced[static_cast<std::size_t>(a)]) node.fail("axes repeat axis " + std::to_string(axis));
            reduced[static_cast<std::size_t>(a)] = true;
        }
        Shape out_shape;
        for (std::size_t d = 0; d < x.shape().size(); ++d) {
            if (!reduced[d]) out_shape.push_back(x.shape()[d]);
            else if (keepdims_ == 1) out_shape.push_back(1);
        }
        if (shape_volume(out_shape) == 0) {
            context.allocate_output(0, dtype, out_shape);
            return;
        }
        const ReducePlan plan = make_plan(x.shape(), reduced);
        const int threads = context.num_threads();
        if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
            const Tensor x32 = x.cast(DataType::kFloat32);
            Tensor y32 = Tensor::uninitialized(DataType::kFloat32, out_shape);  // run_reduce writes every element
            run_reduce<float>(op_, plan, x32.data_as<float>(), y32.data_as<float>(), threads);
            context.set_output(0, y32.cast(dtype));
            return;
        }
        Tensor& y = context.allocate_uninitialized_output(0, dtype, out_shape);
        switch (dtype) {  // every type reduce_type_ok accepts
            case DataType::kFloat32: run_reduce<float>(op_, plan, x.data_as<float>(), y.data_as<float>(), threads); break;
            case DataType::kFloat64: run_reduce<double>(op_, plan, x.data_as<double>(), y.data_as<double>(), threads); break;
            case DataType::kInt32: run_reduce<int32_t>(op_, plan, x.data_as<int32_t>(), y.data_as<int32_t>(), threads); break;
            case DataType::kInt64: run_reduce<int64_t>(op_, plan, x.data_as<int64_t>(), y.data_as<int64_t>(), threads); break;
            case DataType::kUInt32: run_reduce<uint32_t>(op_, plan, x.data_as<uint32_t>(), y.data_as<uint32_t>(), threads); break;
            case DataType::kUInt64: run_reduce<uint64_t>(op_, plan, x.data_as<uint64_t>(), y.data_as<uint64_t>(), threads); break;
            case DataType::kInt8: run_reduce<int8_t>(op_, plan, x.data_as<int8_t>(), y.data_as<int8_t>(), threads); break;
            case DataType::kUInt8:
            case DataType::kBool: run_reduce<uint8_t>(op_, plan, x.data_as<uint8_t>(), y.data_as<uint8_t>(), threads); break;
            default: break;
        }
    }

private:
    ReduceOp op_;
    bool axes_from_input_ = false;
    int64_t keepdims_ = 1;
    bool noop_with_empty_axes_ = false;
    std::vector<int64_t> axes_;
};

// ---- ArgMax / ArgMin --------------------------------------------------------------------------------------

/// True when `value` at a later index should replace `best`: NaN wins (like numpy), ties go to the
/// later index only with select_last_index.
template <typename T>
bool arg_better(T value, T best, bool is_max, bool select_last) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(best)) return select_last && std::isnan(value);
        if (std::isnan(value)) return true;
    }
    if (value == best) return select_last;
    return is_max ? value > best : value < best;
}

template <typename T>
void run_arg(bool is_max, bool select_last, int64_t outer, int64_t length, int64_t inner, const T* x, int64_t* y,
             int threads) {
    onednn::parallel_for(outer * inner, threads, length, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            const T* xr = x + (row / inner) * length * inner + row % inner;
            int64_t best = 0;
            for (int64_t i = 1; i < length; ++i) {
                if (arg_better(xr[i * inner], xr[best * inner], is_max, select_last)) best = i;
            }
            y[row] = best;
        }
    });
}

class ArgKernel final : public Kernel {
public:
    ArgKernel(const NodeInfo& node, bool is_max) : is_max_(is_max) {
        axis_ = node.attr_int("axis", 0);
        keepdims_ = node.attr_int("keepdims", 1);
        if (keepdims_ != 0 && keepdims_ != 1) node.fail("attribute 'keepdims' must be 0 or 1\nNote: keepdims = " + std::to_string(keepdims_));
        const int64_t last = node.attr_int("select_last_index", 0);
        if (last != 0 && last != 1) node.fail("attribute 'select_last_index' must be 0 or 1\nNote: select_last_index = " + std::to_string(last));
        select_last_ = last == 1;
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const int64_t rank = x.rank();
        if (rank == 0) node.fail("input must have rank >= 1");
        if (axis_ < -rank || axis_ >= rank) {
            node.fail("attribute 'axis' is out of range for an input of rank " + std::to_string(rank) + "\nNote: axis = " +
                      std::to_string(axis_) + ", allowed [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
        }
        const std::size_t axis = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);
        const Shape& shape = x.shape();
        int64_t outer = 1;
        int64_t inner = 1;
        for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
        for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
        const int64_t length = shape[axis];
        Shape out_shape = shape;
        if (keepdims_ == 1) out_shape[axis] = 1;
        else out_shape.erase(out_shape.begin() + static_cast<std::ptrdiff_t>(axis));
        if (length == 0 && outer * inner > 0) {
            node.fail("cannot take the " + std::string(is_max_ ? "argmax" : "argmin") + " over an empty axis\nNote: input shape = " +
                      shape_to_string(shape));
        }
        Tensor& y = context.allocate_output(0, DataType::kInt64, out_shape);
        int64_t* yp = y.data_as<int64_t>();
        const int threads = context.num_threads();
        switch (x.dtype()) {
            case DataType::kFloat32: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<float>(), yp, threads); break;
            case DataType::kFloat64: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<double>(), yp, threads); break;
            case DataType::kInt8: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<int8_t>(), yp, threads); break;
            case DataType::kInt16: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<int16_t>(), yp, threads); break;
            case DataType::kInt32: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<int32_t>(), yp, threads); break;
            case DataType::kInt64: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<int64_t>(), yp, threads); break;
            case DataType::kUInt8: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<uint8_t>(), yp, threads); break;
            case DataType::kUInt16: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<uint16_t>(), yp, threads); break;
            case DataType::kUInt32: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<uint32_t>(), yp, threads); break;
            case DataType::kUInt64: run_arg(is_max_, select_last_, outer, length, inner, x.data_as<uint64_t>(), yp, threads); break;
            case DataType::kFloat16:
            case DataType::kBFloat16: {
                const Tensor x32 = x.cast(DataType::kFloat32);
                run_arg(is_max_, select_last_, outer, length, inner, x32.data_as<float>(), yp, threads);
                break;
            }
            default:
                onednn::fail_dtype(node, "input data", x.dtype(),
                                   "float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, uint64");
        }
    }

private:
    bool is_max_;
    int64_t axis_ = 0;
    int64_t keepdims_ = 1;
    bool select_last_ = false;
};

template <ReduceOp kOp>
KernelFactory reduce_factory() {
    return [](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<ReduceKernel>(node, kOp); };
}

template <bool kIsMax>
KernelFactory arg_factory() {
    return [](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<ArgKernel>(node, kIsMax); };
}

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
    registry.add("", "ReduceSum", 1, kMaxOpset, reduce_factory<ReduceOp::kSum>());
    registry.add("", "ReduceMean", 1, kMaxOpset, reduce_factory<ReduceOp::kMean>());
    registry.add("", "ReduceMax", 1, kMaxOpset, reduce_factory<ReduceOp::kMax>());
    registry.add("", "ReduceMin", 1, kMaxOpset, reduce_factory<ReduceOp::kMin>());
    registry.add("", "ReduceProd", 1, kMaxOpset, reduce_factory<ReduceOp::kProd>());
    registry.add("", "ReduceL1", 1, kMaxOpset, reduce_factory<ReduceOp::kL1>());
    registry.add("", "ReduceL2", 1, kMaxOpset, reduce_factory<ReduceOp::kL2>());
    registry.add("", "ReduceLogSum", 1, kMaxOpset, reduce_factory<ReduceOp::kLogSum>());
    registry.add("", "ReduceLogSumExp", 1, kMaxOpset, reduce_factory<ReduceOp::kLogSumExp>());
    registry.add("", "ReduceSumSquare", 1, kMaxOpset, reduce_factory<ReduceOp::kSumSquare>());
    registry.add("", "ArgMax", 1, kMaxOpset, arg_factory<true>());
    registry.add("", "ArgMin", 1, kMaxOpset, arg_factory<false>());
}

}  // namespace polygraphy::ref
