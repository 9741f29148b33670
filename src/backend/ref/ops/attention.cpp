// ONNX Runtime's fused attention operators (com.microsoft): Attention, MultiHeadAttention and
// GroupQueryAttention, as its CPU kernels compute them: in float32 (float16 inputs widened, outputs
// narrowed), with the masks ONNX Runtime builds (Attention and MultiHeadAttention add
// mask_filter_value at padded positions and -inf at the causal ones; GroupQueryAttention leaves the
// keys after each query, and before its local window, out of the softmax). The softmax and the
// products are attention::compute (src/backend/ref/compute/attention_math.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/attention_math.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/compute/packed_gemm.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

/// A 0/1 attribute; anything else fails naming it.
bool flag_attr(const NodeInfo& node, const char* name, int64_t fallback = 0) {
    const int64_t value = node.attr_int(name, fallback);
    if (value != 0 && value != 1) node.fail(fmt::format("attribute {} must be 0 or 1, but it is {}", name, value));
    return value == 1;
}

const Tensor* optional_input(const KernelContext& context, std::size_t index) {
    const Tensor* tensor = context.input(index);
    return tensor != nullptr && tensor->defined() ? tensor : nullptr;
}

bool has_output(const KernelContext& context, std::size_t index) {
    return context.num_outputs() > index && !context.node().proto().output(static_cast<int>(index)).empty();
}

std::string describe(const Tensor& tensor) {
    return fmt::format("{} of shape {}", dtype_name(tensor.dtype()), shape_to_string(tensor.shape()));
}

/// The float type of the operator (input 0's): float32 or float16.
DataType float_type(const NodeInfo& node, const Tensor& tensor, const char* name) {
    if (tensor.dtype() != DataType::kFloat32 && tensor.dtype() != DataType::kFloat16)
        node.fail(fmt::format("input {} must be float32 or float16, but it is {}", name, dtype_name(tensor.dtype())));
    return tensor.dtype();
}

/// `tensor` of the operator's float type `dtype` and rank `rank`, widened to float32.
Tensor float_input(const NodeInfo& node, const Tensor& tensor, const char* name, DataType dtype, int64_t rank) {
    if (tensor.dtype() != dtype || tensor.rank() != rank)
        node.fail(fmt::format("input {} must be a {}-D {} tensor, but it is {}", name, rank, dtype_name(dtype),
                              describe(tensor)));
    return tensor.dtype() == DataType::kFloat32 ? tensor : tensor.cast(DataType::kFloat32);
}

void require_shape(const NodeInfo& node, const Tensor& tensor, const char* name, const Shape& expected,
                   const char* meaning) {
    if (tensor.shape() != expected)
        node.fail(fmt::format("input {} must have shape {} {}, but it has shape {}", name, shape_to_string(expected),
                              meaning, shape_to_string(tensor.shape())));
}

/// Sets output `index` from float32 values, narrowed to `dtype`.
void set_float_output(KernelContext& context, std::size_t index, Tensor values, DataType dtype) {
    context.set_output(index, dtype == DataType::kFloat32 ? std::move(values) : values.cast(dtype));
}

Tensor float_tensor(Shape shape) {
    return Tensor::uninitialized(DataType::kFloat32, std::move(shape));
}

/// x viewed as (B, S, row) with `heads` heads of `head_size` at `offset` of each row, plus `bias`
/// (heads * head_size values, or null), as (B, heads, S, head_size).
std::vector<float> split_heads(const float* x, int64_t batch, int64_t seq, int64_t row, int64_t offset, int64_t heads,
                               int64_t head_size, const float* bias) {
    std::vector<float> out(static_cast<std::size_t>(batch * heads * seq * head_size));
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t n = 0; n < heads; ++n)
            for (int64_t s = 0; s < seq; ++s) {
                const float* src = x + (b * seq + s) * row + offset + n * head_size;
                float* dst = out.data() + ((b * heads + n) * seq + s) * head_size;
                for (int64_t d = 0; d < head_size; ++d)
                    dst[d] = src[d] + (bias != nullptr ? bias[n * head_size + d] : 0);
            }
    return out;
}

/// Per (batch, head): the `past_len` rows of `past` (may be null) then the `now_len` rows of `now`.
std::vector<float> concat_rows(const float* past, int64_t past_len, const float* now, int64_t now_len, int64_t pairs,
                               int64_t width) {
    const int64_t total = past_len + now_len;
    std::vector<float> out(static_cast<std::size_t>(pairs * total * width));
    for (int64_t i = 0; i < pairs; ++i) {
        float* dst = out.data() + i * total * width;
        if (past != nullptr) std::copy_n(past + i * past_len * width, past_len * width, dst);
        std::copy_n(now + i * now_len * width, now_len * width, dst + past_len * width);
    }
    return out;
}

Tensor tensor_of(const std::vector<float>& values, Shape shape) {
    Tensor tensor = float_tensor(std::move(shape));
    std::copy(values.begin(), values.end(), tensor.data_as<float>());
    return tensor;
}

// ---- Attention and MultiHeadAttention: ONNX Runtime's AttentionCPUBase -------------------------------------

/// How a mask_index / key_padding_mask is laid out.
enum class MaskKind { kNone, kEnd, kEndStart, kRaw2D, kRaw3D };

