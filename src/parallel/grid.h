// The tp × cp × dp process grid over MPI_COMM_WORLD, tensor parallelism innermost, then context
// parallelism: world rank = (dp_rank · cp + cp_rank) · tp + tp_rank, so the ranks of one
// tensor-parallel group are neighbours (on one node, where the bandwidth is) and the ranks of one
// context-parallel group next nearest.
//
// Groups: tp_group (same cp and dp rank: the heads and MLP columns of one layer), cp_group (same tp
// and dp rank: the chunks of one sequence), dp_group (same tp and cp rank: different samples), and
// replica_group (same tp rank: the cp × dp ranks that hold identical weights). Gradients are summed
// and ZeRO-1 shards the optimizer over replica_group, since context-parallel ranks, like
// data-parallel ones, see different tokens of the global batch.
#pragma once

#include "parallel/mpi_comm.h"

#include <memory>

namespace headroom::parallel {

struct Grid {
  int tp = 1, cp = 1, dp = 1;
  int tp_rank = 0, cp_rank = 0, dp_rank = 0;
  std::unique_ptr<MpiComm> world, tp_group, cp_group, dp_group, replica_group;
  int world_rank() const { return world->rank(); }
  bool is_root() const { return world->rank() == 0; }
  // The first rank of the replicas of this rank's weights (it writes them to checkpoints).
  bool replica_root() const { return cp_rank == 0 && dp_rank == 0; }
};

// Initialises MPI (errors returned, not fatal, so they become headroom::Error) if needed.
void init_mpi(int* argc, char*** argv);

// The degrees of a job of `world` ranks: dp = 0 means "the rest", dp = world / (tp · cp). Throws,
// naming the keys, when tp · cp · dp is not the world size. No MPI: --memory-plan resolves the
// layout of a job it does not run (--world-size).
struct Degrees {
  int tp = 1, cp = 1, dp = 1;
};
Degrees resolve_degrees(int tp, int dp, int cp, int world);

// The grid over MPI_COMM_WORLD with the degrees resolve_degrees gives for its size.
Grid make_grid(int tp, int dp, int cp = 1);

// Finalizes MPI if it was initialised (call at the end of main, after all communicators died).
void finalize_mpi();

// Ends every rank of the job now: used when one rank hits an error, so that the others, possibly
// blocked in a collective, do not hang.
[[noreturn]] void abort_all(int code);

}  // namespace headroom::parallel
