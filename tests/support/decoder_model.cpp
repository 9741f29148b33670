#include "decoder_model.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "export_graph.h"
#include "model_builder.h"
#include "nbits_weights.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::testing {
namespace {

constexpr float kRmsEpsilon = 1e-6f;
constexpr double kRopeBase = 10000.0;
constexpr char kFunctionDomain[] = "custom";
constexpr char kRmsNormFunction[] = "RMSNorm";
constexpr char kMlpFunction[] = "LlamaMLP";
constexpr char kSiluFunction[] = "SiLU";
constexpr char kFunctionResult[] = "Y";  // the single output of every function

// Per layer: 2 RMSNorms (10 each), attention (94), MLP (6), 2 residual Adds. Outside the layers:
// embedding (1), sequence length (3), position ids (5), causal mask (10), final norm (10), lm_head (1).
constexpr int64_t kRmsNormNodes = 10;
constexpr int64_t kMlpNodes = 6;
constexpr int64_t kNodesPerLayer = 122;
constexpr int64_t kNodesOutsideLayers = 30;

// The exporter's `x.pow(2).mean(-1, keepdim=True)`, `x * torch.rsqrt(variance + eps)`, `weight * x`.
// With no `epsilon`, the Constant refers to the enclosing function's attribute "epsilon".
std::string emit_rms_norm(ExportGraph& graph, const std::string& scope, const std::string& x, const std::string& weight,
                          std::optional<float> epsilon) {
    const std::string squared = graph.op(scope, "Pow", {x, graph.scalar(scope, 2.0f)});
    auto& mean = graph.node(scope, "ReduceMean", {squared});
    set_attr(mean, "axes", std::vector<int64_t>{-1});
    set_attr(mean, "keepdims", int64_t{1});
    std::string eps;
    if (epsilon) {
        eps = graph.scalar(scope, *epsilon);
    } else {
        auto& constant = graph.node(scope, "Constant", {});
        auto* attribute = constant.add_attribute();
        attribute->set_name("value_float");
        attribute->set_type(onnx::AttributeProto::FLOAT);
        attribute->set_ref_attr_name("epsilon");
        eps = constant.output(0);
    }
    const std::string variance = graph.op(scope, "Add", {mean.output(0), eps});
    const std::string root = graph.op(scope, "Sqrt", {variance});
    const std::string inverse = graph.op(scope, "Div", {graph.scalar(scope, 1.0f), root});
    const std::string normed = graph.op(scope, "Mul", {x, inverse});
    return graph.op(scope, "Mul", {weight, normed});
}

// A projection `x` times the weight of the MLP's `gate_proj`, `up_proj` or `down_proj`: a MatMul, or
// (with quantized weights) the MatMulNBits that replaces it.
using Projection = std::function<std::string(const std::string& scope, const std::string& x, const std::string& which)>;

// down_proj(silu(gate_proj(x)) * up_proj(x)); SiLU as x * Sigmoid(x), or as a call of the SiLU function.
std::string emit_mlp(ExportGraph& graph, const std::string& scope, const std::string& x, const Projection& project,
                     bool silu_as_function) {
    const std::string gate = project(scope + "/gate_proj", x, "gate_proj");
    std::string activated;
    if (silu_as_function) {
        activated = graph.node(scope + "/act_fn", kSiluFunction, {gate}, 1, kFunctionDomain).output(0);
    } else {
        const std::string sigmoid = graph.op(scope + "/act_fn", "Sigmoid", {gate});
        activated = graph.op(scope + "/act_fn", "Mul", {gate, sigmoid});
    }
    const std::string up = project(scope + "/up_proj", x, "up_proj");
    const std::string product = graph.op(scope, "Mul", {activated, up});
    return project(scope + "/down_proj", product, "down_proj");
}

onnx::FunctionProto& new_function(onnx::ModelProto& model, const std::string& name,
                                  const std::vector<std::string>& inputs) {
    auto& function = *model.add_functions();
    function.set_name(name);
    function.set_domain(kFunctionDomain);
    for (const auto& input : inputs) function.add_input(input);
    function.add_output(std::string(kFunctionResult));
    auto* onnx_import = function.add_opset_import();
    onnx_import->set_domain("");
    onnx_import->set_version(17);
    return function;
}

void add_functions(onnx::ModelProto& model) {
    auto& rms_norm = new_function(model, kRmsNormFunction, {"X", "weight"});
    rms_norm.add_attribute("epsilon");
    ExportGraph rms_body(rms_norm.mutable_node());
    rms_body.rename_last_output(emit_rms_norm(rms_body, "", "X", "weight", std::nullopt), kFunctionResult);

    auto& silu = new_function(model, kSiluFunction, {"X"});
    ExportGraph silu_body(silu.mutable_node());
    silu_body.rename_last_output(silu_body.op("", "Mul", {"X", silu_body.op("", "Sigmoid", {"X"})}), kFunctionResult);

    auto& mlp = new_function(model, kMlpFunction, {"X", "gate_weight", "up_weight", "down_weight"});
    auto* custom_import = mlp.add_opset_import();  // the MLP calls SiLU: functions nest
    custom_import->set_domain(kFunctionDomain);
    custom_import->set_version(1);
    ExportGraph mlp_body(mlp.mutable_node());
    const Projection by_formal_weight = [&](const std::string& scope, const std::string& x, const std::string& which) {
        const std::string weight = which.substr(0, which.find('_')) + "_weight";  // "gate_proj" -> "gate_weight"
        return mlp_body.op(scope, "MatMul", {x, weight});
    };
    mlp_body.rename_last_output(emit_mlp(mlp_body, "", "X", by_formal_weight, true), kFunctionResult);
}

class DecoderBuilder {
public:
    DecoderBuilder(const DecoderOptions& options, WeightWriter& weights)
        : options_(options),
          weights_(weights),
          builder_(17, "main_graph"),
          graph_(model().mutable_graph()->mutable_node()) {}