/// The (B, S, T) additive mask ONNX Runtime builds (0 where attended, mask_filter_value where the
/// mask hides a key, -inf after the query when causal), or nothing when no position is masked.
std::vector<float> additive_mask(const Tensor* mask, MaskKind kind, int64_t batch, int64_t seq, int64_t total,
                                 int64_t past, bool causal, float filter) {
    if (kind == MaskKind::kNone && !causal) return {};
    std::vector<float> out(static_cast<std::size_t>(batch * seq * total), 0.0f);
    const int32_t* m = mask != nullptr ? mask->data_as<int32_t>() : nullptr;
    for (int64_t b = 0; b < batch; ++b) {
        float* block = out.data() + b * seq * total;
        for (int64_t s = 0; s < seq; ++s) {
            float* row = block + s * total;
            for (int64_t t = 0; t < total; ++t) {
                bool masked = false;
                switch (kind) {
                    case MaskKind::kRaw3D:
                        masked = m[(b * seq + s) * total + t] <= 0;
                        break;
                    case MaskKind::kRaw2D:
                        masked = m[b * total + t] <= 0;
                        break;
                    case MaskKind::kEndStart:
                        masked = t < m[batch + b];
                        [[fallthrough]];
                    case MaskKind::kEnd:
                        masked = masked || t >= m[b];
                        break;
                    case MaskKind::kNone:
                        break;
                }
                if (masked) row[t] = filter;
            }
            // Causal: query s sees the past and the keys up to itself; the later keys get -inf (not
            // mask_filter_value), so a row whose earlier keys are all padding attends to those, never
            // to later keys. As in ONNX Runtime, the last query row is left whole (which matters only
            // when there are more keys than queries).
            if (causal && s + 1 < seq)
                for (int64_t t = past + s + 1; t < total; ++t) row[t] = -std::numeric_limits<float>::infinity();
        }
    }
    return out;
}

/// The inputs ONNX Runtime's attention core takes once Q, K and V are projected: Q (B, N, S, H), the
/// whole K (B, N, T, H) and V (B, N, T, Hv) with the past in front.
struct CoreInputs {
    int64_t batch = 0, heads = 0, seq = 0, total = 0, past = 0, head_size = 0, v_head_size = 0;
    std::vector<float> q, k, v;
};

/// attention_bias (B or 1, N or 1, S, T), checked against `in`, as float32 (undefined when absent).
Tensor attention_bias(const NodeInfo& node, const Tensor* given, DataType dtype, const CoreInputs& in) {
    if (given == nullptr) return {};
    Tensor bias = float_input(node, *given, "attention_bias", dtype, 4);
    const Shape& s = bias.shape();
    if ((s[0] != 1 && s[0] != in.batch) || (s[1] != 1 && s[1] != in.heads) || s[2] != in.seq || s[3] != in.total)
        node.fail(
            fmt::format("input attention_bias must have shape (batch_size or 1, num_heads or 1, sequence_length, "
                        "total_sequence_length) = ({} or 1, {} or 1, {}, {}), but it has shape {}",
                        in.batch, in.heads, in.seq, in.total, shape_to_string(s)));
    return bias;
}

/// Output (B, S, N * Hv) of `in` with the additive `mask` and `bias`.
Tensor attend(const CoreInputs& in, const std::vector<float>& mask, const Tensor& bias, float scale, int threads) {
    attention::Problem p;
    p.batch = in.batch;
    p.heads = p.kv_heads = in.heads;
    p.q_len = in.seq;
    p.kv_len = in.total;
    p.head_size = in.head_size;
    p.v_head_size = in.v_head_size;
    p.q = in.q.data();
    p.k = in.k.data();
    p.v = in.v.data();
    p.scale = scale != 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(in.head_size));
    p.mask = mask.empty() ? nullptr : mask.data();
    if (bias.defined()) {
        p.bias = bias.data_as<float>();
        const int64_t block = in.seq * in.total;
        p.bias_batch_stride = bias.shape()[0] == 1 ? 0 : bias.shape()[1] * block;
        p.bias_head_stride = bias.shape()[1] == 1 ? 0 : block;
    }
    Tensor out = float_tensor({in.batch, in.seq, in.heads * in.v_head_size});
    attention::compute(p, out.data_as<float>(), threads);
    return out;
}

/// The attributes Attention and MultiHeadAttention share.
struct MaskedAttentionAttrs {
    explicit MaskedAttentionAttrs(const NodeInfo& node)
        : num_heads(required_positive_attr(node, "num_heads")),
          unidirectional(flag_attr(node, "unidirectional")),
          scale(node.attr_float("scale", 0.0f)),
          mask_filter_value(node.attr_float("mask_filter_value", -10000.0f)) {}
    int64_t num_heads;
    bool unidirectional;
    float scale;
    float mask_filter_value;
};

