// How much memory this process may still take: MemAvailable of /proc/meminfo, or the memory
// limit of its cgroup (v1 or v2) minus what the cgroup already uses, whichever is lower. Page
// cache the kernel would reclaim (inactive file pages) does not count as used.
#pragma once

#include <cstdint>
#include <string>

namespace headroom::app {

struct AvailableMemory {
  int64_t bytes = -1;  // < 0: unknown (no /proc/meminfo)
  std::string source;  // "MemAvailable in /proc/meminfo", or the cgroup files it came from
};

AvailableMemory available_memory();

// The MemAvailable line of a /proc/meminfo text, in bytes; -1 when absent.
int64_t meminfo_available(const std::string& meminfo);

// The memory controller's path of the cgroup in a /proc/self/cgroup text: v2 ("0::/a/b") when
// `v2`, else v1 ("4:memory:/a/b"); "" when absent.
std::string cgroup_path(const std::string& proc_self_cgroup, bool v2);

}  // namespace headroom::app