    onnx::ModelProto build() {
        const int64_t h = options_.hidden;
        model().set_producer_name("polygraphy make_decoder_model");
        builder_.input("input_ids", DataType::kInt64, DynShape{Dim::named("batch"), Dim::named("seq")});
        if (options_.nbits != 0) builder_.opset_import("com.microsoft", 1);
        if (options_.functions) {
            builder_.opset_import(kFunctionDomain, 1);
            add_functions(model());
        }

        const std::string embedding = uniform_weight("model.embed_tokens.weight", {options_.vocab, h}, 1.0f);
        std::string hidden = graph_.op("/model/embed_tokens", "Gather", {embedding, "input_ids"});
        emit_positions_and_mask();
        for (int64_t layer = 0; layer < options_.layers; ++layer) hidden = emit_layer(layer, hidden);
        hidden = rms_norm("/model/norm", hidden, "model.norm.weight");
        graph_.rename_last_output(
            linear("/lm_head", hidden, "lm_head.weight", h, options_.vocab, 1.0f / std::sqrt(float(h))), "logits");
        builder_.output("logits", DataType::kFloat32,
                        DynShape{Dim::named("batch"), Dim::named("seq"), Dim::fixed(options_.vocab)});
        return std::move(model());
    }

private:
    onnx::ModelProto& model() { return builder_.proto(); }

    void add_weight(const std::string& name, const Shape& shape, const ElementFill& fill) {
        *model().mutable_graph()->add_initializer() = weights_.write(name, DataType::kFloat32, shape, fill);
    }

    // Uniform in [-bound, bound): bound 1/sqrt(fan_in) keeps a projection's output near its input's scale.
    std::string uniform_weight(const std::string& name, const Shape& shape, float bound) {
        add_weight(name, shape, uniform_fill(tensor_seed(static_cast<uint64_t>(options_.seed), name), -bound, bound));
        return name;
    }

