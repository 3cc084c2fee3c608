#include "analysis/stats.h"

#include "util/error.h"
#include "util/random.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace headroom::analysis {

std::vector<SeedPair> seed_pairs(const std::vector<std::vector<size_t>>& runs,
                                 const std::vector<std::vector<double>>& scores) {
  std::vector<SeedPair> out;
  for (size_t g = 0; g < runs.size(); ++g)
    for (size_t i = 0; i < runs[g].size(); ++i)
      for (size_t j = i + 1; j < runs[g].size(); ++j) {
        const double a = scores[g][i], b = scores[g][j];
        out.push_back({g, runs[g][i], runs[g][j], a, b, std::abs(a - b)});
      }
  return out;
}

Spread spread_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {sum / static_cast<double>(v.size()), *lo, *hi};
}

std::optional<double> percent_of(double part, double whole) {
  return whole > 0 ? std::optional<double>(100 * part / whole) : std::nullopt;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

namespace {

// Cells grouped by length, in ascending length order.
std::vector<std::vector<size_t>> by_length(const std::vector<BootCell>& cells) {
  std::map<int64_t, std::vector<size_t>> m;
  for (size_t i = 0; i < cells.size(); ++i) m[cells[i].length].push_back(i);
  std::vector<std::vector<size_t>> out;
  for (auto& [L, v] : m) out.push_back(v);
  return out;
}

// Mean over the chosen seeds and units of one side of a cell.
double cell_mean(const std::vector<std::vector<double>>& side, const std::vector<size_t>& seeds,
                 const std::vector<size_t>& units) {
  double s = 0;
  for (size_t r : seeds)
    for (size_t u : units) s += side[r][u];
  return s / static_cast<double>(seeds.size() * units.size());
}

std::vector<size_t> iota(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace

BootResult paired_bootstrap(const std::vector<BootCell>& cells, bool resample_cells, int64_t resamples, uint64_t seed,
                            double confidence, bool percent) {
  BootResult r;
  if (cells.empty()) {
    r.why = "no task × length cell is scored in every run of both configurations";
    return r;
  }
  const size_t nA = cells[0].a.size(), nB = cells[0].b.size();
  for (const auto& c : cells) {
    if (c.a.size() != nA || c.b.size() != nB || nA == 0 || nB == 0)
      fail("paired_bootstrap: cell ", c.task, "@", c.length, " has ", c.a.size(), "/", c.b.size(), " seeds, expected ",
           nA, "/", nB);
    const size_t units = c.a[0].size();
    if (units == 0) fail("paired_bootstrap: cell ", c.task, "@", c.length, " has no unit");
    for (const auto& s : c.a)
      if (s.size() != units) fail("paired_bootstrap: unaligned units in ", c.task, "@", c.length);
    for (const auto& s : c.b)
      if (s.size() != units) fail("paired_bootstrap: unaligned units in ", c.task, "@", c.length);
  }
  const auto groups = by_length(cells);
  const double scale = percent ? 100.0 : 1.0;
  // The difference for given seed draws, cell draws (per length group) and unit draws (per cell).
  auto diff = [&](const std::vector<size_t>& sa, const std::vector<size_t>& sb,
                  const std::vector<std::vector<size_t>>& cell_pick, const std::vector<std::vector<size_t>>& units) {
    double total = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      double s = 0;
      for (size_t ci : cell_pick[g]) {
        const BootCell& c = cells[ci];
        s += cell_mean(c.a, sa, units[ci]) - cell_mean(c.b, sb, units[ci]);
      }
      total += s / static_cast<double>(cell_pick[g].size());
    }
    return scale * total / static_cast<double>(groups.size());
  };
  std::vector<std::vector<size_t>> all_units(cells.size()), all_cells = groups;
  for (size_t i = 0; i < cells.size(); ++i) all_units[i] = iota(cells[i].a[0].size());
  r.estimate = diff(iota(nA), iota(nB), all_cells, all_units);

  // The house's SplitMix64 stream (util/random.h): the same draws under any standard library, which
  // std::uniform_int_distribution does not promise.
  SplitMix64 rng{seed};
  auto draw = [&](size_t n) {
    std::vector<size_t> v(n);
    for (auto& x : v) x = static_cast<size_t>(rng.below(static_cast<int64_t>(n)));
    return v;
  };
  std::vector<double> stats;
  stats.reserve(static_cast<size_t>(resamples));
  for (int64_t b = 0; b < resamples; ++b) {
    const auto sa = draw(nA), sb = draw(nB);
    std::vector<std::vector<size_t>> cell_pick = groups, units = all_units;
    if (resample_cells) {
      for (size_t g = 0; g < groups.size(); ++g) {
        const auto idx = draw(groups[g].size());
        for (size_t k = 0; k < idx.size(); ++k) cell_pick[g][k] = groups[g][idx[k]];
      }
    } else {
      for (size_t i = 0; i < cells.size(); ++i) units[i] = draw(all_units[i].size());
    }
    stats.push_back(diff(sa, sb, cell_pick, units));
  }
  const double alpha = (1 - confidence) / 2;
  r.lo = percentile(stats, 100 * alpha);
  r.hi = percentile(stats, 100 * (1 - alpha));
  r.resamples = resamples;
  r.ok = true;
  return r;
}

double sigma_from_mean_swing(double mean_swing) { return mean_swing * std::sqrt(std::acos(-1.0)) / 2.0; }

int64_t seeds_to_resolve(double effect, double mean_swing) {
  const double sigma = sigma_from_mean_swing(mean_swing);
  if (effect == 0.0 || sigma == 0.0) return 0;
  const double n = std::min(8.0 * sigma * sigma / (effect * effect), static_cast<double>(kSeedsNever));
  return std::max<int64_t>(2, static_cast<int64_t>(std::ceil(n)));
}

}  // namespace headroom::analysis
