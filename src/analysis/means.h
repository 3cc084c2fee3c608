// Means over runs: the one reduction every section's statistics share (a configuration's value is
// the mean over its seeds that have one).
#pragma once

#include "analysis/study.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
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

}  // namespace headroom::analysis
