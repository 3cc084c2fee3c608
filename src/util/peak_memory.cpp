#include "util/peak_memory.h"

#include <fstream>
#include <sstream>

namespace headroom {
namespace {

int64_t own_status_field(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::stringstream text;
  text << f.rdbuf();
  return status_field_bytes(text.str(), field);
}

}  // namespace

int64_t status_field_bytes(const std::string& status, const std::string& field) {
  std::istringstream in(status);
  std::string line;
  const std::string prefix = field + ":";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream fields(line.substr(prefix.size()));
      int64_t kib = -1;
      std::string unit;
      if (fields >> kib >> unit && unit == "kB") return kib * 1024;
      return -1;
    }
  return -1;
}

int64_t peak_resident_bytes() { return own_status_field("VmHWM"); }
int64_t resident_bytes() { return own_status_field("VmRSS"); }

}  // namespace headroom
