#include "parallel/grid.h"

#include "util/error.h"

#include <algorithm>
#include <cstdlib>

namespace headroom::parallel {

void init_mpi(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) fail("MPI_Init_thread failed");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

namespace {

std::unique_ptr<MpiComm> split(int color, int key, const char* what) {
  MPI_Comm c = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split(MPI_COMM_WORLD, color, key, &c), what);
  return std::make_unique<MpiComm>(c);
}

}  // namespace

Degrees resolve_degrees(int tp, int dp, int cp, int world) {
  cp = std::max(cp, 1);
  if (tp <= 0) tp = world / std::max(dp, 1) / cp;
  if (dp <= 0) dp = world / std::max(tp, 1) / cp;
  if (tp * cp * dp != world)
    fail("parallel.tp = ", tp, " × parallel.cp = ", cp, " × parallel.dp = ", dp, " = ", tp * cp * dp,
         " ranks, but the job has ", world, " (mpirun -np / srun -n); set them so that tp × cp × dp = ", world);
  return {tp, cp, dp};
}

Grid make_grid(int tp, int dp, int cp) {
  Grid g;
  g.world = std::make_unique<MpiComm>(MPI_COMM_WORLD);
  const Degrees d = resolve_degrees(tp, dp, cp, g.world->size());
  tp = g.tp = d.tp;
  cp = g.cp = d.cp;
  dp = g.dp = d.dp;
  const int rank = g.world->rank();
  g.tp_rank = rank % tp;
  g.cp_rank = rank / tp % cp;
  g.dp_rank = rank / (tp * cp);
  g.tp_group = split(g.dp_rank * cp + g.cp_rank, g.tp_rank, "MPI_Comm_split(tp)");
  g.cp_group = split(g.dp_rank * tp + g.tp_rank, g.cp_rank, "MPI_Comm_split(cp)");
  g.dp_group = split(g.cp_rank * tp + g.tp_rank, g.dp_rank, "MPI_Comm_split(dp)");
  g.replica_group = split(g.tp_rank, g.dp_rank * cp + g.cp_rank, "MPI_Comm_split(replicas)");
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
