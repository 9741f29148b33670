// Writes a LLaMA-shaped decoder as PyTorch 1.13 exports one at opset 17 (tests/support/decoder_model.h):
//   make_decoder_model OUT.onnx [--layers 12] [--hidden 2048] [--heads 16] [--intermediate 5504]
//                      [--vocab 32000] [--max-positions 2048] [--seed 0] [--functions] [--inline-weights]
//                      [--nbits 0|2|4|8] [--block-size 32]
// By default the weights (2.97 GB at the default size) are streamed to OUT.onnx.data as they are
// generated, so the generator's memory stays small whatever the model's size.
#include "decoder_model.h"
#include "generator_cli.h"

using namespace polygraphy::testing;

int main(int argc, char** argv) {
    DecoderOptions options;
    bool inline_weights = false;
    std::vector<GeneratorOption> flags = transformer_size_options(options, "decoder", "gated SiLU MLP");
    flags.push_back({"--functions", "emit RMSNorm and the MLP as ONNX local functions (domain 'custom')", nullptr,
                     &options.functions});
    flags.push_back({"--nbits",
                     "bits of the projections' weights: 0 keeps float32 MatMuls, 2/4/8 writes com.microsoft "
                     "MatMulNBits (int4 LLMs)",
                     &options.nbits, nullptr});
    flags.push_back(
        {"--block-size", "MatMulNBits block size along K (with --nbits)", &options.nbits_block_size, nullptr});
    flags.push_back(
        {"--inline-weights", "keep the weights in the .onnx file (under 2 GiB only)", nullptr, &inline_weights});
    return run_model_generator(argc, argv, "Writes a LLaMA-shaped decoder (input_ids -> logits), opset 17.", flags,
                               [&](const std::string& path) {
                                   validate(options);  // before any file is opened
                                   return write_generated_model(
                                       path, !inline_weights,
                                       [&](WeightWriter& weights) { return build_decoder_model(options, weights); },
                                       decoder_weight_bytes(options));
                               });
}
