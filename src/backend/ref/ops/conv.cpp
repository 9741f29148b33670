// Conv, ConvTranspose and DeformConv. float32 (and float16/bfloat16, computed in float32) run on oneDNN with the
// weights in the layout oneDNN prefers (constant weights are packed once per layout); src and dst
// are reordered from/to the plain NCHW tensors when the chosen implementation wants another layout.
// float64, more than 3 spatial dims and shapes oneDNN refuses take a plain reference loop.
// Depthwise 2-D convolutions between NCHW tensors, and the channel-blocked 2-D ones that
// blocked_conv.h was measured faster on, run on the runtime's own kernels instead. This file
// chooses; the implementations are in compute/ (conv_reference.h, conv_direct.h, conv_dnnl.h,
// blocked_conv.h).
// DeformConv (2-D) samples X bilinearly per tap and sums directly in double.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/blocked_conv.h"
#include "backend/ref/compute/broadcast.h"
#include "backend/ref/compute/contrib_activation.h"
#include "backend/ref/compute/conv_direct.h"
#include "backend/ref/compute/conv_dnnl.h"
#include "backend/ref/compute/conv_problem.h"
#include "backend/ref/compute/conv_reference.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/window_util.h"
#include "backend/ref/ops/families.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::ref {
namespace {

using conv::ConvProblem;
using conv::DnnlConvPlan;
using conv::ResidualAdd;
using conv::StoreActivation;
using window::Geometry;
using window::WindowAttrs;

const char* const kConvTypes = "float32, float64, float16, bfloat16";

/// What a fused convolution adds to Conv or ConvTranspose (fused_ops.h); nothing for the standard
/// operators.
struct ConvFusion {
    onednn::FusedActivation activation;
    bool takes_residual = false;  ///< input 3 (when given) is added to the convolution and its bias
    int64_t input_block = 0;      ///< X's channel block (0: NCHW)
    int64_t output_block = 0;     ///< Y's channel block (0: NCHW)

