#!/usr/bin/env bash
# Waits for a study's jobs and reports each stage's status and wall time from its job log.
#   jobs/study_report.sh runs/tiny [--wait SECONDS]
# The jobs are the ones submit_pipeline.sh recorded (<stage dir>/.slurm_job_id); wall time is from
# the "headroom-job: start" line of the last run of the job to its "done" line (a requeued job
# counts from its last start; the total over all its runs is shown too). Exit status 1 when a stage
# failed, was cancelled or did not finish within the wait.
set -uo pipefail
study=${1:?usage: study_report.sh STUDY_DIR [--wait SECONDS]}
wait_s=0
[[ ${2:-} == --wait ]] && wait_s=${3:-3600}
[[ -d $study ]] || { echo "study_report: no study directory $study" >&2; exit 2; }
mapfile -t dirs < <(find "$study" -name .slurm_job_id -printf '%h\n' | sort)
((${#dirs[@]})) || { echo "study_report: no submitted stage under $study" >&2; exit 2; }
ids=()
for d in "${dirs[@]}"; do ids+=("$(cat "$d/.slurm_job_id")"); done

if ((wait_s > 0)); then
  t0=$(date +%s) last=""
  while :; do
    left=$(squeue -h -j "$(IFS=,; echo "${ids[*]}")" -o "%T" 2>/dev/null | sort | uniq -c | awk '{printf "%s%s %s", sep, $1, tolower($2); sep=", "}')
    [[ -z $left ]] && break
    if (( $(date +%s) - t0 >= wait_s )); then echo "study_report: still queued after ${wait_s}s: $left"; break; fi
    [[ $left != "$last" ]] && echo "study_report: [$(( $(date +%s) - t0 ))s] $left" && last=$left
    sleep 2
  done
fi

bad=0
printf '%-44s %-8s %-10s %9s %9s\n' "stage (run directory)" "job" "state" "wall (s)" "all runs"
for i in "${!dirs[@]}"; do
  d=${dirs[$i]} id=${ids[$i]}
  log=$d/slurm-$id.out
  state=unknown
  if st=$(squeue -h -j "$id" -o %T 2>/dev/null) && [[ -n $st ]]; then state=$st
  elif [[ -f $log ]] && grep -q "^headroom-job: done stage=" "$log"; then state=done
  elif [[ -f $log ]] && grep -q "^headroom-job: FAILED" "$log"; then state=FAILED
  elif st=$(scontrol show job "$id" 2>/dev/null | grep -oE "JobState=[A-Z_]+" | cut -d= -f2) && [[ -n $st ]]; then state=$st
  fi
  wall="" total=""
  if [[ -f $log ]]; then
    starts=($(grep -E "^headroom-job: start stage=" "$log" | grep -oE "epoch=[0-9]+" | cut -d= -f2))
    end=$(grep -E "^headroom-job: (done|FAILED)" "$log" | tail -1 | grep -oE "epoch=[0-9]+" | cut -d= -f2)
    if ((${#starts[@]})) && [[ -n $end ]]; then
      wall=$((end - starts[-1]))
      total=$((end - starts[0]))
    fi
  fi
  [[ $state == done ]] || bad=1
  printf '%-44s %-8s %-10s %9s %9s\n' "${d#"$study"/}" "$id" "$state" "${wall:--}" "${total:--}"
done
exit $bad
