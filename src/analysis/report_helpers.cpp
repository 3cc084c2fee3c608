#include "analysis/report_helpers.h"

#include "analysis/config_groups.h"
#include "analysis/features.h"
#include "analysis/report.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

using nlohmann::json;

nlohmann::json num(const Opt& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }
nlohmann::json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

const RunData* first_pool_run(const Study& s) {
  for (const auto& r : s.runs)
    if (r.in_pool) return &r;
  return nullptr;
}

std::string config_name(const Study& s, long idx) {
  return idx < 0 ? std::string() : s.configs[static_cast<size_t>(idx)].id;
}

std::string short_keys_differing(const ConfigGroup& a, const ConfigGroup& b) {
  std::string out;
  for (const auto& k : profile_differences(a, b)) out.append(out.empty() ? "" : " ").append(k);
  return out;
}

std::string range_text(double lo, double hi) { return fmt(lo, 4) + ".." + fmt(hi, 4); }

std::vector<double> downsample(const std::vector<double>& v, size_t max_points) {
  if (v.size() <= max_points) return v;
  std::vector<double> o;
  for (size_t i = 0; i < max_points; ++i) o.push_back(v[i * (v.size() - 1) / (max_points - 1)]);
  return o;
}

}  // namespace headroom::analysis
