#include "encoder_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "export_graph.h"
#include "model_builder.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::testing {
namespace {

constexpr float kLayerNormEpsilon = 1e-12f;
constexpr int64_t kTokenTypes = 2;

// Per layer: self-attention 72 (3 projections of 17, scores 7, merge 14), its output 4, the
// feed-forward 14 (GELU 8); outside: embeddings 24, extended mask 9. A decomposed LayerNorm adds 10.
constexpr int64_t kNodesPerLayer = 90;
constexpr int64_t kNodesOutsideLayers = 33;
constexpr int64_t kDecomposedLayerNormExtraNodes = 10;
constexpr int64_t kFusedNodesPerLayer = 7;
constexpr int64_t kFusedNodesOutsideLayers = 19;

class EncoderBuilder {
public:
    EncoderBuilder(const EncoderOptions& options, WeightWriter& weights)
        : options_(options),
          weights_(weights),
          builder_(17, "main_graph"),
          graph_(model().mutable_graph()->mutable_node()) {}

    onnx::ModelProto build() {
        model().set_producer_name("polygraphy make_encoder_model");
        const DynShape batch_seq{Dim::named("batch"), Dim::named("seq")};
        builder_.input("input_ids", DataType::kInt64, batch_seq);
        builder_.input("attention_mask", DataType::kInt64, batch_seq);

        std::string hidden;
        if (options_.fused) {
            builder_.opset_import("com.microsoft", 1);
            hidden = emit_fused_embeddings();
            for (int64_t layer = 0; layer < options_.layers; ++layer) hidden = emit_fused_layer(layer, hidden);
        } else {
            hidden = emit_embeddings();
            emit_extended_mask();
            for (int64_t layer = 0; layer < options_.layers; ++layer) hidden = emit_layer(layer, hidden);
        }
        graph_.rename_last_output(hidden, "last_hidden_state");
        builder_.output("last_hidden_state", DataType::kFloat32,
                        DynShape{Dim::named("batch"), Dim::named("seq"), Dim::fixed(options_.hidden)});
        return std::move(model());
    }

private:
    onnx::ModelProto& model() { return builder_.proto(); }

    void add_weight(const std::string& name, DataType dtype, const Shape& shape, const ElementFill& fill) {
        *model().mutable_graph()->add_initializer() = weights_.write(name, dtype, shape, fill);
    }

    std::string uniform_weight(const std::string& name, const Shape& shape, float lo, float hi) {
        add_weight(name, DataType::kFloat32, shape,
                   uniform_fill(tensor_seed(static_cast<uint64_t>(options_.seed), name), lo, hi));
        return name;
    }

    // A torch Linear exported as MatMul with the weight stored [in, out] and Add(bias); both drawn uniform
    // in +-1/sqrt(in), torch's default initialisation.
    std::string linear(const std::string& scope, const std::string& prefix, const std::string& x, int64_t in,
                       int64_t out) {
        const float bound = 1.0f / std::sqrt(float(in));
        const std::string weight = uniform_weight(prefix + ".weight", {in, out}, -bound, bound);
        const std::string bias = uniform_weight(prefix + ".bias", {out}, -bound, bound);
        return graph_.op(scope, "Add", {bias, graph_.op(scope, "MatMul", {x, weight})});
    }

    std::string layer_norm(const std::string& scope, const std::string& prefix, const std::string& x) {
        const std::string weight = uniform_weight(prefix + ".weight", {options_.hidden}, 0.8f, 1.2f);
        const std::string bias = uniform_weight(prefix + ".bias", {options_.hidden}, -0.1f, 0.1f);
        if (!options_.decomposed_layernorm) {
            auto& norm = graph_.node(scope, "LayerNormalization", {x, weight, bias});
            set_attr(norm, "axis", int64_t{-1});
            set_attr(norm, "epsilon", kLayerNormEpsilon);
            return norm.output(0);
        }
        auto mean_of = [&](const std::string& input) {
            auto& mean = graph_.node(scope, "ReduceMean", {input});
            set_attr(mean, "axes", std::vector<int64_t>{-1});
            set_attr(mean, "keepdims", int64_t{1});
            return mean.output(0);
        };
        const std::string centered = graph_.op(scope, "Sub", {x, mean_of(x)});
        const std::string variance = mean_of(graph_.op(scope, "Pow", {centered, graph_.scalar(scope, 2.0f)}));
        const std::string root =
            graph_.op(scope, "Sqrt", {graph_.op(scope, "Add", {variance, graph_.scalar(scope, kLayerNormEpsilon)})});
        const std::string normed = graph_.op(scope, "Div", {centered, root});
        return graph_.op(scope, "Add", {graph_.op(scope, "Mul", {normed, weight}), bias});
    }

