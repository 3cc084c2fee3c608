#include "app/mpi_main.h"

#include "cpu/blas_kernels.h"
#include "parallel/grid.h"
#include "util/error.h"

#include <mpi.h>

#include <iostream>

namespace headroom::app {

int mpi_main(const char* app, int argc, char** argv, const std::function<int()>& body) {
  kernels::cpu::use_native_blas_kernels(argv);
  int rc = 0;
  try {
    parallel::init_mpi(&argc, &argv);
    rc = body();
  } catch (const std::exception& e) {
    int rank = 0, size = 1, initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    std::cerr << app << ": error";
    if (size > 1) std::cerr << " (rank " << rank << " of " << size << ")";
    std::cerr << ": " << e.what() << std::endl;
    if (size > 1) parallel::abort_all(2);
    parallel::finalize_mpi();
    return 2;
  }
  parallel::finalize_mpi();
  return rc;
}

}  // namespace headroom::app
