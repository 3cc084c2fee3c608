// NcclComm (nccl_comm.h). Compiled into libheadroom on every build; the body needs CUDA and NCCL,
// present when the CUDA backend is (HEADROOM_HAVE_CUDA comes from headroom_kernels_cuda).
#include "parallel/nccl_comm.h"

#include "parallel/mpi_comm.h"
#include "util/error.h"

#ifdef HEADROOM_HAVE_CUDA

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "cuda/stream.h"

namespace headroom::parallel {

namespace {

void nccl_check(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  fail(what, ": NCCL error ", static_cast<int>(rc), ": ", ncclGetErrorString(rc),
       rc == ncclSystemError || rc == ncclRemoteError ? " (NCCL_DEBUG=WARN tells more)" : "");
}

bool on_device(const void* p) {
  cudaPointerAttributes a{};
  const cudaError_t rc = cudaPointerGetAttributes(&a, p);
  if (rc != cudaSuccess) {  // older runtimes reject plain host pointers: that is the answer
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

class NcclComm final : public Comm {
 public:
  explicit NcclComm(MPI_Comm group) : host_(duplicate(group, "NCCL bootstrap")) {
    if (host_.size() == 1) return;
    ncclUniqueId id{};
    if (host_.rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    mpi_check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, host_.handle()), "MPI_Bcast(ncclUniqueId)");
    nccl_check(ncclCommInitRank(&comm_, host_.size(), id, host_.rank()), "ncclCommInitRank");
  }
  ~NcclComm() override {
    if (side_ != nullptr) {  // created by the first start_*; its work was waited for
      cudaEventDestroy(started_);
      cudaEventDestroy(finished_);
      cudaStreamDestroy(side_);
    }
    if (comm_ == nullptr) return;
    const ncclResult_t rc = ncclCommDestroy(comm_);
    if (rc != ncclSuccess) std::fprintf(stderr, "headroom: ncclCommDestroy failed: %s\n", ncclGetErrorString(rc));
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }

  void allreduce_sum(float* x, int64_t n) override { reduce(x, n, ncclFloat, ncclSum, "float sum"); }
  void allreduce_sum(double* x, int64_t n) override { reduce(x, n, ncclDouble, ncclSum, "double sum"); }
  void allreduce_sum(int64_t* x, int64_t n) override { reduce(x, n, ncclInt64, ncclSum, "int64 sum"); }
  void allreduce_max(int64_t* x, int64_t n) override { reduce(x, n, ncclInt64, ncclMax, "int64 max"); }

  void broadcast(void* x, std::size_t bytes, int root) override {
    if (size() == 1 || bytes == 0) return;
    if (!on_device(x)) return host_.broadcast(x, bytes, root);
    nccl_check(ncclBroadcast(x, x, bytes, ncclUint8, root, comm_, kernels::cuda::stream()), "ncclBroadcast");
  }

  void allgather(float* x, const int64_t* counts, const int64_t* displs) override {
    gather(x, counts, displs, ncclFloat);
  }
  // The words move as they are: a 16-bit type for their size only.
  void allgather(std::uint16_t* x, const int64_t* counts, const int64_t* displs) override {
    gather(x, counts, displs, ncclFloat16);
  }

  void reduce_scatter_sum(const float* in, float* out, int64_t count) override {
    if (count == 0) return;
    if (!on_device(in)) return host_.reduce_scatter_sum(in, out, count);
    if (size() == 1) {
      HEADROOM_CUDA_CHECK(cudaMemcpyAsync(out, in, static_cast<std::size_t>(count) * sizeof(float),
                                          cudaMemcpyDeviceToDevice, kernels::cuda::stream()));
      return;
    }
    nccl_check(
        ncclReduceScatter(in, out, static_cast<std::size_t>(count), ncclFloat, ncclSum, comm_, kernels::cuda::stream()),
        "ncclReduceScatter");
  }

  // The nonblocking calls run on a second stream that first waits for the work enqueued so far on
  // the compute stream (the gradients it has produced); wait_all makes the compute stream wait for
  // them in turn. The host never blocks: the overlap is between the two streams.
  //
  // bf16: the rounding into a stream-ordered staging buffer runs on the compute stream before the
  // side stream starts, the widening after wait_all joins the streams again.
  void start_allreduce_sum(float* x, int64_t n, WirePrecision wire) override {
    if (size() == 1 || n == 0) return;
    if (!on_device(x)) return host_.start_allreduce_sum(x, n, wire);
    if (wire == WirePrecision::kBf16) {
      uint16_t* b = stage_bf16(x, n, x);
      nccl_check(ncclAllReduce(b, b, static_cast<std::size_t>(n), ncclBfloat16, ncclSum, comm_, side_stream()),
                 "ncclAllReduce(bf16 sum, overlapped)");
      return;
    }
    nccl_check(ncclAllReduce(x, x, static_cast<std::size_t>(n), ncclFloat, ncclSum, comm_, side_stream()),
               "ncclAllReduce(float sum, overlapped)");
  }

  void start_reduce_scatter_sum(float* x, const int64_t* counts, const int64_t* displs, WirePrecision wire) override {
    if (size() == 1) return;
    if (!on_device(x)) return host_.start_reduce_scatter_sum(x, counts, displs, wire);
    const bool bf16 = wire == WirePrecision::kBf16;
    std::vector<void*> blocks(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) {
      float* block = x + displs[r];
      blocks[static_cast<std::size_t>(r)] =
          bf16 && counts[r] > 0 ? static_cast<void*>(stage_bf16(block, counts[r], r == rank() ? block : nullptr))
                                : static_cast<void*>(block);
    }
    // Blocks of any size: one in-place reduction to each block's owner, fused into one NCCL group
    // (ncclReduceScatter wants equal blocks).
    cudaStream_t s = side_stream();
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size(); ++r) {
      void* b = blocks[static_cast<std::size_t>(r)];
      if (counts[r] > 0)
        nccl_check(ncclReduce(b, b, static_cast<std::size_t>(counts[r]), bf16 ? ncclBfloat16 : ncclFloat, ncclSum, r,
                              comm_, s),
                   "ncclReduce(reduce-scatter block)");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd(reduce-scatter)");
  }

  void wait_all() override {
    host_.wait_all();
    if (side_ == nullptr) return;
    cudaStream_t compute = kernels::cuda::stream();
    HEADROOM_CUDA_CHECK(cudaEventRecord(finished_, side_));
    HEADROOM_CUDA_CHECK(cudaStreamWaitEvent(compute, finished_, 0));
    for (const Bf16Staging& st : staged_) {
      if (st.into != nullptr) kernels::cuda::widen_from_bf16(st.wire, st.into, st.n, "bf16 gradient reduction (widen)");
      HEADROOM_CUDA_CHECK(cudaFreeAsync(st.wire, compute));
    }
    staged_.clear();
  }

  void barrier() override {
    HEADROOM_CUDA_CHECK(cudaStreamSynchronize(kernels::cuda::stream()));
    if (comm_ != nullptr) {
      ncclResult_t async = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      nccl_check(async, "an earlier NCCL collective");
    }
    host_.barrier();
  }

 private:
  template <class W>
  void gather(W* x, const int64_t* counts, const int64_t* displs, ncclDataType_t type) {
    if (size() == 1) return;
    if (!on_device(x)) return host_.allgather(x, counts, displs);
    bool regular = true;  // equal, back-to-back blocks: one in-place ncclAllGather
    for (int r = 0; r < size(); ++r) regular = regular && counts[r] == counts[0] && displs[r] == r * counts[0];
    if (regular) {
      if (counts[0] == 0) return;
      nccl_check(ncclAllGather(x + displs[rank()], x, static_cast<std::size_t>(counts[0]), type, comm_,
                               kernels::cuda::stream()),
                 "ncclAllGather");
      return;
    }
    // Uneven blocks: every rank broadcasts its own, fused into one NCCL group.
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size(); ++r)
      if (counts[r] > 0)
        nccl_check(ncclBroadcast(x + displs[r], x + displs[r], static_cast<std::size_t>(counts[r]), type, r, comm_,
                                 kernels::cuda::stream()),
                   "ncclBroadcast(allgather block)");
    nccl_check(ncclGroupEnd(), "ncclGroupEnd(allgather)");
  }

  template <class T>
  void reduce(T* x, int64_t n, ncclDataType_t type, ncclRedOp_t op, const char* what) {
    if (size() == 1 || n == 0) return;
    if (!on_device(x)) {
      if constexpr (std::is_same_v<T, int64_t>)
        if (op == ncclMax) return host_.allreduce_max(x, n);
      return host_.allreduce_sum(x, n);
    }
    nccl_check(ncclAllReduce(x, x, static_cast<std::size_t>(n), type, op, comm_, kernels::cuda::stream()),
               (std::string("ncclAllReduce(") + what + ")").c_str());
  }

  // A bf16 copy of device x[0, n) in a stream-ordered buffer, rounded on the compute stream; wait_all
  // widens the reduced copy into `into` (null: a block this rank only sends) and frees it.
  struct Bf16Staging {
    uint16_t* wire;
    float* into;
    int64_t n;
  };
  uint16_t* stage_bf16(const float* x, int64_t n, float* into) {
    void* b = nullptr;
    HEADROOM_CUDA_CHECK(cudaMallocAsync(&b, static_cast<std::size_t>(n) * sizeof(uint16_t), kernels::cuda::stream()));
    auto* wire = static_cast<uint16_t*>(b);
    staged_.push_back({wire, into, n});
    kernels::cuda::round_to_bf16(x, wire, n, "bf16 gradient reduction (round)");
    return wire;
  }

  // The side stream, ordered after everything enqueued so far on the compute stream.
  cudaStream_t side_stream() {
    if (side_ == nullptr) {
      HEADROOM_CUDA_CHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
      HEADROOM_CUDA_CHECK(cudaEventCreateWithFlags(&started_, cudaEventDisableTiming));
      HEADROOM_CUDA_CHECK(cudaEventCreateWithFlags(&finished_, cudaEventDisableTiming));
    }
    HEADROOM_CUDA_CHECK(cudaEventRecord(started_, kernels::cuda::stream()));
    HEADROOM_CUDA_CHECK(cudaStreamWaitEvent(side_, started_, 0));
    return side_;
  }

  MpiComm host_;  // owns the duplicated communicator
  ncclComm_t comm_ = nullptr;
  cudaStream_t side_ = nullptr;  // the overlapped collectives' stream
  cudaEvent_t started_ = nullptr, finished_ = nullptr;
  std::vector<Bf16Staging> staged_;  // bf16 reductions started and not yet widened
};

int local_rank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Comm node = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type(shared)");
    int r = 0;
    mpi_check(MPI_Comm_rank(node, &r), "MPI_Comm_rank(node)");
    mpi_check(MPI_Comm_free(&node), "MPI_Comm_free(node)");
    return r;
  }
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

}  // namespace

int select_local_gpu() {
  const int n = kernels::cuda::device_count();
  if (n == 0) fail("--train.device cuda: no usable GPU on this machine (cudaGetDeviceCount found none)");
  const int device = local_rank() % n;
  HEADROOM_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

std::unique_ptr<Comm> make_nccl_comm(MPI_Comm group) { return std::make_unique<NcclComm>(group); }

}  // namespace headroom::parallel

#elif !defined(HEADROOM_EMULATED_DEVICE)  // no CUDA in this build (the emulated one: emulated_device_comm.cpp)

namespace headroom::parallel {

int select_local_gpu() {
  fail("Headroom was built without CUDA (configure with -DHEADROOM_CUDA=ON on a machine with nvcc)");
}
std::unique_ptr<Comm> make_nccl_comm(MPI_Comm) {
  fail("Headroom was built without CUDA: no NCCL communicator (configure with -DHEADROOM_CUDA=ON)");
}

}  // namespace headroom::parallel

#endif
