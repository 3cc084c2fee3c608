#!/usr/bin/env bash
# Stops the single-node cluster of jobs/slurm_local_up.sh: slurmd, slurmctld, munged, each by its
# PID file (SIGTERM, then SIGKILL after HEADROOM_SLURM_TIMEOUT seconds, default 20). Idempotent.
#   jobs/slurm_local_down.sh [--purge]     # --purge also deletes the state folder (jobs, logs, keys)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${HEADROOM_SLURM_DIR:-$root/.local/slurm}
timeout=${HEADROOM_SLURM_TIMEOUT:-20}
export SLURM_CONF=$state/etc/slurm.conf

stop() {  # stop NAME PIDFILE
  local name=$1 pidfile=$2 pid
  [[ -s $pidfile ]] || { echo "slurm_local_down: $name not running (no $pidfile)"; return 0; }
  pid=$(cat "$pidfile")
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "slurm_local_down: $name not running (stale pid $pid)"; rm -f "$pidfile"; return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "slurm_local_down: $name (pid $pid) ignored SIGTERM for ${timeout}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  echo "slurm_local_down: $name stopped"
}

if [[ -d $state ]]; then
  stop slurmd "$state/run/slurmd.pid"
  stop slurmctld "$state/run/slurmctld.pid"
  stop munged "$state/run/munged.pid"
else
  echo "slurm_local_down: no local cluster state in $state"
fi
if [[ ${1:-} == --purge ]]; then
  rm -rf "$state"
  echo "slurm_local_down: removed $state"
fi
