#!/usr/bin/env bash
# Time and peak RSS of `debug diff` on the 1,413-node decoder (bench/make_report_models) against its
# fp16 conversion and its QDQ version, beside a plain `run --ref --onnx-outputs mark all` of the
# decoder, in one run (issue 34: at most 2x the time and 2x the peak memory of that run).
# Usage: bench/debug_diff.sh [WORK_DIR]   (CLI defaults otherwise; POLYGRAPHY=path/to/polygraphy)
set -euo pipefail
work=${1:-$(mktemp -d)}
mkdir -p "$work"
polygraphy=${POLYGRAPHY:-build/bin/polygraphy}
build/bench/make_report_models "$work/decoder.onnx" >/dev/null
"$polygraphy" convert "$work/decoder.onnx" --fp-to-fp16 -o "$work/decoder_fp16.onnx" >/dev/null
build/bench/make_qdq_model "$work/decoder.onnx" "$work/decoder_qdq.onnx"
measure() {
    local label=$1
    shift
    local log
    log=$(mktemp)
    echo "== $label: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "   $polygraphy $*"
    if /usr/bin/time -v "$polygraphy" "$@" >"$log.out" 2>"$log"; then status=0; else status=$?; fi
    grep -E "^\[I\] Paired|^ +1 \|" "$log.out" | sed 's/^/   /' || true
    echo "   exit status $status, peak RSS $(awk '/Maximum resident set size/ {printf "%.0f MB", $6 / 1000}' "$log"), wall $(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")"
    rm -f "$log" "$log.out"
}
for round in 1 2 3; do
    echo "#### round $round"
    measure "run --ref, mark all" run "$work/decoder.onnx" --ref --onnx-outputs mark all
    measure "debug diff against fp16" debug diff "$work/decoder.onnx" "$work/decoder_fp16.onnx"
    measure "debug diff against QDQ" debug diff "$work/decoder.onnx" "$work/decoder_qdq.onnx"
done
