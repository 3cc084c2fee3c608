#include "parallel/grid.h"

#include "util/error.h"

#include <cstdlib>

namespace headroom::parallel {

void init_mpi(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      fail("MPI_Init_thread failed");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

Grid make_grid(int tp, int dp) {
  Grid g;
  g.world = std::make_unique<MpiComm>(MPI_COMM_WORLD);
  const int world = g.world->size();
  if (tp <= 0) tp = world / std::max(dp, 1);
  if (dp <= 0) dp = world / std::max(tp, 1);
  if (tp * dp != world)
    fail("parallel.tp = ", tp, " × parallel.dp = ", dp, " = ", tp * dp, " ranks, but the job has ",
         world, " (mpirun -np / srun -n); set them so that tp × dp = ", world);
  g.tp = tp;
  g.dp = dp;
  const int rank = g.world->rank();
  g.tp_rank = rank % tp;
  g.dp_rank = rank / tp;
  MPI_Comm tp_comm, dp_comm;
  mpi_check(MPI_Comm_split(MPI_COMM_WORLD, g.dp_rank, g.tp_rank, &tp_comm), "MPI_Comm_split(tp)");
  mpi_check(MPI_Comm_split(MPI_COMM_WORLD, g.tp_rank, g.dp_rank, &dp_comm), "MPI_Comm_split(dp)");
  g.tp_group = std::make_unique<MpiComm>(tp_comm);
  g.dp_group = std::make_unique<MpiComm>(dp_comm);
  return g;
}

void finalize_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

void abort_all(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace headroom::parallel
