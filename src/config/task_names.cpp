#include "config/task_names.h"

#include "util/error.h"

#include <algorithm>

namespace headroom::config {
namespace {

std::vector<std::string> split_commas(const std::string& csv) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    out.push_back(csv.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string synthetic_task_names() { return choice_list<SyntheticTask>(); }

std::string check_task_list(const std::string& csv) {
  if (csv.empty()) return cat("must name at least one task (", synthetic_task_names(), ")");
  for (const std::string& name : split_commas(csv))
    if (!choice_from<SyntheticTask>(name))
      return cat("has unknown task '", name, "'; tasks are ", synthetic_task_names(), " (comma-separated, no spaces)");
  return "";
}

std::string check_optional_task_list(const std::string& csv) { return csv.empty() ? "" : check_task_list(csv); }

std::vector<SyntheticTask> parse_task_list(const std::string& csv) {
  if (const std::string why = check_task_list(csv); !why.empty()) fail("synthetic task list '", csv, "' ", why);
  std::vector<SyntheticTask> out;
  for (const std::string& name : split_commas(csv)) out.push_back(*choice_from<SyntheticTask>(name));
  return out;
}

}  // namespace headroom::config
