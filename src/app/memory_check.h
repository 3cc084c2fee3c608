// The memory plan against the memory there is, decided together by every rank: each node's ranks
// sum their plans and compare them with the lowest available figure any of them reads, and when
// any node is short every rank refuses with the message of the lowest such rank, so no rank is
// left in a collective and the job's output says the same thing whichever rank prints first.
#pragma once

#include "app/memory_plan.h"
#include "parallel/mpi_comm.h"

#include <string>

namespace headroom::app {

// Collective over `world`. Throws the refusal (plan_refusal) on every rank when the plan does not
// fit or overflows; returns the line to log (plan_line plus what is available) otherwise.
std::string check_memory_plan(const MemoryPlan& plan, parallel::MpiComm& world);

// The same for a program of one process (analyze): throws the refusal, or returns the line to log.
std::string check_memory_plan(const MemoryPlan& plan);

}  // namespace headroom::app
