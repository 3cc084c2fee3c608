#!/usr/bin/env bash
# Runs the numerical test labels (unit, mpi, validation) under every OpenBLAS kernel set this CPU can
# run, with 1 and 2 OpenMP threads, and prints a table: kernel set x threads -> passed/failed, and
# for each test the largest difference/floor ratio it printed (the noise-floor lines of
# validation/noise_floor.py, the GPU op tests and the study check; allowed 10, the study's 1) and
# the largest error/bound ratio of the kernel tests' derived bounds (fixed-bound lines; allowed 1).
# A tolerance that holds on one CPU's kernels only shows up here as a failure or as a ratio near
# what it allows.
#
# usage: validation/run_across_kernels.sh [BUILD_DIR] [--kernels "Sandybridge Haswell"] [--threads "1 2"]
#        [--labels 'unit|mpi|validation'] [--out DIR]
# Default: every kernel set the CPU has the instructions for, threads 1 and 2; logs and the table
# (table.md) in DIR (default BUILD_DIR/across_kernels). About 4-6 minutes per cell on 2 cores.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build kernels="" threads="1 2" labels="unit|mpi|validation" out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --kernels) kernels=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --labels) labels=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run_across_kernels.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$(cd "$1" && pwd) || exit 2; shift ;;
  esac
done
[[ -f $build/CTestTestfile.cmake ]] || { echo "run_across_kernels.sh: $build is not a configured build directory (jobs/setup.sh makes one)" >&2; exit 2; }
out=${out:-$build/across_kernels}
mkdir -p "$out"

# The kernel sets whose instructions /proc/cpuinfo lists (OpenBLAS 0.3.21's names).
cpu_kernels() {
  local flags; flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  has() { local f; for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
  echo Prescott
  has avx && echo Sandybridge
  has avx2 fma && echo Haswell Zen
  has avx512f avx512bw avx512vl avx512dq avx512cd && echo SkylakeX
  has avx512f avx512bw avx512vl avx512dq avx512cd avx512_bf16 && echo Cooperlake
}
[[ -n $kernels ]] || kernels="native $(cpu_kernels | tr '\n' ' ')"

# "test ratio" for every line of a kind (noise-floor or fixed-bound) in a ctest LastTest.log, the
# test named by its block header.
ratios() {
  awk -v kind="$2:" '/^[0-9]+\/[0-9]+ Testing: / {t = $3}
       $1 == kind {for (i = 1; i <= NF; i++) if ($i == "ratio") print t, $(i + 1)}' "$1"
}
largest() {  # largest RATIOS_FILE: "ratio (test)" of the largest ratio, or -
  sort -k2,2g "$1" | tail -1 | awk '{print $2 " (" $1 ")"}' | grep . || echo -
}

table=$out/table.md
{
  echo "| kernels | threads | passed | failed | failed tests | largest floor ratio (allowed 10) | largest fixed-bound ratio (allowed 1) |"
  echo "|---|---|---|---|---|---|---|"
} >"$table"
status=0
for k in $kernels; do
  for t in $threads; do
    cell=$out/$k.t$t
    echo "== OPENBLAS_CORETYPE=$k OMP_NUM_THREADS=$t: ctest -L '$labels' (log $cell.log)"
    env_args=(OMP_NUM_THREADS="$t")
    [[ $k == native ]] && unset_args=(-u OPENBLAS_CORETYPE) || { unset_args=(); env_args+=(OPENBLAS_CORETYPE="$k"); }
    # Two threads per test already fill both cores: run the tests one at a time then.
    jobs=$((t > 1 ? 1 : 2))
    (cd "$build" && env "${unset_args[@]}" "${env_args[@]}" ctest -L "$labels" -j "$jobs" --output-on-failure) >"$cell.log" 2>&1
    rc=$?
    cp "$build/Testing/Temporary/LastTest.log" "$cell.LastTest.log" 2>/dev/null
    for kind in noise-floor fixed-bound; do
      ratios "$cell.LastTest.log" $kind | sort -k1,1 -k2,2g | awk '{m[$1] = $2} END {for (t in m) print t, m[t]}' |
        sort >"$cell.$kind"
    done
    summary=$(grep -E "tests passed, [0-9]+ tests failed" "$cell.log" | tail -1)
    total=$(sed -nE 's/.* out of ([0-9]+).*/\1/p' <<<"$summary")
    failed=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed.*/\1/p' <<<"$summary")
    failed_tests=$(sed -nE 's/^[[:space:]]+[0-9]+ - ([^ ]+) \(Failed\).*/\1/p' "$cell.log" | tr '\n' ' ')
    echo "| $k | $t | $(( ${total:-0} - ${failed:-0} )) | ${failed:-?} | ${failed_tests:--} |" \
      "$(largest "$cell.noise-floor") | $(largest "$cell.fixed-bound") |" >>"$table"
    [[ $rc -eq 0 ]] || status=1
    tail -1 "$table"
  done
done

# Per test: the largest ratio over every cell, of each kind.
echo >>"$table"
echo "| test | kind | largest ratio over all cells | in cell |" >>"$table"
echo "|---|---|---|---|" >>"$table"
for kind in noise-floor fixed-bound; do
  for f in "$out"/*."$kind"; do
    c=$(basename "$f" ."$kind")
    awk -v c="$c" '{print $1, $2, c}' "$f"
  done | sort -k1,1 -k2,2g |
    awk -v kind=$kind '{m[$1] = $2; w[$1] = $3} END {for (t in m) print "| " t " | " kind " | " m[t] " | " w[t] " |"}' | sort
done >>"$table"
echo
cat "$table"
echo "run_across_kernels.sh: table in $table"
exit $status
