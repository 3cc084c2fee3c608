#include "util/jsonl.h"

#include "util/error.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace headroom {

void append_jsonl(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream f(path, std::ios::app);
  if (!f) fail(path.string(), ": cannot open for appending (", std::strerror(errno), ")");
  // Flushed here, not by the destructor, whose failure (a full disk) nobody would see.
  f << value.dump() << '\n';
  f.flush();
  if (!f) fail(path.string(), ": write failed (", std::strerror(errno), "; disk full or quota reached?)");
}

std::vector<std::pair<int64_t, nlohmann::json>> jsonl_lines(const std::string& text) {
  std::vector<std::pair<int64_t, nlohmann::json>> out;
  std::istringstream in(text);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.emplace_back(n, nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      fail("line ", n, " is not JSON (", e.what(), ")");
    }
  }
  return out;
}

}  // namespace headroom
