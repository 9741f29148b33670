#!/usr/bin/env bash
# The built-in runtime against ONNX Runtime as users meet them (issue 16): the CLI, once per model,
#     polygraphy run M --ref --onnxrt --warm-up 3 --iterations 15 --save-outputs out.json [EXTRA...]
# with the medians of the per-iteration runtimes both runners recorded in out.json (the warm-up runs
# are not recorded). Prints a Markdown table, the geometric mean of the ratios and the load average.
# With -r ROUNDS the command runs ROUNDS times per model and the row gives the medians over the rounds
# (of each runner's median and of the per-round ratio): on this shared machine one round's ratio can
# move by a third.
# usage: bench/ref_vs_onnxrt_cli.sh [-b BUILD_DIR] [-n ITERATIONS] [-r ROUNDS] [-- EXTRA polygraphy flags --] MODEL.onnx[:SHAPE+SHAPE...] ...
#   e.g. bench/ref_vs_onnxrt_cli.sh /work/models/torchvision/*.onnx
#        bench/ref_vs_onnxrt_cli.sh -- --ref-threads 1 --onnxrt-intra-op-threads 1 -- /work/models/torchvision/*.onnx
# MODEL.onnx:SHAPE+SHAPE... passes --input-shapes SHAPE SHAPE... (e.g.
#   encoder.onnx:input_ids:[1,128]+attention_mask:[1,128]).
set -euo pipefail
build=build
iterations=15
rounds=1
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -b) build=$2; shift 2 ;;
    -n) iterations=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --) shift; while [[ $# -gt 0 && $1 != -- ]]; do extra+=("$1"); shift; done; shift || true ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { echo "usage: $0 [-b BUILD_DIR] [-n ITERATIONS] [-r ROUNDS] [-- EXTRA flags --] MODEL.onnx[:SHAPE+SHAPE...] ..." >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); flags: ${extra[*]:-(defaults)}"
echo
echo "| model | ref | ORT | ratio |"
echo "| --- | --- | --- | --- |"
ratios=()
for spec in "$@"; do
  model=${spec%%:*}
  shapes=()
  [[ $spec == *:* ]] && { IFS=+ read -r -a shapes <<<"${spec#*:}"; shapes=(--input-shapes "${shapes[@]}"); }
  # A failed comparison still saves both runners' times: the row says so after the ratio.
  note=""
  failed=""
  for ((round = 0; round < rounds; ++round)); do
    if ! "$build/bin/polygraphy" run "$model" --ref --onnxrt --warm-up 3 --iterations "$iterations" \
        "${shapes[@]}" "${extra[@]}" --save-outputs "$work/out$round.json" >"$work/log.txt" 2>&1; then
      if [[ ! -s $work/out$round.json ]]; then
        failed="failed: $(grep -m1 '^\[!\]\|FAILED' "$work/log.txt" || tail -1 "$work/log.txt")"
        break
      fi
      note=" (outputs differ beyond the default tolerances)"
    fi
  done
  if [[ -n $failed ]]; then
    echo "| $(basename "$model" .onnx) | $failed | | |"
    rm -f "$work"/out*.json
    continue
  fi
  row=$(/usr/bin/python3 - "$(basename "$model" .onnx)" "$work"/out*.json <<'PY'
import json, statistics, sys
refs, orts, ratios = [], [], []
for path in sys.argv[2:]:
    results = json.load(open(path))["lst"]
    ref, ort = [statistics.median(it["runtime"] for it in iterations) * 1e3 for _, iterations in results]  # --ref, then --onnxrt
    refs.append(ref); orts.append(ort); ratios.append(ref / ort)
print(f"| {sys.argv[1]} | {statistics.median(refs):.2f} ms | {statistics.median(orts):.2f} ms | {statistics.median(ratios):.2f}x |")
PY
)
  echo "${row% |}$note |"
  ratios+=("$(echo "$row" | awk -F'|' '{ gsub(/[ x]/, "", $5); print $5 }')")
  rm -f "$work"/out*.json
done
echo
printf '%s\n' "${ratios[@]}" | awk '{ s += log($1); n++ } END { if (n) printf "geometric mean of the ratios: %.2fx over %d models\n", exp(s / n), n }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
