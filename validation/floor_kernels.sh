# The noise floor of a comparison (validation/noise_floor.py) is the distance between two runs that
# differ only in rounding: the same run under another OpenBLAS kernel set, whose sgemm sums in
# another order at every step. floor_kernels prints two kernel sets other than the one in use
# (OPENBLAS_CORETYPE; unset means the CPU's native AVX2/AVX-512 kernels), which every x86-64 CPU
# runs, so that a floor is the maximum of two draws and never zero by accident. Sourced.
floor_kernels() {
  local k n=0
  for k in Sandybridge Prescott Haswell; do
    [[ ${OPENBLAS_CORETYPE:-} == "$k" ]] && continue
    echo "$k"; n=$((n + 1)); [[ $n -eq 2 ]] && return
  done
}
