// NCCL behind the Comm interface (comm.h), for ranks that train on GPUs.
//
//   init_mpi(...);                                        // MPI first (grid.h)
//   parallel::select_local_gpu();                         // one GPU per rank, before any CUDA op
//   Grid grid = make_grid(tp, dp);                        // MPI communicators, as on CPU
//   auto tp_comm = parallel::make_nccl_comm(grid.tp_group->handle());
//   auto dp_comm = parallel::make_nccl_comm(grid.dp_group->handle());
//
// make_nccl_comm is collective over `group` (every rank of it must call it, in the same order as
// the other collectives): rank 0 of the group creates an ncclUniqueId, MPI broadcasts it, every rank
// joins with ncclCommInitRank. The MPI communicator is duplicated, so the caller keeps its own.
//
// Buffers: callers pass both device arrays (gradients, activations) and host scalars or vectors
// (loss sums, token counts, norms). Each call asks CUDA where its pointer lives
// (cudaPointerGetAttributes): device (or managed) memory goes through NCCL, enqueued on the CUDA
// backend's stream (kernels/cuda/stream.h) so it is ordered after the ops that produced the data and
// before those that consume it, and the call returns without waiting; host memory goes through MPI on
// the duplicated communicator and is complete on return. Every rank of a call must pass the same kind
// of memory (the same code path does). barrier() waits for the stream, then meets the other ranks.
// A group of one rank does nothing (no NCCL communicator is made).
//
// Errors: every NCCL, CUDA and MPI call is checked and throws headroom::Error naming the call; the
// apps then stop all ranks (abort_all).
#pragma once

#include "parallel/comm.h"

#include <mpi.h>

#include <memory>

namespace headroom::parallel {

// Binds this process to one GPU and returns its index: the rank's index among the ranks of its node
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) over MPI_COMM_WORLD, so it is collective; without MPI,
// OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID), modulo the GPUs visible to it (1 when Slurm hands
// each task its own GPU through CUDA_VISIBLE_DEVICES). Throws when there is no GPU or CUDA is absent.
int select_local_gpu();

// Throws headroom::Error on builds without CUDA.
std::unique_ptr<Comm> make_nccl_comm(MPI_Comm group);

}  // namespace headroom::parallel