    // x times a K x N weight uniform in [-bound, bound): a MatMul, or with `nbits` a MatMulNBits of the
    // same weight quantized (codes, scales and packed zero points named after it).
    std::string linear(const std::string& scope, const std::string& x, const std::string& name, int64_t k, int64_t n,
                       float bound) {
        if (options_.nbits == 0) return graph_.op(scope, "MatMul", {x, uniform_weight(name, {k, n}, bound)});
        Tensor weight(DataType::kFloat32, {k, n});
        uniform_fill(tensor_seed(static_cast<uint64_t>(options_.seed), name), -bound, bound)(weight.data(), 0, k * n);
        const NBitsWeights q =
            quantize_nbits(weight, options_.nbits, options_.nbits_block_size, NBitsZeroPoints::kPacked);
        const std::string codes = fmt::format("{}_Q{}", name, options_.nbits);
        auto* graph = model().mutable_graph();
        *graph->add_initializer() = weights_.write(codes, q.b);
        *graph->add_initializer() = weights_.write(name + "_scales", q.scales);
        *graph->add_initializer() = weights_.write(name + "_zero_points", q.zero_points);
        auto& node =
            graph_.node(scope, "MatMulNBits", {x, codes, name + "_scales", name + "_zero_points"}, 1, "com.microsoft");
        set_attr(node, "K", k);
        set_attr(node, "N", n);
        set_attr(node, "bits", options_.nbits);
        set_attr(node, "block_size", options_.nbits_block_size);
        return node.output(0);
    }

    std::string norm_weight(const std::string& name) {
        add_weight(name, {options_.hidden},
                   uniform_fill(tensor_seed(static_cast<uint64_t>(options_.seed), name), 0.8f, 1.2f));
        return name;
    }

    // Rotary tables [max_positions, head_size]: cos/sin(position * base^(-2k/head_size)) for k < head_size/2,
    // repeated for the second half (the `torch.cat((freqs, freqs), dim=-1)` of the reference code).
    void add_rotary_table(const std::string& name, bool use_sin) {
        const int64_t d = options_.head_size();
        add_weight(name, {options_.max_positions, d}, [d, use_sin](void* out, int64_t first, int64_t count) {
            auto* values = static_cast<float*>(out);
            for (int64_t i = 0; i < count; ++i) {
                const int64_t position = (first + i) / d, k = (first + i) % d % (d / 2);
                const double angle = double(position) * std::pow(kRopeBase, -2.0 * double(k) / double(d));
                values[i] = static_cast<float>(use_sin ? std::sin(angle) : std::cos(angle));
            }
        });
    }

    // Position ids = Range(0, seq) as [1, seq]; the causal mask: the [max_positions]^2 constant (0 on and
    // below the diagonal, float32's lowest above) sliced to [seq, seq] and unsqueezed to [1, 1, seq, seq].
    void emit_positions_and_mask() {
        const std::string scope = "/model";
        const std::string seq = graph_.dim(scope, "input_ids", 1);
        const std::string range =
            graph_.op(scope, "Range", {graph_.scalar(scope, int64_t{0}), seq, graph_.scalar(scope, int64_t{1})});
        position_ids_ = graph_.unsqueeze(scope, range, {0});

        add_rotary_table("model.rotary_emb.cos_cached", false);
        add_rotary_table("model.rotary_emb.sin_cached", true);
        const int64_t n = options_.max_positions;
        add_weight("model.causal_mask", {n, n}, [n](void* out, int64_t first, int64_t count) {
            auto* values = static_cast<float*>(out);
            for (int64_t i = 0; i < count; ++i)
                values[i] = (first + i) % n > (first + i) / n ? std::numeric_limits<float>::lowest() : 0.0f;
        });
        const std::string seq_1d = graph_.unsqueeze(scope, seq, {0});
        const std::string rows = graph_.slice(scope, "model.causal_mask", int64_t{0}, seq_1d, 0);
        const std::string square = graph_.slice(scope, rows, int64_t{0}, seq_1d, 1);
        causal_mask_ = graph_.unsqueeze(scope, square, {0, 1});
    }

