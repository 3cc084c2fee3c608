#!/usr/bin/env bash
# The job scripts' mpirun launch outside Slurm (jobs/lib/stage.sh, hr_run) leaves core placement
# to the OS: two single-rank jobs started side by side must each be allowed every core, not both be
# bound to core 0 (Open MPI's default for a small -np, which halved the speed of two chains at once).
# usage: test_launcher_binding.sh SOURCE_DIR
set -euo pipefail
src=$1
cores=$(nproc)
if ((cores < 2)); then echo "SKIP: one core, nothing to spread over"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
probe() {  # the allowed CPU list of a rank launched the way every job script launches
  (unset SLURM_JOB_ID; cd "$src" && source jobs/lib/stage.sh && NP=1 && HEADROOM_LAUNCHER=mpirun && hr_init probe >/dev/null &&
     hr_run bash -c 'grep Cpus_allowed_list /proc/self/status' | grep '^Cpus_allowed_list') >"$tmp/$1" 2>&1
}
probe a & probe b & wait
expected=$(grep Cpus_allowed_list /proc/self/status)
for j in a b; do
  got=$(cat "$tmp/$j")
  if [[ $got != "$expected" ]]; then
    echo "FAIL: job $j: rank allowed '$got', the launching shell '$expected'"; exit 1
  fi
done
echo "PASS: two jobs side by side, each rank allowed the shell's CPUs ($expected)"
