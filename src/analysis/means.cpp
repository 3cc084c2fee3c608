#include "analysis/means.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

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

Mean config_mean(const Study& s, const ConfigGroup& g, const std::function<Opt(const RunData&)>& f) {
  std::vector<Opt> v;
  for (size_t i : g.runs) v.push_back(f(s.runs[i]));
  return mean_of(v);
}

}  // namespace headroom::analysis
