// Pool statistics: seed-pair swings and the paired bootstrap of a configuration difference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

// Seed swing of one pair: |a − b|.
struct SeedPair {
  size_t config = 0;
  size_t run_a = 0, run_b = 0;
  double a = 0, b = 0, swing = 0;
};

// Every pair of runs within each group (a group = the runs of one configuration with a score).
// scores[g][i] is run runs[g][i]'s score.
std::vector<SeedPair> seed_pairs(const std::vector<std::vector<size_t>>& runs,
                                 const std::vector<std::vector<double>>& scores);

// The seed standard deviation σ that a mean seed swing implies: two draws differ by E|a − b| = 2σ/√π.
double sigma_from_mean_swing(double mean_swing);

// Seeds per configuration at which a difference of two configuration means of this size would
// exceed two standard errors (2σ·√(2/n)): the smallest n ≥ 2 with n ≥ 8σ²/effect², at most
// kSeedsNever (an effect that small is none). 0 when the effect is 0 (no number of seeds resolves
// it) or σ is 0.
inline constexpr int64_t kSeedsNever = 1'000'000'000'000;
int64_t seeds_to_resolve(double effect, double mean_swing);

// Mean (the sum in order over the count), min and max of a non-empty list of seeds' values.
struct Spread {
  double mean = 0, lo = 0, hi = 0;
};
Spread spread_of(const std::vector<double>& v);

// 100 · part / whole: a swing as a share of the cross-pool range; none when whole ≤ 0.
std::optional<double> percent_of(double part, double whole);

// numpy.percentile's default (linear interpolation between order statistics, "type 7").
double percentile(std::vector<double> v, double q);  // q in [0, 100]

// One cell of the score (a task at a length) for the two configurations compared: a[s][u] is the
// score of seed (run) s of configuration A on unit u (a sample index common to every run of both
// configurations, or a single unit holding the cell's score when per-sample scores are missing).
struct BootCell {
  int64_t length = 0;
  std::string task;
  std::vector<std::vector<double>> a, b;
};

struct BootResult {
  bool ok = false;
  std::string why;
  double estimate = 0;  // A − B on the full data
  double lo = 0, hi = 0;
  int64_t resamples = 0;
};

// Paired bootstrap of A − B, where a configuration's score is the mean over lengths of the mean
// over the length's cells of the mean over seeds and units of the cell (the RULER average,
// ×100 when `percent`). Each resample draws, independently, seeds of A and seeds of B with
// replacement, and then — shared by A and B, which pairs them — the units of every cell with
// replacement (resample_cells = false: samples within each task × length), or the cells of every
// length with replacement (resample_cells = true: tasks within each length, the fallback when only
// per-cell scores exist). The interval is the percentile interval at `confidence`.
BootResult paired_bootstrap(const std::vector<BootCell>& cells, bool resample_cells, int64_t resamples, uint64_t seed,
                            double confidence, bool percent = true);

}  // namespace headroom::analysis
