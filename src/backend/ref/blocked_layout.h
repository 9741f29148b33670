// Graph pass of the built-in runtime: which activations between convolutions stay channel-blocked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy::ref {

/// Keeps the float32 activations that flow from one 2-D convolution to the next in oneDNN's
/// channel-blocked layout (kBlockedInputAttr in fused_ops.h), as ONNX Runtime's NCHWc pass does:
/// oneDNN's fastest CPU convolutions (1x1 and depthwise) work on that layout, and converting every
/// activation to NCHW and back costs more than some convolutions themselves.
///
/// Tensors that must share a layout form one class: the input and output of an elementwise operator
/// (Relu, Clip, Sigmoid, ...; Add, Mul, ... whose other operand is such a tensor or a constant
/// scalar), of GlobalAveragePool and 2-D MaxPool, the inputs and output of a Concat along axis 1,
/// and a Conv's folded residual with its output. A class is blocked
/// when every tensor in it has at least 8-channel multiples where a Conv reads or writes it, is
/// made by a Conv (float32 constant weight of rank 4, group 1 or depthwise) or by one of those
/// operators, and is read only by them. So graph inputs and outputs, values read by any other
/// operator or a subgraph, and every tensor of a layer-wise run (`mark all`) stay as written.
///
/// A blocked class takes blocks of `widest_block` channels (widest_channel_block(): 16 where oneDNN
/// runs AVX-512 kernels, as ONNX Runtime's NCHWc does there) when all its Conv channel counts are
/// multiples of it, or when only convolutions (and their folded residuals) read and write it, all
/// with one channel count: then its last block is padded, as oneDNN and ONNX Runtime's NCHWc pad it
/// (MobileNetV2's and EfficientNet's 24- and 40-channel bottlenecks). Otherwise it takes blocks of
/// 8, and a convolution between a wide and a narrow class runs in the wide block and reorders the
/// narrow side.
///
/// Makes the convolutions and pools that read or write a blocked tensor the runtime's FusedConv,
/// BlockedMaxPool and BlockedGlobalAveragePool with their layout attributes (`node_inputs` holds
/// each node's declared and implicit inputs) and returns the names of the tensors kept blocked, in
/// node order.
std::vector<std::string> choose_blocked_layouts(std::vector<onnx::NodeProto>& nodes,
                                                const std::vector<std::vector<std::string>>& node_inputs,
                                                const onnx::GraphProto& graph, int64_t widest_block);

}  // namespace polygraphy::ref
