#!/usr/bin/env bash
# Copies the GPU check programs built in BUILD_DIR, with the shared libraries they need that a bare
# CUDA image may lack (OpenBLAS and its Fortran runtime, OpenMP), into OUT_DIR, for a GPU machine that
# cannot build the project itself (no OpenBLAS/MPI/HDF5 there). Then, on that machine:
#   validation/gpu/run_gpu_checks.sh --prebuilt --build-dir OUT_DIR
# (the op checks and bench run; the training steps need pretrain and its MPI/HDF5, not staged).
#
#   validation/gpu/stage_prebuilt.sh BUILD_DIR OUT_DIR
set -euo pipefail
BUILD=$(realpath "$1")
OUT=$(realpath -m "$2")
mkdir -p "$OUT/bin" "$OUT/tests" "$OUT/lib"
cp "$BUILD/tests/test_gpu_ops" "$BUILD/tests/test_gpu_device" "$OUT/tests/"
cp "$BUILD/bin/bench_gpu" "$OUT/bin/"
# Everything ldd resolves outside the C/C++ runtime and CUDA (which the GPU image has).
for f in "$OUT"/tests/* "$OUT"/bin/*; do
  ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|/usr/local/cuda|libcuda\.so|libnvidia' |
  while read -r lib; do cp -L "$lib" "$OUT/lib/"; done
du -sh "$OUT"
ls "$OUT/lib"
