// Small pieces every report section uses: JSON numbers for the plot data (NaN and missing as null),
// and the study's names for runs and configurations. Means over runs are means.h's.
#pragma once

#include "analysis/means.h"
#include "analysis/study.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

nlohmann::json num(const Opt& v);  // null when missing or not finite
nlohmann::json num(double v);

const RunData* first_pool_run(const Study& s);      // null when the pool is empty
std::string config_name(const Study& s, long idx);  // "" for a run in no configuration
// The keys in which two configurations differ, space-separated.
std::string short_keys_differing(const ConfigGroup& a, const ConfigGroup& b);
// "lo..hi" with 4 significant digits.
std::string range_text(double lo, double hi);
// At most max_points evenly spaced values, the first and last kept (plot data).
std::vector<double> downsample(const std::vector<double>& v, size_t max_points);

}  // namespace headroom::analysis
