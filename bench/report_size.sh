#!/usr/bin/env bash
# Size of `polygraphy run --report x.html` (and of --model-explorer-node-data) for LLaMA-like decoders
# compared layer by layer (--onnx-outputs mark all), float32 against float16, with the time to write
# it and its time to first render in headless Chromium:
#     bench/report_size.sh [BUILD_DIR] [BLOCKS...]        (defaults: build 38 270; 1,413 and 9,997 nodes)
# For any other model: polygraphy run MODEL --ref --onnx-outputs mark all --load-outputs OTHER.json \
#     --report r.html && stat -c %s r.html
set -euo pipefail
build=${1:-build}
shift || true
blocks=("$@")
if ((${#blocks[@]} == 0)); then blocks=(38 270); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
polygraphy="$build/bin/polygraphy"

for n in "${blocks[@]}"; do
  model="$work/decoder_$n.onnx"
  "$build/bench/make_report_models" "$model" --blocks "$n"
  "$polygraphy" convert "$model" --fp-to-fp16 -o "$work/decoder_${n}_fp16.onnx" > "$work/log.txt" 2>&1
  "$polygraphy" run "$work/decoder_${n}_fp16.onnx" --ref --onnx-outputs mark all --save-outputs "$work/fp16.json" \
    >> "$work/log.txt" 2>&1
  # The same command with a JSON report and with an HTML one (which collects histograms while
  # comparing); exit status 1: float16 does not match float32 within these tolerances everywhere.
  for kind in json html; do
    /usr/bin/time -f "%e s wall, %U s user + %S s system CPU, %M KB peak RSS" -o "$work/time_$kind.txt" \
      "$polygraphy" run "$model" --ref --onnx-outputs mark all --load-outputs "$work/fp16.json" --atol 1e-2 \
      --rtol 1e-2 --report "$work/report.$kind" --model-explorer-node-data "$work/node_data.json" \
      >> "$work/log.txt" 2>&1 || true
  done
  compared=$(grep -o '"t":"' "$work/report.html" | wc -l)
  echo "decoder of $n blocks: $compared compared outputs"
  echo "  run --report report.json (whole command): $(tail -1 "$work/time_json.txt")"
  echo "  run --report report.html (whole command): $(tail -1 "$work/time_html.txt")"
  echo "  report.html: $(stat -c %s "$work/report.html") bytes; node_data.json: $(stat -c %s "$work/node_data.json") bytes"
  "$build/bench/report_render_time" "$work/report.html" 5 | sed 's/^/  /'
  if [ -n "${KEEP_REPORTS:-}" ]; then cp "$work/report.html" "$KEEP_REPORTS/decoder_$n.html"; fi
done