    /// kRuntimeDomain's FusedConv (`blocks`: with its layout attributes) or FusedConvTranspose.
    static ConvFusion of_runtime_node(const NodeInfo& node, bool residual_and_blocks) {
        ConvFusion fusion;
        fusion.activation = onednn::FusedActivation(node);
        fusion.takes_residual = residual_and_blocks;
        if (residual_and_blocks) {
            fusion.input_block = onednn::channel_block(node, kBlockedInputAttr);
            fusion.output_block = onednn::channel_block(node, kBlockedOutputAttr);
        }
        return fusion;
    }
};

class ConvKernelBase : public Kernel {
public:
    ConvKernelBase(const NodeInfo& node, bool transpose, ConvFusion fusion = {}) : transpose_(transpose) {
        attrs_ = window::parse_window_attrs(node, /*kernel_shape_required=*/false, /*has_dilations=*/true,
                                            /*has_ceil_mode=*/false);
        group_ = node.attr_int("group", 1);
        activation_ = std::move(fusion.activation);
        takes_residual_ = fusion.takes_residual;
        input_block_ = fusion.input_block;
        output_block_ = fusion.output_block;
        if (group_ < 1) node.fail("attribute 'group' must be >= 1\nNote: group = " + std::to_string(group_));
        if (transpose_) {
            output_padding_ = node.attr_ints("output_padding");
            output_shape_attr_ = node.attr_ints("output_shape");
            for (int64_t v : output_padding_) {
                if (v < 0)
                    node.fail("attribute 'output_padding' must have values >= 0\nNote: output_padding = " +
                              ints_to_string(output_padding_));
            }
            const int64_t rank = attrs_.spatial_rank();
            if (rank >= 0 && !output_padding_.empty() && static_cast<int64_t>(output_padding_.size()) != rank) {
                node.fail("attribute 'output_padding' has " + std::to_string(output_padding_.size()) +
                          " values but the window has " + std::to_string(rank) + " spatial dims");
            }
        }
        // Constant weights: validate against the attributes now and keep a float32 copy to pack.
        if (const Tensor* weight = node.constant_input(1)) {
            if (weight->rank() < 3) {
                node.fail("weight W must have rank >= 3 (out/in channels and a kernel)\nNote: W shape = " +
                          shape_to_string(weight->shape()));
            }
            const std::vector<int64_t> kernel(weight->shape().begin() + 2, weight->shape().end());
            if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) {
                node.fail("attribute 'kernel_shape' " + ints_to_string(attrs_.kernel_shape) +
                          " does not match the weight's spatial dims " + ints_to_string(kernel));
            }
            const int64_t rank = attrs_.spatial_rank();
            if (rank >= 0 && rank != static_cast<int64_t>(kernel.size())) {
                node.fail("attributes describe " + std::to_string(rank) + " spatial dims but the weight has " +
                          std::to_string(kernel.size()));
            }
            const int64_t divisible_dim = weight->shape()[0];
            if (divisible_dim % group_ != 0) {
                node.fail(std::string("weight dim 0 (") + (transpose_ ? "input" : "output") + " channels, " +
                          std::to_string(divisible_dim) + ") is not divisible by attribute 'group' (" +
                          std::to_string(group_) + ")");
            }
            if (weight->dtype() == DataType::kFloat32) {
                constant_weight_ = *weight;
            } else if (weight->dtype() == DataType::kFloat16 || weight->dtype() == DataType::kBFloat16) {
                constant_weight_ = weight->cast(DataType::kFloat32);
            }
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        const Tensor& w = context.required_input(1);
        const Tensor* b = context.input(2);
        if (b != nullptr && !b->defined()) b = nullptr;
        const DataType dtype = x.dtype();
        if (w.dtype() != dtype || (b != nullptr && b->dtype() != dtype)) {
            node.fail("inputs must share one data type\nNote: X is " + std::string(dtype_name(dtype)) + ", W is " +
                      std::string(dtype_name(w.dtype())) +
                      (b != nullptr ? ", B is " + std::string(dtype_name(b->dtype())) : std::string()));
        }
        if (dtype != DataType::kFloat32 && dtype != DataType::kFloat64 && dtype != DataType::kFloat16 &&
            dtype != DataType::kBFloat16) {
            onednn::fail_dtype(node, "input X", dtype, kConvTypes);
        }
        // A blocked X may have a padded last block (blocked_layout.h): its channels are W's.
        const ConvProblem problem = make_problem(
            node,
            input_block_ != 0
                ? onednn::unblocked_shape(node, x, input_block_, w.shape().size() > 1 ? w.shape()[1] * group_ : -1)
                : x.shape(),
            w.shape(), b);
        if (blocked() && dtype != DataType::kFloat32)
            throw InternalError("Node '" + node.name() + "': a channel-blocked convolution computes float32 only");
        const Shape y_shape =
            output_block_ != 0 ? onednn::blocked_shape(problem.output_shape, output_block_) : problem.output_shape;
        const Tensor* residual = takes_residual_ ? context.input(3) : nullptr;
        if (residual != nullptr && !residual->defined()) residual = nullptr;
        if (residual != nullptr && residual->dtype() != dtype) {
            node.fail("the folded residual Add's inputs must have the same data type, but they are " +
                      std::string(dtype_name(dtype)) + " and " + std::string(dtype_name(residual->dtype())));
        }
        // A float32 residual of the output's own shape is added as the output is stored; any other
        // is added after the convolution as the Add node would (broadcasting, float16 rounding). A
        // residual of a blocked output is blocked too (the layout pass puts them in one class), and
        // broadcasting over [N, C/B, H, W, B] pairs the same elements as over [N, C, H, W].
        const bool residual_inside = residual != nullptr && dtype == DataType::kFloat32 && residual->shape() == y_shape;
        const bool residual_after = residual != nullptr && !residual_inside;
        const int threads = context.num_threads();
        Tensor y;
        if (shape_volume(problem.output_shape) == 0 || x.numel() == 0) {
            y = Tensor(dtype, y_shape);
        } else if (dtype == DataType::kFloat64) {
            y = Tensor::uninitialized(dtype, problem.output_shape);  // every element is written
            run_reference<double>(problem, x, w, b, y, threads);
            if (!residual_after) activation_.apply_in_place(y, threads);
        } else if (dtype == DataType::kFloat32) {
            y = context.output_buffer(0, dtype, y_shape);  // every element is written
            run_float(node, problem, x, w, b, residual_inside ? residual->data_as<float>() : nullptr, !residual_after,
                      y, threads);
        } else {
            // float16 / bfloat16: compute in float32 (a residual is added to the rounded output, as
            // the Add node would).
            const Tensor x32 = x.cast(DataType::kFloat32);
            const Tensor w32 = constant_weight_.defined() ? constant_weight_ : w.cast(DataType::kFloat32);
            std::optional<Tensor> b32;
            if (b != nullptr) b32 = b->cast(DataType::kFloat32);
            Tensor y32 = Tensor::uninitialized(DataType::kFloat32, problem.output_shape);
            run_float(node, problem, x32, w32, b32 ? &*b32 : nullptr, nullptr, !residual_after, y32, threads);
            y = y32.cast(dtype);
        }
        if (residual_after) y = add_residual_after(node, y, *residual, threads);
        context.set_output(0, std::move(y));
    }

private:
    ConvProblem make_problem(const NodeInfo& node, const Shape& x_shape, const Shape& w_shape, const Tensor* b) const {
        if (x_shape.size() < 3) {
            node.fail("input X must have rank >= 3 (N, C and spatial dims)\nNote: X shape = " +
                      shape_to_string(x_shape));
        }
        if (w_shape.size() != x_shape.size()) {
            node.fail("weight W must have the same rank as input X\nNote: X shape = " + shape_to_string(x_shape) +
                      ", W shape = " + shape_to_string(w_shape));
        }
        ConvProblem p;
        p.transpose = transpose_;
        p.batch = x_shape[0];
        p.in_channels = x_shape[1];
        p.group = group_;
        const std::vector<int64_t> spatial(x_shape.begin() + 2, x_shape.end());
        const std::vector<int64_t> kernel(w_shape.begin() + 2, w_shape.end());
        if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) {
            node.fail("attribute 'kernel_shape' " + ints_to_string(attrs_.kernel_shape) +
                      " does not match the weight's spatial dims " + ints_to_string(kernel));
        }
        if (p.in_channels % group_ != 0) {
            node.fail("input channels (" + std::to_string(p.in_channels) +
                      ") are not divisible by attribute 'group' (" + std::to_string(group_) + ")");
        }
        if (transpose_) {
            if (w_shape[0] != p.in_channels) {
                node.fail("weight dim 0 (" + std::to_string(w_shape[0]) + ") must equal the input channels (" +
                          std::to_string(p.in_channels) + ")\nNote: X shape = " + shape_to_string(x_shape) +
                          ", W shape = " + shape_to_string(w_shape));
            }
            p.out_channels = w_shape[1] * group_;
        } else {
            if (w_shape[1] * group_ != p.in_channels) {
                node.fail("weight dim 1 (" + std::to_string(w_shape[1]) + ") times group (" + std::to_string(group_) +
                          ") must equal the input channels (" + std::to_string(p.in_channels) +
                          ")\nNote: X shape = " + shape_to_string(x_shape) + ", W shape = " + shape_to_string(w_shape));
            }
            p.out_channels = w_shape[0];
            if (p.out_channels % group_ != 0) {
                node.fail("output channels (" + std::to_string(p.out_channels) +
                          ") are not divisible by attribute 'group' (" + std::to_string(group_) + ")");
            }
        }
        if (b != nullptr && (b->rank() != 1 || b->shape()[0] != p.out_channels)) {
            node.fail("bias B must have shape (" + std::to_string(p.out_channels) +
                      ",)\nNote: B shape = " + shape_to_string(b->shape()));
        }
        if (transpose_) {
            resolve_transpose(node, spatial, kernel, p);
        } else {
            p.geometry = window::resolve_geometry(node, attrs_, spatial, kernel);
            p.output_padding.assign(spatial.size(), 0);
        }
        p.output_shape = {p.batch, p.out_channels};
        p.output_shape.insert(p.output_shape.end(), p.geometry.output.begin(), p.geometry.output.end());
        return p;
    }