    // word + token-type + position embeddings; the position and token-type ids are buffers [1, max_positions]
    // sliced to the sequence (token types expanded to [batch, seq]), as BertEmbeddings does.
    std::string emit_embeddings() {
        const std::string scope = "/embeddings";
        const int64_t h = options_.hidden, n = options_.max_positions;
        add_weight("embeddings.position_ids", DataType::kInt64, {1, n}, [](void* out, int64_t first, int64_t count) {
            for (int64_t i = 0; i < count; ++i) static_cast<int64_t*>(out)[i] = first + i;
        });
        add_weight("embeddings.token_type_ids", DataType::kInt64, {1, n}, [](void* out, int64_t, int64_t count) {
            std::fill_n(static_cast<int64_t*>(out), count, int64_t{0});
        });
        const std::string words = uniform_weight("embeddings.word_embeddings.weight", {options_.vocab, h}, -1.0f, 1.0f);
        const std::string positions = uniform_weight("embeddings.position_embeddings.weight", {n, h}, -0.5f, 0.5f);
        const std::string token_types =
            uniform_weight("embeddings.token_type_embeddings.weight", {kTokenTypes, h}, -0.5f, 0.5f);

        const std::string seq = graph_.dim(scope, "input_ids", 1);
        const std::string seq_1d = graph_.unsqueeze(scope, seq, {0});
        const std::string position_ids = graph_.slice(scope, "embeddings.position_ids", int64_t{0}, seq_1d, 1);
        const std::string buffered_types = graph_.slice(scope, "embeddings.token_type_ids", int64_t{0}, seq_1d, 1);
        const std::string batch_1d = graph_.unsqueeze(scope, graph_.dim(scope, "input_ids", 0), {0});
        auto& expand_shape = graph_.node(scope, "Concat", {batch_1d, seq_1d});
        set_attr(expand_shape, "axis", int64_t{0});
        const std::string token_type_ids = graph_.op(scope, "Expand", {buffered_types, expand_shape.output(0)});

        const std::string word_scope = scope + "/word_embeddings";
        std::string sum =
            graph_.op(scope, "Add",
                      {graph_.op(word_scope, "Gather", {words, "input_ids"}),
                       graph_.op(scope + "/token_type_embeddings", "Gather", {token_types, token_type_ids})});
        sum = graph_.op(scope, "Add",
                        {sum, graph_.op(scope + "/position_embeddings", "Gather", {positions, position_ids})});
        return layer_norm(scope + "/LayerNorm", "embeddings.LayerNorm", sum);
    }

    // (1 - attention_mask[:, None, None, :]) * float32 lowest, added to every layer's scores.
    void emit_extended_mask() {
        const std::string scope = "";
        const std::string mask = graph_.unsqueeze(scope, graph_.unsqueeze(scope, "attention_mask", {1}), {2});
        auto& cast = graph_.node(scope, "Cast", {mask});
        set_attr(cast, "to", int64_t{onnx::TensorProto::FLOAT});
        const std::string inverted = graph_.op(scope, "Sub", {graph_.scalar(scope, 1.0f), cast.output(0)});
        extended_mask_ =
            graph_.op(scope, "Mul", {inverted, graph_.scalar(scope, std::numeric_limits<float>::lowest())});
    }

