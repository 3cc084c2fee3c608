// Findings: the claims a study tests, each a comparison of two sets of configurations, judged
// against seed noise (analyze.finding = "NAME: A over B").
#pragma once

#include "analysis/features.h"
#include "analysis/seed_noise.h"
#include "analysis/stats.h"
#include "analysis/study.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

// "wider_heads: model.head_dim_qk == 32 & model.n_heads == 2 over model.head_dim_qk == 8": A's
// configurations are expected to score higher than B's. A side is predicates joined by '&'.
struct Finding {
  std::string name, text;
  std::vector<Predicate> a, b;
  std::string a_text, b_text;
};

// Throws naming the entry when it is malformed.
Finding parse_finding(const std::string& entry);

// "KEY OP VALUE & KEY OP VALUE ...": a side of a finding, or any other selection of
// configurations; throws naming `where` (the key or entry) when malformed.
std::vector<Predicate> parse_conjunction(const std::string& text, const std::string& where);

// Whether every predicate holds for the configuration; empty with `why` when one cannot be
// evaluated (a missing key, a non-numeric value under an ordering).
std::optional<bool> side_holds(const std::vector<Predicate>& side, const RunConfig& cfg, std::string& why);

// The verdict of an effect (A − B) against the mean seed swing: reproduces beyond +2 swings,
// reversed beyond −2, "no signal" when effect and swing are both 0 (nothing moved: not an effect),
// otherwise not resolved; unknown without seed pairs (noise_ok false).
std::string finding_verdict(double effect, bool noise_ok, double mean_swing);

// For a "not resolved" verdict: the seeds per configuration that would resolve an effect of this
// size at this swing (stats.h seeds_to_resolve), or why none would ("none: no effect measured");
// "" for any other verdict.
std::string seeds_needed(double effect, bool noise_ok, double mean_swing, const std::string& verdict);

// The configurations a side selects that have the score (configurations whose first run's
// configuration cannot be evaluated are left out, with `why`).
struct FindingSide {
  std::vector<size_t> configs;       // into Study::configs
  std::vector<double> config_means;  // each over its runs with the score
  std::vector<double> run_scores;    // every such run's score, configuration by configuration
  Spread runs;                       // of run_scores, when there are any
  double mean = std::nan("");        // over the configurations
};
FindingSide select_side(const Study& s, const std::vector<Predicate>& side, const ScoreName& score, std::string& why);

// A finding on one score, against that score's seed noise.
struct FindingResult {
  FindingSide a, b;
  std::string why;        // when a side is empty: why a configuration could not be evaluated, if that is why
  bool computed = false;  // both sides have a configuration with the score; what follows only then
  double effect = 0;      // a.mean − b.mean
  std::optional<double> effect_over_swing;  // when there are seed pairs and the mean swing is not 0
  std::string verdict;                      // finding_verdict
  BootResult ci;                            // of the effect
  std::string method;                       // what the bootstrap resampled
  std::string seeds;                        // seeds_needed
};

// The interval is paired over samples (or tasks) when each side is one configuration with RULER
// cells, else over the seeds (runs) of each side.
FindingResult evaluate_finding(const Study& s, const Finding& f, const ScoreName& score, const NoiseSummary& noise,
                               int64_t resamples, double confidence, uint64_t seed);

}  // namespace headroom::analysis
