#!/usr/bin/env bash
# A sharded dataset comparison on a real (one-node, throwaway) Slurm cluster, the way a user runs it
# with examples/cluster/: a job array of 4 shards plus a dependent merge job, whose summary must equal
# the unsharded run's; then again with one shard requeued while it runs, which must run again and
# leave the merge exact. Needs root and Debian's munge, slurmctld, slurmd and slurm-client; without
# them it is skipped (exit 77).
#
#   slurm_shards_test.sh POLYGRAPHY MODEL WORKDIR
set -euo pipefail

if (($# != 3)); then
  echo "usage: $0 POLYGRAPHY MODEL WORKDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
examples=$here/../../examples/cluster
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
polygraphy=$(abs "$1")
model=$(abs "$2")
work=$(abs "$3")
python=/usr/bin/python3

info() { echo "[I] $*"; }
fail() {
  echo "[E] $*" >&2
  exit 1
}

if [ "$(id -u)" -ne 0 ]; then
  echo "[W] skipped: the test cluster's daemons must run as root"
  exit 77
fi
for cmd in munged slurmctld slurmd sbatch squeue scontrol; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "[W] skipped: $cmd not found (scripts/setup.sh installs munge, slurmctld, slurmd, slurm-client)"
    exit 77
  fi
done

# shellcheck source-path=SCRIPTDIR source=slurm_cluster.sh
source "$here/slurm_cluster.sh"
submit_pid=""
cleanup() {
  if [ -n "$submit_pid" ]; then
    kill "$submit_pid" 2>/dev/null || true
  fi
  slurm_cluster_stop
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

rm -rf "$work"
mkdir -p "$work"
cd "$work"  # the jobs start here too

# Prints job $1's scontrol record, one line.
job_record() { timeout 10 scontrol show job -o "$1" 2>/dev/null || true; }
# Prints field $2 of job $1's record.
job_field() { job_record "$1" | grep -o "\b$2=[^ ]*" | head -n 1 | cut -d= -f2- || true; }

# The summaries of the sharded and of the unsharded run agree but for the shard keys.
compare_summaries() {
  "$python" - "$1" "$2" <<'EOF'
import json, sys
merged, whole = (json.load(open(path)) for path in sys.argv[1:3])
if merged.get("shard_count", 4) != 4:
    sys.exit(f"[E] merged shard_count is {merged.get('shard_count')}, not 4")
for summary in (merged, whole):
    summary.pop("shard_count", None)
    summary.pop("shards", None)
if merged != whole:
    keys = sorted(k for k in merged.keys() | whole.keys() if merged.get(k) != whole.get(k))
    sys.exit(f"[E] {sys.argv[1]} differs from {sys.argv[2]} in {keys}")
print(f"[I] {sys.argv[1]} equals the unsharded summary ({len(whole)} keys besides the shard keys)")
EOF
}

# ---- the cluster ----
SLURM_CLUSTER_TIMEOUT=60 slurm_cluster_start "$work/cluster"

# ---- the dataset: 12 samples of the model's inputs, one .npz each ----
timeout 60 "$polygraphy" inspect model "$model" >"$work/inspect.txt" ||
  fail "polygraphy inspect model failed: $(cat "$work/inspect.txt")"
"$python" - "$work/inspect.txt" "$work/dataset" <<'EOF'
import os, re, sys
import numpy as np
text = open(sys.argv[1]).read()
section = text.split("Graph Input(s) ----", 1)[1].split("----", 1)[0]
inputs = re.findall(r"(?:\{|, )([^\s\[\]{},]+) \[dtype=(\w+), shape=\(([^)]*)\)\]", section)
if not inputs:
    sys.exit(f"[E] no inputs in `polygraphy inspect model` output:\n{text}")
os.makedirs(sys.argv[2])
rng = np.random.default_rng(2024)
for sample in range(12):
    arrays = {}
    for name, dtype, shape in inputs:
        dims = [int(d) if d.strip().lstrip("-").isdigit() and int(d) > 0 else 1 for d in shape.split(",") if d.strip()]
        arrays[name] = rng.standard_normal(dims).astype(dtype)
    np.savez(os.path.join(sys.argv[2], f"sample_{sample:03d}.npz"), **arrays)
print(f"[I] dataset: 12 samples of {', '.join(f'{n} {d} ({s})' for n, d, s in inputs)}")
EOF

# ---- the unsharded comparison, here ----
info "unsharded run"
# Every layer's output is compared too: the summaries hold more to add up.
timeout 180 "$polygraphy" run "$model" --ref --onnxrt --onnx-outputs mark all --load-inputs "$work/dataset" \
  --save-summary "$work/unsharded.json" >"$work/unsharded.log" 2>&1 ||
  fail "the unsharded run failed (exit $?): $(tail -n 20 "$work/unsharded.log")"

# Shard tasks and merge jobs' output, for failures.
show_logs() {
  local log
  for log in "$1"/logs/*.out; do
    [ -f "$log" ] || continue
    echo "---- $log ----" >&2
    tail -n 15 "$log" >&2
  done
}

# ---- 4 shards as a job array, and the merge after them ----
export POLYGRAPHY=$polygraphy
info "4 shards and the merge through submit_shards.sh"
status=0
timeout 240 "$examples/submit_shards.sh" -n 4 -o "$work/sharded" -w "$model" "$work/dataset" \
  --onnx-outputs mark all >"$work/sharded.log" 2>&1 || status=$?
cat "$work/sharded.log"
if ((status != 0)); then
  show_logs "$work/sharded"
  squeue >&2 || true
  fail "the sharded comparison failed (exit $status)"
fi
[ -f "$work/sharded/summary.html" ] || fail "no merged report $work/sharded/summary.html"
compare_summaries "$work/sharded/summary.json" "$work/unsharded.json"

# ---- again, requeueing a shard while it runs ----
# Each shard sleeps SHARD_DELAY seconds first, so that it can be caught running. Two run at once on
# 2 CPUs: task 1 starts at once, is requeued, and starts again once a CPU is free and its credential
# has expired (slurm_cluster.sh sets cred_expire to 5 s; Slurm's default makes that 2 minutes).
info "4 shards again, with array task 1 requeued while it runs"
# The log exists before the background job's redirection opens it: the loop below reads it at once.
: >"$work/requeue.log"
SHARD_DELAY=8 timeout 240 "$examples/submit_shards.sh" -n 4 -o "$work/requeue" -w "$model" "$work/dataset" \
  --onnx-outputs mark all >"$work/requeue.log" 2>&1 &
submit_pid=$!
deadline=$((SECONDS + 30))
array=""
until [ -n "$array" ]; do
  array=$(sed -n 's/^array job: //p' "$work/requeue.log" || true)
  ((SECONDS < deadline)) || fail "submit_shards.sh printed no array job id: $(cat "$work/requeue.log")"
  sleep 0.2
done
deadline=$((SECONDS + 60))
until [ "$(job_field "${array}_1" JobState)" = RUNNING ]; do
  ((SECONDS < deadline)) || fail "array task ${array}_1 never ran: $(job_record "${array}_1")"
  sleep 0.2
done
sleep 1
info "requeueing ${array}_1"
timeout 10 scontrol requeue "${array}_1" || fail "scontrol requeue ${array}_1 failed"
status=0
wait "$submit_pid" || status=$?
cat "$work/requeue.log"
if ((status != 0)); then
  show_logs "$work/requeue"
  squeue >&2 || true
  fail "the sharded comparison with a requeued task failed (exit $status)"
fi
restarts=$(job_field "${array}_1" Restarts)
[ "$restarts" = 1 ] || fail "array task ${array}_1 restarted ${restarts:-?} times, not once: $(job_record "${array}_1")"
grep -q "run 1 after requeues" "$work/requeue/logs/shard_${array}_1.out" ||
  fail "array task ${array}_1 did not run again: $(cat "$work/requeue/logs/shard_${array}_1.out")"
for task in 0 2 3; do
  restarts=$(job_field "${array}_$task" Restarts)
  [ "$restarts" = 0 ] || fail "array task ${array}_$task restarted ${restarts:-?} times"
done
# The job completion log has a line per run: the requeued one and the final one for task 1, one
# for the merge.
jobcomp=$work/cluster/log/jobcomp.txt
task_job=$(job_field "${array}_1" JobId)
runs=$(grep -c "^JobId=$task_job " "$jobcomp" || true)
[ "$runs" = 2 ] || fail "array task ${array}_1 (job $task_job) ended $runs times, not twice: $(cat "$jobcomp")"
merge=$(sed -n 's/^merge job: //p' "$work/requeue.log")
[ "$(job_field "$merge" JobState)" = COMPLETED ] || fail "merge job $merge: $(job_record "$merge")"
runs=$(grep -c "^JobId=$merge " "$jobcomp" || true)
[ "$runs" = 1 ] || fail "merge job $merge ended $runs times, not once"
submit_pid=""
compare_summaries "$work/requeue/summary.json" "$work/unsharded.json"

info "passed"
