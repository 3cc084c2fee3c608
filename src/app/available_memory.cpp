#include "app/available_memory.h"

#include "util/error.h"
#include "util/text.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace headroom::app {
namespace fs = std::filesystem;
namespace {

// cgroup v1 says "no limit" with a number near 2^63 (rounded to pages); v2 says "max".
constexpr int64_t kNoLimit = int64_t{1} << 60;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return in ? s.str() : std::string();
}

// A file holding one number; -1 when missing, unreadable, "max" or no limit.
int64_t read_number(const fs::path& path) {
  const std::string t = trim(read_text(path));
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || (*end != '\n' && *end != '\0') || v < 0 || v >= kNoLimit) return -1;
  return v;
}

// "name value" lines of a memory.stat file; -1 when absent.
int64_t stat_value(const std::string& stat, const std::string& name) {
  std::istringstream in(stat);
  std::string k;
  long long v = 0;
  while (in >> k >> v)
    if (k == name) return v;
  return -1;
}

struct Cgroup {
  int64_t limit = -1, usage = 0, reclaimable = 0;
  std::string where;
};

std::optional<AvailableMemory> from_cgroup(const Cgroup& c) {
  if (c.limit < 0) return std::nullopt;
  const int64_t used = std::max<int64_t>(0, c.usage - std::max<int64_t>(0, c.reclaimable));
  return AvailableMemory{std::max<int64_t>(0, c.limit - used),
                         cat("cgroup limit ", c.limit, " bytes in ", c.where, " minus ", used, " bytes in use")};
}

// v2: the lowest memory.max of the cgroup and its ancestors. In a cgroup namespace the process's
// own cgroup is the mount's root, so a path that does not exist under the mount means the root.
Cgroup cgroup_v2(const std::string& path) {
  const fs::path root = "/sys/fs/cgroup";
  fs::path dir = root / fs::path(path).relative_path();
  std::error_code ec;
  if (!fs::exists(dir / "memory.max", ec)) dir = root;
  Cgroup c;
  for (fs::path d = dir;; d = d.parent_path()) {
    const int64_t limit = read_number(d / "memory.max");
    if (limit >= 0 && (c.limit < 0 || limit < c.limit)) c.limit = limit, c.where = (d / "memory.max").string();
    if (d == root || d == d.parent_path()) break;
  }
  c.usage = std::max<int64_t>(0, read_number(dir / "memory.current"));
  c.reclaimable = stat_value(read_text(dir / "memory.stat"), "inactive_file");
  return c;
}

// v1: memory.stat's hierarchical_memory_limit covers the ancestors' limits too.
Cgroup cgroup_v1(const std::string& path) {
  const fs::path root = "/sys/fs/cgroup/memory";
  fs::path dir = root / fs::path(path).relative_path();
  std::error_code ec;
  if (!fs::exists(dir / "memory.limit_in_bytes", ec)) dir = root;
  const std::string stat = read_text(dir / "memory.stat");
  Cgroup c;
  const int64_t hierarchical = stat_value(stat, "hierarchical_memory_limit");
  c.limit = hierarchical >= 0 && hierarchical < kNoLimit ? hierarchical : read_number(dir / "memory.limit_in_bytes");
  c.where = (dir / "memory.limit_in_bytes").string();
  c.usage = std::max<int64_t>(0, read_number(dir / "memory.usage_in_bytes"));
  c.reclaimable = stat_value(stat, "total_inactive_file");
  return c;
}

}  // namespace

int64_t meminfo_available(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    char unit[8] = {};
    if (line.rfind("MemAvailable:", 0) == 0 && std::sscanf(line.c_str(), "MemAvailable: %lld %7s", &kb, unit) >= 1)
      return static_cast<int64_t>(kb) * 1024;
  }
  return -1;
}

std::string cgroup_path(const std::string& proc_self_cgroup, bool v2) {
  std::istringstream in(proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a == std::string::npos ? 0 : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (v2 ? line.substr(0, a) == "0" && controllers.empty() : [&] {
          const auto list = split_list(controllers);
          return std::find(list.begin(), list.end(), "memory") != list.end();
        }())
      return line.substr(b + 1);
  }
  return "";
}

AvailableMemory available_memory() {
  AvailableMemory best{meminfo_available(read_text("/proc/meminfo")), "MemAvailable in /proc/meminfo"};
  const std::string cgroups = read_text("/proc/self/cgroup");
  for (const bool v2 : {false, true}) {
    const std::string path = cgroup_path(cgroups, v2);
    if (path.empty()) continue;
    const auto c = from_cgroup(v2 ? cgroup_v2(path) : cgroup_v1(path));
    if (c && (best.bytes < 0 || c->bytes < best.bytes)) best = *c;
  }
  return best;
}

}  // namespace headroom::app
