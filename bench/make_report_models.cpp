// Writes a LLaMA-like decoder (RMSNorm, causal attention, SwiGLU MLP; 37 nodes per block) for the HTML
// report's size and rendering measurements:
//     make_report_models OUT.onnx [--blocks 38] [--hidden 64] [--seq 16] [--seed 1]
// 38 blocks give 1,413 nodes (the size of the LLaMA-shaped decoder of the large-models issue);
// 270 blocks give 9,997. Weights are deterministic pseudo-random values.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "model_builder.h"

namespace {

using namespace polygraphy;
using testing::ModelBuilder;
using testing::random_tensor;

int usage(const char* message) {
    std::fprintf(stderr, "%s\nusage: make_report_models OUT.onnx [--blocks 38] [--hidden 64] [--seq 16] [--seed 1]\n",
                 message);
    return 2;
}

class Decoder {
public:
    Decoder(int64_t hidden, int64_t seq, uint32_t seed) : hidden_(hidden), seq_(seq), seed_(seed) {
        builder_.input("tokens", DataType::kFloat32, Shape{1, seq, hidden});
        builder_.initializer("two", Tensor::from_doubles(DataType::kFloat32, {}, {2.0}));
        builder_.initializer("epsilon", Tensor::from_doubles(DataType::kFloat32, {}, {1e-6}));
        builder_.initializer("scale", Tensor::from_doubles(DataType::kFloat32, {}, {std::sqrt(double(kHeadDim))}));
        builder_.initializer(
            "heads_shape",
            Tensor::from_doubles(DataType::kInt64, {4}, {1.0, double(seq), double(heads()), double(kHeadDim)}));
        builder_.initializer("hidden_shape",
                             Tensor::from_doubles(DataType::kInt64, {3}, {1.0, double(seq), double(hidden)}));
        std::vector<double> mask(static_cast<std::size_t>(seq * seq), 0.0);
        for (int64_t row = 0; row < seq; ++row)
            for (int64_t col = row + 1; col < seq; ++col) mask[static_cast<std::size_t>(row * seq + col)] = -1e4;
        builder_.initializer("causal_mask", Tensor::from_doubles(DataType::kFloat32, {seq, seq}, mask));
    }

    std::string block(const std::string& x, int index) {
        const std::string p = "layers." + std::to_string(index) + ".";
        const std::string normed = rms_norm(x, p + "input_layernorm");
        // Attention
        std::string q = matmul(normed, p + "self_attn.q_proj", hidden_);
        std::string k = matmul(normed, p + "self_attn.k_proj", hidden_);
        std::string v = matmul(normed, p + "self_attn.v_proj", hidden_);
        q = transpose(reshape(q, "heads_shape", p + "self_attn.q_reshape"), {0, 2, 1, 3}, p + "self_attn.q_transpose");
        k = transpose(reshape(k, "heads_shape", p + "self_attn.k_reshape"), {0, 2, 3, 1}, p + "self_attn.k_transpose");
        v = transpose(reshape(v, "heads_shape", p + "self_attn.v_reshape"), {0, 2, 1, 3}, p + "self_attn.v_transpose");
        std::string scores = op("MatMul", {q, k}, p + "self_attn.scores");
        scores = op("Div", {scores, "scale"}, p + "self_attn.scale");
        scores = op("Add", {scores, "causal_mask"}, p + "self_attn.mask");
        auto& softmax = builder_.node("Softmax", {scores}, {p + "self_attn.softmax_out"}, p + "self_attn.softmax");
        testing::set_attr(softmax, "axis", int64_t{-1});
        std::string attended = op("MatMul", {p + "self_attn.softmax_out", v}, p + "self_attn.context");
        attended = transpose(attended, {0, 2, 1, 3}, p + "self_attn.context_transpose");
        attended = reshape(attended, "hidden_shape", p + "self_attn.context_reshape");
        attended = matmul(attended, p + "self_attn.o_proj", hidden_);
        const std::string residual = op("Add", {x, attended}, p + "attn_residual");
        // SwiGLU MLP
        const std::string normed2 = rms_norm(residual, p + "post_attention_layernorm");
        const int64_t ffn = hidden_ * 11 / 4;
        const std::string gate = matmul(normed2, p + "mlp.gate_proj", ffn);
        const std::string up = matmul(normed2, p + "mlp.up_proj", ffn);
        const std::string sigmoid = op("Sigmoid", {gate}, p + "mlp.sigmoid");
        const std::string silu = op("Mul", {gate, sigmoid}, p + "mlp.silu");
        const std::string gated = op("Mul", {silu, up}, p + "mlp.gate_up");
        const std::string down = matmul(gated, p + "mlp.down_proj", hidden_, ffn);
        return op("Add", {residual, down}, p + "mlp_residual");
    }

