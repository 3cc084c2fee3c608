// The synthetic tasks' names, which configuration keys (data.synthetic_tasks, data.warmup_tasks,
// train.probe_tasks) check before any stage runs and turn into config::SyntheticTask (choices.h);
// the tasks themselves are data/synthetic.h's.
#pragma once

#include "config/choices.h"

#include <string>
#include <vector>

namespace headroom::config {

// "kv, needle, ...": the list for messages.
std::string synthetic_task_names();

// "" when csv is a comma-separated list of known tasks, else why not (for a config key check).
std::string check_task_list(const std::string& csv);
std::string check_optional_task_list(const std::string& csv);  // as check_task_list, "" allowed
// "kv,needle" -> {kKv, kNeedle}; throws with check_task_list's reason.
std::vector<SyntheticTask> parse_task_list(const std::string& csv);

}  // namespace headroom::config
