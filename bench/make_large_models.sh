#!/usr/bin/env bash
# Writes the large models of the benchmarks into OUT_DIR (created when missing):
#   OUT_DIR/decoder/decoder.onnx (+ decoder.onnx.data)  LLaMA-shaped decoder: 12 layers, hidden 2048,
#       16 heads, MLP 5504, vocabulary 32000, 2048 positions; 1494 nodes, 2.97 GB of external weights
#   OUT_DIR/encoder/encoder.onnx                         BERT-base-shaped encoder: 12 layers, hidden 768,
#       12 heads, feed-forward 3072, vocabulary 30522, 512 positions; 1113 nodes, 436 MB of weights inside
# Both are generated with seed 0, so every run writes the same bytes. Prints each generator's time and
# peak RSS (the decoder's weights are streamed to disk: its peak stays near 15 MB).
# Needs about 3.5 GB of free disk in OUT_DIR.
# usage: bench/make_large_models.sh OUT_DIR [BUILD_DIR=build]
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 OUT_DIR [BUILD_DIR=build]" >&2
  exit 2
fi
out=$1
build=${2:-build}
for tool in make_decoder_model make_encoder_model; do
  [[ -x "$build/bin/$tool" ]] || { echo "[!] $build/bin/$tool not found: build the project first (scripts/build.sh)"; exit 1; }
done
mkdir -p "$out/decoder" "$out/encoder"
free_kb=$(df -Pk "$out" | awk 'NR == 2 { print $4 }')
if ((free_kb < 3600000)); then
  echo "[!] $out has $((free_kb / 1024)) MB free; the models need about 3.5 GB"
  exit 1
fi

timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
generate() {  # generate TOOL OUT.onnx [options...]
  /usr/bin/time -f "%e %M" -o "$timing" "$build/bin/$1" "${@:2}"
  read -r seconds kilobytes <"$timing"
  awk -v s="$seconds" -v k="$kilobytes" -v t="$1" 'BEGIN { printf "[I] %s: %.1f s, peak RSS %.1f MB\n", t, s, k / 1024 }'
}
generate make_decoder_model "$out/decoder/decoder.onnx"
generate make_encoder_model "$out/encoder/encoder.onnx"
ls -l "$out"/decoder/* "$out"/encoder/* | awk '{ printf "[I] %s: %.1f MB\n", $9, $5 / 1e6 }'