    std::string rms_norm(const std::string& scope, const std::string& x, const std::string& weight_name) {
        const std::string weight = norm_weight(weight_name);
        if (!options_.functions) return emit_rms_norm(graph_, scope, x, weight, kRmsEpsilon);
        auto& call = graph_.node(scope, kRmsNormFunction, {x, weight}, 1, kFunctionDomain);
        set_attr(call, "epsilon", kRmsEpsilon);
        return call.output(0);
    }

    std::string emit_layer(int64_t layer, const std::string& input) {
        const std::string scope = fmt::format("/model/layers.{}", layer);
        const std::string prefix = fmt::format("model.layers.{}.", layer);
        const std::string normed = rms_norm(scope + "/input_layernorm", input, prefix + "input_layernorm.weight");
        const std::string attention = emit_attention(scope + "/self_attn", prefix + "self_attn.", normed);
        const std::string residual = graph_.op(scope, "Add", {input, attention});

        const std::string normed2 =
            rms_norm(scope + "/post_attention_layernorm", residual, prefix + "post_attention_layernorm.weight");
        const float in_bound = 1.0f / std::sqrt(float(options_.hidden));
        const float down_bound = 1.0f / std::sqrt(float(options_.intermediate));
        std::string mlp;
        if (options_.functions) {
            const std::string gate =
                uniform_weight(prefix + "mlp.gate_proj.weight", {options_.hidden, options_.intermediate}, in_bound);
            const std::string up =
                uniform_weight(prefix + "mlp.up_proj.weight", {options_.hidden, options_.intermediate}, in_bound);
            const std::string down =
                uniform_weight(prefix + "mlp.down_proj.weight", {options_.intermediate, options_.hidden}, down_bound);
            mlp = graph_.node(scope + "/mlp", kMlpFunction, {normed2, gate, up, down}, 1, kFunctionDomain).output(0);
        } else {
            const Projection project = [&](const std::string& at, const std::string& x, const std::string& which) {
                const bool down = which == "down_proj";
                return linear(at, x, prefix + "mlp." + which + ".weight",
                              down ? options_.intermediate : options_.hidden,
                              down ? options_.hidden : options_.intermediate, down ? down_bound : in_bound);
            };
            mlp = emit_mlp(graph_, scope + "/mlp", normed2, project, false);
        }
        return graph_.op(scope, "Add", {residual, mlp});
    }

    // rotate_half(x) = cat(-x[..., half:], x[..., :half]); the result is x * cos + rotate_half(x) * sin.
    std::string apply_rotary(const std::string& scope, const std::string& x, const std::string& cos,
                             const std::string& sin) {
        const std::string x_cos = graph_.op(scope, "Mul", {x, cos});
        const std::string half = graph_.op(scope, "Div", {graph_.dim(scope, x, 3), graph_.scalar(scope, int64_t{2})});
        const std::string half_1d = graph_.unsqueeze(scope, half, {0});
        const std::string first = graph_.slice(scope, x, int64_t{0}, half_1d, 3);
        const std::string second = graph_.slice(scope, x, half_1d, std::numeric_limits<int64_t>::max(), 3);
        auto& rotated = graph_.node(scope, "Concat", {graph_.op(scope, "Neg", {second}), first});
        set_attr(rotated, "axis", int64_t{-1});
        return graph_.op(scope, "Add", {x_cos, graph_.op(scope, "Mul", {rotated.output(0), sin})});
    }

