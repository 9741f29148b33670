// The sizes shared by the generated transformer models (tests/support/decoder_model.h, encoder_model.h).
#pragma once

#include <cstdint>

namespace polygraphy::testing {

/// Sizes and seed of a generated transformer.
struct TransformerSizes {
    int64_t layers = 0;         ///< transformer layers
    int64_t hidden = 0;         ///< hidden size (a multiple of `heads`)
    int64_t heads = 0;          ///< attention heads
    int64_t intermediate = 0;   ///< width of the feed-forward layer (MLP)
    int64_t vocab = 0;          ///< vocabulary (rows of the token embedding)
    int64_t max_positions = 0;  ///< longest sequence (position tables)
    int64_t seed = 0;           ///< seed of the weights (see tensor_seed())

    /// hidden / heads.
    int64_t head_size() const { return hidden / heads; }
};

/// Throws UsageError naming the first size out of range by its command-line flag: a size that is not
/// positive, or `hidden` not a multiple of `heads`.
void validate(const TransformerSizes& sizes);

}  // namespace polygraphy::testing