    /// ConvTranspose sizes per the ONNX spec: explicit pads give the output size; output_shape (or
    /// SAME_* giving input * stride) gives the pads, the odd one at the end for SAME_UPPER.
    void resolve_transpose(const NodeInfo& node, const std::vector<int64_t>& spatial,
                           const std::vector<int64_t>& kernel, ConvProblem& p) const {
        const std::size_t rank = spatial.size();
        const int64_t attr_rank = attrs_.spatial_rank();
        if (attr_rank >= 0 && static_cast<std::size_t>(attr_rank) != rank) {
            node.fail("attributes describe " + std::to_string(attr_rank) + " spatial dims but the input has " +
                      std::to_string(rank));
        }
        if (!output_padding_.empty() && output_padding_.size() != rank) {
            node.fail("attribute 'output_padding' has " + std::to_string(output_padding_.size()) +
                      " values but the input has " + std::to_string(rank) + " spatial dims");
        }
        std::vector<int64_t> target;  // requested output spatial size, if any
        if (!output_shape_attr_.empty()) {
            if (output_shape_attr_.size() == rank) {
                target = output_shape_attr_;
            } else if (output_shape_attr_.size() == rank + 2) {
                target.assign(output_shape_attr_.begin() + 2, output_shape_attr_.end());
            } else {
                node.fail("attribute 'output_shape' has " + std::to_string(output_shape_attr_.size()) +
                          " values but the input has " + std::to_string(rank) +
                          " spatial dims\nNote: output_shape = " + ints_to_string(output_shape_attr_));
            }
        }
        Geometry& g = p.geometry;
        g.input = spatial;
        g.kernel = kernel;
        g.strides = attrs_.strides;
        if (g.strides.empty()) g.strides.assign(rank, 1);
        g.dilations = attrs_.dilations;
        if (g.dilations.empty()) g.dilations.assign(rank, 1);
        g.pad_begin.assign(rank, 0);
        g.pad_end.assign(rank, 0);
        g.output.assign(rank, 0);
        p.output_padding = output_padding_;
        if (p.output_padding.empty()) p.output_padding.assign(rank, 0);
        const bool same =
            attrs_.auto_pad == window::AutoPad::kSameUpper || attrs_.auto_pad == window::AutoPad::kSameLower;
        for (std::size_t d = 0; d < rank; ++d) {
            const int64_t full = g.strides[d] * (spatial[d] - 1) + p.output_padding[d] + g.effective_kernel(d);
            if (!target.empty() || same) {
                const int64_t out = !target.empty() ? target[d] : spatial[d] * g.strides[d];
                const int64_t total = full - out;
                const int64_t half = window::floor_div(total, 2);
                if (attrs_.auto_pad == window::AutoPad::kSameUpper) {
                    g.pad_begin[d] = half;
                    g.pad_end[d] = total - half;
                } else {
                    g.pad_begin[d] = total - half;
                    g.pad_end[d] = half;
                }
                g.output[d] = out;
            } else {
                if (attrs_.auto_pad == window::AutoPad::kNotSet && !attrs_.pads.empty()) {
                    g.pad_begin[d] = attrs_.pads[d];
                    g.pad_end[d] = attrs_.pads[d + rank];
                }
                g.output[d] = full - g.pad_begin[d] - g.pad_end[d];
            }
            if (g.output[d] <= 0) {
                node.fail("output spatial dim " + std::to_string(d) + " would be " + std::to_string(g.output[d]) +
                          "\nNote: input size " + std::to_string(spatial[d]) + ", pads " +
                          std::to_string(g.pad_begin[d]) + "/" + std::to_string(g.pad_end[d]));
            }
        }
    }