/// com.microsoft.Attention (BERT, GPT-2): input (B, S, D_i) projected by the merged weights
/// (D_i, D + D + D_v) and bias into Q, K and V; inputs input, weights, bias?, mask_index?, past?,
/// attention_bias?, past_sequence_length?; outputs output (B, S, D_v), present? (2, B, N, P + S, H).
class AttentionKernel final : public Kernel {
public:
    explicit AttentionKernel(const NodeInfo& node)
        : attrs_(node),
          qkv_hidden_sizes_(node.attr_ints("qkv_hidden_sizes")),
          constant_weights_(node.constant_input(1) != nullptr) {
        if (flag_attr(node, "do_rotary"))
            node.fail(
                "do_rotary is not supported: ONNX Runtime's CPU kernel refuses it too (use MultiHeadAttention "
                "after RotaryEmbedding)");
        if (flag_attr(node, "past_present_share_buffer"))
            node.fail("past_present_share_buffer is not supported: past and present are separate tensors here");
        if (!qkv_hidden_sizes_.empty()) {
            if (qkv_hidden_sizes_.size() != 3)
                node.fail(fmt::format("attribute qkv_hidden_sizes must have 3 values, but it has {}",
                                      qkv_hidden_sizes_.size()));
            for (int64_t size : qkv_hidden_sizes_)
                if (size <= 0 || size % attrs_.num_heads != 0)
                    node.fail(
                        fmt::format("attribute qkv_hidden_sizes holds {}, which is not a positive multiple of "
                                    "num_heads ({})",
                                    size, attrs_.num_heads));
            if (qkv_hidden_sizes_[0] != qkv_hidden_sizes_[1])
                node.fail(
                    fmt::format("attribute qkv_hidden_sizes must give Q and K the same size, but it gives {} "
                                "and {}",
                                qkv_hidden_sizes_[0], qkv_hidden_sizes_[1]));
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const int64_t heads = attrs_.num_heads;
        const Tensor& input0 = context.required_input(0);
        const DataType dtype = float_type(node, input0, "input");
        const Tensor input = float_input(node, input0, "input", dtype, 3);
        const Tensor weights = float_input(node, context.required_input(1), "weights", dtype, 2);
        const int64_t batch = input.shape()[0], seq = input.shape()[1], input_hidden = input.shape()[2];
        const int64_t columns = weights.shape()[1];
        int64_t hidden = columns / 3, v_hidden = columns / 3;
        if (!qkv_hidden_sizes_.empty()) {
            hidden = qkv_hidden_sizes_[0];
            v_hidden = qkv_hidden_sizes_[2];
        } else if (columns % 3 != 0 || hidden % heads != 0) {
            node.fail(
                fmt::format("input weights has {} columns, which are not 3 equal parts divisible by num_heads "
                            "({}); qkv_hidden_sizes gives unequal ones",
                            columns, heads));
        }
        if (weights.shape()[0] != input_hidden || columns != 2 * hidden + v_hidden)
            node.fail(
                fmt::format("input weights must have shape ({}, {}) (input hidden size, Q + K + V hidden "
                            "sizes), but it has shape {}",
                            input_hidden, 2 * hidden + v_hidden, shape_to_string(weights.shape())));
        Tensor bias;
        if (const Tensor* given = optional_input(context, 2)) {
            bias = float_input(node, *given, "bias", dtype, 1);
            require_shape(node, bias, "bias", {columns}, "(Q + K + V hidden sizes)");
        }

        // Q, K, V = input x weights + bias, (B * S, D + D + D_v), in the runtime's GEMM: the weights
        // (an initializer, as in every fused model) packed once, else for this run.
        const int64_t rows = batch * seq;
        std::vector<float> qkv(static_cast<std::size_t>(rows * columns));
        const float* x = input.data_as<float>();
        const float* w = weights.data_as<float>();
        const float* bias_values = bias.defined() ? bias.data_as<float>() : nullptr;
        const int threads = context.num_threads();
        if (packed_gemm::available() && input_hidden > 0) {
            std::unique_ptr<packed_gemm::PackedMatrix> own;
            const packed_gemm::PackedMatrix& packed =
                constant_weights_ ? packed_weights_.get(w, input_hidden, columns, columns, 1, threads)
                                  : *(own = std::make_unique<packed_gemm::PackedMatrix>(w, input_hidden, columns,
                                                                                        columns, 1, threads));
            packed_gemm::multiply(x, rows, input_hidden, packed, bias_values, qkv.data(), threads);
        } else {
            onednn::parallel_for(rows, threads, input_hidden * columns, [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                    float* y = qkv.data() + r * columns;
                    for (int64_t j = 0; j < columns; ++j) y[j] = 0.0f;
                    for (int64_t i = 0; i < input_hidden; ++i) {
                        const float xi = x[r * input_hidden + i];
                        const float* w_row = w + i * columns;
                        for (int64_t j = 0; j < columns; ++j) y[j] += xi * w_row[j];
                    }
                    // The bias after the whole sum, as the GEMM path adds it.
                    for (int64_t j = 0; j < columns && bias_values != nullptr; ++j) y[j] += bias_values[j];
                }
            });
        }

        CoreInputs in;
        in.batch = batch;
        in.heads = heads;
        in.seq = seq;
        in.head_size = hidden / heads;
        in.v_head_size = v_hidden / heads;
        in.q = split_heads(qkv.data(), batch, seq, columns, 0, heads, in.head_size, nullptr);
        std::vector<float> k = split_heads(qkv.data(), batch, seq, columns, hidden, heads, in.head_size, nullptr);
        std::vector<float> v = split_heads(qkv.data(), batch, seq, columns, 2 * hidden, heads, in.v_head_size, nullptr);

        const Tensor* past_given = optional_input(context, 4);
        if (past_given != nullptr && optional_input(context, 5) != nullptr)
            node.fail("inputs past and attention_bias cannot be given together (ONNX Runtime refuses them too)");
        Tensor past;
        if (past_given != nullptr) {
            if (hidden != v_hidden)
                node.fail(fmt::format("input past needs K and V of the same hidden size, but they are {} and {}",
                                      hidden, v_hidden));
            past = float_input(node, *past_given, "past", dtype, 5);
            const Shape& s = past.shape();
            if (s[0] != 2 || s[1] != batch || s[2] != heads || s[4] != in.head_size)
                node.fail(
                    fmt::format("input past must have shape (2, batch_size, num_heads, past_sequence_length, "
                                "head_size) = (2, {}, {}, P, {}), but it has shape {}",
                                batch, heads, in.head_size, shape_to_string(s)));
            in.past = s[3];
        }
        in.total = in.past + seq;
        const float* past_k = past.defined() ? past.data_as<float>() : nullptr;
        const float* past_v = past.defined() ? past_k + past.numel() / 2 : nullptr;
        in.k = concat_rows(past_k, in.past, k.data(), seq, batch * heads, in.head_size);
        in.v = concat_rows(past_v, in.past, v.data(), seq, batch * heads, in.v_head_size);

        const Tensor* mask = optional_input(context, 3);
        const MaskKind kind = mask_kind(node, mask, batch, seq, in.total);
        const bool causal = attrs_.unidirectional && seq > 1;
        const std::vector<float> additive = additive_mask(kind == MaskKind::kNone ? nullptr : mask, kind, batch, seq,
                                                          in.total, in.past, causal, attrs_.mask_filter_value);
        const Tensor bias_qk = attention_bias(node, optional_input(context, 5), dtype, in);
        set_float_output(context, 0, attend(in, additive, bias_qk, attrs_.scale, context.num_threads()), dtype);
        if (has_output(context, 1)) {
            Tensor present = float_tensor({2, batch, heads, in.total, in.head_size});
            std::copy(in.k.begin(), in.k.end(), present.data_as<float>());
            std::copy(in.v.begin(), in.v.end(), present.data_as<float>() + in.k.size());
            set_float_output(context, 1, std::move(present), dtype);
        }
    }

private:
    // mask_index: (B) ends, (2B) ends and starts, (B, T), (B, S, T); (B or 1, 1) masks nothing.
    static MaskKind mask_kind(const NodeInfo& node, const Tensor* mask, int64_t batch, int64_t seq, int64_t total) {
        if (mask == nullptr) return MaskKind::kNone;
        if (mask->dtype() != DataType::kInt32)
            node.fail(fmt::format("input mask_index must be int32, but it is {}", dtype_name(mask->dtype())));
        const Shape& s = mask->shape();
        MaskKind kind = MaskKind::kNone;
        if (s.size() == 1 && s[0] == batch) kind = MaskKind::kEnd;
        if (s.size() == 1 && s[0] == 2 * batch) kind = MaskKind::kEndStart;
        if (s.size() == 2 && s[0] == batch && s[1] == total) return MaskKind::kRaw2D;
        if (s.size() == 2 && (s[0] == batch || s[0] == 1) && s[1] == 1) return MaskKind::kNone;  // masks nothing
        if (s.size() == 3 && s[0] == batch && s[1] == seq && s[2] == total) kind = MaskKind::kRaw3D;
        if (s.size() == 4)
            node.fail(
                "a 4-D mask_index (Megatron's (batch_size, 1, max_sequence_length, max_sequence_length)) is "
                "not supported: ONNX Runtime's CPU kernel refuses it too");
        if (kind == MaskKind::kNone)
            node.fail(
                fmt::format("input mask_index must have shape ({},), ({},), ({}, {}) or ({}, {}, {}) (batch_size, "
                            "2 * batch_size, (batch_size, total_sequence_length), (batch_size, "
                            "sequence_length, total_sequence_length)), but it has shape {}",
                            batch, 2 * batch, batch, total, batch, seq, total, shape_to_string(s)));
        return kind;
    }

