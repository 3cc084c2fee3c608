#include "app/plan_flags.h"

#include "app/available_memory.h"
#include "ops.h"
#include "util/error.h"

#include <cmath>
#include <iostream>

namespace headroom::app {
namespace {

int64_t gib_to_bytes(double gib) { return static_cast<int64_t>(std::llround(gib * 1073741824.0)); }

AvailableMemory host_memory(const PlanFlags& f) {
  if (f.host_memory >= 0) return {gib_to_bytes(f.host_memory), cat("--host-memory ", f.host_memory)};
  return available_memory();
}

kernels::DeviceMemory device_memory(const PlanFlags& f) {
  if (f.device_memory >= 0) return {gib_to_bytes(f.device_memory), cat("--device-memory ", f.device_memory)};
  kernels::DeviceMemory gpu = kernels::cuda_device_memory();
  if (gpu.bytes < 0) gpu.source += "; pass --device-memory GiB";
  return gpu;
}

}  // namespace

void add_plan_options(config::po::options_description& opts, PlanFlags& f) {
  namespace po = config::po;
  opts.add_options()(
      "memory-plan", po::bool_switch(&f.memory_plan),
      cat("print the memory plan of one rank of the job (host and GPU parts, each with the keys that drive it) "
          "and exit: 0 when it fits, 2 when not. Allocates nothing and needs no GPU, no data and no checkpoint "
          "(--config with a model configuration stands in for --init). GPU parts are checked against the GPU's "
          "memory less a reserve: ",
          kDeviceReserveText)
          .c_str())("world-size", po::value(&f.world_size)->default_value(1),
                    "with --memory-plan: the job's ranks (mpirun -np / srun -n), so that tp × cp × dp resolves")(
      "ranks-per-node", po::value(&f.ranks_per_node)->default_value(0),
      "with --memory-plan: ranks sharing a node's host memory; 0 = --world-size (one node)")(
      "device-memory", po::value(&f.device_memory)->default_value(-1),
      "with --memory-plan: each GPU's memory in GiB (an H100 SXM: 79.1 as cudaMemGetInfo reports it; 80 "
      "as sold); plans for GPUs when train.device is auto; default: this machine's GPU")(
      "host-memory", po::value(&f.host_memory)->default_value(-1),
      "with --memory-plan: each node's host memory in GiB; default: what this machine has available");
}

bool plans_for_gpu(const PlanFlags& f, config::Device device, bool device_was_auto) {
  return device == config::Device::kCuda || (device_was_auto && f.memory_plan && f.device_memory >= 0);
}

int answer_memory_plan(const MemoryPlan& plan, const PlanFlags& f) {
  if (f.world_size < 1) fail("--world-size = ", f.world_size, ": a job has at least 1 rank");
  const int node_ranks = f.ranks_per_node > 0 ? f.ranks_per_node : f.world_size;
  const AvailableMemory host = host_memory(f);
  std::cout << plan_table(plan);
  const int64_t host_need = host_bytes(plan);
  const bool host_fits = !overflows(plan) && (host.bytes < 0 || host_need <= host.bytes / node_ranks);
  if (!host_fits) {
    std::cout << "does not fit: " << plan_refusal(plan, node_ranks, host.bytes, host.source) << std::endl;
    return 2;
  }
  std::cout << "host: fits, " << node_ranks << " rank(s) per node × " << format_bytes(host_need) << " of "
            << (host.bytes >= 0 ? cat(format_bytes(host.bytes), " (", host.source, ")") : std::string("unknown"))
            << "\n";
  if (!plan.device_elsewhere) return 0;
  const kernels::DeviceMemory gpu = device_memory(f);
  if (!fits_device(plan, gpu.bytes)) {
    std::cout << "does not fit: " << device_refusal(plan, gpu.bytes, gpu.source) << std::endl;
    return 2;
  }
  if (gpu.bytes < 0) {
    std::cout << "GPU: not checked, its memory is unknown (" << gpu.source << ")" << std::endl;
    return 0;
  }
  const int64_t need = device_bytes(plan) + kDeviceReserve;
  std::cout << "GPU: fits, " << format_bytes(need) << " of " << format_bytes(gpu.bytes) << " (" << gpu.source << "), "
            << format_bytes(gpu.bytes - need) << " to spare" << std::endl;
  return 0;
}

}  // namespace headroom::app
