#include "config/task_names.h"

#include "util/error.h"

#include <algorithm>

namespace headroom::config {

std::string check_task_list(const std::string& csv) {
  if (csv.empty()) return cat("must name at least one task (", kSyntheticTaskNames, ")");
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    const std::string name = csv.substr(start, comma - start);
    if (std::find(kSyntheticTasks.begin(), kSyntheticTasks.end(), name) == kSyntheticTasks.end())
      return cat("has unknown task '", name, "'; tasks are ", kSyntheticTaskNames,
                 " (comma-separated, no spaces)");
    start = comma + 1;
  }
  return "";
}

std::string check_optional_task_list(const std::string& csv) {
  return csv.empty() ? "" : check_task_list(csv);
}

std::vector<std::string> parse_task_list(const std::string& csv) {
  if (const std::string why = check_task_list(csv); !why.empty())
    fail("synthetic task list '", csv, "' ", why);
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    out.push_back(csv.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace headroom::config