    // x.view(x.size()[:-1] + (heads, head_size)).permute(0, 2, 1, 3)
    std::string transpose_for_scores(const std::string& scope, const std::string& x) {
        const std::string batch = graph_.dim(scope, x, 0);
        const std::string seq = graph_.dim(scope, x, 1);
        const std::string heads = graph_.reshape(scope, x, {batch, seq, options_.heads, options_.head_size()});
        return graph_.transpose(scope, heads, {0, 2, 1, 3});
    }

    std::string emit_self_attention(const std::string& scope, const std::string& prefix, const std::string& x) {
        const int64_t h = options_.hidden;
        const std::string query = transpose_for_scores(scope, linear(scope + "/query", prefix + "query", x, h, h));
        const std::string key = transpose_for_scores(scope, linear(scope + "/key", prefix + "key", x, h, h));
        const std::string value = transpose_for_scores(scope, linear(scope + "/value", prefix + "value", x, h, h));

        const std::string scores = graph_.op(scope, "MatMul", {query, graph_.transpose(scope, key, {0, 1, 3, 2})});
        const float scale = std::sqrt(float(options_.head_size()));
        const std::string scaled = graph_.op(scope, "Div", {scores, graph_.scalar(scope, scale)});
        auto& softmax = graph_.node(scope, "Softmax", {graph_.op(scope, "Add", {scaled, extended_mask_})});
        set_attr(softmax, "axis", int64_t{-1});
        const std::string context = graph_.op(scope, "MatMul", {softmax.output(0), value});

        const std::string permuted = graph_.transpose(scope, context, {0, 2, 1, 3});
        const std::string batch = graph_.dim(scope, permuted, 0);
        const std::string seq = graph_.dim(scope, permuted, 1);
        return graph_.reshape(scope, permuted, {batch, seq, h});
    }

    // x * 0.5 * (1 + erf(x / sqrt(2))), as the exporter writes it.
    std::string gelu(const std::string& scope, const std::string& x) {
        const std::string scaled = graph_.op(scope, "Div", {x, graph_.scalar(scope, float(M_SQRT2))});
        const std::string shifted =
            graph_.op(scope, "Add", {graph_.op(scope, "Erf", {scaled}), graph_.scalar(scope, 1.0f)});
        return graph_.op(scope, "Mul", {graph_.op(scope, "Mul", {x, shifted}), graph_.scalar(scope, 0.5f)});
    }

    // dense(x) + residual, then LayerNorm (BertSelfOutput and BertOutput).
    std::string dense_residual_norm(const std::string& scope, const std::string& prefix, const std::string& x,
                                    int64_t in, const std::string& residual) {
        const std::string dense = linear(scope + "/dense", prefix + "dense", x, in, options_.hidden);
        return layer_norm(scope + "/LayerNorm", prefix + "LayerNorm", graph_.op(scope, "Add", {dense, residual}));
    }

    std::string emit_layer(int64_t layer, const std::string& input) {
        const std::string scope = fmt::format("/encoder/layer.{}", layer);
        const std::string prefix = fmt::format("encoder.layer.{}.", layer);
        const std::string context = emit_self_attention(scope + "/attention/self", prefix + "attention.self.", input);
        const std::string attention = dense_residual_norm(scope + "/attention/output", prefix + "attention.output.",
                                                          context, options_.hidden, input);
        const std::string inner = linear(scope + "/intermediate/dense", prefix + "intermediate.dense", attention,
                                         options_.hidden, options_.intermediate);
        const std::string activated = gelu(scope + "/intermediate/intermediate_act_fn", inner);
        return dense_residual_norm(scope + "/output", prefix + "output.", activated, options_.intermediate, attention);
    }

    // ---- the fused graph (onnxruntime.transformers) ----

    /// The values of the weight uniform_weight() would write for `name` (to concatenate several).
    std::vector<float> uniform_values(const std::string& name, int64_t count, float lo, float hi) const {
        std::vector<float> values(static_cast<std::size_t>(count));
        uniform_fill(tensor_seed(static_cast<uint64_t>(options_.seed), name), lo, hi)(values.data(), 0, count);
        return values;
    }

