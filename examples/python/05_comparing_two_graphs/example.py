#!/usr/bin/env python3
# Compares a model with its float16 conversion layer by layer, as `polygraphy debug diff` does, and
# names the layer whose own error is largest.
from polygraphy.backend.onnx import convert_to_fp16, onnx_from_path, save_onnx
from polygraphy.comparator import diff_graphs, match_graphs

save_onnx(convert_to_fp16(onnx_from_path("example_cnn.onnx")), "example_cnn_fp16.onnx")

# Tensors keep their names in the conversion; the Casts it adds are transparent.
matching = match_graphs("example_cnn.onnx", "example_cnn_fp16.onnx")
print(f"{len(matching['pairs'])} tensors paired, {len(matching['unmatched_b'])} of B unpaired")
assert matching["pairs"] and not matching["unmatched_b"]

result = diff_graphs("example_cnn.onnx", "example_cnn_fp16.onnx", atol=1e-2, rtol=1e-2)
print(result["blame_table"])
blamed = result["blame"][0]
print(f"Largest local error: B's {blamed['b_nodes'][-1]} against A's {blamed['a_nodes']}: "
      f"relative RMS {blamed['local']['relative_rms']:.3g}, SQNR {blamed['figures']['sqnr_db']:.1f} dB")
# float16 rounds each layer to about 3 decimal digits; nothing else differs.
assert all(pair["local"]["relative_rms"] < 5e-3 for pair in result["pairs"])
assert result["passed"]
