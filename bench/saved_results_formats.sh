#!/usr/bin/env bash
# Size, save and load cost of a layer-wise run's results saved as Polygraphy's JSON and as .npz, side
# by side in one run (issue 15, item 4).
#   usage: bench/saved_results_formats.sh MODEL.onnx [INPUT_SHAPES=input_ids:[1,64]] [BUILD_DIR=build] [WORK=/tmp]
# Runs `run MODEL --ref --onnxrt --onnx-outputs mark all --save-outputs` once per format, then
# `inspect data` (which reads every value of the first iteration for its statistics) on each file,
# each under /usr/bin/time -v. The results files (GBs for the decoder) go to a temporary folder under
# WORK and are removed at the end. Run it alone (flock /tmp/polygraphy-heavy.lock ...).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 MODEL.onnx [INPUT_SHAPES=input_ids:[1,64]] [BUILD_DIR=build] [WORK=/tmp]" >&2
  exit 2
fi
model=$(realpath "$1")
shapes=${2:-input_ids:[1,64]}
build=$(realpath "${3:-build}")
polygraphy=$build/bin/polygraphy
[[ -x $polygraphy ]] || { echo "[!] build the project first"; exit 1; }
work=$(mktemp -d "${4:-/tmp}/saved_results_formats.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "[I] model: $model, shapes: $shapes, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
measure() {  # measure LABEL COMMAND...: one line with wall time and peak RSS
  local label=$1
  shift
  local status=0
  /usr/bin/time -v "$@" >"$work/out" 2>"$work/time" || status=$?
  if ((status > 1)); then  # 1: a failed comparison, whose results are saved all the same
    tail -n 5 "$work/out" "$work/time" >&2
    echo "[!] failed: $*" >&2
    exit 1
  fi
  awk -F': ' -v l="$label" '
    /Elapsed \(wall clock\)/ { wall = $2 }
    /Maximum resident set size/ { rss = $2 }
    END { printf "%-48s wall %10s  peak RSS %6.0f MB\n", l, wall, rss / 1024 }' "$work/time"
}
for format in json npz; do
  file=$work/results.$format
  measure "run ... mark all --save-outputs results.$format" "$polygraphy" run "$model" --ref --onnxrt \
    --input-shapes "$shapes" --onnx-outputs mark all --save-outputs "$file"
  echo "    results.$format: $(stat -c %s "$file") bytes"
done
for format in json npz; do
  measure "inspect data results.$format" "$polygraphy" inspect data "$work/results.$format"
done
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  measure "python3 numpy.load every member of results.npz" /usr/bin/python3 -c \
    'import sys, numpy; f = numpy.load(sys.argv[1]); print(sum(f[k].nbytes for k in f.files if k != "polygraphy.json"))' \
    "$work/results.npz"
fi
echo "[I] load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
