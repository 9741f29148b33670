#include "backend/ref/compute/attention_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/vector_math.h"

namespace polygraphy::ref::attention {
namespace {

// One (batch, head): every query row's scores, softmax and product with V.
void attend_head(const Problem& p, int64_t b, int64_t h, std::vector<float>& scores, float* out) {
    const int64_t group = p.heads / p.kv_heads;
    const int64_t kv_head = b * p.kv_heads + h / group;
    const float* q_head = p.q + (b * p.heads + h) * p.q_len * p.head_size;
    const float* k_head = p.k + kv_head * p.kv_len * p.head_size;
    const float* v_head = p.v + kv_head * p.kv_len * p.v_head_size;
    const float* bias_head = p.bias != nullptr ? p.bias + b * p.bias_batch_stride + h * p.bias_head_stride : nullptr;
    const float sink = p.sinks != nullptr ? p.sinks[h] : 0.0f;
    const int64_t row_stride = p.heads * p.v_head_size;
    for (int64_t s = 0; s < p.q_len; ++s) {
        float* out_row = out + (b * p.q_len + s) * row_stride + h * p.v_head_size;
        std::fill(out_row, out_row + p.v_head_size, 0.0f);
        Window w = p.window ? p.window(b, s) : Window{0, p.kv_len};
        w.begin = std::clamp<int64_t>(w.begin, 0, p.kv_len);
        w.end = std::clamp<int64_t>(w.end, w.begin, p.kv_len);
        if (w.begin == w.end) continue;
        const float* q_row = q_head + s * p.head_size;
        const float* mask_row = p.mask != nullptr ? p.mask + (b * p.q_len + s) * p.kv_len : nullptr;
        const float* bias_row = bias_head != nullptr ? bias_head + s * p.kv_len : nullptr;
        float max = p.use_sink ? sink : -std::numeric_limits<float>::infinity();
        for (int64_t t = w.begin; t < w.end; ++t) {
            float x = p.scale * dot_product(q_row, k_head + t * p.head_size, p.head_size);
            if (p.softcap > 0.0f) x = p.softcap * std::tanh(x / p.softcap);
            // ONNX Runtime sums the bias and the mask first, then adds them to the scaled product.
            float additive = 0.0f;
            if (bias_row != nullptr) additive = bias_row[t];
            if (mask_row != nullptr) additive += mask_row[t];
            x += additive;
            scores[static_cast<std::size_t>(t)] = x;
            max = std::max(max, x);
        }
        double sum = p.use_sink ? std::exp(static_cast<double>(sink - max)) : 0.0;
        for (int64_t t = w.begin; t < w.end; ++t) {
            const float e = std::exp(scores[static_cast<std::size_t>(t)] - max);
            scores[static_cast<std::size_t>(t)] = e;
            sum += e;
        }
        const float inverse = static_cast<float>(1.0 / sum);
        for (int64_t t = w.begin; t < w.end; ++t) {
            const float weight = scores[static_cast<std::size_t>(t)] * inverse;
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
        std::vector<float> scores(static_cast<std::size_t>(std::max<int64_t>(p.kv_len, 1)));
        for (int64_t i = begin; i < end; ++i) attend_head(p, i / p.heads, i % p.heads, scores, out);
    });
}

}  // namespace polygraphy::ref::attention
