// Sorting and scanning operators: TopK, Unique, CumSum. float16/bfloat16 are computed in float32.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

/// Sizes before, along and after `axis`.
struct AxisSplit {
    int64_t outer = 1, length = 1, inner = 1;
};

AxisSplit split_at(const Shape& shape, int64_t axis) {
    AxisSplit split;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
        if (d < axis) split.outer *= shape[d];
        else if (d == axis) split.length = shape[d];
        else split.inner *= shape[d];
    }
    return split;
}

/// Runs body(x, y_dtype) on a computable copy of x (half widened) and casts outputs back via `narrow`.
template <typename Body>
void with_widened(const NodeInfo& node, const Tensor& x, Body&& body) {
    const Tensor wide = widen_half(x);
    dispatch_dtype(node, wide.dtype(), [&](auto tag) { body(tag, wide); });
}

Tensor narrow_to(const Tensor& result, DataType dtype) { return result.dtype() == dtype ? result : result.cast(dtype); }

// ---- TopK -------------------------------------------------------------------------------------------

class TopKKernel final : public Kernel {
public:
    explicit TopKKernel(const NodeInfo& node)
        : opset_(node.opset()),
          axis_(node.attr_int("axis", -1)),
          largest_(node.attr_int("largest", 1) != 0),
          k_attr_(node.attr_int("k", -1)) {
        if (opset_ < 10 && k_attr_ < 0) node.fail("attribute 'k' is required and must be non-negative");
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        int64_t k = k_attr_;
        if (opset_ >= 10) {
            const Tensor& k_tensor = context.required_input(1);
            require_scalar(node, k_tensor, "K");
            k = read_ints(node, k_tensor, "K")[0];
        }
        const int64_t axis = normalize_axis(node, axis_, x.rank());
        const AxisSplit split = split_at(x.shape(), axis);
        if (k < 0 || k > split.length)
            node.fail("K = " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of length " +
                      std::to_string(split.length));
        Shape out_shape = x.shape();
        out_shape[static_cast<std::size_t>(axis)] = k;
        with_widened(node, x, [&](auto tag, const Tensor& wide) {
            using T = typename decltype(tag)::type;
            if constexpr (std::is_same_v<T, bool>) {
                unsupported_dtype(node, x.dtype());
            } else {
                Tensor values(wide.dtype(), out_shape);
                Tensor indices(DataType::kInt64, out_shape);
                const T* in = wide.data_as<T>();
                T* out = values.data_as<T>();
                int64_t* out_idx = indices.data_as<int64_t>();
                std::vector<int64_t> order(static_cast<std::size_t>(split.length));
                for (int64_t o = 0; o < split.outer; ++o) {
                    for (int64_t i = 0; i < split.inner; ++i) {
                        const T* base = in + o * split.length * split.inner + i;
                        std::iota(order.begin(), order.end(), 0);
                        // Ties keep the lower index first (as ONNX specifies); NaN sorts as the largest.
                        auto before = [&](int64_t a, int64_t b) {
                            const T va = base[a * split.inner], vb = base[b * split.inner];
                            if constexpr (kIsFloat<T>) {
                                if (std::isnan(va) || std::isnan(vb)) {
                                    if (std::isnan(va) && std::isnan(vb)) return a < b;
                                    return largest_ ? std::isnan(va) : std::isnan(vb);
                                }
                            }
                            if (va != vb) return largest_ ? va > vb : va < vb;
                            return a < b;
                        };
                        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
                        for (int64_t j = 0; j < k; ++j) {
                            const int64_t at = o * k * split.inner + j * split.inner + i;
                            out[at] = base[order[static_cast<std::size_t>(j)] * split.inner];
                            out_idx[at] = order[static_cast<std::size_t>(j)];
                        }
                    }
                }
                context.set_output(0, narrow_to(values, x.dtype()));
                if (context.num_outputs() > 1) context.set_output(1, indices);
            }
        });
    }

private:
    int64_t opset_;
    int64_t axis_;
    bool largest_;
    int64_t k_attr_;
};

// ---- Unique -----------------------------------------------------------------------------------------

