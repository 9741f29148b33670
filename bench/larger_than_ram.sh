#!/usr/bin/env bash
# A model larger than this machine's memory (issue 38, item 1): the LLaMA-7B-shaped fp32 decoder
# (hidden 4096, 32 layers, intermediate 11008, vocabulary 32000: 27 GB of external weights, streamed
# to disk by make_decoder_model, which never holds them), then
#   polygraphy run decoder.onnx --ref --onnxrt
#   polygraphy run decoder.onnx --ref --onnxrt --onnx-outputs mark all
# at their defaults, each with its peak RSS and time (/usr/bin/time -v) and the slices it ran in.
# ONNX Runtime alone cannot create a session of it here (it copies every weight into its memory); the
# CLI runs both runners in slices whose weights fit --session-memory-budget (default: a quarter of
# the machine's memory). Target: peak RSS under 16 GB.
#   usage: bench/larger_than_ram.sh OUT_DIR [BUILD_DIR=build]
# OUT_DIR needs 27 GB of free disk; the model is kept there (made only when missing).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 OUT_DIR [BUILD_DIR=build]" >&2
  exit 2
fi
mkdir -p "$1"
out=$(realpath "$1")
build=$(realpath "${2:-build}")
polygraphy=$build/bin/polygraphy
[[ -x $polygraphy && -x $build/bin/make_decoder_model ]] || { echo "[!] build the project first"; exit 1; }
model=$out/decoder.onnx
echo "[I] memory: $(awk '/MemTotal/ { print $2 / 1048576 " GiB" }' /proc/meminfo), load average: $(cut -d' ' -f1-3 /proc/loadavg)"

measure() {  # measure LABEL COMMAND...: peak RSS, wall time and the slicing line of the command
  local label=$1 log=$out/$1.log
  shift
  /usr/bin/time -v "$@" >"$log" 2>&1 && status=0 || status=$?
  local rss wall slices
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.2f GiB", $2 / 1048576 }' "$log")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$log")
  slices=$(grep -o "running in [0-9]* slices" "$log" | head -1 || true)
  echo "[I] $label: exit $status, peak RSS $rss, wall $wall${slices:+, $slices} (log: $log)"
}

if [[ ! -f $model ]]; then
  measure generate "$build/bin/make_decoder_model" "$model" --layers 32 --hidden 4096 --heads 32 \
    --intermediate 11008 --vocab 32000 --max-positions 2048
fi
echo "[I] weights: $(($(stat -c %s "$model.data") / 1000000)) MB"
measure outputs "$polygraphy" run "$model" --ref --onnxrt
measure mark_all "$polygraphy" run "$model" --ref --onnxrt --onnx-outputs mark all
