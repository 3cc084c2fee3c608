#!/usr/bin/env bash
# A single-node Slurm cluster for machines without one: munged, slurmctld and slurmd, every file
# (configuration, keys, sockets, state, logs) under one project folder, nothing under /etc.
#
#   jobs/slurm_local_up.sh              # start (or confirm) the cluster; prints the SLURM_CONF line
#   eval "$(jobs/slurm_local_up.sh --env)"   # the same, and export SLURM_CONF into this shell
#   jobs/slurm_local_down.sh            # stop it
#
# Environment: HEADROOM_SLURM_DIR (state folder, default <repo>/.local/slurm), HEADROOM_SLURM_PORT
# (slurmctld port, slurmd uses the next one; default 6817), HEADROOM_SLURM_CRED_EXPIRE (seconds a
# requeued job waits before it may start again, default 10; Slurm's default is 120),
# HEADROOM_SLURM_TIMEOUT (seconds to wait for each daemon, default 30).
# Idempotent: when the daemons of this folder are running and the node is up it only says so.
# Needs root (SlurmUser=root) and the Debian packages slurmctld slurmd slurm-client munge
# (jobs/setup.sh installs them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${HEADROOM_SLURM_DIR:-$root/.local/slurm}
port=${HEADROOM_SLURM_PORT:-6817}
cred_expire=${HEADROOM_SLURM_CRED_EXPIRE:-10}
timeout=${HEADROOM_SLURM_TIMEOUT:-30}
env_only=0
[[ ${1:-} == --env ]] && env_only=1
say() { if ((env_only)); then echo "slurm_local_up: $*" >&2; else echo "slurm_local_up: $*"; fi; }
die() { echo "slurm_local_up: error: $*" >&2; exit 1; }

for b in munged mungekey slurmctld slurmd scontrol sinfo sbatch; do
  command -v "$b" >/dev/null 2>&1 || [[ -x /usr/sbin/$b ]] ||
    die "'$b' is not installed; run jobs/setup.sh (Debian packages slurmctld slurmd slurm-client munge)"
done
export PATH=$PATH:/usr/sbin
[[ $(id -u) -eq 0 ]] || die "the local cluster runs its daemons as root (SlurmUser=root); run as root"

mkdir -p "$state"/{etc,munge,run,log,slurmctld,slurmd,pmix}
state=$(cd "$state" && pwd)
conf=$state/etc/slurm.conf
export SLURM_CONF=$conf
chmod 0700 "$state/munge"
mkdir -p "$state/munge/socket" && chmod 0755 "$state/munge/socket"
socket=$state/munge/socket/munge.socket

alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() {  # wait_for WHAT COMMAND...: retry for $timeout seconds
  local what=$1; shift
  for ((i = 0; i < timeout * 5; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
node_state() { sinfo -h -n localhost -o %T 2>/dev/null | head -1; }
node_ready() { [[ $(node_state) =~ ^(idle|mixed|allocated|completing)$ ]]; }

if alive "$state/run/munged.pid" && alive "$state/run/slurmctld.pid" && alive "$state/run/slurmd.pid" &&
   scontrol ping 2>/dev/null | grep -q UP && node_ready; then
  say "already up ($state, node $(node_state))"
  if ((env_only)); then echo "export SLURM_CONF=$conf"; else echo "export SLURM_CONF=$conf"; fi
  exit 0
fi

# munge: a key of our own and a daemon on our own socket.
if ! alive "$state/run/munged.pid"; then
  [[ -s $state/munge/munge.key ]] || mungekey --create --keyfile="$state/munge/munge.key" >/dev/null 2>&1 ||
    die "mungekey could not create $state/munge/munge.key"
  chmod 0400 "$state/munge/munge.key"
  rm -f "$socket" "$socket.lock"
  munged --force --socket="$socket" --key-file="$state/munge/munge.key" \
    --pid-file="$state/run/munged.pid" --log-file="$state/log/munged.log" \
    --seed-file="$state/munge/munged.seed" ||
    die "munged did not start (log: $state/log/munged.log)"
  wait_for munged test -S "$socket" || die "munged socket $socket did not appear within ${timeout}s (log: $state/log/munged.log)"
fi

# The configuration: this machine's cores and memory, one partition.
cpus=$(nproc)
mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
real_mb=$((mem_kb / 1024 * 9 / 10))
if ! alive "$state/run/slurmctld.pid" && ! alive "$state/run/slurmd.pid"; then
  cat >"$conf.tmp" <<EOF
# Written by jobs/slurm_local_up.sh: a single-node cluster whose state lives in $state.
ClusterName=headroom
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket,cred_expire=$cred_expire
StateSaveLocation=$state/slurmctld
SlurmdSpoolDir=$state/slurmd
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$state/run/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=pmix
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=30
JobRequeue=1
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$real_mb State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$conf.tmp" "$conf"
  echo "PMIxCliTmpDirBase=$state/pmix" >"$state/etc/mpi.conf"
fi

if ! alive "$state/run/slurmctld.pid"; then
  slurmctld -f "$conf" || die "slurmctld did not start (log: $state/log/slurmctld.log)"
fi
wait_for slurmctld bash -c "scontrol ping | grep -q UP" ||
  die "slurmctld is not UP after ${timeout}s (log: $state/log/slurmctld.log)"

if ! alive "$state/run/slurmd.pid"; then
  slurmd -f "$conf" -N localhost || die "slurmd did not start (log: $state/log/slurmd.log)"
fi
if ! wait_for slurmd node_ready; then
  # A node left down or drained by an earlier run: return it to service once.
  scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true
  wait_for slurmd node_ready ||
    die "node localhost is '$(node_state)', not idle, after ${timeout}s (logs: $state/log/slurmd.log, $state/log/slurmctld.log)"
fi
say "up: cluster 'headroom', node localhost ($cpus CPUs, ${real_mb} MB), partition debug; state in $state"
echo "export SLURM_CONF=$conf"