class UniqueKernel final : public Kernel {
public:
    explicit UniqueKernel(const NodeInfo& node)
        : has_axis_(node.has_attr("axis")), axis_(node.attr_int("axis", 0)), sorted_(node.attr_int("sorted", 1) != 0) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const int64_t axis = has_axis_ ? normalize_axis(node, axis_, x.rank()) : 0;
        const AxisSplit split = has_axis_ ? split_at(x.shape(), axis) : AxisSplit{1, x.numel(), 1};
        with_widened(node, x, [&](auto tag, const Tensor& wide) {
            using T = typename decltype(tag)::type;
            const T* in = wide.data_as<T>();
            // Slice s: elements [o, s, i] for every o, i, in that order.
            auto slice = [&](int64_t s) {
                std::vector<T> values;
                values.reserve(static_cast<std::size_t>(split.outer * split.inner));
                for (int64_t o = 0; o < split.outer; ++o)
                    for (int64_t i = 0; i < split.inner; ++i) values.push_back(in[(o * split.length + s) * split.inner + i]);
                return values;
            };
            // Element-wise comparison (vector's operator< takes a memcmp path GCC 12 warns about falsely).
            auto less = [](const std::vector<T>& a, const std::vector<T>& b) {
                return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                                    [](const T& p, const T& q) { return p < q; });
            };
            std::map<std::vector<T>, int64_t, decltype(less)> first_of(less);  // slice -> unique id in first-occurrence order
            std::vector<int64_t> firsts, counts, inverse;
            std::vector<std::vector<T>> uniques;
            for (int64_t s = 0; s < split.length; ++s) {
                std::vector<T> values = slice(s);
                auto [it, inserted] = first_of.emplace(values, static_cast<int64_t>(firsts.size()));
                if (inserted) {
                    firsts.push_back(s);
                    counts.push_back(0);
                    uniques.push_back(std::move(values));
                }
                ++counts[static_cast<std::size_t>(it->second)];
                inverse.push_back(it->second);
            }
            // Output order: ascending (sorted) or first occurrence.
            std::vector<int64_t> order(firsts.size());
            std::iota(order.begin(), order.end(), 0);
            if (sorted_)
                std::sort(order.begin(), order.end(),
                          [&](int64_t a, int64_t b) {
                              return less(uniques[static_cast<std::size_t>(a)], uniques[static_cast<std::size_t>(b)]);
                          });
            std::vector<int64_t> rank_of(order.size());
            for (std::size_t r = 0; r < order.size(); ++r) rank_of[static_cast<std::size_t>(order[r])] = static_cast<int64_t>(r);

            const auto count = static_cast<int64_t>(order.size());
            Shape y_shape = has_axis_ ? x.shape() : Shape{count};
            if (has_axis_) y_shape[static_cast<std::size_t>(axis)] = count;
            Tensor y(wide.dtype(), y_shape);
            T* out = y.data_as<T>();
            for (int64_t r = 0; r < count; ++r) {
                const std::vector<T>& values = uniques[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
                std::size_t k = 0;
                for (int64_t o = 0; o < split.outer; ++o)
                    for (int64_t i = 0; i < split.inner; ++i) out[(o * count + r) * split.inner + i] = values[k++];
            }
            Tensor indices(DataType::kInt64, {count}), counts_out(DataType::kInt64, {count});
            Tensor inverse_out(DataType::kInt64, {split.length});
            for (int64_t r = 0; r < count; ++r) {
                indices.data_as<int64_t>()[r] = firsts[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
                counts_out.data_as<int64_t>()[r] = counts[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
            }
            for (int64_t s = 0; s < split.length; ++s)
                inverse_out.data_as<int64_t>()[s] = rank_of[static_cast<std::size_t>(inverse[static_cast<std::size_t>(s)])];
            context.set_output(0, narrow_to(y, x.dtype()));
            if (context.num_outputs() > 1) context.set_output(1, indices);
            if (context.num_outputs() > 2) context.set_output(2, inverse_out);
            if (context.num_outputs() > 3) context.set_output(3, counts_out);
        });
    }

private:
    bool has_axis_;
    int64_t axis_;
    bool sorted_;
};

// ---- CumSum -----------------------------------------------------------------------------------------

class CumSumKernel final : public Kernel {
public:
    explicit CumSumKernel(const NodeInfo& node)
        : exclusive_(node.attr_int("exclusive", 0) != 0), reverse_(node.attr_int("reverse", 0) != 0) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& axis_tensor = context.required_input(1);
        require_scalar(node, axis_tensor, "axis");
        const int64_t axis = normalize_axis(node, read_ints(node, axis_tensor, "axis")[0], x.rank());
        const AxisSplit split = split_at(x.shape(), axis);
        with_widened(node, x, [&](auto tag, const Tensor& wide) {
            using T = typename decltype(tag)::type;
            if constexpr (std::is_same_v<T, bool>) {
                unsupported_dtype(node, x.dtype());
            } else {
                using Acc = std::conditional_t<kIsFloat<T>, double, T>;
                Tensor y(wide.dtype(), x.shape());
                const T* in = wide.data_as<T>();
                T* out = y.data_as<T>();
                for (int64_t o = 0; o < split.outer; ++o) {
                    for (int64_t i = 0; i < split.inner; ++i) {
                        Acc sum = 0;
                        for (int64_t step = 0; step < split.length; ++step) {
                            const int64_t s = reverse_ ? split.length - 1 - step : step;
                            const int64_t at = (o * split.length + s) * split.inner + i;
                            if (exclusive_) {
                                out[at] = static_cast<T>(sum);
                                sum = static_cast<Acc>(sum + in[at]);
                            } else {
                                sum = static_cast<Acc>(sum + in[at]);
                                out[at] = static_cast<T>(sum);
                            }
                        }
                    }
                }
                context.set_output(0, narrow_to(y, x.dtype()));
            }
        });
    }

private:
    bool exclusive_;
    bool reverse_;
};

}  // namespace

void register_sort_ops(OpRegistry& registry) {
    registry.add("", "TopK", 1, kMaxOpset, make_factory<TopKKernel>());
    registry.add("", "Unique", 11, kMaxOpset, make_factory<UniqueKernel>());
    registry.add("", "CumSum", 11, kMaxOpset, make_factory<CumSumKernel>());
}

}  // namespace polygraphy::ref
