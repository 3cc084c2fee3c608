#include "util/peak_memory.h"

#include <fstream>
#include <sstream>

namespace headroom {

int64_t status_peak_resident(const std::string& status) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kib = -1;
      std::string unit;
      if (fields >> kib >> unit && unit == "kB") return kib * 1024;
      return -1;
    }
  return -1;
}

int64_t peak_resident_bytes() {
  std::ifstream f("/proc/self/status");
  std::stringstream text;
  text << f.rdbuf();
  return status_peak_resident(text.str());
}

}  // namespace headroom
