// Convolutions on oneDNN (conv_dnnl.h).
#include "backend/ref/compute/conv_dnnl.h"

#include <algorithm>
#include <optional>
#include <string>

#include "polygraphy/common/logger.h"

namespace polygraphy::ref::conv {
namespace {

/// oneDNN dims and plain strides of the ONNX weight tensor: Conv W is (M, C/g, k...) and ConvTranspose
/// W is (C, M/g, k...); oneDNN wants (g, M/g, C/g, k...) (without g when g == 1).
dnnl::memory::desc plain_weights_desc(const ConvProblem& p) {
    const int64_t taps = product(p.geometry.kernel);
    const int64_t cg = p.in_channels / p.group;
    const int64_t mg = p.out_channels / p.group;
    dnnl::memory::dims dims;
    dnnl::memory::dims strides;
    if (p.group > 1) {
        dims.push_back(p.group);
        strides.push_back(cg * mg * taps);
    }
    dims.push_back(mg);
    dims.push_back(cg);
    if (p.transpose) {
        strides.push_back(taps);       // o
        strides.push_back(mg * taps);  // i
    } else {
        strides.push_back(cg * taps);
        strides.push_back(taps);
    }
    int64_t stride = taps;
    for (int64_t k : p.geometry.kernel) {
        dims.push_back(k);
        stride /= k;
        strides.push_back(stride);
    }
    return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

}  // namespace

/// A plan's primitive arguments: the residual when the primitive adds it (plan.residual_post_op), the
/// bias when there is one (nullptr: none).
std::unordered_map<int, dnnl::memory> primitive_args(const DnnlConvPlan& plan, dnnl::memory src, dnnl::memory weights,
                                                     dnnl::memory dst, const float* residual, const float* bias) {
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, std::move(src)}, {DNNL_ARG_WEIGHTS, std::move(weights)}, {DNNL_ARG_DST, std::move(dst)}};
    if (plan.residual_post_op)
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, onednn::wrap_memory(plan.dst_user, residual));
    if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, onednn::wrap_memory(plan.bias, bias));
    return args;
}

