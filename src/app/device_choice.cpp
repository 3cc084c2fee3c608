#include "app/device_choice.h"

#include "ops.h"
#include "parallel/mpi_comm.h"
#include "util/error.h"

namespace headroom::app {

config::Device auto_device(int gpus_min) { return gpus_min > 0 ? config::Device::kCuda : config::Device::kCpu; }

std::string resolve_auto_device(config::Device& device, MPI_Comm world) {
  const int mine = kernels::cuda_device_count();
  int fewest = 0, most = 0;
  parallel::mpi_check(MPI_Allreduce(&mine, &fewest, 1, MPI_INT, MPI_MIN, world), "MPI_Allreduce(GPU count, min)");
  parallel::mpi_check(MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, world), "MPI_Allreduce(GPU count, max)");
  device = auto_device(fewest);
  if (device == config::Device::kCuda)
    return cat("train.device = auto: cuda (every rank sees a GPU: ", fewest, " to ", most, " per process)");
  if (most > 0)
    return cat("train.device = auto: cpu, although some ranks see up to ", most,
               " GPU(s): at least one rank sees none (check the job's --gpus-per-node and CUDA_VISIBLE_DEVICES)");
  return "train.device = auto: cpu (no GPU visible to this process)";
}

}  // namespace headroom::app
