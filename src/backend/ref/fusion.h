// Graph pass of the built-in runtime: activations folded into the convolution that feeds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy::ref {

/// Folds each Relu, Clip with constant bounds, and SiLU (Mul(x, Sigmoid(x)), as PyTorch exports it)
/// whose input is read by nothing else into the Conv or ConvTranspose producing that input
/// (kFusedActivationAttr in ops/families.h): the convolution takes the activation's output name and
/// the activation's nodes are removed, so the activation costs no pass over memory.
///
/// A convolution output stays unfused when anything else reads it (a subgraph included: `node_inputs`
/// holds each node's declared and implicit inputs) or when it is a graph output, so layer-wise runs
/// (`mark all`) still see every layer as written. `default_opset` is the model's ai.onnx opset (it
/// decides where Clip's bounds come from). Returns, per node, whether it was folded into a
/// convolution and must be dropped (the caller drops it, with whatever it keeps per node).
std::vector<bool> fuse_activations(std::vector<onnx::NodeProto>& nodes,
                                   const std::vector<std::vector<std::string>>& node_inputs,
                                   const onnx::GraphProto& graph, int64_t default_opset);

}  // namespace polygraphy::ref
