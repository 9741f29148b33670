// Pairs of graphs of one network for the tests of `debug diff` (graph matching, local error, blame):
// a small CNN with a branch and its fp16, QDQ, fused and renamed-and-reordered versions, and a
// LayerNormalization against its decomposition. Built in code with seeded weights.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace polygraphy::testing {

/// x [1,3,8,8] -> /conv1/Conv -> /relu1/Relu -> (/branch_a/Conv 3x3, /branch_b/Conv 1x1) -> /add/Add
/// -> /relu2/Relu -> /pool/GlobalAveragePool -> /flatten/Flatten -> /fc/Gemm -> y [1,4]. Tensors are
/// named after their nodes' scopes ("conv1_out", ...); weights "w1", "b1", "w2a", ... (opset 17).
onnx::ModelProto diff_cnn();

/// `model` converted with the project's fp16 conversion (float32 graph inputs and outputs kept).
onnx::ModelProto fp16_version(const onnx::ModelProto& model);

/// `model` with every Conv, Gemm and MatMul whose second input is a weight quantized as ONNX Runtime's
/// QDQ quantizer writes it: each float
/// activation input t read through QuantizeLinear -> `t_QuantizeLinear_Output` -> DequantizeLinear ->
/// `t_DequantizeLinear_Output`, and each weight stored as int8 (`w_quantized`) and read through a
/// DequantizeLinear. Scales are per tensor: a weight's from its largest magnitude, an activation's
/// from 1.5 times its largest magnitude on one random input in [0, 1) (run on the built-in
/// runtime), so that other inputs are not clipped.
onnx::ModelProto qdq_version(const onnx::ModelProto& model);

/// diff_cnn() with /conv1/Conv and /relu1/Relu replaced by one com.microsoft FusedConv (activation
/// Relu) named "/conv1/Conv" that writes the Relu's output, as ONNX Runtime's extended optimizations do.
onnx::ModelProto fused_version(const onnx::ModelProto& model);

/// `model` with every tensor and node renamed ("t<N>", "n<N>"; graph inputs keep their names unless
/// `rename_inputs`, which names them "in<N>") and its two branches' nodes in the other order.
onnx::ModelProto renamed_reordered_version(const onnx::ModelProto& model, bool rename_inputs = false);

/// x [2,16] -> /fc1/MatMul -> /ln/LayerNormalization -> /fc2/MatMul -> y, at opset 17.
onnx::ModelProto layer_norm_model();
/// layer_norm_model() with the LayerNormalization decomposed into 9 nodes as opset-16 exports write
/// it (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add), writing the same tensor.
onnx::ModelProto decomposed_layer_norm_model();

/// Multiplies the initializer `name` of `model` by `factor` (the planted fault); InternalError when
/// there is none. A quantized weight ("<name>_quantized") or activation has its scale ("<name>_scale")
/// multiplied instead.
void scale_weight(onnx::ModelProto& model, const std::string& name, float factor);

}  // namespace polygraphy::testing
