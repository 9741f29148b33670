#!/usr/bin/env bash
# `debug precision --precision fp16` beside the search onnxconverter-common's auto_convert_mixed_precision
# does (issue 37): the same tool, the same check, the same samples, with `--search node-order` (segments of
# the nodes in graph order, halved while they fail, one full conversion and session per attempt) against
# the default search (one debug diff replay ranks the nodes, bisection, then 1-minimal). Prints, per model
# and search, the evaluations, the wall time, and the nodes kept.
#   usage: bench/precision_search.sh [BUILD_DIR=build] MODEL.onnx:ATOL:RTOL:ITERATIONS[:INPUT_SHAPES] ...
# e.g. bench/precision_search.sh build efficientnet_b0.onnx:1e-3:1e-3:1:input:[1,3,224,224] \
#          decoder.onnx:1e-3:1e-3:1:input_ids:[1,32]
# onnxconverter-common checks one sample per attempt: give ITERATIONS 1 to compare like with like.
# PRECISION_ARGS adds options to every command (e.g. PRECISION_ARGS="--check-cosine 0.999").
set -euo pipefail
build=build
if [[ $# -gt 0 && -d $1 ]]; then build=$1; shift; fi
polygraphy=$(realpath "$build")/bin/polygraphy
[[ -x $polygraphy ]] || { echo "[!] build the project first"; exit 1; }
[[ $# -gt 0 ]] || { echo "usage: $0 [BUILD_DIR] MODEL.onnx:ATOL:RTOL:ITERATIONS[:INPUT_SHAPES] ..." >&2; exit 2; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "[I] load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
printf '%-28s | %-10s | %11s | %8s | %5s | %s\n' model search evaluations "time s" kept "nodes kept"
for spec in "$@"; do
  IFS=: read -r model atol rtol iterations shapes <<<"$spec"
  extra=()
  [[ -n ${shapes:-} ]] && extra=(--input-shapes "${spec#*:*:*:*:}")
  for search in bisect node-order; do
    start=$(date +%s.%N)
    "$polygraphy" debug precision "$model" --precision fp16 --atol "$atol" --rtol "$rtol" --iterations "$iterations" \
      --search "$search" "${extra[@]}" ${PRECISION_ARGS:-} >"$log" 2>&1 || { echo "[!] $model ($search) failed:"; tail -3 "$log"; continue; }
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    evaluations=$(grep -oE '^    [0-9]+ evaluation' "$log" | grep -oE '[0-9]+')
    kept_line=$(grep -E '^\[I\] Keep ' "$log")
    kept=$(echo "$kept_line" | grep -oE 'Keep [0-9]+' | grep -oE '[0-9]+')
    names=$(echo "$kept_line" | sed -E 's/.*float32: ?//' | cut -c1-80)
    printf '%-28s | %-10s | %11s | %8.1f | %5s | %s\n' "$(basename "$model")" "$search" "$evaluations" "$seconds" "$kept" \
      "$names"
  done
done
