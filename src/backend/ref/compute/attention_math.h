// Scaled dot-product attention in float32, the core that ONNX Runtime's fused attention operators
// (com.microsoft Attention, MultiHeadAttention, GroupQueryAttention; src/backend/ref/ops/attention.cpp)
// share: per query row, scores = scale * q.k (soft-capped when asked), plus an additive mask and
// bias, then a numerically stable softmax over the row's window of key columns (the columns outside
// it get probability 0), optionally with a sink logit in the denominator, times V.
#pragma once

#include <cstdint>
#include <functional>

namespace polygraphy::ref::attention {

/// The key columns [begin, end) that one query row attends to.
struct Window {
    int64_t begin = 0;
    int64_t end = 0;
};

/// One attention problem. Query head h reads key/value head h / (heads / kv_heads). All pointers are
/// borrowed for the duration of compute().
struct Problem {
    int64_t batch = 0;         ///< B
    int64_t heads = 0;         ///< N, heads of Q
    int64_t kv_heads = 0;      ///< heads of K and V; divides N
    int64_t q_len = 0;         ///< S, query rows per head
    int64_t kv_len = 0;        ///< rows of K and V per head (the key columns of a score row)
    int64_t head_size = 0;     ///< H of Q and K
    int64_t v_head_size = 0;   ///< H of V
    const float* q = nullptr;  ///< (B, N, S, H)
    const float* k = nullptr;  ///< (B, kv_heads, kv_len, H)
    const float* v = nullptr;  ///< (B, kv_heads, kv_len, v_head_size)
    float scale = 1.0f;        ///< multiplies q.k
    float softcap = 0.0f;      ///< > 0: scores become softcap * tanh(score / softcap) before the additive terms
    /// Added to every head's scores, (B, S, kv_len); may be null.
    const float* mask = nullptr;
    /// Added to the scores, blocks of (S, kv_len) that are bias_batch_stride and bias_head_stride
    /// elements apart (0 broadcasts); may be null.
    const float* bias = nullptr;
    int64_t bias_batch_stride = 0;
    int64_t bias_head_stride = 0;
    /// The columns of row s of batch b; every column when empty.
    std::function<Window(int64_t b, int64_t s)> window;
    /// Whether a sink logit joins the softmax's denominator: sinks[h], or 0 when sinks is null.
    bool use_sink = false;
    const float* sinks = nullptr;
};

/// Writes the attention of `problem` to `out`, (B, S, N * v_head_size) row-major, on up to `threads`
/// threads.
void compute(const Problem& problem, float* out, int threads);

}  // namespace polygraphy::ref::attention
