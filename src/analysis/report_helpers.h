// Small pieces every report section uses: a mean with its range over runs that have a value, JSON
// numbers for the plot data (NaN and missing as null), and the study's names for runs and
// configurations.
#pragma once

#include "analysis/study.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

using Opt = std::optional<double>;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Mean, count, min and max of the finite values present.
struct Mean {
  Opt mean;
  int64_t n = 0;
  double lo = kNaN, hi = kNaN;
};
Mean mean_of(const std::vector<Opt>& v);

// Per-configuration mean of a per-run value.
Mean config_mean(const Study& s, const ConfigGroup& g, const std::function<Opt(const RunData&)>& f);

nlohmann::json num(const Opt& v);  // null when missing or not finite
nlohmann::json num(double v);

bool is_ruler_task(const std::string& t);  // one of the suite's RULER tasks (eval/tasks.h)
const RunData* first_pool_run(const Study& s);  // null when the pool is empty
std::string config_name(const Study& s, long idx);  // "" for a run in no configuration
// The keys in which two configurations differ, space-separated.
std::string short_keys_differing(const ConfigGroup& a, const ConfigGroup& b);
// At most max_points evenly spaced values, the first and last kept (plot data).
std::vector<double> downsample(const std::vector<double>& v, size_t max_points);

}  // namespace headroom::analysis
