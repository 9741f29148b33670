// Models for the Polygraphy parity tests of the weight, sparsity and data-dependent-shape tools.
// tests/fixtures/parity/record.sh records Polygraphy's output on exactly these models (written by
// the disabled test ParityFixtures.DISABLED_WriteModels), so the tests can compare with it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model_builder.h"

namespace polygraphy::testing {

/// MatMul, Gemm (transB), Transpose->MatMul, Cast->MatMul and Conv weights eligible for 2:4
/// sparsity (the Conv weight already sparse), a float16 one, an int8 one behind DequantizeLinear
/// (skipped: type), one whose axis is 6 long (skipped), and one behind a Mul (not a weight).
ModelBuilder sparsity_model();

/// Every weight-strip pattern: Conv (weight and bias), Gemm (its weight 2:4 sparse), large and small
/// Gather tables, a large Slice input, QuantizeLinear->DequantizeLinear->MatMul, Transpose->Gemm, and
/// a custom-domain op reading a float and a uint8 initializer.
ModelBuilder strip_model();

/// Unbounded data-dependent shapes: Range whose limit is a ReduceMax (listed), Tile whose repeats
/// are a Shape (listed), Range whose limit is an Identity with no known shape (listed), Range bounded
/// by Min, and Pad whose pads are a graph input (neither listed).
ModelBuilder dds_model();

/// A bfloat16 weight whose values need more digits than half precision shows.
ModelBuilder bf16_weight_model();

/// (file name, model) of every model above, as record.sh expects them.
std::vector<std::pair<std::string, ModelBuilder>> parity_models();

}  // namespace polygraphy::testing