    MaskedAttentionAttrs attrs_;
    std::vector<int64_t> qkv_hidden_sizes_;
    bool constant_weights_;                         ///< weights is an initializer
    packed_gemm::LazyPackedMatrix packed_weights_;  ///< its packed form, made by the first run
};

/// com.microsoft.MultiHeadAttention: query (B, S, D), key (B, L, D) and value (B, L, D_v) with an
/// optional bias (D + D + D_v), or key and value already projected as (B, N, L, H); inputs query, key,
/// value, bias?, key_padding_mask?, attention_bias?, past_key?, past_value?; outputs output (B, S,
/// D_v), present_key?, present_value? (B, N, P + L, H).
class MultiHeadAttentionKernel final : public Kernel {
public:
    explicit MultiHeadAttentionKernel(const NodeInfo& node) : attrs_(node) {
        const auto& outputs = node.proto().output();
        if (outputs.size() > 3 && !outputs.Get(3).empty()) node.fail("output 3 (qk) is not supported");
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const int64_t heads = attrs_.num_heads;
        const Tensor& query0 = context.required_input(0);
        const DataType dtype = float_type(node, query0, "query");
        if (query0.rank() == 5)
            node.fail(
                "packed QKV (query of shape (batch_size, sequence_length, num_heads, 3, head_size)) is not "
                "supported: give query, key and value");
        const Tensor* key0 = optional_input(context, 1);
        const Tensor* value0 = optional_input(context, 2);
        if (key0 == nullptr)
            node.fail("packed QKV (query without key and value) is not supported: give query, key and value");
        if (key0->rank() == 5)
            node.fail(
                "packed KV (key of shape (batch_size, kv_sequence_length, num_heads, 2, head_size)) is not "
                "supported: give key and value");
        if (value0 == nullptr) node.fail("input value is required when key is given");
        for (std::size_t index : {8, 9})
            if (optional_input(context, index) != nullptr)
                node.fail(fmt::format("input {} ({}) is not supported: past and present are separate tensors here",
                                      index, index == 8 ? "past_sequence_length" : "cache_indirection"));
        const Tensor query = float_input(node, query0, "query", dtype, 3);
        const int64_t batch = query.shape()[0], seq = query.shape()[1], hidden = query.shape()[2];
        if (hidden % heads != 0)
            node.fail(fmt::format("query's hidden size {} is not divisible by num_heads ({})", hidden, heads));
        CoreInputs in;
        in.batch = batch;
        in.heads = heads;
        in.seq = seq;
        in.head_size = hidden / heads;
        const bool projected = key0->rank() == 4;  // cross attention with the keys and values already per head
        const Tensor key = float_input(node, *key0, "key", dtype, projected ? 4 : 3);
        const Tensor value = float_input(node, *value0, "value", dtype, projected ? 4 : 3);
        int64_t kv_len = 0, v_hidden = 0;
        if (projected) {
            kv_len = key.shape()[2];
            require_shape(node, key, "key", {batch, heads, kv_len, in.head_size},
                          "(batch_size, num_heads, kv_sequence_length, head_size)");
            if (value.shape()[0] != batch || value.shape()[1] != heads || value.shape()[2] != kv_len)
                node.fail(fmt::format("input value must have shape ({}, {}, {}, v_head_size), but it has shape {}",
                                      batch, heads, kv_len, shape_to_string(value.shape())));
            v_hidden = heads * value.shape()[3];
        } else {
            kv_len = key.shape()[1];
            require_shape(node, key, "key", {batch, kv_len, hidden}, "(batch_size, kv_sequence_length, hidden_size)");
            v_hidden = value.shape()[2];
            if (value.shape()[0] != batch || value.shape()[1] != kv_len || v_hidden % heads != 0)
                node.fail(
                    fmt::format("input value must have shape ({}, {}, v_hidden_size) with v_hidden_size "
                                "divisible by num_heads ({}), but it has shape {}",
                                batch, kv_len, heads, shape_to_string(value.shape())));
        }
        in.v_head_size = v_hidden / heads;

        Tensor bias;
        if (const Tensor* given = optional_input(context, 3)) {
            if (projected) node.fail("input bias must be absent when key and value are 4-D (already projected)");
            bias = float_input(node, *given, "bias", dtype, 1);
            require_shape(node, bias, "bias", {2 * hidden + v_hidden}, "(hidden_size + hidden_size + v_hidden_size)");
        }
        const float* b = bias.defined() ? bias.data_as<float>() : nullptr;
        in.q = split_heads(query.data_as<float>(), batch, seq, hidden, 0, heads, in.head_size, b);
        std::vector<float> k, v;
        if (projected) {
            k.assign(key.data_as<float>(), key.data_as<float>() + key.numel());
            v.assign(value.data_as<float>(), value.data_as<float>() + value.numel());
        } else {
            k = split_heads(key.data_as<float>(), batch, kv_len, hidden, 0, heads, in.head_size,
                            b != nullptr ? b + hidden : nullptr);
            v = split_heads(value.data_as<float>(), batch, kv_len, v_hidden, 0, heads, in.v_head_size,
                            b != nullptr ? b + 2 * hidden : nullptr);
        }

        const Tensor* past_key0 = optional_input(context, 6);
        const Tensor* past_value0 = optional_input(context, 7);
        if ((past_key0 == nullptr) != (past_value0 == nullptr))
            node.fail("inputs past_key and past_value must be given together");
        Tensor past_key, past_value;
        if (past_key0 != nullptr) {
            if (projected) node.fail("inputs past_key and past_value must be absent when key and value are 4-D");
            past_key = float_input(node, *past_key0, "past_key", dtype, 4);
            in.past = past_key.shape()[2];
            require_shape(node, past_key, "past_key", {batch, heads, in.past, in.head_size},
                          "(batch_size, num_heads, past_sequence_length, head_size)");
            past_value = float_input(node, *past_value0, "past_value", dtype, 4);
            require_shape(node, past_value, "past_value", {batch, heads, in.past, in.v_head_size},
                          "(batch_size, num_heads, past_sequence_length, v_head_size)");
        }
        in.total = in.past + kv_len;
        in.k = concat_rows(past_key.defined() ? past_key.data_as<float>() : nullptr, in.past, k.data(), kv_len,
                           batch * heads, in.head_size);
        in.v = concat_rows(past_value.defined() ? past_value.data_as<float>() : nullptr, in.past, v.data(), kv_len,
                           batch * heads, in.v_head_size);

        const Tensor* mask = optional_input(context, 4);
        const MaskKind kind = mask_kind(node, mask, batch, seq, kv_len, in.total);
        const bool causal = attrs_.unidirectional && seq > 1;
        const std::vector<float> additive =
            additive_mask(mask, kind, batch, seq, in.total, in.past, causal, attrs_.mask_filter_value);
        const Tensor bias_qk = attention_bias(node, optional_input(context, 5), dtype, in);
        set_float_output(context, 0, attend(in, additive, bias_qk, attrs_.scale, context.num_threads()), dtype);
        if (has_output(context, 1))
            set_float_output(context, 1, tensor_of(in.k, {batch, heads, in.total, in.head_size}), dtype);
        if (has_output(context, 2))
            set_float_output(context, 2, tensor_of(in.v, {batch, heads, in.total, in.v_head_size}), dtype);
    }

private:
    // key_padding_mask: (B) key lengths, (B, T) (or (B, L) without a past), (B, S, T).
    static MaskKind mask_kind(const NodeInfo& node, const Tensor* mask, int64_t batch, int64_t seq, int64_t kv_len,
                              int64_t total) {
        if (mask == nullptr) return MaskKind::kNone;
        if (mask->dtype() != DataType::kInt32)
            node.fail(fmt::format("input key_padding_mask must be int32, but it is {}", dtype_name(mask->dtype())));
        const Shape& s = mask->shape();
        if (s.size() == 1 && s[0] == batch) return MaskKind::kEnd;
        if (s.size() == 2 && s[0] == batch && s[1] == total) return MaskKind::kRaw2D;
        if (s.size() == 3 && s[0] == batch && s[1] == seq && s[2] == total) return MaskKind::kRaw3D;
        if (s.size() == 1 && s[0] == 3 * batch + 2)
            node.fail(
                "a key_padding_mask of shape (3 * batch_size + 2) is not supported: ONNX Runtime's CPU kernel "
                "takes no such mask either");
        if (s.size() == 2 && s[0] == batch && s[1] == kv_len)
            node.fail(
                fmt::format("a key_padding_mask of shape (batch_size, kv_sequence_length) = {} is not supported "
                            "with a past: give (batch_size, total_sequence_length) = ({}, {})",
                            shape_to_string(s), batch, total));
        node.fail(
            fmt::format("input key_padding_mask must have shape ({},), ({}, {}) or ({}, {}, {}) (batch_size, "
                        "(batch_size, total_sequence_length), (batch_size, sequence_length, "
                        "total_sequence_length)), but it has shape {}",
                        batch, batch, total, batch, seq, total, shape_to_string(s)));
    }

