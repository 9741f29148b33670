#!/usr/bin/env bash
# Compares a model over a dataset on a Slurm cluster, in shards: a job array of N tasks
# (slurm_shards.sbatch, one shard each), then a job that merges their summaries once all of them
# succeeded.
#
#   examples/cluster/submit_shards.sh [-n N] [-o DIR] [-w] [-d afterok|afterany] MODEL DATASET [RUN ARGS...]
#
#   -n N     number of shards, i.e. array tasks (default 4)
#   -o DIR   results: DIR/parts/shard_<i>.json, DIR/summary.json, DIR/summary.html and the jobs'
#            output in DIR/logs/ (default: polygraphy-shards)
#   -w       wait for the merge job to end (sbatch --wait) and exit with its status
#   -d TYPE  when the merge may start (default afterok: every shard passed; afterany also merges
#            the summaries of shards whose comparison failed)
#   RUN ARGS more `polygraphy run` arguments (e.g. --onnx-outputs mark all), after RUN_ARGS
#
# Environment: POLYGRAPHY (the program, default polygraphy on PATH), RUN_ARGS (the runners, default
# "--ref --onnxrt") and SHARD_DELAY (see slurm_shards.sbatch), and sbatch's own SBATCH_* variables
# (SBATCH_PARTITION, SBATCH_ACCOUNT, ...).
# Prints "array job: ID" and "merge job: ID".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

shards=4 out=polygraphy-shards wait=0 dependency=afterok
while getopts "n:o:wd:h" opt; do
  case $opt in
    n) shards=$OPTARG ;;
    o) out=$OPTARG ;;
    w) wait=1 ;;
    d) dependency=$OPTARG ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if (($# < 2)); then
  echo "usage: $0 [-n N] [-o DIR] [-w] [-d afterok|afterany] MODEL DATASET [RUN ARGS...]" >&2
  exit 2
fi

# Absolute paths: the jobs may start in another directory (sbatch --chdir, a batch host's home).
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
export MODEL DATASET PARTS POLYGRAPHY
MODEL=$(absolute "$1")
DATASET=$(absolute "$2")
shift 2
out=$(absolute "$out")
PARTS=$out/parts
POLYGRAPHY=${POLYGRAPHY:-$(command -v polygraphy || echo polygraphy)}
mkdir -p "$PARTS" "$out/logs"
# Parts of an earlier submission would be merged with this one's.
rm -f "$PARTS"/shard_*.json "$out/summary.json" "$out/summary.html"

# The shards: tasks 0..N-1; each saves $PARTS/shard_<task>.json.
array=$(sbatch --parsable --array="0-$((shards - 1))" --output="$out/logs/shard_%A_%a.out" \
  "$here/slurm_shards.sbatch" "$@")
array=${array%%;*}  # "ID;cluster" on multi-cluster setups
echo "array job: $array"

# The merge: starts when every task of the array has ended as the dependency asks (a requeued task
# counts once it has run again); cancelled when that can no longer happen.
merge_cmd="$(printf '%q' "$POLYGRAPHY") data merge $(printf '%q' "$PARTS")/shard_*.json"
merge_cmd+=" -o $(printf '%q' "$out/summary.json") --report $(printf '%q' "$out/summary.html")"
merge_args=(--parsable --job-name=polygraphy-merge --dependency="$dependency:$array"
  --kill-on-invalid-dep=yes --output="$out/logs/merge_%j.out" --wrap="$merge_cmd")
if ((wait)); then
  # sbatch prints the merge job's id when it submits it, then returns its exit status at the end.
  printf 'merge job: '
  status=0
  sbatch --wait "${merge_args[@]}" || status=$?
  # A merge job cancelled before it started (a shard failed) also ends `sbatch --wait` with 0.
  if ((status == 0)) && [ ! -f "$out/summary.json" ]; then
    status=1
  fi
  if ((status == 0)); then
    echo "[I] merged: $out/summary.json, $out/summary.html"
  else
    echo "[E] no merge: a shard or the merge job failed, or the merge was cancelled (exit status" \
      "$status); see $out/logs/ and \`scontrol show job $array\`" >&2
  fi
  exit "$status"
fi
merge=$(sbatch "${merge_args[@]}")
echo "merge job: ${merge%%;*}"
