// The built-in runtime holds a model's weights once (issue 36, item 1): a constant MatMul weight
// read from an external data file is packed into the layout of the runtime's GEMM, and the mapped
// pages it was packed from go back to the kernel, so the process does not keep both copies. Checked on
// a small LLaMA-shaped decoder (the benchmarks' big model with its size knobs turned down) through
// the resident size of the data file's mapping, which /proc/self/smaps gives per mapping.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "decoder_model.h"
#include "external_weights.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::testing {
namespace {

/// Resident kB of the mappings of the file whose path ends with `name`, summed (/proc/self/smaps).
int64_t resident_kb_of_file(const std::string& name) {
    std::ifstream smaps("/proc/self/smaps");
    int64_t total = 0;
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::istringstream fields(line);
        std::string first;
        fields >> first;
        if (first.find('-') != std::string::npos && first.back() != ':') {  // a mapping's header line
            inside = line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0;
        } else if (inside && first == "Rss:") {
            int64_t kb = 0;
            fields >> kb;
            total += kb;
        }
    }
    return total;
}

TEST(WeightMemory, PackedMatMulWeightsGiveBackTheirMappedPages) {
    TempDir dir;
    DecoderOptions options;
    options.layers = 2;
    options.hidden = 256;
    options.heads = 4;
    options.intermediate = 704;
    options.vocab = 4000;
    options.max_positions = 64;
    const std::string path = dir.file("decoder.onnx");
    const GeneratedModelInfo info =
        write_generated_model(path, true, [&](WeightWriter& weights) { return build_decoder_model(options, weights); });
    // The MatMul weights (the projections and lm_head) are most of the file; the embedding's rows
    // are read a few at a time by Gather.
    const int64_t file_kb = static_cast<int64_t>(info.file_bytes / 1024);
    const int64_t matmul_kb =
        (options.layers * (4 * options.hidden * options.hidden + 3 * options.hidden * options.intermediate) +
         options.vocab * options.hidden) *
        4 / 1024;
    ASSERT_GT(matmul_kb, file_kb / 2);

    const OnnxModel model = onnx_from_path(path);
    ref::SessionOptions session_options;
    session_options.num_threads = 1;
    const ref::Session session(*model, session_options);
    const Tensor ids = Tensor::from_doubles(DataType::kInt64, {1, 8}, {1, 5, 9, 13, 200, 3000, 7, 11});
    const Tensor first = session.run({{"input_ids", ids}}).at("logits");
    // Whatever the packing left resident of the file is far below the MatMul weights it read.
    const int64_t resident_kb = resident_kb_of_file("decoder.onnx.data");
    EXPECT_LT(resident_kb, matmul_kb / 4) << "of a " << file_kb << " kB file";
    // The pages given back are read again if anything needs them: the next run gives the same bits.
    const Tensor again = session.run({{"input_ids", ids}}).at("logits");
    EXPECT_TRUE(again.equals(first));
}

}  // namespace
}  // namespace polygraphy::testing
