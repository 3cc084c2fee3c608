#include "app/memory_check.h"

#include "app/available_memory.h"
#include "ops.h"
#include "util/error.h"

#include <string>

namespace headroom::app {
namespace {

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kOverflow : r;
}

// Every rank gets root's text.
std::string broadcast_text(parallel::MpiComm& world, std::string text, int root) {
  int64_t n = static_cast<int64_t>(text.size());
  world.broadcast(&n, sizeof n, root);
  text.resize(static_cast<size_t>(n));
  world.broadcast(text.data(), text.size(), root);
  return text;
}

// This rank's GPU, when the plan has parts on one (else unknown: nothing to compare).
kernels::DeviceMemory gpu_of(const MemoryPlan& plan) {
  return plan.device_elsewhere ? kernels::cuda_device_memory() : kernels::DeviceMemory{};
}

// The log line of a plan that fits.
std::string fit_line(const MemoryPlan& plan, int64_t available, const std::string& source, int ranks_on_node,
                     const kernels::DeviceMemory& gpu) {
  std::string line = cat(plan_line(plan), "; available ",
                         available >= 0 ? cat(format_bytes(available), " (", source, ")") : std::string("unknown"),
                         ranks_on_node > 1 ? cat(", shared by ", ranks_on_node, " ranks") : "");
  if (plan.device_elsewhere)
    line += cat("; GPU memory ", gpu.bytes >= 0 ? cat(format_bytes(gpu.bytes), " (", gpu.source, ")")
                                                : cat("unknown (", gpu.source, "): not checked"));
  return line;
}

}  // namespace

std::string check_memory_plan(const MemoryPlan& plan, parallel::MpiComm& world) {
  const auto node = parallel::node_comm(world);
  const AvailableMemory mine = available_memory();
  const kernels::DeviceMemory gpu = gpu_of(plan);
  // The node's need: its ranks' largest plan times their number (plans differ by a few elements
  // at most); its supply: the lowest figure any of them read (-1 = unknown on every rank).
  int64_t need = host_bytes(plan), lowest = mine.bytes >= 0 ? -mine.bytes : -kOverflow;
  node->allreduce_max(&need, 1);
  node->allreduce_max(&lowest, 1);
  const int64_t node_need = saturating_mul(need, node->size());
  const int64_t available = lowest == -kOverflow ? -1 : -lowest;
  const bool host_fits = !overflows(plan) && (available < 0 || node_need <= available);
  const bool fits = host_fits && fits_device(plan, gpu.bytes);
  // The lowest refusing rank speaks for all: world size − rank, maximised.
  int64_t speaker = fits ? 0 : world.size() - world.rank();
  world.allreduce_max(&speaker, 1);
  if (speaker > 0) {
    const int root = world.size() - static_cast<int>(speaker);
    std::string why;
    if (world.rank() == root)
      why = host_fits ? device_refusal(plan, gpu.bytes, gpu.source)
                      : plan_refusal(plan, node->size(), available, mine.source);
    throw Error(broadcast_text(world, why, root));
  }
  return fit_line(plan, available, mine.source, node->size(), gpu);
}

std::string check_memory_plan(const MemoryPlan& plan) {
  const AvailableMemory mine = available_memory();
  const kernels::DeviceMemory gpu = gpu_of(plan);
  if (overflows(plan) || (mine.bytes >= 0 && host_bytes(plan) > mine.bytes))
    throw Error(plan_refusal(plan, 1, mine.bytes, mine.source));
  if (!fits_device(plan, gpu.bytes)) throw Error(device_refusal(plan, gpu.bytes, gpu.source));
  return fit_line(plan, mine.bytes, mine.source, 1, gpu);
}

}  // namespace headroom::app
