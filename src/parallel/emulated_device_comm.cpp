// make_nccl_comm() and select_local_gpu() of the emulated-device build (HEADROOM_EMULATED_DEVICE,
// tests only): the device side of the communicator, with MPI standing in for NCCL.
//
// It keeps NcclComm's contract (nccl_comm.h) and checks what a GPU would only show by hanging or
// faulting: a buffer is device memory (the emulated arena) or host memory, every rank of a call
// passes the same kind (NcclComm would send one rank into NCCL and the other into MPI), and device
// memory is read only inside the collective (kernels/cuda/emu/device_arena.h).
#include "parallel/nccl_comm.h"

#ifdef HEADROOM_EMULATED_DEVICE

#include <string>
#include <vector>

#include "cuda/emu/device_arena.h"
#include "cuda/emu/runtime_emu.h"
#include "parallel/mpi_comm.h"
#include "util/error.h"

namespace headroom::parallel {

namespace {

namespace emu = kernels::cuda_emu;

class EmulatedDeviceComm final : public Comm {
 public:
  explicit EmulatedDeviceComm(MPI_Comm group) : host_(duplicate(group, "emulated NCCL bootstrap")) {}

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }

  void allreduce_sum(float* x, int64_t n) override {
    run(x, "allreduce (float sum)", [this, x, n] { host_.allreduce_sum(x, n); });
  }
  void allreduce_sum(double* x, int64_t n) override {
    run(x, "allreduce (double sum)", [this, x, n] { host_.allreduce_sum(x, n); });
  }
  void allreduce_sum(int64_t* x, int64_t n) override {
    run(x, "allreduce (int64 sum)", [this, x, n] { host_.allreduce_sum(x, n); });
  }
  void allreduce_max(int64_t* x, int64_t n) override {
    run(x, "allreduce (int64 max)", [this, x, n] { host_.allreduce_max(x, n); });
  }
  void broadcast(void* x, std::size_t bytes, int root) override {
    run(x, "broadcast", [this, x, bytes, root] { host_.broadcast(x, bytes, root); });
  }
  void allgather(float* x, const int64_t* counts, const int64_t* displs) override {
    run(x, "allgather", [this, x, c = blocks(counts), d = blocks(displs)] { host_.allgather(x, c.data(), d.data()); });
  }
  void allgather(std::uint16_t* x, const int64_t* counts, const int64_t* displs) override {
    run(x, "allgather (16-bit)",
        [this, x, c = blocks(counts), d = blocks(displs)] { host_.allgather(x, c.data(), d.data()); });
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t count) override {
    if (size() == 1) {  // NcclComm copies on the device: the same here, on the emulated stream
      emu::enqueue([this, in, out, count] {
        const emu::DeviceAccess open;
        host_.reduce_scatter_sum(in, out, count);
      });
      return;
    }
    run(in, "reduce-scatter", [this, in, out, count] { host_.reduce_scatter_sum(in, out, count); });
  }
  // One stream here: the overlapped calls complete at once, which is an order a GPU may also take.
  void start_allreduce_sum(float* x, int64_t n, WirePrecision wire) override {
    run(x, "overlapped allreduce", [this, x, n, wire] {
      host_.start_allreduce_sum(x, n, wire);
      host_.wait_all();
    });
  }
  void start_reduce_scatter_sum(float* x, const int64_t* counts, const int64_t* displs, WirePrecision wire) override {
    run(x, "overlapped reduce-scatter", [this, x, c = blocks(counts), d = blocks(displs), wire] {
      host_.start_reduce_scatter_sum(x, c.data(), d.data(), wire);
      host_.wait_all();
    });
  }
  void wait_all() override {}
  void barrier() override { host_.barrier(); }

 private:
  // A per-rank host array (counts, displacements), copied: a collective captured into a graph runs
  // when the graph is launched, as NCCL's would, after the caller's array is gone.
  std::vector<int64_t> blocks(const int64_t* per_rank) const { return {per_rank, per_rank + size()}; }

  // Device buffers go through "NCCL" (MPI with the arena open) on the emulated stream, so that a
  // graph's capture records them as it records kernels; host ones go through MPI at once, as in
  // NcclComm. First the ranks compare which kind each passed.
  template <class F>
  void run(const void* x, const char* what, F collective) {
    if (size() == 1) return;
    const int device = emu::on_device(x) ? 1 : 0;
    int kinds[2] = {device, -device};  // max, -min
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, kinds, 2, MPI_INT, MPI_MAX, host_.handle()),
              "MPI_Allreduce (emulated NCCL: buffer kinds)");
    if (kinds[0] != -kinds[1])
      fail("emulated NCCL ", what,
           ": some ranks pass device memory and others host memory (this rank: ", device ? "device" : "host",
           "); NcclComm would send them into NCCL and MPI apart and hang");
    if (!device) return collective();
    emu::enqueue([collective] {
      const emu::DeviceAccess open;
      collective();
    });
  }

  MpiComm host_;
};

}  // namespace

int select_local_gpu() { return 0; }  // one emulated GPU per process

std::unique_ptr<Comm> make_nccl_comm(MPI_Comm group) { return std::make_unique<EmulatedDeviceComm>(group); }

}  // namespace headroom::parallel

#endif
