// Which OpenBLAS kernels this process runs, and a correction for CPUs that OpenBLAS does not know.
//
// Debian's OpenBLAS 0.3.21 picks its kernels by CPU model number at library load. On a model newer
// than the library (e.g. family 6 model 207, Emerald Rapids) it falls back to "Prescott", its SSE3
// kernels: sgemm runs at a fifth of the speed the CPU's AVX-512 kernels reach (30 vs 150 GFLOP/s on
// one core of the dev machine). OpenBLAS reads OPENBLAS_CORETYPE only at load time, before main(), so
// the correction is to set it from the CPU's features and exec the same program again.
#pragma once

#include <string>

namespace headroom::kernels::cpu {

// Call first thing in main(), before MPI_Init and before any thread starts. When OpenBLAS chose
// pre-AVX2 kernels on a CPU with AVX2 or AVX-512 and OPENBLAS_CORETYPE is unset, re-executes the
// program (same pid, same arguments) with OPENBLAS_CORETYPE naming the widest kernels the CPU runs.
// A user's own OPENBLAS_CORETYPE is always left alone; if the exec fails, the process goes on with
// the slow kernels and says so on stderr.
void use_native_blas_kernels(char** argv);

// One line for log.txt: the OpenBLAS build, the kernels in use, and who chose them.
std::string blas_kernels_description();

}  // namespace headroom::kernels::cpu
