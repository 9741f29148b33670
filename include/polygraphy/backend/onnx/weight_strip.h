// Weight stripping for TensorRT's weight-stripped engines (`polygraphy surgeon weight-strip` and
// `weight-reconstruct`; Polygraphy's tools/surgeon/subtool/weight_strip.py and weight_reconstruct.py).
//
// A stripped initializer keeps its name, type and dims but holds no data, and its doc_string says
// `TRT_WEIGHTLESS/` (or `TRT_WEIGHTLESS/SPARSE_2_4` when its values followed 2:4 sparsity); the
// model's doc_string gets `TRT_WEIGHTLESS` appended (joined with '-'). The log lines are Polygraphy's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// The doc_string marker of a stripped initializer, and the suffix of a sparse one.
inline constexpr const char* kWeightlessMarker = "TRT_WEIGHTLESS";
/// See kWeightlessMarker.
inline constexpr const char* kSparseMarker = "SPARSE_2_4";

/// The initializers weight-strip would strip, in the model's initializer order. Eligible: the
/// initializer inputs of the top-level nodes that match Polygraphy's patterns:
/// - Conv, ConvTranspose, Gemm (2 or 3 inputs), MatMul, Gather (2 inputs), Slice (3 to 5 inputs):
///   every input (Slice: only its data input);
/// - QuantizeLinear -> DequantizeLinear -> Conv/ConvTranspose (data input), Gemm or MatMul (any
///   input): the QuantizeLinear's input 0, when the intermediate tensors have no other reader and
///   are not graph outputs;
/// - Transpose -> the same ops: the Transpose's input;
/// - nodes whose op is not an ONNX operator (plugins): every input.
/// Never eligible: uint8 initializers, names in `exclude`, Gather and Slice inputs of fewer than
/// 1024 elements, and empty Conv/ConvTranspose/Gemm inputs.
std::vector<std::string> find_strippable_weights(const onnx::ModelProto& model,
                                                 const std::set<std::string>& exclude = {});

/// Strips the initializers find_strippable_weights() names, in place (all their data fields, raw,
/// typed and external, are cleared), marking each as sparse or not (check_sparsity() runs first,
/// with its log lines). Names of `exclude` that are not initializers get one warning. Returns the
/// number stripped; the model doc_string is marked only when it is not zero.
std::size_t strip_weights(onnx::ModelProto& model, const std::set<std::string>& exclude = {});

/// Fills every stripped initializer (doc_string starting with the marker) with normally distributed
/// values converted to its type (numpy's `randn().astype()`: integers truncate), drawn from a
/// generator seeded with `seed`, then prunes those marked SPARSE_2_4 to 2:4 sparsity
/// (prune_model_2_4; the others are skipped with its warning). Returns the number reconstructed.
/// FormatError, and the model unchanged, when a marked initializer still holds data or its
/// doc_string is not one strip_weights writes.
std::size_t reconstruct_weights(onnx::ModelProto& model, uint64_t seed = 1);

}  // namespace polygraphy
