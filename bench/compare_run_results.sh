#!/usr/bin/env bash
# Benchmark of issue 2: load and compare two RunResults files of 4 float32 outputs x 4,000,000
# elements (85 MB each, written in Polygraphy's format), end to end through the CLI:
#     polygraphy run --load-outputs a.json b.json
# and, when the Python bindings are built (BUILD_DIR/python), issue 20's figure: the same from the
# Python API in a fresh /usr/bin/python3 each run (start-up and `import polygraphy` included):
#     results = load_json("a.json"); results.extend(load_json("b.json"))
#     Comparator.compare_accuracy(results, compare_func=CompareFunc.simple(atol=1e-3, rtol=1e-3))
# The two alternate run by run. Prints the median wall time and peak RSS of each over N runs, next to
# Polygraphy's figure on this machine (4.7 s, 312 MB; ../shared/BASELINES.md).
# usage: bench/compare_run_results.sh [BUILD_DIR=build] [RUNS=5]
set -euo pipefail
build=$(realpath "${1:-build}")
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$build/bench/make_run_results" "$work/a.json" --outputs 4 --elements 4000000 --seed 1
"$build/bench/make_run_results" "$work/b.json" --outputs 4 --elements 4000000 --seed 1 --perturb 1e-6
ls -l "$work"/*.json | awk '{ printf "[I] %s: %.1f MB\n", $9, $5 / 1e6 }'

with_python=
if compgen -G "$build/python/polygraphy/_core*.so" >/dev/null; then
  with_python=1
  cat >"$work/compare.py" <<'PY'
import sys

from polygraphy.comparator import Comparator, CompareFunc
from polygraphy.json import load_json

results = load_json(sys.argv[1])
results.extend(load_json(sys.argv[2]))
if not Comparator.compare_accuracy(results, compare_func=CompareFunc.simple(atol=1e-3, rtol=1e-3)):
    sys.exit("[!] the two files differ")
PY
fi

# Runs a command under /usr/bin/time and appends "seconds kilobytes" to the file $1.
timed() {
  local out=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >"$work/log.txt" 2>&1 || {
    echo "[!] comparison failed: $*"
    tail -5 "$work/log.txt"
    exit 1
  }
  cat "$work/time.txt" >>"$out"
}

echo "[I] load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
  timed "$work/cli.txt" "$build/bin/polygraphy" run --load-outputs "$work/a.json" "$work/b.json" --atol 1e-3 --rtol 1e-3
  if [[ -n "$with_python" ]]; then
    PYTHONPATH="$build/python" timed "$work/python.txt" /usr/bin/python3 "$work/compare.py" "$work/a.json" "$work/b.json"
  fi
done
echo "[I] load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Median of column $2 of the file $1.
median() { cut -d' ' -f"$2" "$1" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# Prints one result line: label, file of timings.
report() {
  awk -v label="$1" -v t="$(median "$2" 1)" -v m="$(median "$2" 2)" -v runs="$runs" 'BEGIN {
    printf "[I] %s: median %.3f s over %d runs, peak RSS %.0f MB; speed-up over Polygraphy %.1fx; peak RSS / decoded data (128 MB) %.2fx\n",
      label, t, runs, m / 1024, 4.7 / t, (m / 1024) / 128
  }'
}
report "polygraphy (C++ CLI)" "$work/cli.txt"
[[ -z "$with_python" ]] || report "Python API (load_json x2 + compare_accuracy, fresh process)" "$work/python.txt"
echo "[I] Polygraphy 0.49.27 (Python), same machine: 4.7 s, 312 MB"
