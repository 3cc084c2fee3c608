#include "util/jsonl.h"

#include "util/error.h"

#include <fstream>
#include <sstream>

namespace headroom {

void append_jsonl(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream f(path, std::ios::app);
  f << value.dump() << '\n';
  if (!f) fail(path.string(), ": write failed");
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
