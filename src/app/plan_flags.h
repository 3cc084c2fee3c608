// --memory-plan: size a job before queueing it. A stage given --memory-plan resolves its
// configuration, prints the per-rank plan (host and GPU parts, each with the keys that drive it)
// and its verdict, and exits 0 when it fits and 2 when not, without a GPU, without allocating and
// on one process: --world-size stands in for the job's ranks (so tp × cp × dp resolves),
// --device-memory for the GPU's memory, --host-memory and --ranks-per-node for the node's.
#pragma once

#include "app/memory_plan.h"
#include "config/load.h"

namespace headroom::app {

struct PlanFlags {
  bool memory_plan = false;
  int world_size = 1;
  int ranks_per_node = 0;     // 0: the world size (one node)
  double device_memory = -1;  // GiB; < 0: this machine's GPU, if it has one
  double host_memory = -1;    // GiB; < 0: what this machine has available
};

// --memory-plan, --world-size, --ranks-per-node, --device-memory, --host-memory.
void add_plan_options(config::po::options_description& opts, PlanFlags& flags);

// Whether the plan is for GPUs: train.device = cuda, or --device-memory given where train.device
// was auto (sizing a GPU job from a machine without one).
bool plans_for_gpu(const PlanFlags& flags, config::Device device, bool device_was_auto);

// Prints the plan's table and its verdict against the memory figures on stdout; 0 when it fits,
// 2 when not (with the refusal's figures and keys).
int answer_memory_plan(const MemoryPlan& plan, const PlanFlags& flags);

}  // namespace headroom::app