    void finish(const std::string& x, const std::string& path) {
        const std::string normed = rms_norm(x, "norm");
        const std::string logits = matmul(normed, "lm_head", hidden_);
        builder_.output(logits, DataType::kFloat32, Shape{1, seq_, hidden_});
        builder_.save(path);
    }

private:
    static constexpr int64_t kHeadDim = 16;
    int64_t heads() const { return hidden_ / kHeadDim; }

    std::string op(const std::string& type, const std::vector<std::string>& inputs, const std::string& name) {
        builder_.node(type, inputs, {name + "_out"}, name);
        return name + "_out";
    }
    std::string matmul(const std::string& x, const std::string& name, int64_t out, int64_t in = 0) {
        if (in == 0) in = hidden_;
        const double bound = 1.0 / std::sqrt(double(in));
        builder_.initializer(name + ".weight", random_tensor({in, out}, seed_++, -bound, bound));
        return op("MatMul", {x, name + ".weight"}, name);
    }
    std::string reshape(const std::string& x, const std::string& shape, const std::string& name) {
        return op("Reshape", {x, shape}, name);
    }
    std::string transpose(const std::string& x, const std::vector<int64_t>& perm, const std::string& name) {
        auto& node = builder_.node("Transpose", {x}, {name + "_out"}, name);
        testing::set_attr(node, "perm", perm);
        return name + "_out";
    }
    // LLaMA's RMSNorm as exporters write it: x / sqrt(mean(x^2) + eps) * weight.
    std::string rms_norm(const std::string& x, const std::string& name) {
        builder_.initializer(name + ".weight", random_tensor({hidden_}, seed_++, 0.8f, 1.2f));
        const std::string squared = op("Pow", {x, "two"}, name + ".pow");
        auto& mean = builder_.node("ReduceMean", {squared}, {name + ".mean_out"}, name + ".mean");
        testing::set_attr(mean, "axes", std::vector<int64_t>{-1});
        const std::string shifted = op("Add", {name + ".mean_out", "epsilon"}, name + ".add_eps");
        const std::string root = op("Sqrt", {shifted}, name + ".sqrt");
        const std::string divided = op("Div", {x, root}, name + ".div");
        return op("Mul", {divided, name + ".weight"}, name + ".mul");
    }

    ModelBuilder builder_{17, "decoder"};
    int64_t hidden_, seq_;
    uint32_t seed_;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage("missing OUT.onnx");
    const std::string path = argv[1];
    int blocks = 38;
    int64_t hidden = 64, seq = 16;
    uint32_t seed = 1;
    for (int i = 2; i < argc; ++i) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) return usage(("missing value for " + flag).c_str());
        const long value = std::strtol(argv[++i], nullptr, 10);
        if (value <= 0) return usage(("bad value for " + flag).c_str());
        if (flag == "--blocks")
            blocks = static_cast<int>(value);
        else if (flag == "--hidden")
            hidden = value;
        else if (flag == "--seq")
            seq = value;
        else if (flag == "--seed")
            seed = static_cast<uint32_t>(value);
        else
            return usage(("unknown option " + flag).c_str());
    }
    if (hidden % 16 != 0) return usage("--hidden must be a multiple of 16 (the head size)");
    try {
        Decoder decoder(hidden, seq, seed);
        std::string x = "tokens";
        for (int block = 0; block < blocks; ++block) x = decoder.block(x, block);
        decoder.finish(x, path);
        std::printf("%s: %d blocks, %d nodes\n", path.c_str(), blocks, 37 * blocks + 7);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "make_report_models: %s\n", error.what());
        return 1;
    }
    return 0;
}
