// The peak resident memory of this process (VmHWM of /proc/self/status): what the memory plan's
// host figure is measured against (bench/memory_vs_plan.sh).
#pragma once

#include <cstdint>
#include <string>

namespace headroom {

// The VmHWM line of a /proc/self/status text, in bytes; -1 when absent.
int64_t status_peak_resident(const std::string& proc_self_status);

// This process's peak resident bytes; -1 where /proc/self/status has no VmHWM (not Linux).
int64_t peak_resident_bytes();

}  // namespace headroom