    MaskedAttentionAttrs attrs_;
};

// ---- GroupQueryAttention: ONNX Runtime's GQAAttentionBase -------------------------------------------------

/// Rotates the first `rotary_dim` values of each head row of x (B, heads, S, H) in place by the angle
/// of its position, positions[b * S + s], read from cos/sin caches (max_positions, rotary_dim / 2):
/// halves (x[i], x[i + rotary_dim / 2]) or, interleaved, pairs (x[2i], x[2i + 1]).
void rotate(std::vector<float>& x, int64_t batch, int64_t heads, int64_t seq, int64_t head_size,
            const std::vector<int64_t>& positions, const float* cos, const float* sin, int64_t half, bool interleaved) {
    std::vector<float> row(static_cast<std::size_t>(2 * half));
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t n = 0; n < heads; ++n)
            for (int64_t s = 0; s < seq; ++s) {
                float* values = x.data() + ((b * heads + n) * seq + s) * head_size;
                const int64_t position = positions[static_cast<std::size_t>(b * seq + s)];
                const float* c = cos + position * half;
                const float* sn = sin + position * half;
                std::copy_n(values, 2 * half, row.begin());
                for (int64_t i = 0; i < half; ++i) {
                    const int64_t first = interleaved ? 2 * i : i, second = interleaved ? 2 * i + 1 : i + half;
                    const float a = row[static_cast<std::size_t>(first)], z = row[static_cast<std::size_t>(second)];
                    values[first] = a * c[i] - z * sn[i];
                    values[second] = z * c[i] + a * sn[i];
                }
            }
}

