# shellcheck shell=bash
# A throwaway one-node Slurm cluster for tests, run as root from Debian 12's packages (munge,
# slurmctld, slurmd, slurm-client). Source this file, then:
#
#   slurm_cluster_start WORKDIR   # writes WORKDIR/slurm.conf, starts munged, slurmctld and slurmd,
#                                 # exports SLURM_CONF and waits until the node is idle
#   ...sbatch/squeue/scontrol...  # talk to that cluster through $SLURM_CONF
#   slurm_cluster_stop            # cancels its jobs and stops every daemon it started
#
# Nothing goes through systemd or /etc: it also works in a bare Debian root without an init system.
# Configuration, state, spool, logs and pid files live in WORKDIR (sockets go to a short folder under
# /tmp when WORKDIR's path is too long for them). The daemons run in the foreground as children of the
# calling shell, so their pids are known exactly; callers should `trap slurm_cluster_stop EXIT`.
# No cgroups are used (proctrack/linuxproc, task/none), and the node gets the machine's CPUs so that
# as many one-CPU jobs run at once (select/cons_tres with CR_CPU).
#
# Environment knobs: SLURM_CLUSTER_TIMEOUT (seconds to wait for the node, default 60),
# SLURM_CLUSTER_CTLD_PORT / SLURM_CLUSTER_SLURMD_PORT (defaults: the first free ports from 26817
# and 26818), SLURM_CLUSTER_CRED_EXPIRE (seconds a requeued job waits before it may start again;
# Slurm's default is 120, here 5).

SLURM_CLUSTER_DIR=""
SLURM_CLUSTER_RUNTIME_DIR=""
SLURM_CLUSTER_OWN_RUNTIME_DIR=0
SLURM_CLUSTER_PIDS=()

_slurm_cluster_info() { echo "[I] slurm_cluster: $*"; }
_slurm_cluster_error() { echo "[E] slurm_cluster: $*" >&2; }

# True when something listens on TCP port $1 (read from /proc: no ss/netstat in a bare root).
_slurm_cluster_port_in_use() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v port="$hex" 'FNR > 1 && $4 == "0A" { split($2, a, ":"); if (a[2] == port) found = 1 }
                      END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# The first port from $1 on that nothing listens on, skipping $2 (if given).
_slurm_cluster_free_port() {
  local port=$1
  while _slurm_cluster_port_in_use "$port" || [ "$port" = "${2:-}" ]; do
    port=$((port + 1))
    if ((port > $1 + 200)); then
      _slurm_cluster_error "no free TCP port in $1..$port"
      return 1
    fi
  done
  echo "$port"
}

# True when every folder on the way to $1 lets others through (munged refuses a socket elsewhere).
_slurm_cluster_traversable() {
  local path=$1
  while [ "$path" != / ] && [ -n "$path" ]; do
    [ "$(($(stat -c '0%a' "$path") & 1))" = 1 ] || return 1
    path=$(dirname "$path")
  done
}

