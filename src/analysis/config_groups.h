// Runs into configurations: a configuration is a lineage's keys once the seed keys and the ignored
// keys are removed; the comparable pool is the most common (tokenizer, evaluation lengths, RULER
// tasks). Runs outside the pool keep their own tables and say why they are out.
#pragma once

#include "analysis/study.h"

#include <map>
#include <string>
#include <vector>

namespace headroom::analysis {

// Groups runs into configurations and chooses the comparable pool.
void group_configs(Study& s, const AnalyzeConfig& cfg);

// The profile of one configuration (see ConfigGroup::profile) from a run's flattened keys.
std::map<std::string, std::string> config_profile(const std::map<std::string, std::string>& flat,
                                                  const std::vector<std::string>& stage_names);
// "qk_norm=layer n_kv_heads=2": the profile values of the keys in `keys` (short names when unique).
std::string profile_label(const std::map<std::string, std::string>& profile, const std::vector<std::string>& keys);
// Profile keys whose values differ between a and b.
std::vector<std::string> profile_differences(const ConfigGroup& a, const ConfigGroup& b);

}  // namespace headroom::analysis