    /// activation(y + r) with the Add operator's broadcasting; float16/bfloat16 are summed in float32
    /// and rounded once, as the Add node does.
    Tensor add_residual_after(const NodeInfo& node, const Tensor& y, const Tensor& r, int threads) const {
        const Shape out = broadcast_shapes(node, {y.shape(), r.shape()});
        const bool half = is_half(y.dtype());
        const Tensor a = half ? y.cast(DataType::kFloat32) : y, b = half ? r.cast(DataType::kFloat32) : r;
        Tensor sum = Tensor::uninitialized(a.dtype(), out);
        auto add = [&](auto* typed) {
            using T = std::remove_pointer_t<decltype(typed)>;
            broadcast_binary(
                out, a.shape(), b.shape(), a.data_as<T>(), b.data_as<T>(), typed, [](T u, T v) { return u + v; },
                threads);
        };
        if (a.dtype() == DataType::kFloat64)
            add(sum.data_as<double>());
        else
            add(sum.data_as<float>());
        activation_.apply_in_place(sum, threads);
        return half ? sum.cast(y.dtype()) : sum;
    }

    template <typename T>
    void run_reference(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                       int threads) const {
        const T* bias = b != nullptr ? b->data_as<T>() : nullptr;
        if (transpose_) {
            conv::conv_transpose_reference<T>(p, x.data_as<T>(), w.data_as<T>(), bias, y.data_as<T>(), threads);
        } else {
            conv::conv_reference<T>(p, x.data_as<T>(), w.data_as<T>(), bias, y.data_as<T>(), threads);
        }
    }

