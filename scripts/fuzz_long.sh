#!/usr/bin/env bash
# The documented long fuzzing run: each target for 10 million executions or 30 minutes, whichever
# comes first, one target at a time on one core, with a corpus that persists between runs in
# build-fuzz/corpus/<target>/ (seeded by scripts/fuzz_smoke.sh --prepare-only).
#
#   scripts/fuzz_long.sh                     all targets
#   scripts/fuzz_long.sh run_results npy     some targets
#   FUZZ_RUNS=1000000 FUZZ_SECONDS=600 scripts/fuzz_long.sh
#   FUZZ_PROCESSES=2 scripts/fuzz_long.sh onnx_structure   two fuzzing processes, FUZZ_RUNS in all
#   FUZZ_TIMEOUT=120 scripts/fuzz_long.sh    a longer per-unit timeout (seconds) beside other work
#
# With FUZZ_PROCESSES=N, N independent processes (seeds 1 to N) share the corpus folder, each running
# FUZZ_RUNS/N executions; the run stops at the first finding of any of them.
#
# Logs go to build-fuzz/logs/<target>.log; findings to build-fuzz/artifacts/<target>/. Record the
# executions per target and every finding (with its regression test) in RELIABILITY.md.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${FUZZ_RUNS:-10000000}"
seconds="${FUZZ_SECONDS:-1800}"
# libFuzzer's -timeout is wall-clock time: beside builds at a higher priority a niced fuzzer can be
# starved for longer than a unit ever takes alone (RELIABILITY.md, run 20), so a shared machine
# wants a longer one (FUZZ_TIMEOUT=120). A unit that still times out is rerun alone before it counts.
timeout="${FUZZ_TIMEOUT:-25}"
processes="${FUZZ_PROCESSES:-1}"
build=build-fuzz

scripts/fuzz_smoke.sh --prepare-only

targets=("$@")
if [[ ${#targets[@]} == 0 ]]; then
  for binary in "$build"/fuzz/*_fuzzer; do targets+=("$(basename "$binary" _fuzzer)"); done
fi

failed=()
for target in "${targets[@]}"; do
  mkdir -p "$build/corpus/$target" "$build/artifacts/$target" "$build/logs"
  log="$build/logs/$target.log"
  echo "[I] Fuzzing $target: up to $runs executions or $seconds s (log: $log)"
  start=$(date +%s)
  rc=0
  regression=()
  [[ -d fuzz/corpus/$target ]] && regression=("fuzz/corpus/$target")  # committed findings (read only)
  rm -f "$build/logs/$target".*.log
  pids=()
  for ((i = 1; i <= processes; ++i)); do
    job_log="$log"
    [[ $processes != 1 ]] && job_log="$build/logs/$target.$i.log"
    "$build/fuzz/${target}_fuzzer" -runs="$((runs / processes))" -seed="$i" -max_total_time="$seconds" -timeout="$timeout" \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target/" \
      "$build/corpus/$target" "$build/seeds/$target" "${regression[@]}" >"$job_log" 2>&1 &
    pids+=($!)
  done
  # The first process to stop with a finding stops the others (SIGTERM: their exit code is 72).
  while ((${#pids[@]})); do
    wait -n "${pids[@]}" && job_rc=0 || job_rc=$?
    running=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running+=("$pid"); done
    pids=("${running[@]}")
    if [[ $job_rc != 0 && $rc == 0 ]]; then
      rc=$job_rc
      ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null || true
    fi
  done
  if [[ $processes == 1 ]]; then logs=("$log"); else logs=("$build/logs/$target".*.log); fi
  if [[ $rc == 0 ]]; then
    status="no finding"
  elif [[ $rc == 72 ]]; then  # libFuzzer's exit code when SIGINT/SIGTERM stops it
    status="interrupted, no finding"
    failed+=("$target")
  else
    status="FINDING (see $build/artifacts/$target/)"
    failed+=("$target")
  fi
  executions=$(cat "${logs[@]}" | grep -E '^stat::number_of_executed_units' | awk '{sum += $2} END {print sum}')
  echo "    ${executions:-?} executions in $(( $(date +%s) - start )) s: $status"
done

if [[ ${#failed[@]} != 0 ]]; then
  echo "[!] FAILED | fuzz targets with findings or interrupted: ${failed[*]}"
  exit 1
fi
echo "[I] PASSED | long fuzz run: ${targets[*]}"
