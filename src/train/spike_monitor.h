// Training-stability monitor: spike scores of the training loss and the gradient norm (the study's
// App. D.4 "gradient spike score"). The definitions below are the design; there is no other.
//
// Definitions (one rule = one SpikeRule; every rule is applied to both series independently):
//
//   Reference statistics. For step t of a series, mean_t and std_t are the mean and the population
//     standard deviation (divide by n, as OLMo-core's StabilityMonitorCallback) of the `lookback`
//     finite values of that series observed immediately before step t. The value at step t is not
//     part of its own reference. Spikes stay in the reference once observed (as in OLMo-core and as
//     in "a rolling average of the last 1000 values"); non-finite values never enter it.
//   Spike. A finite value x_t is a spike when at least `lookback` finite values precede it, std_t is
//     above the floor max(1e-10, 64·DBL_EPSILON·|mean_t|), and
//       one-sided:  x_t - mean_t >  sigmas·std_t      (upward spikes only, OLMo-core's test)
//       two-sided: |x_t - mean_t| > sigmas·std_t      (either direction)
//     The floor is OLMo-core's "std < 1e-10 → no spike", plus a relative term of 64 ulps so that a
//     flat series at a large offset cannot flag rounding noise. A perfectly flat history therefore
//     flags nothing, whatever comes next (as OLMo-core). A non-finite value (NaN, ±inf) is always a
//     spike in every rule, also before `lookback` values exist, and is left out of the reference
//     statistics (the reference is then the previous `lookback` finite values).
//   Early steps. Before a series has `lookback` finite values no finite value can be flagged.
//   Combined. A step is a combined spike for a rule when the loss or the gradient norm (or both)
//     spikes at that step under that rule; it counts once.
//   Scores. The window score is (spikes among the last min(steps, window) steps) / min(steps,
//     window): early in a run the denominator is the number of steps observed so far (OLMo-core
//     instead reports nothing until the window is full; `steps_in_window < window` tells a caller
//     to do the same). The total score is spikes / steps over every step observed since the start
//     of the run, which is the OLMo 2 paper's "percentage of values in the time series".
//
// Built-in rules:
//   "paper": window 1000, 7σ, two-sided, lookback 1000. The study reuses the OLMo 2 spike score:
//     "the percentage of values that are at least seven standard deviations away from a rolling
//     average of the last 1000 values" (OLMo 2, as quoted by secondary sources; the study's own
//     App. D.4 wording was not available here). Unclear in that wording, and decided here: whether
//     the rolling window includes the value tested (no: the previous values, as OLMo-core), which
//     standard deviation (population, as OLMo-core), whether the std is over the same 1000 values
//     (yes), and "away from" is read as two-sided. The per-step share is reported over the last
//     1000 steps (window score) and over the whole run (total score); the paper's figure
//     corresponds to the total score over the run or span it plots.
//   "olmo": OLMo-core's StabilityMonitorCallback defaults: a spike when the value exceeds mean + 6σ
//     of the previous 128 values (one-sided), score = share of spikes over the last 10000 steps.
//
// Cost: O(number of rules) per observe, amortised. The rolling sums are kept relative to a shift
// (the median of the window at the last recomputation), so values like 1e6 + small noise do not
// cancel catastrophically; they are recomputed from the window (O(lookback)) every `lookback`
// additions, and at once when the largest d² added since the last recomputation exceeds 1e6·Σd²
// (a value that dwarfed the rest has left the window and its subtraction left rounding error).
// Memory is bounded: max(lookback) finite values per series and `window` one-byte flags per rule,
// independent of the run length.
//
// Checkpoints: monitor_part() hands the state to a checkpoint as a part of named float64 arrays
// (written as /<part>/<array>; io/checkpoint.h), one array per quantity, indexed by rule order
// (R rules; counts are exact integers; "×" arrays are row-major):
//   steps              [1]      observe() calls since the start of the run
//   value_counts       [2]      finite loss values, finite grad_norm values observed
//   loss_values        [min(value_counts[0], C)]  the retained finite losses, oldest first;
//                               C = the largest lookback
//   grad_norm_values   [min(value_counts[1], C)]  the same for the gradient norm
//   rule_window, rule_sigmas, rule_two_sided (0 or 1), rule_lookback, rule_name_length   [R]
//   rule_name_bytes    [Σ rule_name_length]  the names' bytes, rule after rule (a rule name may hold
//                               characters an HDF5 name cannot, so no array is named after a rule)
//   loss_moments       [R × 5]  per rule: shift, sum, sumsq, peak, since_recompute (RollingMoments)
//   grad_norm_moments  [R × 5]  the same for the gradient norm
//   totals             [R × 3]  per rule: loss, grad_norm, combined spikes since the start
//   flags              [Σ min(steps, window)]  per rule, the flags of its last min(steps, window)
//                               steps, oldest first (bit 0 loss, bit 1 grad_norm)
// Size: 3 + Σ(18 + name length + min(steps, window)) + 2·min(values, C) doubles; about 13,000
// (100 KB) for the two built-in rules once their windows are full. restore_monitor() validates a
// part against the monitor's rules and replaces the monitor's state; a resumed monitor is
// bit-identical to one that never stopped. Checkpoints written before the named arrays hold the
// state as one flat vector (array "state": magic, version, counts, the rules, then the same
// quantities interleaved); restore_monitor() still reads it (restore_monitor_flat).
#pragma once

