// Cast and CastLike between every data type: numbers, bool, strings (as numpy prints and parses
// them), float8 and int4 (small_types.h), bfloat16 by truncation as the ONNX reference does.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "backend/ref/compute/small_types.h"
#include "backend/ref/ops/elementwise.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

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

}  // namespace

void register_cast_ops(OpRegistry& registry) {
    registry.add("", "Cast", 1, kMaxOpset, make_factory<CastKernel>());
    registry.add("", "CastLike", 15, kMaxOpset, make_factory<CastLikeKernel>());
}

}  // namespace polygraphy::ref
