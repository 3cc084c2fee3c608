// The statistics behind "Configuration differences": every pair of configurations' difference in
// a score (means over seeds), how it compares with the mean seed swing, and its paired-bootstrap
// interval.
#pragma once

#include "analysis/means.h"
#include "analysis/seed_noise.h"
#include "analysis/stats.h"
#include "analysis/study.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

// A difference against the mean seed swing: none (difference and swing both 0: nothing moved),
// within (|difference| < swing), beyond, or unknown without seed pairs.
enum class NoiseMark { kNoDifference, kWithin, kBeyond, kUnknown };

struct ConfigDifference {
  size_t a = 0, b = 0;               // into Study::configs, a < b
  Mean score_a, score_b;             // over seeds
  std::optional<double> difference;  // a − b, when both have the score; the rest only then
  NoiseMark mark = NoiseMark::kUnknown;
  BootResult ci;
  std::string method;  // what the bootstrap resampled
};

struct DifferenceStats {
  std::vector<ConfigDifference> pairs;  // (0, 1), (0, 2), ..., (1, 2), ...
  int64_t within = 0, beyond = 0;
  std::string no_interval;          // why the last interval that failed failed ("" when none did)
  bool pool_lacks_samples = false;  // some pool run has no samples.jsonl (per-task bootstrap)
};

// Bootstrap seeds: seed + a · 1000003 + b for the pair (a, b).
DifferenceStats config_differences(const Study& s, const ScoreName& score, const NoiseSummary& noise, int64_t resamples,
                                   uint64_t seed, double confidence);

}  // namespace headroom::analysis
