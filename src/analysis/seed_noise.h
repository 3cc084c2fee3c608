// Seed noise and the paired bootstrap's cells: the statistics that the seed-noise, differences
// and findings sections share.
#pragma once

#include "analysis/stats.h"
#include "analysis/study.h"

#include <string>
#include <utility>
#include <vector>

namespace headroom::analysis {

// Seed swing of `score`: |a − b| over every pair of seeds of one configuration; range = max − min
// over every pool run with the score.
struct NoiseSummary {
  bool ok = false;  // at least one seed pair
  double mean = 0, max = 0, range = 0;
  size_t pairs = 0;
  std::vector<SeedPair> swings;  // every pair, configuration by configuration
};
NoiseSummary seed_noise(const Study& s, const ScoreName& score);

// Pool runs that have the score.
int64_t runs_with_score(const Study& s, const ScoreName& score);

// Runs that evaluated the same seeds as an earlier run of their configuration (a repeated
// evaluation, not a seed replicate), as (configuration, run) indices.
std::vector<std::pair<size_t, size_t>> repeated_seed_runs(const Study& s);

// The paired-bootstrap cells of configurations a and b for a RULER score (empty for probe scores):
// per sample when every run has samples.jsonl (per_sample), else per task; `method` names which.
std::vector<BootCell> boot_cells(const Study& s, const ConfigGroup& a, const ConfigGroup& b, const ScoreName& score,
                                 bool& per_sample, std::string& method);

}  // namespace headroom::analysis