    /// y = activation(conv(x, w) + b + residual) in float32; `residual` (nullptr: none) has y's
    /// shape; without `activate`, the folded activation is left to the caller (and residual is null).
    void run_float(const NodeInfo& context_node, const ConvProblem& p, const Tensor& x, const Tensor& w,
                   const Tensor* b, const float* residual, bool activate, Tensor& y, int threads) const {
        threads = onednn::resolve_threads(threads);
        const onednn::FusedActivation activation = activate ? activation_ : onednn::FusedActivation();
        // That kernel reads X and Y as [N, C] and [N, M], which a padded block is not.
        const bool padded = (input_block_ != 0 && p.in_channels % input_block_ != 0) ||
                            (output_block_ != 0 && p.out_channels % output_block_ != 0);
        if (conv::is_single_pixel_pointwise(p) && !padded) {
            run_single_pixel(p, x, w, b, residual, activation, y, threads);
            return;
        }
        if (!blocked() && conv::is_plain_depthwise_2d(p)) {
            const std::optional<StoreActivation> at_store = StoreActivation::of(activation);
            conv::depthwise_conv(p, x.data_as<float>(), w.data_as<float>(),
                                 b != nullptr ? b->data_as<float>() : nullptr, residual,
                                 at_store.value_or(StoreActivation{}), y.data_as<float>(), threads);
            if (!at_store) activation.apply_in_place(y, threads);
            return;
        }
        if (own_blocked_conv_runs(p, w)) {
            run_own_blocked(context_node, p, x, b, residual, activation, y, threads);
            return;
        }
        if (split_by_output_channels(context_node, p, w, x, b, residual, activate, activation, y, threads)) return;
        Shape key = x.shape();
        key.insert(key.end(), w.shape().begin(), w.shape().end());
        key.push_back(b != nullptr ? 1 : 0);
        key.push_back(threads);
        key.push_back(activate ? 1 : 0);
        key.push_back(residual != nullptr ? 1 : 0);
        onednn::ThreadScope scope(threads);
        auto plan = cache_.get(key, [&] {
            return conv::make_dnnl_plan(context_node, p, b != nullptr, activation, residual != nullptr, input_block_,
                                        output_block_);
        });
        if (plan == nullptr && blocked()) {
            // The layout pass leaves out what oneDNN refuses (negative pads), so this is a bug.
            throw InternalError("Node '" + context_node.name() + "': oneDNN has no channel-blocked convolution for it");
        }
        if (plan == nullptr) {
            run_reference<float>(p, x, w, b, y, threads);
            if (residual != nullptr)
                residual_add_.run(activation, y.data_as<float>(), residual, y.numel(), threads);
            else
                activation.apply_in_place(y, threads);
            return;
        }
        const auto& engine = onednn::cpu_engine();
        dnnl::memory src = onednn::wrap_memory(plan->src_user, x.data());
        if (plan->reorder_src) {
            dnnl::memory packed(plan->src, engine, onednn::thread_scratch(0, plan->src.get_size()));
            onednn::execute(plan->src_reorder, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, packed}});
            src = packed;
        }
        dnnl::memory weights;
        if (constant_weight_.defined() && constant_weight_.shape() == w.shape() &&
            plan->weights != plan->weights_plain) {
            weights = onednn::wrap_memory(
                plan->weights, packed_weights_.get(plan->weights_plain, constant_weight_.data(), plan->weights));
        } else if (plan->weights != plan->weights_plain) {
            weights = dnnl::memory(plan->weights, engine, onednn::thread_scratch(1, plan->weights.get_size()));
            dnnl::memory plain = onednn::wrap_memory(plan->weights_plain, w.data());
            onednn::execute(dnnl::reorder(plain, weights), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, weights}});
        } else {
            weights = onednn::wrap_memory(plan->weights, w.data());  // the plain layout is W itself
        }
        dnnl::memory dst_user = onednn::wrap_memory(plan->dst_user, y.data());
        dnnl::memory dst = plan->reorder_dst
                               ? dnnl::memory(plan->dst, engine, onednn::thread_scratch(2, plan->dst.get_size()))
                               : dst_user;
        auto args =
            conv::primitive_args(*plan, src, weights, dst, residual, b != nullptr ? b->data_as<float>() : nullptr);
        onednn::add_thread_scratchpad(args, plan->scratchpad);
        onednn::execute(plan->primitive, args);
        if (plan->reorder_dst) onednn::execute(plan->dst_reorder, {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, dst_user}});
        if (plan->residual_after)
            residual_add_.run(activation, y.data_as<float>(), residual, y.numel(), threads);
        else if (plan->activation_after)
            activation.apply_in_place(y, threads);
    }

    static void run_single_pixel(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b,
                                 const float* residual, const onednn::FusedActivation& activation, Tensor& y,
                                 int threads) {
        const std::optional<StoreActivation> at_store = StoreActivation::of(activation);
        conv::single_pixel_pointwise(p, x.data_as<float>(), w.data_as<float>(),
                                     b != nullptr ? b->data_as<float>() : nullptr, residual,
                                     at_store.value_or(StoreActivation{}), y.data_as<float>(), threads);
        if (!at_store) activation.apply_in_place(y, threads);
    }

    /// A pointwise convolution between blocked tensors on a small image (ResNet's and MobileNetV2's
    /// last stages), on 2+ threads: oneDNN splits its pixels between the threads, so each thread
    /// streams all of the weights; here each thread runs a single-threaded primitive on its share of
    /// the output channels (and weights). False, having done nothing, where that does not apply.
    bool split_by_output_channels(const NodeInfo& context_node, const ConvProblem& p, const Tensor& w, const Tensor& x,
                                  const Tensor* b, const float* residual, bool activate,
                                  const onednn::FusedActivation& activation, Tensor& y, int threads) const {
        constexpr int64_t kMaxPixels = 14 * 14;
        const Geometry& g = p.geometry;
        if (threads < 2 || input_block_ == 0 || output_block_ == 0 || p.transpose || p.group != 1 || p.batch != 1 ||
            g.rank() != 2 || !constant_weight_.defined() || constant_weight_.shape() != w.shape() ||
            p.out_channels % (threads * output_block_) != 0 || g.output[0] * g.output[1] > kMaxPixels)
            return false;
        for (std::size_t d = 0; d < 2; ++d)
            if (g.kernel[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0 || g.dilations[d] != 1) return false;
        ConvProblem part = p;
        part.out_channels = p.out_channels / threads;
        part.output_shape[1] = part.out_channels;
        Shape key = x.shape();
        key.insert(key.end(), w.shape().begin(), w.shape().end());
        key.insert(key.end(), {b != nullptr ? 1 : 0, -threads, activate ? 1 : 0, residual != nullptr ? 1 : 0});
        std::shared_ptr<const DnnlConvPlan> plan;
        {
            onednn::ThreadScope scope(1);  // each part's primitive runs on one thread
            plan = cache_.get(key, [&] {
                return conv::make_dnnl_plan(context_node, part, b != nullptr, activation, residual != nullptr,
                                            input_block_, output_block_);
            });
        }
        if (plan == nullptr || plan->reorder_src || plan->reorder_dst || plan->activation_after ||
            plan->residual_after || plan->weights == plan->weights_plain)
            return false;
        const int64_t pixels = g.output[0] * g.output[1];
        const int64_t weights_per_part = part.out_channels * p.in_channels;
        std::vector<const void*> packed(static_cast<std::size_t>(threads));
        for (int i = 0; i < threads; ++i)
            packed[i] = packed_weights_.get(plan->weights_plain,
                                            constant_weight_.data_as<float>() + i * weights_per_part, plan->weights);
        std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
        onednn::parallel_chunks(threads, threads, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                try {
                    const int64_t channel = i * part.out_channels;
                    auto args =
                        conv::primitive_args(*plan, onednn::wrap_memory(plan->src_user, x.data()),
                                             onednn::wrap_memory(plan->weights, packed[i]),
                                             onednn::wrap_memory(plan->dst_user, y.data_as<float>() + channel * pixels),
                                             residual != nullptr ? residual + channel * pixels : nullptr,
                                             b != nullptr ? b->data_as<float>() + channel : nullptr);
                    onednn::add_thread_scratchpad(args, plan->scratchpad);
                    onednn::execute(plan->primitive, args);
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            }
        });
        for (const auto& error : errors)
            if (error) std::rethrow_exception(error);
        return true;
    }

    /// X or Y is channel-blocked (the layout pass runs these on oneDNN's blocked kernels only).
    bool blocked() const { return input_block_ != 0 || output_block_ != 0; }

    /// Whether our own blocked convolution (blocked_conv.h) runs `p` instead of oneDNN: where the
    /// layout pass made X or Y blocked in 8 channels (the kernel's block; oneDNN's AVX-512 kernels
    /// on 16 beat it), with constant weights (packed once), on a CPU with AVX2 and FMA, for the
    /// shapes where it was measured faster (BENCHMARKS.md, issue 16).
    bool own_blocked_conv_runs(const ConvProblem& p, const Tensor& w) const {
        const Geometry& g = p.geometry;
        const auto narrow_or_plain = [](int64_t block) { return block == 0 || block == kNarrowChannelBlock; };
        if (!blocked() || !narrow_or_plain(input_block_) || !narrow_or_plain(output_block_) || p.transpose ||
            p.group != 1 || g.rank() != 2 || p.in_channels % kNarrowChannelBlock != 0 ||
            p.out_channels % kNarrowChannelBlock != 0 || !constant_weight_.defined() ||
            constant_weight_.shape() != w.shape() || !blocked_conv::cpu_supported())
            return false;
        for (std::size_t d = 0; d < 2; ++d)
            if (g.dilations[d] != 1 || g.pad_begin[d] < 0 || g.pad_end[d] < 0) return false;
        return blocked_conv::measured_faster(own_problem(p));
    }

    /// `p` as blocked_conv sees it (2-D, groups 1).
    static blocked_conv::Problem own_problem(const ConvProblem& p) {
        const Geometry& g = p.geometry;
        blocked_conv::Problem problem;
        problem.batch = p.batch;
        problem.in_channels = p.in_channels;
        problem.out_channels = p.out_channels;
        problem.in_h = g.input[0];
        problem.in_w = g.input[1];
        problem.out_h = g.output[0];
        problem.out_w = g.output[1];
        problem.k_h = g.kernel[0];
        problem.k_w = g.kernel[1];
        problem.stride_h = g.strides[0];
        problem.stride_w = g.strides[1];
        problem.pad_top = g.pad_begin[0];
        problem.pad_left = g.pad_begin[1];
        return problem;
    }

    /// y = activation(conv(x, w) + b + residual) with our own kernel; Relu and Clip are applied as
    /// each sum is stored, SiLU and GELU by a pass after it.
    void run_own_blocked(const NodeInfo& context_node, const ConvProblem& p, const Tensor& x, const Tensor* b,
                         const float* residual, const onednn::FusedActivation& activation, Tensor& y,
                         int threads) const {
        const blocked_conv::Problem problem = own_problem(p);
        std::shared_ptr<const float> packed;
        {
            std::lock_guard<std::mutex> lock(own_packed_mutex_);
            if (own_packed_ == nullptr) {
                own_packed_ = blocked_conv::pack_weights(problem, constant_weight_.data_as<float>());
                if (logger().enabled(Severity::kSuperVerbose)) {
                    logger().super_verbose("Node '" + context_node.name() + "' (" + context_node.op_type() +
                                           "): runs on the runtime's own blocked convolution");
                }
            }
            packed = own_packed_;
        }
        blocked_conv::Epilogue epilogue;
        epilogue.bias = b != nullptr ? b->data_as<float>() : nullptr;
        epilogue.residual = residual;
        using Kind = onednn::FusedActivation::Kind;
        const bool at_store = activation.kind() == Kind::kRelu || activation.kind() == Kind::kClip;
        if (at_store) {
            epilogue.clip = true;
            epilogue.lo = activation.kind() == Kind::kRelu ? 0.0f : activation.clip_min();
            epilogue.hi =
                activation.kind() == Kind::kRelu ? std::numeric_limits<float>::infinity() : activation.clip_max();
        }
        // A side the graph holds as NCHW (where a blocked tensor meets an NCHW class, e.g. ResNet's
        // last stage, whose sums reach GlobalAveragePool and Flatten) is converted in a scratch buffer.
        const float* xb = x.data_as<float>();
        if (input_block_ == 0) {
            float* scratch = static_cast<float*>(onednn::thread_scratch(0, x.nbytes()));
            blocked_conv::block_channels(xb, problem.batch, problem.in_channels, problem.in_h * problem.in_w, scratch);
            xb = scratch;
        }
        if (output_block_ != 0) {
            blocked_conv::run(problem, xb, packed.get(), epilogue, y.data_as<float>(), threads);
        } else {
            float* yb = static_cast<float*>(onednn::thread_scratch(2, y.nbytes()));
            blocked_conv::Epilogue bias_only;
            bias_only.bias = epilogue.bias;
            blocked_conv::run(problem, xb, packed.get(), bias_only, yb, threads);
            blocked_conv::unblock_channels(yb, epilogue, problem.batch, problem.out_channels,
                                           problem.out_h * problem.out_w, y.data_as<float>());
        }
        if (!at_store) activation.apply_in_place(y, threads);
    }

    bool transpose_;
    WindowAttrs attrs_;
    int64_t group_ = 1;
    onednn::FusedActivation activation_;
    bool takes_residual_ = false;  ///< input 3, when given, is a residual (ConvFusion)
    int64_t input_block_ = 0;      ///< X's channel block (kBlockedInputAttr; 0: NCHW)
    int64_t output_block_ = 0;     ///< Y's channel block (kBlockedOutputAttr; 0: NCHW)
    ResidualAdd residual_add_;   ///< y = activation(y + residual), cached primitives
    std::vector<int64_t> output_padding_;
    std::vector<int64_t> output_shape_attr_;
    Tensor constant_weight_;  ///< float32 value of a constant W (undefined when W is computed)
    onednn::PackedWeights packed_weights_;
    mutable std::mutex own_packed_mutex_;
    mutable std::shared_ptr<const float> own_packed_;  ///< constant_weight_ packed for blocked_conv::run
    onednn::PrimitiveCache<DnnlConvPlan> cache_;
};

