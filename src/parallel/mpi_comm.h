// MPI behind the Comm interface, plus the checked-call helper every MPI use goes through.
#pragma once

#include "parallel/comm.h"

#include <mpi.h>

#include <memory>
#include <string>
#include <cstdint>
#include <vector>

namespace headroom::parallel {

// Throws headroom::Error "<what>: MPI error: <MPI's message>" when rc != MPI_SUCCESS. Requires
// MPI_ERRORS_RETURN on the communicator (init_mpi sets it on MPI_COMM_WORLD, and split
// communicators inherit it).
void mpi_check(int rc, const char* what);

class MpiComm final : public Comm {
 public:
  // Takes ownership of `comm` (freed in the destructor) unless it is MPI_COMM_WORLD.
  explicit MpiComm(MPI_Comm comm);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allreduce_sum(float* x, int64_t n) override;
  void allreduce_sum(double* x, int64_t n) override;
  void allreduce_sum(int64_t* x, int64_t n) override;
  void allreduce_max(int64_t* x, int64_t n) override;
  void broadcast(void* x, std::size_t bytes, int root) override;
  void allgather(float* x, const int64_t* counts, const int64_t* displs) override;
  void allgather(std::uint16_t* x, const int64_t* counts, const int64_t* displs) override;
  void reduce_scatter_sum(const float* in, float* out, int64_t count) override;
  void start_allreduce_sum(float* x, int64_t n, WirePrecision wire) override;
  void start_reduce_scatter_sum(float* x, const int64_t* counts, const int64_t* displs, WirePrecision wire) override;
  void wait_all() override;
  void barrier() override;
  MPI_Comm handle() const { return comm_; }

 private:
  // A bf16 reduction's data on the wire; wait_all widens it into `into` (null: a block this rank
  // only sent).
  struct Bf16Staging {
    float* into;
    std::vector<uint16_t> wire;
  };
  uint16_t* stage_bf16(const float* x, int64_t n, float* into);
  MPI_Op bf16_sum();

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> pending_;  // started and not yet waited for
  std::vector<Bf16Staging> staged_;   // their bf16 buffers (a vector's move keeps its data in place)
  MPI_Op bf16_sum_ = MPI_OP_NULL;     // created by the first bf16 reduction
};

// The ranks of `comm` that share this one's node memory (MPI_COMM_TYPE_SHARED).
std::unique_ptr<MpiComm> node_comm(const MpiComm& comm);

// A duplicate of `group` (MPI_Comm_dup, checked; `what` names the caller in the error): a
// communicator that owns its own traffic, for the device communicators built over the grid's groups.
MPI_Comm duplicate(MPI_Comm group, const char* what);

}  // namespace headroom::parallel
