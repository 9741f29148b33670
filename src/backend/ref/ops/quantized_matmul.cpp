// Products with quantized weights, as ONNX Runtime's quantizers and model builders write them
// (com.microsoft): MatMulNBits, the int4/int8 weight-only product of quantized LLMs, whose weights stay
// quantized in memory and whose product is in float32 (float16 inputs are widened), as ONNX Runtime's
// CPU kernel computes it at accuracy levels 0 to 3; MatMulIntegerToFloat and DynamicQuantizeMatMul,
// the integer products of dynamically quantized models (MatMulInteger's exact sums, scaled to float).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/block_quant_gemm.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"
#include "backend/ref/ops/twin_kernel.h"

namespace polygraphy::ref {
namespace {

/// `tensor` as float32 values (a copy only when it has another float type).
Tensor as_float32(const Tensor& tensor) {
    return tensor.dtype() == DataType::kFloat32 ? tensor : tensor.cast(DataType::kFloat32);
}

/// com.microsoft.MatMulNBits: Y = A B, where B (K x N) is stored transposed as N rows of K codes of
/// `bits` bits in blocks of `block_size`, each block with a scale and a zero point (inputs A, B,
/// scales, zero_points?, g_idx?, bias?).
class MatMulNBitsKernel final : public Kernel {
public:
    explicit MatMulNBitsKernel(const NodeInfo& node)
        : k_(required_positive_attr(node, "K")),
          n_(required_positive_attr(node, "N")),
          bits_(node.attr_int("bits", 4)),
          block_size_(required_positive_attr(node, "block_size")) {
        if (bits_ != 2 && bits_ != 4 && bits_ != 8)
            node.fail(fmt::format("attribute bits must be 2, 4 or 8, but it is {}", bits_));
        if (block_size_ < 16 || (block_size_ & (block_size_ - 1)) != 0)
            node.fail(
                fmt::format("attribute block_size must be a power of two of at least 16, but it is {}", block_size_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a = context.required_input(0);
        const DataType dtype = a.dtype();
        if (dtype != DataType::kFloat32 && dtype != DataType::kFloat16)
            onednn::fail_dtype(node, "input A", dtype, "float32, float16");
        if (a.rank() < 1 || a.shape().back() != k_)
            node.fail(fmt::format("input A of shape {} must end in K = {}", shape_to_string(a.shape()), k_));

        block_quant::QuantizedWeights w;
        w.k = k_;
        w.n = n_;
        w.bits = bits_;
        w.block_size = block_size_;
        const Tensor& b = context.required_input(1);
        const Shape b_shape = {n_, w.blocks(), w.blob_bytes()};
        if (b.dtype() != DataType::kUInt8 || b.shape() != b_shape)
            node.fail(
                fmt::format("input B must be uint8 of shape {} (N, K / block_size rounded up, block_size * "
                            "bits / 8), but it is {} of shape {}",
                            shape_to_string(b_shape), dtype_name(b.dtype()), shape_to_string(b.shape())));
        w.codes = b.data_as<uint8_t>();

        const Tensor scales = as_float32(typed_input(node, context.required_input(2), dtype, "scales"));
        if (scales.numel() != n_ * w.blocks())
            node.fail(fmt::format("input scales must hold N * blocks = {} values, but it has shape {}", n_ * w.blocks(),
                                  shape_to_string(scales.shape())));
        w.scales = scales.data_as<float>();

        Tensor zero_points;
        if (const Tensor* zp = context.input(3); zp != nullptr && zp->defined()) {
            if (zp->dtype() == DataType::kUInt8) {
                if (zp->numel() != n_ * w.zero_point_row_bytes())
                    node.fail(fmt::format(
                        "packed uint8 zero_points must hold {} bytes ({} per row), but it has "
                        "shape {}",
                        n_ * w.zero_point_row_bytes(), w.zero_point_row_bytes(), shape_to_string(zp->shape())));
                w.zero_points_packed = zp->data_as<uint8_t>();
            } else {
                zero_points = as_float32(typed_input(node, *zp, dtype, "zero_points"));
                if (zero_points.numel() != n_ * w.blocks())
                    node.fail(fmt::format("input zero_points must hold N * blocks = {} values, but it has shape {}",
                                          n_ * w.blocks(), shape_to_string(zp->shape())));
                w.zero_points_float = zero_points.data_as<float>();
            }
        }
        if (const Tensor* g_idx = context.input(4); g_idx != nullptr && g_idx->defined()) {
            if (g_idx->dtype() != DataType::kInt32 || g_idx->numel() != k_)
                node.fail(fmt::format("input g_idx must be int32 with K = {} values, but it is {} of shape {}", k_,
                                      dtype_name(g_idx->dtype()), shape_to_string(g_idx->shape())));
            const int32_t* groups = g_idx->data_as<int32_t>();
            for (int64_t i = 0; i < k_; ++i)
                if (groups[i] < 0 || groups[i] >= w.blocks())
                    node.fail(
                        fmt::format("g_idx[{}] = {} is not a block index (0 to {})", i, groups[i], w.blocks() - 1));
            w.group_index = groups;
        }
        Tensor bias;
        if (const Tensor* given = context.input(5); given != nullptr && given->defined()) {
            bias = as_float32(typed_input(node, *given, dtype, "bias"));
            if (bias.numel() != n_)
                node.fail(fmt::format("input bias must hold N = {} values, but it has shape {}", n_,
                                      shape_to_string(given->shape())));
        }

        Shape out_shape = a.shape();
        out_shape.back() = n_;
        const Tensor a32 = as_float32(a);
        Tensor y = dtype == DataType::kFloat32 ? context.allocate_uninitialized_output(0, dtype, out_shape)
                                               : Tensor::uninitialized(DataType::kFloat32, out_shape);
        block_quant::multiply(a32.data_as<float>(), a.numel() / k_, w, panel_weights(node, w, context.num_threads()),
                              bias.defined() ? bias.data_as<float>() : nullptr, y.data_as<float>(),
                              context.num_threads());
        if (dtype != DataType::kFloat32) context.set_output(0, y.cast(dtype));
    }

private:
    /// The weights rearranged for the tiled product, made on first use when the codes, scales and
    /// zero points are constants (initializers: the weights of a quantized model) and no g_idx
    /// regroups them; null otherwise.
    const block_quant::PanelWeights* panel_weights(const NodeInfo& node, const block_quant::QuantizedWeights& w,
                                                   int threads) const {
        if (w.group_index != nullptr) return nullptr;
        for (std::size_t input : {1, 2, 3})
            if (input < static_cast<std::size_t>(node.proto().input_size()) &&
                !node.proto().input(int(input)).empty() && node.constant_input(input) == nullptr)
                return nullptr;
        std::call_once(panels_once_, [&] { panels_ = std::make_unique<block_quant::PanelWeights>(w, threads); });
        return panels_.get();
    }

    static const Tensor& typed_input(const NodeInfo& node, const Tensor& tensor, DataType dtype, const char* name) {
        if (tensor.dtype() != dtype)
            node.fail(fmt::format("input {} must have A's data type ({}), but it is {}", name, dtype_name(dtype),
                                  dtype_name(tensor.dtype())));
        return tensor;
    }

    int64_t k_, n_, bits_, block_size_;
    mutable std::once_flag panels_once_;
    mutable std::unique_ptr<block_quant::PanelWeights> panels_;
};

/// The integer products with float results: MatMulIntegerToFloat (A, B, a_scale, b_scale,
/// a_zero_point?, b_zero_point?, bias?) and DynamicQuantizeMatMul (A in float, quantized to uint8 over
/// the whole tensor as DynamicQuantizeLinear does, then B, b_scale, b_zero_point?, bias?). The sums
/// are MatMulInteger's, exact in int32; y = float(sum) * (a_scale * b_scale[j]) + bias[j], as ONNX
/// Runtime's kernels scale them. b_scale and b_zero_point are scalars or hold one value per column.
class IntegerToFloatKernel final : public Kernel {
public:
    IntegerToFloatKernel(const NodeInfo& node, bool dynamic)
        : dynamic_(dynamic),
          product_(node, "MatMulInteger", 10),
          quantize_a_(dynamic ? std::make_unique<TwinKernel>(node, "DynamicQuantizeLinear", 11) : nullptr) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const int threads = context.num_threads();
        Tensor a, a_scale, a_zero;
        std::size_t b_scale_index = 2;
        if (dynamic_) {
            const Tensor& x = context.required_input(0);
            if (x.dtype() != DataType::kFloat32) onednn::fail_dtype(node, "input A", x.dtype(), "float32");
            std::vector<Tensor> q = quantize_a_->run({&x}, 3, threads);
            a = std::move(q[0]);
            a_scale = std::move(q[1]);
            a_zero = std::move(q[2]);
        } else {
            a = context.required_input(0);
            a_scale = context.required_input(2);
            b_scale_index = 3;
        }
        const Tensor& b = context.required_input(1);
        const Tensor& b_scale = context.required_input(b_scale_index);
        const Tensor* b_zero = context.input(dynamic_ ? 3 : 5);
        const Tensor* a_zero_given = dynamic_ ? &a_zero : context.input(4);
        const Tensor* bias = context.input(dynamic_ ? 4 : 6);
        if (bias != nullptr && !bias->defined()) bias = nullptr;
        for (const Tensor* scale : {static_cast<const Tensor*>(&a_scale), &b_scale})
            if (scale->dtype() != DataType::kFloat32)
                onednn::fail_dtype(node, scale == &a_scale ? "input a_scale" : "input b_scale", scale->dtype(),
                                   "float32");
        if (a_scale.numel() != 1)
            node.fail(
                fmt::format("input a_scale must be a scalar, but it has shape {}", shape_to_string(a_scale.shape())));

        const Tensor sums = std::move(product_.run({&a, &b, a_zero_given, b_zero}, 1, threads)[0]);
        const int64_t n = sums.rank() > 0 ? sums.shape().back() : 1;
        if (b_scale.numel() != 1 && b_scale.numel() != n)
            node.fail(
                fmt::format("input b_scale must be a scalar or hold one value per column ({}), but it has shape {}", n,
                            shape_to_string(b_scale.shape())));
        if (bias != nullptr && (bias->dtype() != DataType::kFloat32 || bias->numel() != n))
            node.fail(fmt::format("input bias must be float32 with one value per column ({}), but it is {} of shape {}",
                                  n, dtype_name(bias->dtype()), shape_to_string(bias->shape())));
        const float sa = a_scale.data_as<float>()[0];
        const float* sb = b_scale.data_as<float>();
        const int32_t* in = sums.data_as<int32_t>();
        Tensor& y = context.allocate_uninitialized_output(0, DataType::kFloat32, sums.shape());
        float* out = y.data_as<float>();
        for (int64_t i = 0; i < y.numel(); ++i) {
            const int64_t j = i % n;
            const float scale = sa * sb[b_scale.numel() == 1 ? 0 : j];
            out[i] = static_cast<float>(in[i]) * scale + (bias != nullptr ? bias->data_as<float>()[j] : 0.0f);
        }
    }

private:
    bool dynamic_;
    TwinKernel product_;
    std::unique_ptr<TwinKernel> quantize_a_;
};

}  // namespace

void register_quantized_matmul_ops(OpRegistry& registry) {
    registry.add(kMicrosoftDomain, "MatMulNBits", 1, kMaxOpset, make_factory<MatMulNBitsKernel>());
    registry.add(kMicrosoftDomain, "MatMulIntegerToFloat", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<IntegerToFloatKernel>(node, false);
                 });
    registry.add(kMicrosoftDomain, "DynamicQuantizeMatMul", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<IntegerToFloatKernel>(node, true);
                 });
}

}  // namespace polygraphy::ref