/// Rounds float32 values to `dtype` (float16 keeps a float16 tensor's rotated values as ONNX Runtime
/// stores them).
void round_to(std::vector<float>& values, DataType dtype) {
    if (dtype == DataType::kFloat32 || values.empty()) return;
    const Tensor rounded =
        tensor_of(values, {static_cast<int64_t>(values.size())}).cast(dtype).cast(DataType::kFloat32);
    std::copy_n(rounded.data_as<float>(), values.size(), values.begin());
}

/// com.microsoft.GroupQueryAttention: causal self attention of num_heads query heads over kv_num_heads
/// key/value heads with a KV cache; inputs query (B, S, N * H) (or packed Q, K, V), key?, value?
/// (B, S, kvN * H), past_key?, past_value? (B, kvN, P, H), seqlens_k (B) (each sequence's total
/// length - 1), total_sequence_length (scalar), cos_cache?, sin_cache?, position_ids?, attention_bias?,
/// head_sink?; outputs output (B, S, N * H), present_key?, present_value? (B, kvN, max(T, P), H).
class GroupQueryAttentionKernel final : public Kernel {
public:
    explicit GroupQueryAttentionKernel(const NodeInfo& node)
        : heads_(required_positive_attr(node, "num_heads")),
          kv_heads_(required_positive_attr(node, "kv_num_heads")),
          scale_(node.attr_float("scale", 0.0f)),
          softcap_(node.attr_float("softcap", 0.0f)),
          local_window_(node.attr_int("local_window_size", -1)),
          rotary_(flag_attr(node, "do_rotary")),
          interleaved_(flag_attr(node, "rotary_interleaved")),
          smooth_softmax_(flag_attr(node, "smooth_softmax")) {
        if (heads_ % kv_heads_ != 0)
            node.fail(
                fmt::format("attribute num_heads ({}) must be a multiple of kv_num_heads ({})", heads_, kv_heads_));
        if (softcap_ < 0.0f) node.fail(fmt::format("attribute softcap must not be negative, but it is {}", softcap_));
        if (!flag_attr(node, "causal", 1)) node.fail("causal = 0 (bidirectional attention) is not supported");
        if (flag_attr(node, "sliding_window_cache"))
            node.fail("sliding_window_cache = 1 (a window-sized KV cache) is not supported");
        if (node.attr_int("qk_output", 0) != 0) node.fail("attribute qk_output (output 3) is not supported");
        for (const char* name : {"k_quant_type", "v_quant_type"})
            if (node.attr_string(name, "NONE") != "NONE")
                node.fail(fmt::format("attribute {} = {} is not supported: only an unquantized KV cache is", name,
                                      node.attr_string(name, "NONE")));
        const auto& outputs = node.proto().output();
        if (outputs.size() > 3 && !outputs.Get(3).empty()) node.fail("output 3 (output_qk) is not supported");
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        for (std::size_t index : {9, 12, 13, 14, 15})
            if (optional_input(context, index) != nullptr)
                node.fail(fmt::format("input {} ({}) is not supported", index, unsupported_input_name(index)));
        const Tensor& query0 = context.required_input(0);
        const DataType dtype = float_type(node, query0, "query");
        const Tensor query = float_input(node, query0, "query", dtype, 3);
        const int64_t batch = query.shape()[0], seq = query.shape()[1];
        const Tensor* key0 = optional_input(context, 1);
        const Tensor* value0 = optional_input(context, 2);
        if ((key0 == nullptr) != (value0 == nullptr))
            node.fail("inputs key and value must be given together (or both left out for packed QKV)");
        const bool packed = key0 == nullptr;
        const int64_t q_width = query.shape()[2], row_heads = packed ? heads_ + 2 * kv_heads_ : heads_;
        if (q_width % row_heads != 0)
            node.fail(fmt::format("query's hidden size {} is not divisible by {} heads", q_width, row_heads));
        const int64_t head_size = q_width / row_heads, kv_hidden = kv_heads_ * head_size;
        Tensor key, value;
        if (!packed) {
            key = float_input(node, *key0, "key", dtype, 3);
            value = float_input(node, *value0, "value", dtype, 3);
            require_shape(node, key, "key", {batch, seq, kv_hidden}, "(batch_size, sequence_length, kv_hidden_size)");
            require_shape(node, value, "value", {batch, seq, kv_hidden},
                          "(batch_size, sequence_length, kv_hidden_size)");
        }

        const Tensor* past_key0 = optional_input(context, 3);
        const Tensor* past_value0 = optional_input(context, 4);
        if ((past_key0 == nullptr) != (past_value0 == nullptr))
            node.fail("inputs past_key and past_value must be given together");
        Tensor past_key, past_value;
        int64_t past_rows = 0;
        if (past_key0 != nullptr) {
            past_key = float_input(node, *past_key0, "past_key", dtype, 4);
            past_value = float_input(node, *past_value0, "past_value", dtype, 4);
            past_rows = past_key.shape()[2];
            for (const Tensor* past : {&past_key, &past_value})
                require_shape(node, *past, past == &past_key ? "past_key" : "past_value",
                              {batch, kv_heads_, past_rows, head_size},
                              "(batch_size, kv_num_heads, past_sequence_length, head_size)");
        }
        const Tensor& seqlens = context.required_input(5);
        if (seqlens.dtype() != DataType::kInt32 || seqlens.shape() != Shape{batch})
            node.fail(
                fmt::format("input seqlens_k must be int32 of shape ({},), but it is {}", batch, describe(seqlens)));
        const Tensor& total_given = context.required_input(6);
        if (total_given.dtype() != DataType::kInt32 || total_given.numel() != 1)
            node.fail(
                fmt::format("input total_sequence_length must be one int32, but it is {}", describe(total_given)));
        const int64_t total = total_given.data_as<int32_t>()[0];
        if (total < seq)
            node.fail(fmt::format("total_sequence_length ({}) must not be less than sequence_length ({})", total, seq));
        const int64_t present_rows = std::max(total, past_rows);
        // As ONNX Runtime tells them apart: the first prompt (S = total_sequence_length, no past read),
        // a token (S = 1) or a later chunk of a prompt (batch 1) after the cached past.
        const bool first_prompt = seq == total;
        if (!first_prompt && seq > 1 && batch != 1)
            node.fail(
                fmt::format("batch_size must be 1 when sequence_length ({}) > 1 differs from "
                            "total_sequence_length ({})",
                            seq, total));
        std::vector<int64_t> lengths, past_lens, positions;
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t length = int64_t{seqlens.data_as<int32_t>()[b]} + 1;
            const int64_t low = first_prompt ? 1 : seq, high = first_prompt ? seq : std::min(total, past_rows + seq);
            if (length < low || length > high)
                node.fail(
                    fmt::format("seqlens_k[{}] = {} is out of range: with sequence_length {}, "
                                "total_sequence_length {} and a past of {}, it must be {} to {}",
                                b, length - 1, seq, total, past_rows, low - 1, high - 1));
            lengths.push_back(length);
            past_lens.push_back(first_prompt ? 0 : length - seq);
            for (int64_t s = 0; s < seq; ++s) positions.push_back(first_prompt ? s : length - seq + s);
        }

