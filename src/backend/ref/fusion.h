// Graph pass of the built-in runtime: bias Adds and activations folded into the node that feeds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy::ref {

/// Folds what ONNX Runtime's CPU graph optimizer also fuses into the node producing it, so that it
/// costs no pass over memory, making that node a fused operator (fused_ops.h):
/// - the bias Add of a MatMul with a float32 matrix weight and a float32 [N] bias (a Linear layer
///   as exporters write it) into the MatMul (the runtime's FusedMatMul; the bias becomes its third
///   input);
/// - a Relu, a Clip with constant bounds, a SiLU (Mul(x, Sigmoid(x))) or a GELU (the Gelu operator
///   with approximate "none", or torch's erf pattern Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5))
///   into the Conv or ConvTranspose before it, or into a MatMul or Gemm whose weight is a float
///   constant (com.microsoft.FusedConv for a Conv's Relu or Clip, com.microsoft.FusedGemm for a
///   Gemm's Relu, otherwise the runtime's FusedConv, FusedConvTranspose, FusedMatMul or FusedGemm);
/// - a Div or Mul by a float32 scalar constant of a MatMul's output or of its A input into a MatMul
///   whose B is computed (attention's scaling; com.microsoft.FusedMatMul's alpha);
/// - the residual Add of a Conv, Add(conv, r) or Add(r, conv), into the Conv (the runtime's
///   FusedConv; r becomes its fourth input), before an activation reading the sum is folded as above.
/// The producer takes the output name of the last folded node, and the folded nodes are removed.
///
/// An output stays unfused when anything else reads it (a subgraph included: `node_inputs` holds
/// each node's declared and implicit inputs) or when it is a graph output, so layer-wise runs
/// (`mark all`) still see every layer as written. `default_opset` is the model's ai.onnx opset (it
/// decides where Clip's bounds come from). Updates `node_inputs` of the nodes that gain an input, and
/// returns, per node, whether it was folded and must be dropped (the caller drops it, with whatever
/// it keeps per node).
std::vector<bool> fuse_activations(std::vector<onnx::NodeProto>& nodes,
                                   std::vector<std::vector<std::string>>& node_inputs, const onnx::GraphProto& graph,
                                   int64_t default_opset);

}  // namespace polygraphy::ref
