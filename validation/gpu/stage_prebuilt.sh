#!/usr/bin/env bash
# Stages the GPU check programs built in BUILD_DIR for a GPU machine that cannot build the project
# itself (a bare CUDA image: nvcc, cuDNN and NCCL, but no OpenBLAS, MPI, HDF5 or Boost):
#   OUT_DIR/tests, OUT_DIR/bin   test_gpu_ops, test_gpu_device, bench_gpu, and the stages
#                                (prepare pretrain extend sft evaluate), stripped
#   OUT_DIR/debs                 the Debian packages of every library they load outside the C/C++
#                                runtime and CUDA, and OpenMPI's runtime (mpirun, its plugins and
#                                PMIx), downloaded from the archive this machine installs from
# Then, on the GPU machine:
#   validation/gpu/run_gpu_checks.sh --prebuilt --build-dir OUT_DIR
# which unpacks the packages under OUT_DIR/root and supplies only the libraries that machine lacks
# (validation/gpu/unpack_prebuilt.sh). Packages rather than loose .so files because mpirun needs its
# plugins, help texts and configuration where OpenMPI looks for them, and the packages carry them.
#
#   validation/gpu/stage_prebuilt.sh BUILD_DIR OUT_DIR
set -euo pipefail
BUILD=$(realpath "$1")
OUT=$(realpath -m "$2")
rm -rf "$OUT/bin" "$OUT/tests" "$OUT/debs"
mkdir -p "$OUT/bin" "$OUT/tests" "$OUT/debs"
cp "$BUILD/tests/test_gpu_ops" "$BUILD/tests/test_gpu_device" "$OUT/tests/"
cp "$BUILD/bin/bench_gpu" "$OUT/bin/"
for app in prepare pretrain extend sft evaluate; do
  [[ -x $BUILD/bin/$app ]] && cp "$BUILD/bin/$app" "$OUT/bin/"
done
strip "$OUT"/bin/* "$OUT"/tests/*

# The packages of everything ldd resolves outside CUDA, less the C/C++ runtime's packages (the GPU
# image has both, newer), and OpenMPI's runtime, which nothing links but mpirun needs.
packages=$(for f in "$OUT"/tests/* "$OUT"/bin/* /usr/bin/orterun; do
  ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | xargs -r readlink -f | sort -u | grep -v '^/usr/local/cuda' |
  while read -r lib; do  # merged /usr: a package may list the file under /lib instead
    dpkg -S "$lib" 2>/dev/null || dpkg -S "${lib#/usr}" 2>/dev/null || echo "not from a package: $lib" >&2
  done | cut -d: -f1 | sort -u | grep -Evx 'libc6|libstdc\+\+6|libgcc-s1|libgomp1')
packages="$packages openmpi-bin openmpi-common libopenmpi3 libpmix2"
# As root apt warns that its sandbox user cannot write here; the download is the same.
(cd "$OUT/debs" && apt-get download $packages 2>&1 >/dev/null | grep -v 'unsandboxed as root' || true)
du -sh "$OUT"/bin "$OUT"/tests "$OUT"/debs
echo "staged $(ls "$OUT/debs" | wc -l) packages: $(ls "$OUT/debs" | cut -d_ -f1 | tr '\n' ' ')"
