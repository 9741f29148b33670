// A LLaMA-shaped decoder as PyTorch 1.13 exports one at opset 17 (IR 8), built in code with seeded
// weights: the large model of the benchmarks and of the tests of external data and local functions.
#pragma once

#include <cstdint>

#include <onnx/onnx_pb.h>

#include "external_weights.h"
#include "transformer_sizes.h"

namespace polygraphy::testing {

/// Size and form of the decoder. The defaults give 12 layers of hidden size 2048 in 16 heads, an MLP of
/// 5504, a vocabulary of 32000 and 2048 positions: 2.97 GB of weights.
struct DecoderOptions : TransformerSizes {
    DecoderOptions() : TransformerSizes{12, 2048, 16, 5504, 32000, 2048, 0} {}
    /// Emit RMSNorm and the MLP as ONNX local functions (domain "custom"): RMSNorm takes its epsilon as an
    /// attribute that its body references (ref_attr_name), and the MLP calls a SiLU function (nesting).
    bool functions = false;
    /// Bits of the projections' weights (the attention's, the MLP's and lm_head): 0 keeps them float32
    /// MatMuls; 2, 4 or 8 makes each a com.microsoft MatMulNBits with packed zero points, quantized in
    /// blocks of `nbits_block_size` along K (as ONNX Runtime's MatMulNBitsQuantizer writes it).
    int64_t nbits = 0;
    int64_t nbits_block_size = 32;
};

/// Throws UsageError naming the first option out of range (see validate(const TransformerSizes&)), for
/// an odd head size (rotary embeddings rotate pairs), or for `nbits` or its block size out of range.
void validate(const DecoderOptions& options);

/// Bytes of all the decoder's initializers: per layer 4h^2 + 3hi + 2h elements, plus the embedding and
/// lm_head (2 vocab h), the final norm (h), the rotary cos/sin tables (2 max_positions head_size) and
/// the causal mask (max_positions^2), all float32, except the projections' (4h^2 + 3hi per layer and
/// lm_head) with `nbits` (nbits_weight_bytes()).
uint64_t decoder_weight_bytes(const DecoderOptions& options);

/// Nodes of the main graph: 122 per layer + 30 (embedding, positions, mask, final norm, lm_head); with
/// `functions`, 99 per layer + 21, as each RMSNorm (10 nodes) and MLP (6 nodes) becomes one call.
/// Inlining the functions gives back exactly the graph without them.
int64_t decoder_node_count(const DecoderOptions& options);

/// The decoder: input `input_ids` int64 [batch, seq], output `logits` float32 [batch, seq, vocab]; each
/// weight is generated and written through `weights` as it is added. Throws UsageError (see validate()).
onnx::ModelProto build_decoder_model(const DecoderOptions& options, WeightWriter& weights);

}  // namespace polygraphy::testing
