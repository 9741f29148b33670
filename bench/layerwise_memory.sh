#!/usr/bin/env bash
# Peak RSS and wall time of a layer-wise comparison (`--onnx-outputs mark all`, two runners) beside the
# same command without `mark all`, one after the other in one run (issue 15, item 3).
# Usage: bench/layerwise_memory.sh MODEL.onnx [polygraphy run options...]
# e.g.:  bench/layerwise_memory.sh /work/models/torchvision/resnet50.onnx --ref --onnxrt --input-shapes 'input:[16,3,224,224]'
# Run it under the heavy lock on a shared machine: flock /tmp/polygraphy-heavy.lock bench/layerwise_memory.sh ...
set -euo pipefail
model=$1
shift
polygraphy=${POLYGRAPHY:-build/bin/polygraphy}
measure() {
    local label=$1
    shift
    local log
    log=$(mktemp)
    echo "== $label: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "   $polygraphy run $model $* "
    if /usr/bin/time -v "$polygraphy" run "$model" "$@" >"$log.out" 2>"$log"; then status=0; else status=$?; fi
    grep -E "Layer-wise comparison in|PASSED \| [0-9]+/|FAILED \| [0-9]+/|Accuracy Summary" "$log.out" | sed 's/^/   /' || true
    echo "   exit status $status, peak RSS $(awk '/Maximum resident set size/ {printf "%.0f MB", $6 / 1000}' "$log"), wall $(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")"
    echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    rm -f "$log" "$log.out"
}
measure "without mark all" "$@"
measure "mark all" "$@" --onnx-outputs mark all
