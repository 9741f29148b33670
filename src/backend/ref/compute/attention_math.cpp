#include "backend/ref/compute/attention_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/packed_gemm.h"
#include "backend/ref/compute/vector_math.h"

namespace polygraphy::ref::attention {
namespace {

// The scores of one (batch, head), (q_len, kv_len): Q K^T through the runtime's GEMM (K packed as the
// transpose it is stored as), or row by row through dot products on CPUs without it.
void head_scores(const Problem& p, const float* q_head, const float* k_head, float* scores) {
    if (packed_gemm::available() && p.head_size > 0) {
        const packed_gemm::PackedMatrix k(k_head, p.head_size, p.kv_len, 1, p.head_size, 1);
        packed_gemm::multiply(q_head, p.q_len, p.head_size, k, nullptr, scores, 1);
        return;
    }
    for (int64_t s = 0; s < p.q_len; ++s)
        for (int64_t t = 0; t < p.kv_len; ++t)
            scores[s * p.kv_len + t] = dot_product(q_head + s * p.head_size, k_head + t * p.head_size, p.head_size);
}

// One (batch, head): the scores, each row's softmax over its window (probability 0 outside it), and the
// probabilities times V, written to the head's columns of `out`.
void attend_head(const Problem& p, int64_t b, int64_t h, std::vector<float>& scores, float* out) {
    const int64_t group = p.heads / p.kv_heads;
    const int64_t kv_head = b * p.kv_heads + h / group;
    const float* q_head = p.q + (b * p.heads + h) * p.q_len * p.head_size;
    const float* k_head = p.k + kv_head * p.kv_len * p.head_size;
    const float* v_head = p.v + kv_head * p.kv_len * p.v_head_size;
    const float* bias_head = p.bias != nullptr ? p.bias + b * p.bias_batch_stride + h * p.bias_head_stride : nullptr;
    const float sink = p.sinks != nullptr ? p.sinks[h] : 0.0f;
    const int64_t row_stride = p.heads * p.v_head_size;
    float* out_head = out + b * p.q_len * row_stride + h * p.v_head_size;
    scores.resize(static_cast<std::size_t>(std::max<int64_t>(p.q_len * p.kv_len, 1)));
    head_scores(p, q_head, k_head, scores.data());
    for (int64_t s = 0; s < p.q_len; ++s) {
        float* row = scores.data() + s * p.kv_len;
        Window w = p.window ? p.window(b, s) : Window{0, p.kv_len};
        w.begin = std::clamp<int64_t>(w.begin, 0, p.kv_len);
        w.end = std::clamp<int64_t>(w.end, w.begin, p.kv_len);
        const float* mask_row = p.mask != nullptr ? p.mask + (b * p.q_len + s) * p.kv_len : nullptr;
        const float* bias_row = bias_head != nullptr ? bias_head + s * p.kv_len : nullptr;
        float max = p.use_sink ? sink : -std::numeric_limits<float>::infinity();
        for (int64_t t = w.begin; t < w.end; ++t) {
            float x = p.scale * row[t];
            if (p.softcap > 0.0f) x = p.softcap * std::tanh(x / p.softcap);
            // ONNX Runtime sums the bias and the mask first, then adds them to the scaled product.
            float additive = 0.0f;
            if (bias_row != nullptr) additive = bias_row[t];
            if (mask_row != nullptr) additive += mask_row[t];
            x += additive;
            row[t] = x;
            max = std::max(max, x);
        }
        const double sum = (p.use_sink ? std::exp(static_cast<double>(sink - max)) : 0.0) +
                           exp_shifted_in_place(row + w.begin, w.end - w.begin, max);
        const float inverse = w.begin < w.end ? static_cast<float>(1.0 / sum) : 0.0f;
        std::fill(row, row + w.begin, 0.0f);
        for (int64_t t = w.begin; t < w.end; ++t) row[t] *= inverse;
        std::fill(row + w.end, row + p.kv_len, 0.0f);
    }
    // The probabilities times V: a row with an empty window gets zeros.
    if (packed_gemm::available() && p.kv_len > 0) {
        const packed_gemm::PackedMatrix v(v_head, p.kv_len, p.v_head_size, p.v_head_size, 1, 1);
        packed_gemm::multiply(scores.data(), p.q_len, p.kv_len, v, nullptr, out_head, 1,
                              packed_gemm::KernelChoice::kWidest, row_stride);
        return;
    }
    for (int64_t s = 0; s < p.q_len; ++s) {
        float* out_row = out_head + s * row_stride;
        std::fill(out_row, out_row + p.v_head_size, 0.0f);
        for (int64_t t = 0; t < p.kv_len; ++t) {
            const float weight = scores[static_cast<std::size_t>(s * p.kv_len + t)];
            const float* v_row = v_head + t * p.v_head_size;
            for (int64_t d = 0; d < p.v_head_size; ++d) out_row[d] += weight * v_row[d];
        }
    }
}

}  // namespace

void compute(const Problem& p, float* out, int threads) {
    const int64_t pairs = p.batch * p.heads;
    const int64_t cost = p.q_len * p.kv_len * (p.head_size + p.v_head_size);
    onednn::parallel_for(pairs, threads, cost, [&](int64_t begin, int64_t end) {
        std::vector<float> scores;
        for (int64_t i = begin; i < end; ++i) attend_head(p, i / p.heads, i % p.heads, scores, out);
    });
}

}  // namespace polygraphy::ref::attention
