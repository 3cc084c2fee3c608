// The spike monitor's rules as configuration (train.spike_rules; the monitor itself is
// train/spike_monitor.h, which defines what a rule's fields mean).
//
// train.spike_rules is a comma-separated list; each entry is a built-in rule's name or a rule
// written out as name:window:sigmas:one|two:lookback, e.g. "paper,olmo" (the default) or
// "paper,tight:500:5:two:200".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headroom::config {

struct SpikeRule {
  std::string name;
  long window = 0;         // steps over which the window score is taken
  double sigmas = 0;       // threshold in reference standard deviations
  bool two_sided = false;  // false: only upward excursions count
  long lookback = 0;       // finite values forming the reference mean/std (≥ 2)
};

inline constexpr long kMaxSpikeLength = 1L << 26;  // largest window / lookback accepted

SpikeRule paper_spike_rule();                         // {"paper", 1000, 7, true, 1000}
SpikeRule olmo_spike_rule();                          // {"olmo", 10000, 6, false, 128}
std::vector<SpikeRule> default_spike_rules();         // {paper, olmo}
SpikeRule builtin_spike_rule(std::string_view name);  // "paper" | "olmo"; throws otherwise

// "" when the rule is usable, else why (window in [1, 2^26], lookback in [2, 2^26], finite
// sigmas > 0, a name).
std::string spike_rule_problem(const SpikeRule& r);

// "" when `text` is a valid train.spike_rules value (at least one rule, names unique), else why.
std::string check_spike_rules(const std::string& text);
// The rules of a train.spike_rules value; throws headroom::Error with check_spike_rules's reason.
std::vector<SpikeRule> parse_spike_rules(const std::string& text);

}  // namespace headroom::config
