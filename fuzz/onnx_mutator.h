// The structure-aware mutator of the onnx_structure fuzz target (issue 33): it parses an input as an
// onnx::ModelProto and changes its structure (node inputs and outputs, attributes and their types,
// subgraph bodies, op types and domains, tensor names, opset imports, declared shapes). Every choice
// comes from a std::minstd_rand seeded with libFuzzer's seed, so a run is reproducible.
#pragma once

#include <cstddef>
#include <cstdint>

#include <onnx/onnx_pb.h>

namespace polygraphy::fuzz {

/// A small valid model, the starting point when an input does not parse: x -> Relu -> Shape, and
/// x -> GlobalAveragePool -> y, at opset 17.
onnx::ModelProto starter_model();

/// Applies a few structural mutations to `model`, drawn from `seed`.
void mutate_structure(onnx::ModelProto& model, unsigned seed);

/// Parses as onnx_from_bytes does (no 64 MiB limit); false when protobuf refuses the bytes.
bool parse_model(const uint8_t* data, std::size_t size, onnx::ModelProto& model);

/// Serializes into `data` when it fits in `max_size`; 0 otherwise.
std::size_t serialize_into(const onnx::ModelProto& model, uint8_t* data, std::size_t max_size);

/// Crossing over: nodes (with their initializers and declarations) of the second model spliced into
/// the first, so that the names of one meet the nodes of the other; 0 when either does not parse
/// or the result does not fit.
std::size_t cross_over(const uint8_t* data1, std::size_t size1, const uint8_t* data2, std::size_t size2, uint8_t* out,
                       std::size_t max_out_size, unsigned seed);

}  // namespace polygraphy::fuzz