    std::string cast_to_int32(const std::string& scope, const std::string& x) {
        auto& cast = graph_.node(scope, "Cast", {x});
        set_attr(cast, "to", int64_t{onnx::TensorProto::INT32});
        return cast.output(0);
    }

    // The buffers and tables of emit_embeddings(), looked up and normalized by one EmbedLayerNormalization
    // (positions 0..seq-1, its default); the mask is cast once for every Attention.
    std::string emit_fused_embeddings() {
        const std::string scope = "/embeddings";
        const int64_t h = options_.hidden, n = options_.max_positions;
        add_weight("embeddings.position_ids", DataType::kInt64, {1, n}, [](void* out, int64_t first, int64_t count) {
            for (int64_t i = 0; i < count; ++i) static_cast<int64_t*>(out)[i] = first + i;
        });
        add_weight("embeddings.token_type_ids", DataType::kInt64, {1, n}, [](void* out, int64_t, int64_t count) {
            std::fill_n(static_cast<int64_t*>(out), count, int64_t{0});
        });
        const std::string words = uniform_weight("embeddings.word_embeddings.weight", {options_.vocab, h}, -1.0f, 1.0f);
        const std::string positions = uniform_weight("embeddings.position_embeddings.weight", {n, h}, -0.5f, 0.5f);
        const std::string token_types =
            uniform_weight("embeddings.token_type_embeddings.weight", {kTokenTypes, h}, -0.5f, 0.5f);
        const std::string gamma = uniform_weight("embeddings.LayerNorm.weight", {h}, 0.8f, 1.2f);
        const std::string beta = uniform_weight("embeddings.LayerNorm.bias", {h}, -0.1f, 0.1f);

        const std::string seq_1d = graph_.unsqueeze(scope, graph_.dim(scope, "input_ids", 1), {0});
        const std::string buffered_types = graph_.slice(scope, "embeddings.token_type_ids", int64_t{0}, seq_1d, 1);
        const std::string batch_1d = graph_.unsqueeze(scope, graph_.dim(scope, "input_ids", 0), {0});
        auto& expand_shape = graph_.node(scope, "Concat", {batch_1d, seq_1d});
        set_attr(expand_shape, "axis", int64_t{0});
        const std::string token_type_ids = graph_.op(scope, "Expand", {buffered_types, expand_shape.output(0)});
        mask_index_ = cast_to_int32(scope, "attention_mask");
        auto& embed = graph_.node(scope, "EmbedLayerNormalization",
                                  {cast_to_int32(scope, "input_ids"), cast_to_int32(scope, token_type_ids), words,
                                   positions, token_types, gamma, beta},
                                  2, "com.microsoft");  // output 1, mask_index, unused: ONNX Runtime wants it
        set_attr(embed, "epsilon", kLayerNormEpsilon);
        return embed.output(0);
    }

    // The weight and bias of a Linear layer (linear()'s draws), for a MatMul with its bias folded downstream.
    std::pair<std::string, std::string> linear_weights(const std::string& prefix, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(float(in));
        return {uniform_weight(prefix + ".weight", {in, out}, -bound, bound),
                uniform_weight(prefix + ".bias", {out}, -bound, bound)};
    }

    // LayerNorm(x @ W + bias + residual) as one SkipLayerNormalization after the MatMul.
    std::string skip_layer_norm(const std::string& scope, const std::string& prefix, const std::string& x, int64_t in,
                                const std::string& residual) {
        const auto [weight, bias] = linear_weights(prefix + "dense", in, options_.hidden);
        const std::string product = graph_.op(scope + "/dense", "MatMul", {x, weight});
        const std::string gamma = uniform_weight(prefix + "LayerNorm.weight", {options_.hidden}, 0.8f, 1.2f);
        const std::string beta = uniform_weight(prefix + "LayerNorm.bias", {options_.hidden}, -0.1f, 0.1f);
        auto& norm = graph_.node(scope + "/LayerNorm", "SkipLayerNormalization", {product, residual, gamma, beta, bias},
                                 1, "com.microsoft");
        set_attr(norm, "epsilon", kLayerNormEpsilon);
        return norm.output(0);
    }

