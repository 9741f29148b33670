#!/usr/bin/env bash
# Peak memory of polygraphy on a model with external weights over 2 GiB, beside ONNX Runtime's own
# on the same model (issue 15, items 1 and 2; issue 36 item 1: both runners at sequences 1, 32 and 512,
# failing when --ref holds more than 1.15x the weights plus the activations), then every tool end to
# end on it (item 6).
#   usage: bench/big_model_memory.sh MODEL.onnx [BUILD_DIR=build] [INPUT_SHAPES=input_ids:[1,1]]
# MODEL is e.g. the decoder of bench/make_large_models.sh (2.97 GB of external weights). The commands
# run one at a time (the machine's memory is shared); each line gives the peak RSS from
# /usr/bin/time -v and the ratio to ONNX Runtime's own (environment + session from the file + first
# Run, in build/bench/onnxrt_bench --direct-startup, which sets dynamic dimensions to 1).
# The tools of the second part write their results into a temporary folder beside the model (several
# GB of disk each, removed after each command).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 MODEL.onnx [BUILD_DIR=build] [INPUT_SHAPES=input_ids:[1,1]]" >&2
  exit 2
fi
model=$(realpath "$1")
build=$(realpath "${2:-build}")
shapes=${3:-input_ids:[1,1]}
polygraphy=$build/bin/polygraphy
[[ -x $polygraphy && -x $build/bench/onnxrt_bench ]] || { echo "[!] build the project and its benchmarks first"; exit 1; }
[[ -f $model ]] || { echo "[!] $model not found"; exit 1; }

log=$(mktemp)
work=$(mktemp -d "$(dirname "$model")/big_model_memory.XXXXXX")
trap 'rm -rf "$log" "$work"' EXIT

weights=$(find "$(dirname "$model")" -maxdepth 1 -name "$(basename "$model").data" -printf '%s')
echo "[I] model: $model, external weights: $((weights / 1000000)) MB, load average: $(cut -d' ' -f1-3 /proc/loadavg)"

peak_kb() {  # peak_kb COMMAND...: runs it, prints its peak RSS in kB; fails with its output if it fails
  if ! /usr/bin/time -v "$@" >"$log.out" 2>"$log"; then
    cat "$log.out" "$log" >&2
    echo "[!] failed: $*" >&2
    exit 1
  fi
  awk -F': ' '/Maximum resident set size/ { print $2 }' "$log"
}
report() {  # report LABEL KB
  awk -v l="$1" -v k="$2" -v o="$ort" -v w="$weights" \
    'BEGIN { printf "%-52s %8.0f MB  %.2fx ORT  %.2fx weights\n", l, k / 1024, k / o, k * 1024 / w }'
}

ort=$(peak_kb "$build/bench/onnxrt_bench" --direct-startup "$model")
report "ONNX Runtime alone (session from the path + Run)" "$ort"
run=("$polygraphy" run "$model" --input-shapes "$shapes")
report "run --onnxrt (the file, unchanged)" "$(peak_kb "${run[@]}" --onnxrt)"
report "run --onnxrt --onnx-outputs logits (modified)" "$(peak_kb "${run[@]}" --onnxrt --onnx-outputs logits)"
report "run --onnxrt --shape-inference (modified)" "$(peak_kb "${run[@]}" --onnxrt --shape-inference)"
report "run --ref" "$(peak_kb "${run[@]}" --ref)"
# Both runners at three sequence lengths (issue 36): the built-in runtime must hold the weights once,
# at most 1.15x them plus the activations; the script fails when it does not, so that a change that
# keeps a second copy of the weights cannot pass unnoticed.
for seq in 1 32 512; do
  ref_kb=$(peak_kb "$polygraphy" run "$model" --ref --input-shapes "input_ids:[1,$seq]")
  ort_kb=$(peak_kb "$polygraphy" run "$model" --onnxrt --input-shapes "input_ids:[1,$seq]")
  report "run --ref, input_ids [1, $seq]" "$ref_kb"
  report "run --onnxrt, input_ids [1, $seq]" "$ort_kb"
  # The activations: what ONNX Runtime holds above the weights at this length (at least none).
  if ! awk -v r="$ref_kb" -v o="$ort_kb" -v w="$weights" \
    'BEGIN { a = o * 1024 - w; if (a < 0) a = 0; exit !(r * 1024 <= 1.15 * w + a) }'; then
    echo "[!] run --ref at [1, $seq] holds more than 1.15x the weights plus the activations"
    exit 1
  fi
done

echo "[I] every tool on the model (outputs in $work, removed after each):"
tool() {  # tool LABEL OUTPUT COMMAND...: runs it, checks the output loads, removes it
  local label=$1 out=$2
  shift 2
  local kb
  kb=$(peak_kb "$@")
  if [[ -n $out ]]; then
    peak_kb "$polygraphy" inspect model "$out" >/dev/null
    local size
    size=$(du -cb "$out"* | tail -1 | cut -f1)
    rm -f "$out" "$out.data"
    awk -v l="$label" -v k="$kb" -v s="$size" 'BEGIN { printf "%-52s %8.0f MB peak, wrote %.0f MB\n", l, k / 1024, s / 1e6 }'
  else
    awk -v l="$label" -v k="$kb" 'BEGIN { printf "%-52s %8.0f MB peak\n", l, k / 1024 }'
  fi
}
tool "run --onnxrt --save-onnx" "$work/saved.onnx" "${run[@]}" --onnxrt --save-onnx "$work/saved.onnx"
tool "surgeon sanitize --fold-constants" "$work/sanitized.onnx" \
  "$polygraphy" surgeon sanitize "$model" --fold-constants -o "$work/sanitized.onnx"
tool "surgeon extract --outputs logits:auto" "$work/extracted.onnx" \
  "$polygraphy" surgeon extract "$model" --outputs logits:auto -o "$work/extracted.onnx"
tool "surgeon insert (Identity on logits)" "$work/inserted.onnx" \
  "$polygraphy" surgeon insert "$model" --inputs logits --outputs logits --op Identity -o "$work/inserted.onnx"
tool "convert --fp-to-fp16" "$work/fp16.onnx" "$polygraphy" convert "$model" --fp-to-fp16 -o "$work/fp16.onnx"
tool "check lint" "" "$polygraphy" check lint "$model" --input-shapes "$shapes"
# One iteration: the check passes on the whole model, so reduce stops there ("nothing to reduce", exit
# 1); a full bisection writes the weights once per iteration. The artifact and its .data must be gone.
(cd "$work" && peak_kb "$polygraphy" debug reduce "$model" -o reduced.onnx --model-input-shapes "$shapes" \
  --check true) 2>/dev/null || true
awk -v k="$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log")" \
  'BEGIN { printf "%-52s %8.0f MB peak\n", "debug reduce (one iteration, artifact saved)", k / 1024 }'
[[ -z $(ls -A "$work") ]] || { echo "[!] debug reduce left files behind: $(ls "$work")"; exit 1; }
echo "[I] load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