    std::string emit_attention(const std::string& scope, const std::string& prefix, const std::string& x) {
        const int64_t h = options_.hidden, d = options_.head_size();
        const float bound = 1.0f / std::sqrt(float(h));
        const std::string batch = graph_.dim(scope, x, 0);
        const std::string seq = graph_.dim(scope, x, 1);
        auto project_to_heads = [&](const std::string& name) {
            const std::string projected = linear(scope + "/" + name, x, prefix + name + ".weight", h, h, bound);
            const std::string heads = graph_.reshape(scope, projected, {batch, seq, options_.heads, d});
            return graph_.transpose(scope, heads, {0, 2, 1, 3});
        };
        std::string query = project_to_heads("q_proj");
        std::string key = project_to_heads("k_proj");
        const std::string value = project_to_heads("v_proj");

        const std::string cos =
            graph_.unsqueeze(scope, graph_.op(scope, "Gather", {"model.rotary_emb.cos_cached", position_ids_}), {1});
        const std::string sin =
            graph_.unsqueeze(scope, graph_.op(scope, "Gather", {"model.rotary_emb.sin_cached", position_ids_}), {1});
        query = apply_rotary(scope, query, cos, sin);
        key = apply_rotary(scope, key, cos, sin);

        const std::string scores = graph_.op(scope, "MatMul", {query, graph_.transpose(scope, key, {0, 1, 3, 2})});
        const std::string scaled = graph_.op(scope, "Div", {scores, graph_.scalar(scope, std::sqrt(float(d)))});
        const std::string masked = graph_.op(scope, "Add", {scaled, causal_mask_});
        auto& softmax = graph_.node(scope, "Softmax", {masked});
        set_attr(softmax, "axis", int64_t{-1});
        const std::string context = graph_.op(scope, "MatMul", {softmax.output(0), value});
        const std::string merged =
            graph_.reshape(scope, graph_.transpose(scope, context, {0, 2, 1, 3}), {batch, seq, h});
        return linear(scope + "/o_proj", merged, prefix + "o_proj.weight", h, h, bound);
    }

    const DecoderOptions& options_;
    WeightWriter& weights_;
    ModelBuilder builder_;
    ExportGraph graph_;
    std::string position_ids_;
    std::string causal_mask_;
};

}  // namespace

void validate(const DecoderOptions& options) {
    validate(static_cast<const TransformerSizes&>(options));
    if (options.head_size() % 2 != 0)
        throw UsageError(fmt::format("the head size --hidden / --heads must be even for rotary embeddings, got {}",
                                     options.head_size()));
    if (options.nbits != 0 && options.nbits != 2 && options.nbits != 4 && options.nbits != 8)
        throw UsageError(fmt::format("--nbits must be 0 (float32 weights), 2, 4 or 8, got {}", options.nbits));
    if (options.nbits != 0 &&
        (options.nbits_block_size < 16 || (options.nbits_block_size & (options.nbits_block_size - 1))))
        throw UsageError(
            fmt::format("--block-size must be a power of two of at least 16, got {}", options.nbits_block_size));
    if (options.nbits != 0 && options.functions)
        throw UsageError("--nbits and --functions cannot be combined (the MLP function takes float weights)");
}

uint64_t decoder_weight_bytes(const DecoderOptions& o) {
    const int64_t float_elements = o.layers * 2 * o.hidden + o.vocab * o.hidden + o.hidden +
                                   2 * o.max_positions * o.head_size() + o.max_positions * o.max_positions;
    const auto projection = [&](int64_t k, int64_t n) {
        return o.nbits == 0 ? k * n * 4
                            : nbits_weight_bytes(k, n, o.nbits, o.nbits_block_size, NBitsZeroPoints::kPacked);
    };
    const int64_t per_layer = 4 * projection(o.hidden, o.hidden) + 2 * projection(o.hidden, o.intermediate) +
                              projection(o.intermediate, o.hidden);
    return static_cast<uint64_t>(float_elements * 4 + o.layers * per_layer + projection(o.hidden, o.vocab));
}

int64_t decoder_node_count(const DecoderOptions& options) {
    if (!options.functions) return kNodesPerLayer * options.layers + kNodesOutsideLayers;
    const int64_t saved_per_norm = kRmsNormNodes - 1, saved_per_mlp = kMlpNodes - 1;
    return (kNodesPerLayer - 2 * saved_per_norm - saved_per_mlp) * options.layers + kNodesOutsideLayers -
           saved_per_norm;
}

onnx::ModelProto build_decoder_model(const DecoderOptions& options, WeightWriter& weights) {
    validate(options);
    return DecoderBuilder(options, weights).build();
}

}  // namespace polygraphy::testing