# The last lines of each daemon's log, for error messages.
_slurm_cluster_log_tails() {
  local log
  for log in "$SLURM_CLUSTER_DIR"/log/*.log "$SLURM_CLUSTER_DIR"/log/*.stderr; do
    [ -f "$log" ] || continue
    # A daemon's stderr repeats its log file; it matters only when the log file was never opened.
    [[ $log == *.stderr && -f ${log%.stderr}.log ]] && continue
    echo "---- last lines of $log ----" >&2
    tail -n 25 "$log" >&2
  done
}

# Starts one daemon in the foreground, in the background of this shell; remembers its pid.
_slurm_cluster_spawn() {
  local name=$1
  shift
  # munged in the foreground logs to stderr only; slurmctld and slurmd log to their log files too.
  local console=$SLURM_CLUSTER_DIR/log/$name.stderr
  [ "$name" = munged ] && console=$SLURM_CLUSTER_DIR/log/munged.log
  "$@" </dev/null >>"$console" 2>&1 &
  SLURM_CLUSTER_PIDS+=("$!")
  echo "$! $name" >>"$SLURM_CLUSTER_DIR/run/pids"
}

# True while process $1 runs (a zombie does not count). Reads /proc: procps may be missing.
_slurm_cluster_alive() {
  local stat
  stat=$({ cat "/proc/$1/stat"; } 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# Process $1 and all its descendants, parents first.
_slurm_cluster_tree() {
  local pid stat ppid
  local -a queue=("$1")
  local -A children=()
  for stat in /proc/[0-9]*/stat; do
    pid=${stat#/proc/}
    pid=${pid%/stat}
    stat=$({ cat "$stat"; } 2>/dev/null) || continue
    stat=${stat##*) }
    read -r _ ppid _ <<<"$stat"
    children[$ppid]+=" $pid"
  done
  while ((${#queue[@]})); do
    pid=${queue[0]}
    queue=("${queue[@]:1}")
    echo "$pid"
    # shellcheck disable=SC2206
    queue+=(${children[$pid]:-})
  done
}

# Stops the processes listed in WORKDIR/run/pids by an earlier start that could not stop them (its
# shell was killed), if they are still the daemons it started (same command line).
_slurm_cluster_kill_stale() {
  local pids_file=$1/run/pids pid name
  [ -f "$pids_file" ] || return 0
  while read -r pid name; do
    if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$1"; then
      _slurm_cluster_info "stopping $name (pid $pid) left over by an earlier run"
      kill -TERM "$pid" 2>/dev/null || true
      sleep 1
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done <"$pids_file"
  rm -f "$pids_file"
  for pid in $(_slurm_cluster_stepds "$1"); do
    _slurm_cluster_info "killing slurmstepd (pid $pid) and its job, left over by an earlier run"
    # shellcheck disable=SC2046
    kill -KILL $(_slurm_cluster_tree "$pid") 2>/dev/null || true
  done
  if [ -f "$1/run/runtime_dir" ]; then
    rm -rf "$(cat "$1/run/runtime_dir")"
  fi
}

slurm_cluster_start() {
  local workdir=${1:?usage: slurm_cluster_start WORKDIR}
  local timeout=${SLURM_CLUSTER_TIMEOUT:-60}
  local host cmd cpus sockets cores threads ctld_port slurmd_port socket deadline state

  if [ "$(id -u)" -ne 0 ]; then
    _slurm_cluster_error "must run as root (the daemons and jobs run as root)"
    return 1
  fi
  for cmd in munged slurmctld slurmd sinfo sbatch squeue scontrol scancel; do
    if ! command -v "$cmd" >/dev/null 2>&1; then
      _slurm_cluster_error "$cmd not found (apt-get install munge slurmctld slurmd slurm-client)"
      return 1
    fi
  done
  if [ -n "$SLURM_CLUSTER_DIR" ]; then
    _slurm_cluster_error "a cluster is already running in $SLURM_CLUSTER_DIR"
    return 1
  fi

  mkdir -p "$workdir"
  workdir=$(cd "$workdir" && pwd -P)
  _slurm_cluster_kill_stale "$workdir"
  SLURM_CLUSTER_DIR=$workdir
  SLURM_CLUSTER_PIDS=()
  _slurm_cluster_unmount_cgroup "$workdir"
  rm -rf "$workdir/state" "$workdir/log" "$workdir/run" "$workdir/spool" "$workdir/munge"
  mkdir -p "$workdir/state" "$workdir/log" "$workdir/run"
  chmod 755 "$workdir"

  # Unix socket paths are limited to 107 bytes (slurmstepd's sockets in the spool folder are named
  # after the node and the job step), and munged wants a socket everyone can reach.
  host=$(hostname -s)
  if ((${#workdir} + ${#host} <= 75)) && _slurm_cluster_traversable "$workdir"; then
    SLURM_CLUSTER_RUNTIME_DIR=$workdir
    SLURM_CLUSTER_OWN_RUNTIME_DIR=0
  else
    SLURM_CLUSTER_RUNTIME_DIR=$(mktemp -d /tmp/slurm-cluster.XXXXXX)
    chmod 755 "$SLURM_CLUSTER_RUNTIME_DIR"
    SLURM_CLUSTER_OWN_RUNTIME_DIR=1
    echo "$SLURM_CLUSTER_RUNTIME_DIR" >"$workdir/run/runtime_dir"  # for _slurm_cluster_kill_stale
  fi
  mkdir -p "$SLURM_CLUSTER_RUNTIME_DIR/munge" "$SLURM_CLUSTER_RUNTIME_DIR/spool"
  chmod 755 "$SLURM_CLUSTER_RUNTIME_DIR/munge"
  socket=$SLURM_CLUSTER_RUNTIME_DIR/munge/munge.socket

  # ---- munge: a private key and daemon, reached through its own socket ----
  if command -v mungekey >/dev/null 2>&1; then
    mungekey --create --force --keyfile="$workdir/run/munge.key"
  else
    (umask 077 && dd if=/dev/urandom of="$workdir/run/munge.key" bs=1024 count=1 status=none)
  fi
  chmod 600 "$workdir/run/munge.key"
  _slurm_cluster_spawn munged munged --foreground --force --key-file="$workdir/run/munge.key" \
    --socket="$socket" --pid-file="$workdir/run/munged.pid" --seed-file="$workdir/run/munged.seed"
  deadline=$((SECONDS + 15))
  until munge -n -S "$socket" 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1; do
    if ((SECONDS > deadline)) || ! _slurm_cluster_alive "${SLURM_CLUSTER_PIDS[0]}"; then
      _slurm_cluster_error "munged did not start"
      _slurm_cluster_log_tails
      slurm_cluster_stop
      return 1
    fi
    sleep 0.2
  done

  # ---- slurm.conf: this machine as controller and only node ----
  cpus=$(nproc)
  sockets=$cpus cores=1 threads=1
  # slurmd -C prints the hardware as slurmd sees it; a node configured with more sockets, cores or
  # threads than that would be drained, so take its layout when it has one.
  local layout
  layout=$(slurmd -C 2>/dev/null | head -n 1)
  if [[ $layout =~ CPUs=([0-9]+).*SocketsPerBoard=([0-9]+).*CoresPerSocket=([0-9]+).*ThreadsPerCore=([0-9]+) ]]; then
    cpus=${BASH_REMATCH[1]} sockets=${BASH_REMATCH[2]} cores=${BASH_REMATCH[3]} threads=${BASH_REMATCH[4]}
  fi
  ctld_port=${SLURM_CLUSTER_CTLD_PORT:-$(_slurm_cluster_free_port 26817)} || return 1
  slurmd_port=${SLURM_CLUSTER_SLURMD_PORT:-$(_slurm_cluster_free_port $((ctld_port + 1)) "$ctld_port")} || return 1
  : >"$workdir/plugstack.conf"  # no SPANK plugins (not /etc/slurm/plugstack.conf)
  # slurmd initializes its cgroup plugin even when no plugin uses cgroups, and fails where nothing is
  # mounted on /sys/fs/cgroup (a chroot such as fresh-machine's). An empty tmpfs of its own is a
  # cgroup v1 root to it (which it only checks), on every machine alike.
  mkdir -p "$workdir/run/cgroup"
  if ! mount -t tmpfs -o size=1m,mode=755 polygraphy-slurm-cgroup "$workdir/run/cgroup"; then
    _slurm_cluster_error "could not mount a tmpfs for slurmd's cgroup root on $workdir/run/cgroup"
    slurm_cluster_stop
    return 1
  fi
  cat >"$workdir/cgroup.conf" <<EOF
# Written by tests/cluster/slurm_cluster.sh: no cgroup is used (proctrack/linuxproc, task/none).
CgroupPlugin=cgroup/v1
CgroupMountpoint=$workdir/run/cgroup
EOF
  cat >"$workdir/slurm.conf" <<EOF
# Written by tests/cluster/slurm_cluster.sh: a one-node test cluster, no systemd, no cgroups.
ClusterName=polygraphy-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
# cred_expire: also how long a requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$socket,cred_expire=${SLURM_CLUSTER_CRED_EXPIRE:-5}
StateSaveLocation=$workdir/state
SlurmdSpoolDir=$SLURM_CLUSTER_RUNTIME_DIR/spool
SlurmctldPidFile=$workdir/run/slurmctld.pid
SlurmdPidFile=$workdir/run/slurmd.pid
SlurmctldLogFile=$workdir/log/slurmctld.log
SlurmdLogFile=$workdir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
PlugStackConfig=$workdir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# One line per finished job (requeued runs included), for tests and post-mortems.
JobCompType=jobcomp/filetxt
JobCompLoc=$workdir/log/jobcomp.txt
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Cancel jobs whose dependency can never be met (instead of leaving them pending forever), and
# schedule often: a dependent job starts soon after the jobs it waits for end.
SchedulerParameters=kill_invalid_depend,sched_interval=2,bf_interval=1
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus Sockets=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$workdir/slurm.conf

  # ---- the daemons ----
  _slurm_cluster_spawn slurmctld slurmctld -D -i -f "$SLURM_CONF"
  _slurm_cluster_spawn slurmd slurmd -D -f "$SLURM_CONF" -N "$host"
  _slurm_cluster_info "started munged, slurmctld and slurmd (pids ${SLURM_CLUSTER_PIDS[*]}) in $workdir," \
    "ports $ctld_port/$slurmd_port, node $host with $cpus CPUs"

  deadline=$((SECONDS + timeout))
  while :; do
    state=$(timeout 10 sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    local pid
    for pid in "${SLURM_CLUSTER_PIDS[@]}"; do
      if ! _slurm_cluster_alive "$pid"; then
        _slurm_cluster_error "a daemon (pid $pid) exited while the cluster started"
        _slurm_cluster_log_tails
        slurm_cluster_stop
        return 1
      fi
    done
    if ((SECONDS > deadline)); then
      _slurm_cluster_error "node $host not idle after ${timeout}s (sinfo says '${state:-nothing}')"
      _slurm_cluster_log_tails
      slurm_cluster_stop
      return 1
    fi
    sleep 0.5
  done
  _slurm_cluster_info "node $host is idle after $((SECONDS - deadline + timeout))s"
}

# Waits up to $2 seconds for process $1 to end; kills it after that.
_slurm_cluster_end() {
  local pid=$1 deadline=$((SECONDS + $2))
  while _slurm_cluster_alive "$pid"; do
    if ((SECONDS > deadline)); then
      _slurm_cluster_error "pid $pid still running after $2s: killing it"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  wait "$pid" 2>/dev/null || true
}

# Job step daemons (slurmstepd) and their jobs are no children of ours: they are found by the
# SLURM_CONF of cluster $1 (its folder) in their environment.
_slurm_cluster_stepds() {
  local proc pid
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ "$(cat "$proc/comm" 2>/dev/null)" = slurmstepd ] || continue
    if { tr '\0' '\n' <"$proc/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$1/slurm.conf"; then
      echo "$pid"
    fi
  done
}

# The tmpfs that slurm_cluster_start mounts as slurmd's cgroup root, if it is still mounted.
_slurm_cluster_unmount_cgroup() {
  if mountpoint -q "$1/run/cgroup" 2>/dev/null; then
    umount "$1/run/cgroup" 2>/dev/null || umount -l "$1/run/cgroup" 2>/dev/null || true
  fi
}

slurm_cluster_stop() {
  [ -n "$SLURM_CLUSTER_DIR" ] || return 0
  local pid i
  local -a stepds
  # Cancel every job first so that slurmd ends their steps cleanly.
  if [ -n "${SLURM_CONF:-}" ] && _slurm_cluster_alive "${SLURM_CLUSTER_PIDS[1]:-0}" &&
    [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ]; then
    timeout 10 scancel --user=root 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
      [ -z "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.25
    done
  fi
  mapfile -t stepds < <(_slurm_cluster_stepds "$SLURM_CLUSTER_DIR")
  # slurmd, slurmctld, then munged: the reverse of the start.
  for ((i = ${#SLURM_CLUSTER_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${SLURM_CLUSTER_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || true
    _slurm_cluster_end "$pid" 15
  done
  for pid in "${stepds[@]}"; do
    if _slurm_cluster_alive "$pid"; then
      _slurm_cluster_info "killing leftover slurmstepd (pid $pid) and its job"
      # shellcheck disable=SC2046
      kill -KILL $(_slurm_cluster_tree "$pid") 2>/dev/null || true
    fi
  done
  rm -f "$SLURM_CLUSTER_DIR/run/pids"
  _slurm_cluster_unmount_cgroup "$SLURM_CLUSTER_DIR"
  if ((SLURM_CLUSTER_OWN_RUNTIME_DIR)); then
    rm -rf "$SLURM_CLUSTER_RUNTIME_DIR"
  fi
  _slurm_cluster_info "stopped the cluster in $SLURM_CLUSTER_DIR"
  SLURM_CLUSTER_DIR=""
  SLURM_CLUSTER_RUNTIME_DIR=""
  SLURM_CLUSTER_PIDS=()
  unset SLURM_CONF
}
