#!/usr/bin/env bash
# Benchmark of issue 2: load and compare two RunResults files of 4 float32 outputs x 4,000,000
# elements (85 MB each, written in Polygraphy's format), end to end through the CLI:
#     polygraphy run --load-outputs a.json b.json
# Prints the median wall time and peak RSS over N runs, next to Polygraphy's figure on this
# machine (4.7 s, 312 MB; ../shared/BASELINES.md).
# usage: bench/compare_run_results.sh [BUILD_DIR=build] [RUNS=5]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$build/bench/make_run_results" "$work/a.json" --outputs 4 --elements 4000000 --seed 1
"$build/bench/make_run_results" "$work/b.json" --outputs 4 --elements 4000000 --seed 1 --perturb 1e-6
ls -l "$work"/*.json | awk '{ printf "[I] %s: %.1f MB\n", $9, $5 / 1e6 }'

times=()
rss=()
for _ in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$build/bin/polygraphy" run --load-outputs "$work/a.json" "$work/b.json" \
    --atol 1e-3 --rtol 1e-3 >"$work/log.txt" || { echo "[!] comparison failed:"; tail -5 "$work/log.txt"; exit 1; }
  read -r seconds kilobytes <"$work/time.txt"
  times+=("$seconds")
  rss+=("$kilobytes")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
t=$(median "${times[@]}")
m=$(median "${rss[@]}")
awk -v t="$t" -v m="$m" -v runs="$runs" 'BEGIN {
  printf "[I] polygraphy (C++): median %.3f s over %d runs, peak RSS %.0f MB\n", t, runs, m / 1024
  printf "[I] Polygraphy 0.49.27 (Python), same machine: 4.7 s, 312 MB\n"
  printf "[I] speed-up: %.1fx; peak RSS / decoded data (128 MB): %.2fx\n", 4.7 / t, (m / 1024) / 128
}'
