// The communicator interface the model and trainer use. Implementations: MPI (CPU, mpi_comm.h) and,
// on CUDA builds, NCCL. Buffers are in the memory of the backend the communicator serves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace headroom::parallel {

// What an overlapped gradient reduction sends and sums in. kBf16 rounds each rank's fp32 values to
// bf16 (to nearest even), sums in bf16 (each addition computed in fp32 and rounded back, as NCCL's
// bf16 sum does) and widens the result into the fp32 buffer: half the traffic, and a sum that
// depends on the reduction's order by up to a bf16 rounding per addition.
enum class WirePrecision { kFp32, kBf16 };

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void allreduce_sum(float* x, int64_t n) = 0;   // in place
  virtual void allreduce_sum(double* x, int64_t n) = 0;  // in place
  virtual void allreduce_sum(int64_t* x, int64_t n) = 0;
  virtual void allreduce_max(int64_t* x, int64_t n) = 0;
  virtual void broadcast(void* x, std::size_t bytes, int root) = 0;
  // In place: rank r's block x[displs[r], displs[r] + counts[r]) is sent to every rank. The 16-bit
  // form moves bf16 words as they are (sequence parallelism's stored GEMM inputs and gradients).
  virtual void allgather(float* x, const int64_t* counts, const int64_t* displs) = 0;
  virtual void allgather(std::uint16_t* x, const int64_t* counts, const int64_t* displs) = 0;
  // in holds size() blocks of `count`; block r, summed over the ranks, lands in rank r's out. The
  // backward of an all-gather (sequence and context parallelism). in and out must not overlap.
  virtual void reduce_scatter_sum(const float* in, float* out, int64_t count) = 0;
  // Nonblocking, for a reduction that overlaps the backward pass: each start_* returns at once
  // and its buffer must not be touched until wait_all(), which completes every started one. Every
  // rank starts the same calls in the same order.
  //   start_allreduce_sum: x[0, n) summed over the ranks, in place.
  //   start_reduce_scatter_sum: rank r's block x[displs[r], displs[r] + counts[r]), summed over the
  //   ranks, lands in place in rank r's x (ZeRO-2); the other blocks of x are left as they were.
  virtual void start_allreduce_sum(float* x, int64_t n, WirePrecision wire) = 0;
  virtual void start_reduce_scatter_sum(float* x, const int64_t* counts, const int64_t* displs, WirePrecision wire) = 0;
  virtual void wait_all() = 0;
  virtual void barrier() = 0;
};

}  // namespace headroom::parallel
