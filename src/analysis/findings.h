// Findings: the claims a study tests, each a comparison of two sets of configurations, judged
// against seed noise (analyze.finding = "NAME: A over B").
#pragma once

#include "analysis/features.h"

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

}  // namespace headroom::analysis
