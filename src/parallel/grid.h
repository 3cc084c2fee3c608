// The tp × dp process grid over MPI_COMM_WORLD, tensor parallelism innermost:
// world rank = dp_rank · tp + tp_rank, so the ranks of one tensor-parallel group are neighbours
// (on one node, where the bandwidth is).
#pragma once

#include "parallel/mpi_comm.h"

#include <memory>

namespace headroom::parallel {

struct Grid {
  int tp = 1, dp = 1;
  int tp_rank = 0, dp_rank = 0;
  std::unique_ptr<MpiComm> world, tp_group, dp_group;
  int world_rank() const { return world->rank(); }
  bool is_root() const { return world->rank() == 0; }
};

// Initialises MPI (errors returned, not fatal, so they become headroom::Error) if needed.
void init_mpi(int* argc, char*** argv);

// tp = 0 means "all ranks": dp = world / tp. Throws when tp · dp != world size.
Grid make_grid(int tp, int dp);

// Finalizes MPI if it was initialised (call at the end of main, after all communicators died).
void finalize_mpi();

// Ends every rank of the job now: used when one rank hits an error, so that the others, possibly
// blocked in a collective, do not hang.
[[noreturn]] void abort_all(int code);

}  // namespace headroom::parallel
