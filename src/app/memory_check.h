// The memory plan against the memory there is, decided together by every rank: each node's ranks
// sum their host plans and compare them with the lowest available figure any of them reads; with
// train.device = cuda each rank also compares its GPU parts and the reserve (kDeviceReserve) with
// its GPU's memory (kernels::cuda_device_memory: select the rank's GPU first). When any rank is
// short, every rank refuses with the message of the lowest such rank, so no rank is left in a
// collective and the job's output says the same thing whichever rank prints first.
#pragma once

#include "app/memory_plan.h"
#include "parallel/mpi_comm.h"

#include <string>

namespace headroom::app {

// Collective over `world`. Throws the refusal (plan_refusal, or device_refusal for the GPU) on
// every rank when the plan does not fit or overflows; returns the line to log (plan_line plus what
// is available) otherwise.
std::string check_memory_plan(const MemoryPlan& plan, parallel::MpiComm& world);

// The same for a program of one process (analyze): throws the refusal, or returns the line to log.
std::string check_memory_plan(const MemoryPlan& plan);

}  // namespace headroom::app