        const float* q_src = query.data_as<float>();
        std::vector<float> q = split_heads(q_src, batch, seq, q_width, 0, heads_, head_size, nullptr);
        std::vector<float> k =
            packed ? split_heads(q_src, batch, seq, q_width, heads_ * head_size, kv_heads_, head_size, nullptr)
                   : split_heads(key.data_as<float>(), batch, seq, kv_hidden, 0, kv_heads_, head_size, nullptr);
        std::vector<float> v =
            packed
                ? split_heads(q_src, batch, seq, q_width, heads_ * head_size + kv_hidden, kv_heads_, head_size, nullptr)
                : split_heads(value.data_as<float>(), batch, seq, kv_hidden, 0, kv_heads_, head_size, nullptr);
        apply_rotary(context, dtype, head_size, batch, seq, positions, q, k);

        // The present cache: each sequence's past rows, then the new ones, zero after them.
        const auto present_of = [&](const Tensor& past, const std::vector<float>& now) {
            std::vector<float> present(static_cast<std::size_t>(batch * kv_heads_ * present_rows * head_size), 0.0f);
            for (int64_t b = 0; b < batch; ++b)
                for (int64_t n = 0; n < kv_heads_; ++n) {
                    const int64_t pair = b * kv_heads_ + n, past_len = past_lens[static_cast<std::size_t>(b)];
                    float* dst = present.data() + pair * present_rows * head_size;
                    if (past_len > 0)
                        std::copy_n(past.data_as<float>() + pair * past_rows * head_size, past_len * head_size, dst);
                    std::copy_n(now.data() + pair * seq * head_size, seq * head_size, dst + past_len * head_size);
                }
            return present;
        };
        const std::vector<float> present_k = present_of(past_key, k), present_v = present_of(past_value, v);

