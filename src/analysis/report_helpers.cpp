#include "analysis/report_helpers.h"

#include "analysis/config_groups.h"
#include "analysis/features.h"
#include "eval/tasks.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

using nlohmann::json;

Mean mean_of(const std::vector<Opt>& v) {
  Mean m;
  double s = 0;
  for (const auto& x : v)
    if (x && std::isfinite(*x)) {
      s += *x, ++m.n;
      m.lo = std::isnan(m.lo) ? *x : std::min(m.lo, *x);
      m.hi = std::isnan(m.hi) ? *x : std::max(m.hi, *x);
    }
  if (m.n) m.mean = s / static_cast<double>(m.n);
  return m;
}

nlohmann::json num(const Opt& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }
nlohmann::json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

bool is_ruler_task(const std::string& t) {
  try {
    return eval::find_task(t).ruler;
  } catch (const std::exception&) {
    return false;
  }
}

const RunData* first_pool_run(const Study& s) {
  for (const auto& r : s.runs)
    if (r.in_pool) return &r;
  return nullptr;
}

std::string config_name(const Study& s, long idx) {
  return idx < 0 ? std::string() : s.configs[static_cast<size_t>(idx)].id;
}

// Per-configuration mean of a per-run value.
Mean config_mean(const Study& s, const ConfigGroup& g, const std::function<Opt(const RunData&)>& f) {
  std::vector<Opt> v;
  for (size_t i : g.runs) v.push_back(f(s.runs[i]));
  return mean_of(v);
}

std::string short_keys_differing(const ConfigGroup& a, const ConfigGroup& b) {
  std::string out;
  for (const auto& k : profile_differences(a, b)) out.append(out.empty() ? "" : " ").append(k);
  return out;
}

std::vector<double> downsample(const std::vector<double>& v, size_t max_points) {
  if (v.size() <= max_points) return v;
  std::vector<double> o;
  for (size_t i = 0; i < max_points; ++i) o.push_back(v[i * (v.size() - 1) / (max_points - 1)]);
  return o;
}

}  // namespace headroom::analysis