class ConvKernel final : public ConvKernelBase {
public:
    explicit ConvKernel(const NodeInfo& node) : ConvKernelBase(node, false) {}
};

class ConvTransposeKernel final : public ConvKernelBase {
public:
    explicit ConvTransposeKernel(const NodeInfo& node) : ConvKernelBase(node, true) {}
};

/// The runtime's own fused convolutions (fused_ops.h): kRuntimeDomain's FusedConv and
/// FusedConvTranspose.
class RuntimeFusedConvKernel final : public ConvKernelBase {
public:
    RuntimeFusedConvKernel(const NodeInfo& node, bool transpose)
        : ConvKernelBase(node, transpose, ConvFusion::of_runtime_node(node, !transpose)) {}
};

/// com.microsoft.FusedConv: Conv (same attributes, X, W, B) plus an optional Z of the output's shape
/// added to the convolution, then the activation its "activation" and "activation_params" name:
/// activation(conv(X, W) + B + Z), as ONNX Runtime computes it. Relu and Clip are applied as the
/// output is stored, as in the runtime's own FusedConv (the graph passes write this operator for
/// them); ONNX Runtime's other activations (contrib_activation.h) run after the convolution.
class FusedConvKernel final : public Kernel {
public:
    explicit FusedConvKernel(const NodeInfo& node)
        : conv_(node, false, stored_activation(node)),
          activation_(applied_at_store(node)
                          ? contrib::FusedOutputActivation()
                          : contrib::FusedOutputActivation(node, contrib::FusedOutputActivation::Params::kList)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor* z = context.input(3);
        if (z != nullptr && !z->defined()) z = nullptr;
        auto refuse_z = [&](const Tensor& y) {
            node.fail(
                fmt::format("Z ({} of shape {}) must have the convolution output's type and shape ({} of shape {})",
                            dtype_name(z->dtype()), shape_to_string(z->shape()), dtype_name(y.dtype()),
                            shape_to_string(y.shape())));
        };
        if (z != nullptr && z->dtype() != context.required_input(0).dtype()) refuse_z(context.required_input(0));
        conv_.compute(context);
        Tensor& y = context.output(0);
        if (z != nullptr && z->shape() != y.shape()) refuse_z(y);  // ONNX Runtime adds no broadcast Z
        if (!activation_.active()) return;
        if (!y.buffer_unshared()) y = y.clone();
        activation_.apply_in_place(y);
    }

private:
    /// Relu and Clip as the convolution stores its output, with Z (input 3) as its residual.
    static ConvFusion stored_activation(const NodeInfo& node) {
        ConvFusion fusion;
        fusion.takes_residual = true;
        if (applied_at_store(node)) fusion.activation = onednn::FusedActivation(node);
        return fusion;
    }