        attention::Problem p;
        p.batch = batch;
        p.heads = heads_;
        p.kv_heads = kv_heads_;
        p.q_len = seq;
        p.kv_len = present_rows;
        p.head_size = p.v_head_size = head_size;
        p.q = q.data();
        p.k = present_k.data();
        p.v = present_v.data();
        p.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(head_size));
        p.softcap = softcap_;
        const int64_t window = local_window_;
        p.window = [&past_lens, &lengths, window](int64_t b, int64_t s) {
            const auto i = static_cast<std::size_t>(b);
            const int64_t causal_end = past_lens[i] + s + 1;
            return attention::Window{window > 0 && causal_end > window ? causal_end - window : 0,
                                     std::min(causal_end, lengths[i])};
        };
        Tensor bias;
        if (const Tensor* given = optional_input(context, 10)) {
            bias = float_input(node, *given, "attention_bias", dtype, 4);
            const Shape& s = bias.shape();
            if ((s[0] != 1 && s[0] != batch) || (s[1] != 1 && s[1] != heads_) || s[2] != seq || s[3] != total)
                node.fail(
                    fmt::format("input attention_bias must have shape (batch_size or 1, num_heads or 1, "
                                "sequence_length, total_sequence_length) = ({} or 1, {} or 1, {}, {}), but it "
                                "has shape {}",
                                batch, heads_, seq, total, shape_to_string(s)));
            // Rows of total columns; the score rows have present_rows >= total columns, of which the
            // window reads at most total.
            Tensor widened = float_tensor({s[0], s[1], seq, present_rows});
            std::fill_n(widened.data_as<float>(), widened.numel(), 0.0f);
            for (int64_t r = 0; r < s[0] * s[1] * seq; ++r)
                std::copy_n(bias.data_as<float>() + r * total, total, widened.data_as<float>() + r * present_rows);
            bias = widened;
            p.bias = bias.data_as<float>();
            p.bias_batch_stride = s[0] == 1 ? 0 : s[1] * seq * present_rows;
            p.bias_head_stride = s[1] == 1 ? 0 : seq * present_rows;
        }
        Tensor sinks;
        if (const Tensor* given = optional_input(context, 11)) {
            sinks = float_input(node, *given, "head_sink", dtype, 1);
            require_shape(node, sinks, "head_sink", {heads_}, "(num_heads)");
            p.sinks = sinks.data_as<float>();
        }
        p.use_sink = smooth_softmax_ || sinks.defined();
        Tensor out = float_tensor({batch, seq, heads_ * head_size});
        attention::compute(p, out.data_as<float>(), context.num_threads());
        set_float_output(context, 0, std::move(out), dtype);
        if (has_output(context, 1))
            set_float_output(context, 1, tensor_of(present_k, {batch, kv_heads_, present_rows, head_size}), dtype);
        if (has_output(context, 2))
            set_float_output(context, 2, tensor_of(present_v, {batch, kv_heads_, present_rows, head_size}), dtype);
    }

private:
    static const char* unsupported_input_name(std::size_t index) {
        switch (index) {
            case 9:
                return "position_ids";
            case 12:
                return "k_scale";
            case 13:
                return "v_scale";
            case 14:
                return "q_norm_weight";
            default:
                return "k_norm_weight";
        }
    }

    // Rotary embedding of Q and K (do_rotary) at each row's position, from cos_cache and sin_cache;
    // a float16 operator keeps the rotated values in float16, as ONNX Runtime does.
    void apply_rotary(const KernelContext& context, DataType dtype, int64_t head_size, int64_t batch, int64_t seq,
                      const std::vector<int64_t>& positions, std::vector<float>& q, std::vector<float>& k) const {
        const NodeInfo& node = context.node();
        const Tensor* cos0 = optional_input(context, 7);
        const Tensor* sin0 = optional_input(context, 8);
        if ((cos0 == nullptr) != (sin0 == nullptr)) node.fail("inputs cos_cache and sin_cache must be given together");
        if (!rotary_ || positions.empty()) return;
        if (cos0 == nullptr) node.fail("do_rotary = 1 needs the inputs cos_cache and sin_cache");
        const Tensor cos = float_input(node, *cos0, "cos_cache", dtype, 2);
        const Tensor sin = float_input(node, *sin0, "sin_cache", dtype, 2);
        const int64_t half = cos.shape()[1];
        const int64_t needed = *std::max_element(positions.begin(), positions.end()) + 1;
        if (sin.shape() != cos.shape() || 2 * half > head_size || half == 0 || cos.shape()[0] < needed)
            node.fail(
                fmt::format("inputs cos_cache and sin_cache must both have shape (at least {}, at most {}), "
                            "but they have shapes {} and {}",
                            needed, head_size / 2, shape_to_string(cos.shape()), shape_to_string(sin.shape())));
        rotate(q, batch, heads_, seq, head_size, positions, cos.data_as<float>(), sin.data_as<float>(), half,
               interleaved_);
        rotate(k, batch, kv_heads_, seq, head_size, positions, cos.data_as<float>(), sin.data_as<float>(), half,
               interleaved_);
        round_to(q, dtype);
        round_to(k, dtype);
    }

    int64_t heads_, kv_heads_;
    float scale_, softcap_;
    int64_t local_window_;
    bool rotary_, interleaved_, smooth_softmax_;
};

}  // namespace

void register_attention_ops(OpRegistry& registry) {
    registry.add(kMicrosoftDomain, "Attention", 1, kMaxOpset, make_factory<AttentionKernel>());
    registry.add(kMicrosoftDomain, "MultiHeadAttention", 1, kMaxOpset, make_factory<MultiHeadAttentionKernel>());
    registry.add(kMicrosoftDomain, "GroupQueryAttention", 1, kMaxOpset, make_factory<GroupQueryAttentionKernel>());
}

}  // namespace polygraphy::ref
