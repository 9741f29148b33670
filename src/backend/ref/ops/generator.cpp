// Generators: Constant, ConstantOfShape, Range and EyeLike (values made from attributes and
// shapes; the random generators are in sampling.cpp, the signal windows in signal.cpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

class ConstantKernel final : public Kernel {
public:
    explicit ConstantKernel(const NodeInfo& node) {
        int set = 0;
        for (const auto& attr : node.proto().attribute()) {
            const std::string& name = attr.name();
            if (name == "sparse_value")
                unsupported(node, "sparse constants (attribute 'sparse_value') are not supported");
            ++set;
            if (name == "value") {
                value_ = *node.attr_tensor("value");
            } else if (name == "value_float") {
                value_ = Tensor::from_doubles(DataType::kFloat32, {}, {node.attr_float(name, 0)});
            } else if (name == "value_floats") {
                const auto values = node.attr_floats(name);
                value_ = Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(values.size())},
                                              std::vector<double>(values.begin(), values.end()));
            } else if (name == "value_int") {
                value_ = Tensor(DataType::kInt64, {});
                value_.data_as<int64_t>()[0] = node.attr_int(name, 0);
            } else if (name == "value_ints") {
                const auto values = node.attr_ints(name);
                value_ = Tensor(DataType::kInt64, {static_cast<int64_t>(values.size())});
                std::copy(values.begin(), values.end(), value_.data_as<int64_t>());
            } else if (name == "value_string") {
                value_ = Tensor(DataType::kString, {});
                value_.strings()[0] = node.attr_string(name, "");
            } else if (name == "value_strings") {
                if (attr.type() != onnx::AttributeProto::STRINGS)
                    node.fail("attribute 'value_strings' must be of type strings");
                value_ = Tensor(DataType::kString, {attr.strings_size()});
                for (int i = 0; i < attr.strings_size(); ++i) value_.strings()[i] = attr.strings(i);
            } else {
                --set;
            }
        }
        if (set != 1) node.fail(fmt::format("exactly one value attribute must be set, found {}", set));
    }

    void compute(KernelContext& ctx) const override { ctx.set_output(0, value_); }

private:
    Tensor value_;
};

class ConstantOfShapeKernel final : public Kernel {
public:
    explicit ConstantOfShapeKernel(const NodeInfo& node) {
        std::optional<Tensor> value = node.attr_tensor("value");
        if (value) {
            if (value->numel() != 1)
                node.fail(fmt::format("attribute 'value' must hold one element, but it has shape {}",
                                      shape_to_string(value->shape())));
            value_ = *value;
        } else {
            value_ = Tensor(DataType::kFloat32, {1});
        }
    }

    void compute(KernelContext& ctx) const override {
        const Shape shape = read_shape(ctx.node(), ctx.required_input(0), "shape");
        Tensor y(value_.dtype(), shape);
        strided_copy(value_, 0, shape, std::vector<int64_t>(shape.size(), 0), y);
        ctx.set_output(0, std::move(y));
    }

private:
    Tensor value_;
};

class RangeKernel final : public Kernel {
public:
    explicit RangeKernel(const NodeInfo&) {}
    void compute(KernelContext& ctx) const override {
        const NodeInfo& node = ctx.node();
        const Tensor& start = ctx.required_input(0);
        const Tensor& limit = ctx.required_input(1);
        const Tensor& delta = ctx.required_input(2);
        const std::pair<const Tensor*, const char*> operands[] = {
            {&start, "start"}, {&limit, "limit"}, {&delta, "delta"}};
        for (const auto& [tensor, what] : operands) {
            require_scalar(node, *tensor, what);
            if (tensor->dtype() != start.dtype())
                node.fail(
                    fmt::format("start, limit and delta must have the same data type, but {} is {} and start is {}",
                                what, dtype_name(tensor->dtype()), dtype_name(start.dtype())));
        }
        dispatch_dtype(node, start.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (kIsNumeric<T>) {
                const T first = start.data_as<T>()[0], last = limit.data_as<T>()[0], step = delta.data_as<T>()[0];
                if (step == T(0)) node.fail("delta must not be 0");
                int64_t count = 0;
                if constexpr (kIsFloat<T>) {
                    const double n =
                        std::ceil((static_cast<double>(last) - static_cast<double>(first)) / static_cast<double>(step));
                    if (std::isnan(n)) node.fail("start, limit and delta must be finite");
                    if (n >= 9.2e18) node.fail("the range is too large");
                    count = n > 0 ? static_cast<int64_t>(n) : 0;
                } else {
                    const __int128 span = static_cast<__int128>(last) - static_cast<__int128>(first);
                    const __int128 s = static_cast<__int128>(step);
                    __int128 n = s > 0 ? (span + s - 1) / s : (span + s + 1) / s;
                    if (span == 0 || (span > 0) != (s > 0)) n = 0;
                    count = static_cast<int64_t>(n);
                }
                Tensor& y = ctx.allocate_output(0, start.dtype(), {count});
                T* out = y.data_as<T>();
                for (int64_t i = 0; i < count; ++i) {
                    if constexpr (kIsFloat<T>)
                        out[i] = static_cast<T>(first + static_cast<T>(i) * step);
                    else
                        out[i] = static_cast<T>(static_cast<__int128>(first) + static_cast<__int128>(i) * step);
                }
            } else {
                unsupported_dtype(node, start.dtype());
            }
        });
    }
};

class EyeLikeKernel final : public Kernel {
public:
    explicit EyeLikeKernel(const NodeInfo& node)
        : has_dtype_(node.has_attr("dtype")),
          dtype_(output_dtype_attr(node, "dtype", DataType::kFloat32)),
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

}  // namespace

void register_generator_ops(OpRegistry& registry) {
    registry.add("", "Constant", 1, kMaxOpset, make_factory<ConstantKernel>());
    registry.add("", "ConstantOfShape", 9, kMaxOpset, make_factory<ConstantOfShapeKernel>());
    registry.add("", "Range", 11, kMaxOpset, make_factory<RangeKernel>());
    registry.add("", "EyeLike", 9, kMaxOpset, make_factory<EyeLikeKernel>());
}

}  // namespace polygraphy::ref