/// nullptr when oneDNN has no implementation for the problem (the reference loop runs instead).
/// The caller passes the primitive's scratchpad (DnnlConvPlan::scratchpad), so that threads can run
/// the one primitive at the same time.
std::shared_ptr<const DnnlConvPlan> make_dnnl_plan(const NodeInfo& node, const ConvProblem& p, bool has_bias,
                                                   const onednn::FusedActivation& activation, bool residual,
                                                   int64_t input_block, int64_t output_block) {
    using dnnl::memory;
    const Geometry& g = p.geometry;
    if (g.rank() > 3) return nullptr;
    auto plan = std::make_shared<DnnlConvPlan>();
    const memory::dims src_dims = onednn::to_dims(p.input_shape());
    const memory::dims dst_dims = onednn::to_dims(p.output_shape);
    const bool blocked_input = input_block != 0, blocked_output = output_block != 0;
    plan->src_user = blocked_input ? onednn::blocked_desc(src_dims, input_block) : onednn::plain_desc(src_dims);
    plan->dst_user = blocked_output ? onednn::blocked_desc(dst_dims, output_block) : onednn::plain_desc(dst_dims);
    plan->weights_plain = plain_weights_desc(p);
    // A pointwise convolution between NCHW tensors is a plain matrix product (W[M, C] x X[C, HW]):
    // oneDNN's GEMM implementation runs it as fast as a blocked one without the two layout reorders.
    // Where the graph holds X or Y blocked, the primitive takes that layout as it is.
    const bool pointwise = !p.transpose && p.group == 1 &&
                           std::all_of(g.kernel.begin(), g.kernel.end(), [](int64_t k) { return k == 1; }) &&
                           std::all_of(g.strides.begin(), g.strides.end(), [](int64_t s) { return s == 1; }) &&
                           std::all_of(g.pad_begin.begin(), g.pad_begin.end(), [](int64_t v) { return v == 0; }) &&
                           std::all_of(g.pad_end.begin(), g.pad_end.end(), [](int64_t v) { return v == 0; });
    const bool gemm = pointwise && !blocked_input && !blocked_output;
    // Between blocks of 8 and 16 oneDNN has only its reference loop, so the narrow
    // side is left to the primitive (the wide block, channels padded) and reordered.
    const bool mixed = blocked_input && blocked_output && input_block != output_block;
    const bool take_src = gemm || (blocked_input && !(mixed && input_block < output_block));
    const bool take_dst = gemm || (blocked_output && !(mixed && output_block < input_block));
    const memory::desc src_any =
        take_src ? plan->src_user : memory::desc(src_dims, memory::data_type::f32, memory::format_tag::any);
    const memory::desc dst_any =
        take_dst ? plan->dst_user : memory::desc(dst_dims, memory::data_type::f32, memory::format_tag::any);
    const memory::desc weights_any(plan->weights_plain.dims(), memory::data_type::f32, memory::format_tag::any);
    const memory::desc bias_desc =
        has_bias ? memory::desc({p.out_channels}, memory::data_type::f32, memory::format_tag::x) : memory::desc();
    memory::dims strides(g.strides.begin(), g.strides.end());
    memory::dims dilates;
    for (int64_t d : g.dilations) dilates.push_back(d - 1);
    memory::dims pad_l(g.pad_begin.begin(), g.pad_begin.end());
    memory::dims pad_r;
    for (std::size_t d = 0; d < g.rank(); ++d) pad_r.push_back(g.pad_end[d] - p.output_padding[d]);
    const auto& engine = onednn::cpu_engine();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // oneDNN's GEMM convolution (the pointwise case) applies post-ops far slower than its JIT
    // elementwise pass does (mobilenet_v2's 1x1 convolutions with Clip took twice as long), so there
    // the activation follows the primitive.
    plan->residual_after = residual;
    // oneDNN's swish post-op (SiLU) costs more than the convolution on EfficientNet's early layers;
    // our SiLU pass after it is much cheaper.
    const bool silu = activation.kind() == onednn::FusedActivation::Kind::kSilu;
    plan->activation_after = activation.active() && (gemm || residual || silu);
    if (activation.active() && !plan->activation_after) {
        dnnl::post_ops ops;
        activation.append_to(ops);
        attr.set_post_ops(ops);
    }
    std::string impl;
    try {
        if (p.transpose) {
            dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::deconvolution_direct, src_any, weights_any,
                                                   bias_desc, dst_any, strides, dilates, pad_l, pad_r);
            dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine);
            plan->src = pd.src_desc();
            plan->weights = pd.weights_desc();
            plan->dst = pd.dst_desc();
            plan->scratchpad = pd.scratchpad_desc();
            plan->primitive = dnnl::deconvolution_forward(pd);
            impl = pd.impl_info_str();
        } else {
            dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::convolution_direct, src_any, weights_any, bias_desc,
                                                 dst_any, strides, dilates, pad_l, pad_r);
            // Into a blocked Y (the residual is blocked too) the JIT kernels add the residual as they
            // store each result, then the activation: the sums of the nodes as written, in one pass.
            // Not into a Y that is reordered after the primitive: the residual has Y's layout, which
            // only the reference loop takes there.
            std::optional<dnnl::convolution_forward::primitive_desc> fused;
            if (residual && blocked_output && take_dst) {
                dnnl::post_ops ops;
                ops.append_binary(dnnl::algorithm::binary_add, plan->dst_user);
                if (activation.active() && !silu) activation.append_to(ops);
                dnnl::primitive_attr residual_attr;
                residual_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
                residual_attr.set_post_ops(ops);
                try {
                    fused.emplace(desc, residual_attr, engine);
                    plan->residual_after = false;
                    plan->activation_after = silu;
                    plan->residual_post_op = true;
                } catch (const dnnl::error&) {
                    // no kernel takes it: the pass after the primitive adds it
                }
            }
            const dnnl::convolution_forward::primitive_desc pd =
                fused ? *fused : dnnl::convolution_forward::primitive_desc(desc, attr, engine);
            plan->src = pd.src_desc();
            plan->weights = pd.weights_desc();
            plan->dst = pd.dst_desc();
            plan->scratchpad = pd.scratchpad_desc();
            plan->primitive = dnnl::convolution_forward(pd);
            impl = pd.impl_info_str();
        }
    } catch (const dnnl::error&) {
        return nullptr;  // e.g. negative end padding oneDNN does not take: the reference loop handles it
    }
    if (logger().enabled(Severity::kSuperVerbose)) {
        logger().super_verbose("Node '" + node.name() + "' (" + node.op_type() + "): input " +
                               shape_to_string(p.input_shape()) + " runs on oneDNN " + impl);
    }
    plan->bias = bias_desc;
    plan->reorder_src = plan->src != plan->src_user;
    plan->reorder_dst = plan->dst != plan->dst_user;
    if (plan->reorder_src)
        plan->src_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plan->src_user, engine, plan->src));
    if (plan->reorder_dst)
        plan->dst_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plan->dst, engine, plan->dst_user));
    return plan;
}

void ResidualAdd::run(const onednn::FusedActivation& activation, float* y, const float* r, int64_t count,
                      int num_threads) const {
    const int threads = onednn::resolve_threads(num_threads);
    onednn::ThreadScope scope(threads);
    auto plan = cache_.get({count, threads}, [&]() -> std::shared_ptr<const Plan> {
        auto plan = std::make_shared<Plan>();
        plan->desc = onednn::plain_desc({count});
        dnnl::primitive_attr attr;
        dnnl::post_ops ops;
        activation.append_to(ops);
        attr.set_post_ops(ops);
        try {
            dnnl::binary::desc desc(dnnl::algorithm::binary_add, plan->desc, plan->desc, plan->desc);
            plan->primitive = dnnl::binary(dnnl::binary::primitive_desc(desc, attr, onednn::cpu_engine()));
        } catch (const dnnl::error&) {
            return nullptr;
        }
        return plan;
    });
    if (plan == nullptr) {  // no oneDNN implementation: the same sum, then the activation of each value
        onednn::parallel_for(count, threads, 4, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
                y[i] = static_cast<float>(activation.apply(static_cast<double>(y[i] + r[i])));
        });
        return;
    }
    onednn::execute(plan->primitive, {{DNNL_ARG_SRC_0, onednn::wrap_memory(plan->desc, y)},
                                      {DNNL_ARG_SRC_1, onednn::wrap_memory(plan->desc, r)},
                                      {DNNL_ARG_DST, onednn::wrap_memory(plan->desc, y)}});
}

}  // namespace polygraphy::ref::conv
