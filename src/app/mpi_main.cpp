#include "app/mpi_main.h"

#include "cpu/blas_kernels.h"
#include "parallel/agree.h"
#include "parallel/grid.h"
#include "util/error.h"

#include <mpi.h>

#include <cstdio>
#include <string>

namespace headroom::app {
namespace {

// One write of the whole line: the ranks of a job share stderr, and pieces written one by one
// interleave into lines that name no rank.
void print_error(const std::string& prefix, const char* what) {
  const std::string line = prefix + ": " + what + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

int mpi_main(const char* app, int argc, char** argv, const std::function<int()>& body) {
  kernels::cpu::use_native_blas_kernels(argv);
  int rc = 0;
  try {
    parallel::init_mpi(&argc, &argv);
    rc = body();
  } catch (const parallel::CollectiveError& e) {
    // Every rank has this error, at the same point: no rank waits in a collective, so MPI can end
    // normally and every rank exits 2. One copy of the message is enough.
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) print_error(std::string(app) + ": error", e.what());
    parallel::finalize_mpi();
    return 2;
  } catch (const std::exception& e) {
    int rank = 0, size = 1, initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    print_error(std::string(app) + ": error" +
                    (size > 1 ? " (rank " + std::to_string(rank) + " of " + std::to_string(size) + ")" : ""),
                e.what());
    if (size > 1) parallel::abort_all(2);
    parallel::finalize_mpi();
    return 2;
  }
  parallel::finalize_mpi();
  return rc;
}

}  // namespace headroom::app
