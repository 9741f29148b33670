#!/usr/bin/env bash
# Fuzzing smoke run: configures the `fuzz` preset (clang, libFuzzer, Address + UndefinedBehavior
# sanitizers) in build-fuzz/, builds the fuzz targets, writes their seed corpora, and runs each
# target for a few seconds. Fails when any target finds a crash, hang, leak or sanitizer report
# (the input is kept in build-fuzz/artifacts/<target>/ for a regression test).
#
#   scripts/fuzz_smoke.sh                  all targets, a fixed number of executions each
#   scripts/fuzz_smoke.sh npy base64       some targets
#   FUZZ_SECONDS=30 scripts/fuzz_smoke.sh  random seeds for 30 s each instead (local use)
#   scripts/fuzz_smoke.sh --prepare-only   build and write the seeds only (used by fuzz_long.sh)
#
# Reproducible by default (issue 33): each target runs a fixed number of executions from a fixed
# -seed, over the generated seeds and the committed regression corpus fuzz/corpus/<target>/, so the
# result of CI depends on the code alone. A time cap stops a target that got much slower (a cap, not
# the budget: a target that reaches it fails, so a change never passes by running fewer inputs).
#
# The long run is scripts/fuzz_long.sh; RELIABILITY.md records the runs and their findings.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-}"
# Executions per target (about 5 s each on the 2-core machine under ASan, onnx_structure about 15 s
# after replaying its seeds and corpus; RELIABILITY.md).
declare -A runs=(
  [base64]=50000 [npy]=50000 [npz]=5000 [run_results]=40000 [tensor_proto]=30000
  [onnx_model]=8000 [onnx_structure]=1500 [cli_value_spec]=15000 [cli_args]=3000 [dataset_summary]=10000
  [plugin_files]=30000 [image_codecs]=20000
)
cap_seconds=120
build=build-fuzz
prepare_only=0
targets=()
for arg in "$@"; do
  if [[ "$arg" == --prepare-only ]]; then prepare_only=1; else targets+=("$arg"); fi
done

# clang with its libFuzzer/sanitizer runtime and OpenMP (installed by scripts/setup.sh).
for package in clang libclang-rt-14-dev libomp-14-dev; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    echo "[!] Fuzzing needs the Debian packages clang libclang-rt-14-dev libomp-14-dev ($package is missing):"
    echo "    sudo apt-get install clang libclang-rt-14-dev libomp-14-dev"
    exit 1
  fi
done

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target fuzzers -j"$(nproc)"

# Seeds: the project's own writers, the example models, and Polygraphy's own files when present
# (POLYGRAPHY_SHARED_DIR, default ../shared).
seeds="$build/seeds"
rm -rf "$seeds"
"$build/fuzz/make_seed_corpus" "$seeds"
"$build/bin/make_example_models" "$seeds/onnx_model" >/dev/null
cp "$seeds"/onnx_model/*.onnx "$seeds/onnx_structure/"
shared="${POLYGRAPHY_SHARED_DIR:-../shared}"
if [[ -d "$shared/fixtures/polygraphy-json" ]]; then
  cp "$shared"/fixtures/polygraphy-json/*.json "$seeds/run_results/" 2>/dev/null || true
fi
[[ $prepare_only == 1 ]] && exit 0

if [[ ${#targets[@]} == 0 ]]; then
  for binary in "$build"/fuzz/*_fuzzer; do targets+=("$(basename "$binary" _fuzzer)"); done
fi

failed=()
for target in "${targets[@]}"; do
  work="$(mktemp -d)"
  mkdir -p "$build/artifacts/$target"
  corpora=("$seeds/$target")
  [[ -d fuzz/corpus/$target ]] && corpora+=("fuzz/corpus/$target")
  if [[ -n "$seconds" ]]; then
    limits=(-max_total_time="$seconds")
    echo "[I] Fuzzing $target for ${seconds} s (random seed)"
  else
    limits=(-runs="${runs[$target]:-10000}" -seed=1 -max_total_time="$cap_seconds")
    echo "[I] Fuzzing $target: ${runs[$target]:-10000} executions, seed 1"
  fi
  # The work folder comes first: libFuzzer writes new inputs there, never into the committed corpus.
  if "$build/fuzz/${target}_fuzzer" "${limits[@]}" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$target/" \
      "$work" "${corpora[@]}" >"$work.log" 2>&1; then
    executed=$(grep -E '^stat::number_of_executed_units' "$work.log" | awk '{print $2}')
    if [[ -z "$seconds" ]] && (( executed < ${runs[$target]:-10000} )); then
      failed+=("$target")
      echo "[!] $target: stopped at the ${cap_seconds} s cap after $executed of ${runs[$target]:-10000} executions"
    else
      echo "    $executed executions, no finding"
    fi
  else
    failed+=("$target")
    echo "[!] $target: finding (input in $build/artifacts/$target/)"
    grep -v -E '^#[0-9]+' "$work.log" | tail -40
  fi
  rm -rf "$work" "$work.log"
done

if [[ ${#failed[@]} != 0 ]]; then
  echo "[!] FAILED | fuzz targets with findings: ${failed[*]}"
  exit 1
fi
echo "[I] PASSED | fuzz smoke run: ${targets[*]}"
