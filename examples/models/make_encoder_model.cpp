// Writes a BERT-shaped encoder as PyTorch 1.13 exports one at opset 17 (tests/support/encoder_model.h):
//   make_encoder_model OUT.onnx [--layers 12] [--hidden 768] [--heads 12] [--intermediate 3072]
//                      [--vocab 30522] [--max-positions 512] [--seed 0] [--decomposed-layernorm]
//                      [--fused] [--external-data]
// The defaults are BERT-base (436 MB of weights, inside the .onnx file unless --external-data).
#include "encoder_model.h"
#include "generator_cli.h"

using namespace polygraphy::testing;

int main(int argc, char** argv) {
    EncoderOptions options;
    bool external_data = false;
    std::vector<GeneratorOption> flags = transformer_size_options(options, "encoder", "feed-forward layer");
    flags.push_back({"--decomposed-layernorm", "LayerNorm as ReduceMean/Sub/Pow/.../Add instead of LayerNormalization",
                     nullptr, &options.decomposed_layernorm});
    flags.push_back({"--fused",
                     "the graph as ONNX Runtime's transformer optimizer fuses it (EmbedLayerNormalization, Attention, "
                     "SkipLayerNormalization, BiasGelu), same weights",
                     nullptr, &options.fused});
    flags.push_back({"--external-data", "stream the weights to OUT.onnx.data", nullptr, &external_data});
    return run_model_generator(
        argc, argv, "Writes a BERT-shaped encoder (input_ids, attention_mask -> last_hidden_state), opset 17.", flags,
        [&](const std::string& path) {
            validate(options);  // before any file is opened
            return write_generated_model(
                path, external_data, [&](WeightWriter& weights) { return build_encoder_model(options, weights); },
                encoder_weight_bytes(options));
        });
}
