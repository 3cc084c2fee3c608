// main() of the GoogleTest executables (a library, so a test with its own main() keeps it): the
// tests run the BLAS kernels the programs run (kernels/cpu/blas_kernels.h), not OpenBLAS's fallback
// for CPUs it does not know.
#include <gtest/gtest.h>

#include "cpu/blas_kernels.h"

int main(int argc, char** argv) {
  headroom::kernels::cpu::use_native_blas_kernels(argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