#include "config/spike_rules.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::io {
struct CheckpointPart;
}

namespace headroom::train {

// The rules are configuration (train.spike_rules): config/spike_rules.h.
using config::builtin_spike_rule;
using config::default_spike_rules;
using config::olmo_spike_rule;
using config::paper_spike_rule;
using config::SpikeRule;

// Running sums of d = x - shift over the reference window of one series under one rule.
struct RollingMoments {
  double shift = 0, sum = 0, sumsq = 0;
  double peak = 0;           // largest d² added since the last recomputation
  long since_recompute = 0;  // additions since the last recomputation
};

// The most recent finite values of one series: finite value i sits at ring[i % ring.size()].
struct SpikeSeries {
  std::vector<double> ring;
  long count = 0;  // finite values observed since the start
};

struct SpikeRuleState {
  RollingMoments loss, grad_norm;
  std::vector<std::uint8_t> flags;  // step s at flags[s % window]: bit 0 loss, bit 1 grad_norm
  long window_loss = 0, window_grad_norm = 0, window_combined = 0;
  long total_loss = 0, total_grad_norm = 0, total_combined = 0;
};

struct SpikeMonitor {
  std::vector<SpikeRule> rules;
  std::vector<SpikeRuleState> state;  // one per rule
  SpikeSeries loss, grad_norm;
  long steps = 0;               // observe() calls since the start of the run
  std::vector<double> scratch;  // work space for recomputation; not state
};

// Validates the rules (non-empty unique names, window ≥ 1, 2 ≤ lookback, finite sigmas > 0,
// window and lookback ≤ 2^26) and throws headroom::Error naming the rule otherwise.
SpikeMonitor make_spike_monitor(std::vector<SpikeRule> rules);

// One training step: its loss and its (pre-clipping) gradient norm.
void observe(SpikeMonitor& m, double loss, double grad_norm);

struct RuleSpikeScores {
  std::string name;
  long steps_in_window = 0;  // min(steps, window): the window scores' denominator
  long loss_spikes = 0, grad_norm_spikes = 0, combined_spikes = 0;                    // within the window
  double loss = 0, grad_norm = 0, combined = 0;                                       // spikes / steps_in_window
  long total_loss_spikes = 0, total_grad_norm_spikes = 0, total_combined_spikes = 0;  // whole run
  double total_loss = 0, total_grad_norm = 0, total_combined = 0;                     // total spikes / steps
  bool last_loss_spike = false, last_grad_norm_spike = false;                         // the latest step's flags
};

struct SpikeScores {
  long steps = 0;
  std::vector<RuleSpikeScores> rules;  // in the monitor's rule order
};

SpikeScores spike_scores(const SpikeMonitor& m);
// The scores of the rule called `name`; throws headroom::Error when there is none.
const RuleSpikeScores& rule_scores(const SpikeScores& s, std::string_view name);

// The monitor's state as a checkpoint part called `name`, in the named layout above.
io::CheckpointPart monitor_part(const SpikeMonitor& m, const std::string& name);
// Replaces m's state with a saved part: the named layout, or the flat one when the part has the
// array "state" and not "steps". The state must have been saved by a monitor with the same rules
// (names, windows, sigmas, sidedness, lookbacks, in order); a short, long, corrupted or mismatched
// state throws headroom::Error naming the array, and leaves m unchanged.
void restore_monitor(SpikeMonitor& m, const io::CheckpointPart& part);
// The flat layout of checkpoints written before the named arrays; as restore_monitor.
void restore_monitor_flat(SpikeMonitor& m, std::span<const double> state);

}  // namespace headroom::train
