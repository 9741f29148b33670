// Convolutions on oneDNN: the primitives for one problem (and its layouts), and the folded
// residual Add after a convolution as one binary primitive.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "backend/ref/compute/conv_problem.h"
#include "backend/ref/compute/dnnl_util.h"

namespace polygraphy::ref::conv {

/// Primitives for one input shape. `src_user` and `dst_user` are the layouts of X and Y as the graph
/// holds them (NCHW, or channel-blocked where the layout pass said so); `src` and `dst` are those the
/// primitive runs on, reordered from and to them when they differ.
struct DnnlConvPlan {
    dnnl::primitive primitive;
    dnnl::memory::desc src_user, src, weights_plain, weights, dst_user, dst, bias;
    dnnl::memory::desc scratchpad;  // the caller passes it (onednn::add_thread_scratchpad)
    bool reorder_src = false;
    bool reorder_dst = false;
    bool activation_after = false;  // the fused activation runs as a separate pass over the output
    bool residual_after = false;    // a folded residual is added (then the activation) in a pass after
    bool residual_post_op = false;  // ... or by the primitive as it stores Y (binary post-op, argument SRC_1)
    dnnl::reorder src_reorder, dst_reorder;
};

/// A plan's primitive arguments: the residual when the primitive adds it (plan.residual_post_op), the
/// bias when there is one (nullptr: none).
std::unordered_map<int, dnnl::memory> primitive_args(const DnnlConvPlan& plan, dnnl::memory src, dnnl::memory weights,
                                                     dnnl::memory dst, const float* residual, const float* bias);

/// nullptr when oneDNN has no implementation for the problem (the reference loop runs instead).
/// The caller passes the primitive's scratchpad (DnnlConvPlan::scratchpad), so that threads can run
/// the one primitive at the same time.
std::shared_ptr<const DnnlConvPlan> make_dnnl_plan(const NodeInfo& node, const ConvProblem& p, bool has_bias,
                                                   const onednn::FusedActivation& activation, bool residual,
                                                   int64_t input_block, int64_t output_block);

/// y = activation(y + r) over contiguous float32 values: a folded residual Add and the activation
/// after it as one oneDNN binary primitive with an eltwise post-op, one pass over memory where the
/// nodes as written take two. Primitives are cached per element count and thread count (one kernel
/// always passes the same activation).
class ResidualAdd {
public:
    void run(const onednn::FusedActivation& activation, float* y, const float* r, int64_t count, int num_threads) const;

private:
    struct Plan {
        dnnl::binary primitive;
        dnnl::memory::desc desc;
    };
    onednn::PrimitiveCache<Plan> cache_;
};
}  // namespace polygraphy::ref::conv