    std::string emit_fused_layer(int64_t layer, const std::string& input) {
        const std::string scope = fmt::format("/encoder/layer.{}", layer);
        const std::string prefix = fmt::format("encoder.layer.{}.", layer);
        const int64_t h = options_.hidden;
        // Q, K and V side by side: [h, 3h] and [3h], each part drawn as linear() draws it.
        const float bound = 1.0f / std::sqrt(float(h));
        std::vector<std::vector<float>> weights, biases;
        for (const char* part : {"query", "key", "value"}) {
            const std::string name = prefix + "attention.self." + part;
            weights.push_back(uniform_values(name + ".weight", h * h, -bound, bound));
            biases.push_back(uniform_values(name + ".bias", h, -bound, bound));
        }
        Tensor qkv_weight(DataType::kFloat32, {h, 3 * h}), qkv_bias(DataType::kFloat32, {3 * h});
        for (int64_t row = 0; row < h; ++row)
            for (int64_t part = 0; part < 3; ++part)
                std::copy_n(weights[static_cast<std::size_t>(part)].data() + row * h, h,
                            qkv_weight.data_as<float>() + row * 3 * h + part * h);
        for (int64_t part = 0; part < 3; ++part)
            std::copy_n(biases[static_cast<std::size_t>(part)].data(), h, qkv_bias.data_as<float>() + part * h);
        const std::string qkv = prefix + "attention.self.qkv";
        *model().mutable_graph()->add_initializer() = weights_.write(qkv + ".weight", qkv_weight);
        *model().mutable_graph()->add_initializer() = weights_.write(qkv + ".bias", qkv_bias);
        auto& attention = graph_.node(scope + "/attention/self", "Attention",
                                      {input, qkv + ".weight", qkv + ".bias", mask_index_}, 1, "com.microsoft");
        set_attr(attention, "num_heads", options_.heads);
        const std::string attended =
            skip_layer_norm(scope + "/attention/output", prefix + "attention.output.", attention.output(0), h, input);
        const auto [inner_weight, inner_bias] = linear_weights(prefix + "intermediate.dense", h, options_.intermediate);
        const std::string inner = graph_.op(scope + "/intermediate/dense", "MatMul", {attended, inner_weight});
        const std::string activated =
            graph_
                .node(scope + "/intermediate/intermediate_act_fn", "BiasGelu", {inner, inner_bias}, 1, "com.microsoft")
                .output(0);
        return skip_layer_norm(scope + "/output", prefix + "output.", activated, options_.intermediate, attended);
    }

    const EncoderOptions& options_;
    WeightWriter& weights_;
    ModelBuilder builder_;
    ExportGraph graph_;
    std::string extended_mask_;
    std::string mask_index_;  // the fused graph's int32 attention mask
};

}  // namespace

uint64_t encoder_weight_bytes(const EncoderOptions& o) {
    const int64_t h = o.hidden, i = o.intermediate;
    const int64_t floats =
        o.layers * (4 * h * h + 2 * h * i + 9 * h + i) + (o.vocab + o.max_positions + kTokenTypes) * h + 2 * h;
    return static_cast<uint64_t>(floats) * sizeof(float) + static_cast<uint64_t>(2 * o.max_positions) * sizeof(int64_t);
}

int64_t encoder_node_count(const EncoderOptions& options) {
    if (options.fused) return kFusedNodesPerLayer * options.layers + kFusedNodesOutsideLayers;
    const int64_t extra = options.decomposed_layernorm ? kDecomposedLayerNormExtraNodes : 0;
    return (kNodesPerLayer + 2 * extra) * options.layers + kNodesOutsideLayers + extra;
}

onnx::ModelProto build_encoder_model(const EncoderOptions& options, WeightWriter& weights) {
    validate(options);
    if (options.fused && options.decomposed_layernorm)
        throw UsageError(
            "--fused and --decomposed-layernorm cannot be combined (the fused graph has no LayerNorm "
            "pattern left)");
    return EncoderBuilder(options, weights).build();
}

}  // namespace polygraphy::testing
