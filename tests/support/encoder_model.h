// A BERT-shaped encoder as PyTorch 1.13 exports one at opset 17, built in code with seeded weights.
#pragma once

#include <cstdint>

#include <onnx/onnx_pb.h>

#include "external_weights.h"
#include "transformer_sizes.h"

namespace polygraphy::testing {

/// Size and form of the encoder. The defaults are BERT-base: 12 layers of hidden size 768 in 12 heads, a
/// feed-forward layer of 3072, a vocabulary of 30522 and 512 positions: 436 MB of weights.
struct EncoderOptions : TransformerSizes {
    EncoderOptions() : TransformerSizes{12, 768, 12, 3072, 30522, 512, 0} {}
    /// LayerNorm as the ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add pattern of exporters before
    /// opset 17, instead of LayerNormalization.
    bool decomposed_layernorm = false;
    /// The graph as ONNX Runtime's transformer optimizer (onnxruntime.transformers) fuses it, with the same
    /// weights and the same function: com.microsoft EmbedLayerNormalization, Attention (Q, K and V in one
    /// weight, the 0/1 attention mask as its raw 2-D mask_index), SkipLayerNormalization (the dense
    /// layer's bias and the residual) and BiasGelu.
    bool fused = false;
};

/// Bytes of all the encoder's initializers: float32 weights (per layer 4h^2 + 2hi + 9h + i elements;
/// embeddings (vocab + max_positions + 2) h and their LayerNorm 2h) and the int64 position and
/// token-type id buffers (2 max_positions).
uint64_t encoder_weight_bytes(const EncoderOptions& options);

/// Nodes of the main graph: 90 per layer + 33 (embeddings 24, extended mask 9); with
/// `decomposed_layernorm` 110 per layer + 43 (each LayerNormalization becomes 11 nodes); `fused`: 7 per
/// layer + 19 (the token types' 15, three Casts to int32, the EmbedLayerNormalization).
int64_t encoder_node_count(const EncoderOptions& options);

/// The encoder: inputs `input_ids` and `attention_mask` int64 [batch, seq], output `last_hidden_state`
/// float32 [batch, seq, hidden]; each weight is generated and written through `weights` as it is added.
/// Throws UsageError (see validate(), and for `fused` with `decomposed_layernorm`).
onnx::ModelProto build_encoder_model(const EncoderOptions& options, WeightWriter& weights);

}  // namespace polygraphy::testing
