#!/usr/bin/env bash
# The graphs ONNX Runtime runs after its optimizations, on the built-in runtime (issue 35): each model
# is saved by ONNX Runtime at levels basic, extended and all (--onnxrt-save-optimized-model: FusedConv,
# FusedGemm, the Gelu and LayerNorm fusions, the NCHWc blocked operators), then both runtimes run the
# saved graph as it is (ONNX Runtime with its optimizations off) and the outputs are compared.
# usage: bench/ort_optimized_graphs.sh OUT_DIR MODEL.onnx[:SHAPE+SHAPE...] ...
#   e.g. bench/ort_optimized_graphs.sh /tmp/opt /work/models/torchvision/*.onnx \
#            "/work/models/encoder/encoder.onnx:input_ids:[1,128]+attention_mask:[1,128]"
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OUT_DIR MODEL.onnx[:SHAPE+SHAPE...] ..." >&2; exit 2; }
out=$1
shift
polygraphy=${POLYGRAPHY:-build/bin/polygraphy}
mkdir -p "$out"
echo "| model | level | --ref vs --onnxrt (atol 1e-4, rtol 1e-3) |"
echo "| --- | --- | --- |"
status=0
for spec in "$@"; do
  model=${spec%%:*}
  shapes=()
  [[ $spec == *:* ]] && { IFS=+ read -r -a shapes <<<"${spec#*:}"; shapes=(--input-shapes "${shapes[@]}"); }
  name=$(basename "$model" .onnx)
  for level in basic extended all; do
    saved="$out/${name}_$level.onnx"
    "$polygraphy" run "$model" --onnxrt --onnxrt-graph-optimization-level "$level" \
      --onnxrt-save-optimized-model "$saved" "${shapes[@]}" >/dev/null
    if result=$("$polygraphy" run "$saved" --ref --onnxrt --onnxrt-graph-optimization-level disable \
      --atol 1e-4 --rtol 1e-3 "${shapes[@]}" 2>&1); then
      verdict=PASSED
    else
      verdict="FAILED: $(grep -m1 -E '\[!\]|FAILED' <<<"$result")"
      status=1
    fi
    echo "| $name | $level | $verdict |"
  done
done
exit $status
