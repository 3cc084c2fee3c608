// The resident memory of this process, now and at its peak (VmRSS and VmHWM of /proc/self/status):
// the memory plan counts what the program already holds, and its host figure is measured against
// the peak (bench/memory_vs_plan.sh).
#pragma once

#include <cstdint>
#include <string>

namespace headroom {

// A "VmHWM" or "VmRSS" line of a /proc/self/status text, in bytes; -1 when absent.
int64_t status_field_bytes(const std::string& proc_self_status, const std::string& field);

// This process's peak resident bytes (VmHWM) and resident bytes now (VmRSS); -1 where
// /proc/self/status lacks them (not Linux).
int64_t peak_resident_bytes();
int64_t resident_bytes();

}  // namespace headroom