    static bool applied_at_store(const NodeInfo& node) {
        const std::string name = node.attr_string(kActivationAttr, "");
        return name == "Relu" || name == "Clip";
    }

    ConvKernelBase conv_;
    contrib::FusedOutputActivation activation_;
};

// ---- DeformConv --------------------------------------------------------------------------------------

// 2-D deformable convolution (opset 19): every kernel tap samples X bilinearly at its regular
// position plus a learned offset, scaled by an optional mask. Samples outside the image are 0.
class DeformConvKernel final : public Kernel {
public:
    explicit DeformConvKernel(const NodeInfo& node)
        : group_(node.attr_int("group", 1)),
          offset_group_(node.attr_int("offset_group", 1)),
          dilations_(node.attr_ints("dilations", {1, 1})),
          strides_(node.attr_ints("strides", {1, 1})),
          pads_(node.attr_ints("pads", {0, 0, 0, 0})),
          kernel_shape_(node.attr_ints("kernel_shape")) {
        if (group_ <= 0 || offset_group_ <= 0)
            node.fail(
                fmt::format("attributes 'group' ({}) and 'offset_group' ({}) must be positive", group_, offset_group_));
        if (dilations_.size() != 2 || strides_.size() != 2 || pads_.size() != 4)
            node.fail("attributes 'dilations' and 'strides' need 2 values and 'pads' 4 (only 2-D is supported)");
        for (int64_t v : dilations_)
            if (v <= 0) node.fail(fmt::format("attribute 'dilations' values must be positive, but one is {}", v));
        for (int64_t v : strides_)
            if (v <= 0) node.fail(fmt::format("attribute 'strides' values must be positive, but one is {}", v));
        for (int64_t v : pads_)
            if (v < 0) node.fail(fmt::format("attribute 'pads' values must not be negative, but one is {}", v));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        const Tensor& w0 = context.required_input(1);
        const Tensor& offset0 = context.required_input(2);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        if (x0.rank() != 4 || w0.rank() != 4)
            node.fail(fmt::format("X and W must have rank 4 (2-D convolution), but they have shapes {} and {}",
                                  shape_to_string(x0.shape()), shape_to_string(w0.shape())));
        const int64_t batch = x0.shape()[0], channels = x0.shape()[1], height = x0.shape()[2], width = x0.shape()[3];
        const int64_t filters = w0.shape()[0], kh = w0.shape()[2], kw = w0.shape()[3];
        if (!kernel_shape_.empty() && kernel_shape_ != std::vector<int64_t>{kh, kw})
            node.fail(
                fmt::format("attribute 'kernel_shape' does not match the weights {}", shape_to_string(w0.shape())));
        if (channels % group_ != 0 || filters % group_ != 0 || w0.shape()[1] * group_ != channels ||
            channels % offset_group_ != 0)
            node.fail(fmt::format("groups ({}, offset {}) do not divide X {} and W {}", group_, offset_group_,
                                  shape_to_string(x0.shape()), shape_to_string(w0.shape())));
        const int64_t out_h = (height + pads_[0] + pads_[2] - (dilations_[0] * (kh - 1) + 1)) / strides_[0] + 1;
        const int64_t out_w = (width + pads_[1] + pads_[3] - (dilations_[1] * (kw - 1) + 1)) / strides_[1] + 1;
        if (out_h <= 0 || out_w <= 0) node.fail("the kernel does not fit the padded input");
        const Shape offset_shape{batch, offset_group_ * 2 * kh * kw, out_h, out_w};
        if (offset0.shape() != offset_shape)
            node.fail(fmt::format("offset must have shape {}, but it has shape {}", shape_to_string(offset_shape),
                                  shape_to_string(offset0.shape())));
        const Tensor* bias0 = context.input(3);
        if (bias0 && !bias0->defined()) bias0 = nullptr;
        if (bias0 && bias0->numel() != filters)
            node.fail(
                fmt::format("B must have {} values, but it has shape {}", filters, shape_to_string(bias0->shape())));
        const Tensor* mask0 = context.input(4);
        if (mask0 && !mask0->defined()) mask0 = nullptr;
        const Shape mask_shape{batch, offset_group_ * kh * kw, out_h, out_w};
        if (mask0 && mask0->shape() != mask_shape)
            node.fail(fmt::format("mask must have shape {}, but it has shape {}", shape_to_string(mask_shape),
                                  shape_to_string(mask0->shape())));
        const Tensor x = x0.cast(DataType::kFloat64), w = w0.cast(DataType::kFloat64);
        const Tensor offset = offset0.cast(DataType::kFloat64);
        const Tensor mask = mask0 ? mask0->cast(DataType::kFloat64) : Tensor();
        const Tensor bias = bias0 ? bias0->cast(DataType::kFloat64) : Tensor();
        Tensor y(DataType::kFloat64, {batch, filters, out_h, out_w});
        const int64_t per_group = channels / group_, per_filter_group = filters / group_;
        const int64_t per_offset_group = channels / offset_group_;
        const int64_t points = out_h * out_w;
        auto sample = [&](const double* plane, double py, double px) {
            // Written so that NaN positions also read 0.
            if (!(py > -1 && py < static_cast<double>(height) && px > -1 && px < static_cast<double>(width)))
                return 0.0;
            const auto y0 = static_cast<int64_t>(std::floor(py)), x0i = static_cast<int64_t>(std::floor(px));
            const double ly = py - static_cast<double>(y0), lx = px - static_cast<double>(x0i);
            auto at = [&](int64_t yy, int64_t xx) {
                return yy >= 0 && yy < height && xx >= 0 && xx < width ? plane[yy * width + xx] : 0.0;
            };
            return (1 - ly) * (1 - lx) * at(y0, x0i) + (1 - ly) * lx * at(y0, x0i + 1) +
                   ly * (1 - lx) * at(y0 + 1, x0i) + ly * lx * at(y0 + 1, x0i + 1);
        };
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t f = 0; f < filters; ++f) {
                const int64_t g = f / per_filter_group;
                for (int64_t oh = 0; oh < out_h; ++oh)
                    for (int64_t ow = 0; ow < out_w; ++ow) {
                        double sum = bias.defined() ? bias.data_as<double>()[f] : 0.0;
                        for (int64_t c = 0; c < per_group; ++c) {
                            const int64_t channel = g * per_group + c;
                            const int64_t og = channel / per_offset_group;
                            const double* plane = x.data_as<double>() + (n * channels + channel) * height * width;
                            for (int64_t i = 0; i < kh; ++i)
                                for (int64_t j = 0; j < kw; ++j) {
                                    const int64_t tap = i * kw + j;
                                    const int64_t o =
                                        ((n * offset_group_ + og) * 2 * kh * kw + 2 * tap) * points + oh * out_w + ow;
                                    const double dy = offset.data_as<double>()[o];
                                    const double dx = offset.data_as<double>()[o + points];
                                    const double py =
                                        static_cast<double>(oh * strides_[0] - pads_[0] + i * dilations_[0]) + dy;
                                    const double px =
                                        static_cast<double>(ow * strides_[1] - pads_[1] + j * dilations_[1]) + dx;
                                    double value = sample(plane, py, px);
                                    if (mask.defined())
                                        value *=
                                            mask.data_as<double>()[((n * offset_group_ + og) * kh * kw + tap) * points +
                                                                   oh * out_w + ow];
                                    sum += value * w.data_as<double>()[((f * per_group + c) * kh + i) * kw + j];
                                }
                        }
                        y.data_as<double>()[((n * filters + f) * out_h + oh) * out_w + ow] = sum;
                    }
            }
        context.set_output(0, y.cast(x0.dtype()));
    }

private:
    int64_t group_, offset_group_;
    std::vector<int64_t> dilations_, strides_, pads_, kernel_shape_;
};

}  // namespace

void register_conv_ops(OpRegistry& registry) {
    registry.add("", "Conv", 1, kMaxOpset, make_factory<ConvKernel>());
    registry.add("", "ConvTranspose", 1, kMaxOpset, make_factory<ConvTransposeKernel>());
    registry.add("", "DeformConv", 19, kMaxOpset, make_factory<DeformConvKernel>());
    registry.add(kMicrosoftDomain, "FusedConv", 1, kMaxOpset, make_factory<FusedConvKernel>());
    registry.add(kRuntimeDomain, "FusedConv", 1, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<RuntimeFusedConvKernel>(node, false);
    });
    registry.add(kRuntimeDomain, "FusedConvTranspose", 1, kMaxOpset,
                 [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
                     return std::make_unique<RuntimeFusedConvKernel>(node, true);
                 });
}

}  // namespace polygraphy::ref
