// The spike-score monitor: built-in rules, exact counts of injected spikes (one- and two-sided),
// early steps, sliding windows, the combined score, non-finite values, agreement with a brute-force
// O(n·window) reference, large offsets, bit-exact resume from a saved part (named arrays, and the
// flat vector of older checkpoints), rejection of bad parts, bad flat states and bad rules, and
// bounded memory.
#include "train/spike_monitor.h"
#include "io/checkpoint.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace headroom;
using namespace headroom::train;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Series {
  std::vector<double> loss, grad;
  long size() const { return static_cast<long>(loss.size()); }
};

// Base ± uniform noise of half-width a: the standard deviation is a/√3 and no value is more than
// √3 ≈ 1.73 standard deviations from the mean, so no rule of ≥ 3σ can flag the noise.
Series bounded_noise(long n, double loss_base, double grad_base, double a, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-a, a);
  Series s;
  for (long t = 0; t < n; ++t) {
    s.loss.push_back(loss_base + u(rng));
    s.grad.push_back(grad_base + u(rng));
  }
  return s;
}

// A decaying loss and a noisy gradient norm with Gaussian noise (so low-σ rules flag naturally),
// injected spikes of random sign and size (2-40 noise σ), rare NaN/±inf, and one ±1e30 outlier
// per series, which stresses the recomputation of the running sums after it leaves the window.
Series random_series(long n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Series s;
  for (long t = 0; t < n; ++t) {
    double loss = 3.0 + 2.0 * std::exp(-static_cast<double>(t) / 1500.0) + 0.02 * g(rng);
    double grad = 0.5 + 0.05 * g(rng);
    if (u(rng) < 0.01) loss += (u(rng) < 0.7 ? 1 : -1) * (2 + 38 * u(rng)) * 0.02;
    if (u(rng) < 0.01) grad += (u(rng) < 0.7 ? 1 : -1) * (2 + 38 * u(rng)) * 0.05;
    const double r = u(rng);
    if (r < 0.001)
      loss = kNaN;
    else if (r < 0.002)
      grad = kInf;
    else if (r < 0.0025)
      loss = -kInf;
    if (t == 0) grad = kNaN;  // a flagged very first step: the first slot of every window ring
    if (t == n / 3) loss = 1e30;
    if (t == n / 2) grad = -1e30;
    s.loss.push_back(loss);
    s.grad.push_back(grad);
  }
  return s;
}

// Brute-force reference: per-step flags recomputed from scratch with a two-pass mean/std over the
// previous `lookback` finite values, following the definitions in spike_monitor.h.
std::vector<bool> reference_flags(const std::vector<double>& x, const SpikeRule& r) {
  std::vector<double> hist;
  std::vector<bool> flags;
  for (double v : x) {
    bool spike = !std::isfinite(v);
    if (!spike && static_cast<long>(hist.size()) >= r.lookback) {
      const size_t b = hist.size() - static_cast<size_t>(r.lookback);
      double mean = 0;
      for (size_t i = b; i < hist.size(); ++i) mean += hist[i];
      mean /= static_cast<double>(r.lookback);
      double var = 0;
      for (size_t i = b; i < hist.size(); ++i) var += (hist[i] - mean) * (hist[i] - mean);
      const double sd = std::sqrt(var / static_cast<double>(r.lookback));
      if (sd > std::max(1e-10, 64 * 2.220446049250313e-16 * std::fabs(mean))) {
        const double dev = v - mean;
        spike = r.two_sided ? std::fabs(dev) > r.sigmas * sd : dev > r.sigmas * sd;
      }
    }
    flags.push_back(spike);
    if (std::isfinite(v)) hist.push_back(v);
  }
  return flags;
}

// Feeds the series to a monitor with `rules` and, after every step, checks its scores against the
// reference flags summed over the window by brute force.
void expect_matches_reference(const Series& s, const std::vector<SpikeRule>& rules) {
  SpikeMonitor m = make_spike_monitor(rules);
  std::vector<std::vector<bool>> fl, fg;
  for (const auto& r : rules) {
    fl.push_back(reference_flags(s.loss, r));
    fg.push_back(reference_flags(s.grad, r));
  }
  long mismatches = 0;
  for (long t = 0; t < s.size() && mismatches < 10; ++t) {
    observe(m, s.loss[static_cast<size_t>(t)], s.grad[static_cast<size_t>(t)]);
    const SpikeScores sc = spike_scores(m);
    ASSERT_EQ(sc.steps, t + 1);
    for (size_t k = 0; k < rules.size(); ++k) {
      const long w = std::min(t + 1, rules[k].window);
      long nl = 0, ng = 0, nc = 0, tl = 0, tg = 0, tc = 0;
      for (long i = 0; i <= t; ++i) {
        const bool l = fl[k][static_cast<size_t>(i)], g = fg[k][static_cast<size_t>(i)];
        tl += l, tg += g, tc += l || g;
        if (i > t - w) nl += l, ng += g, nc += l || g;
      }
      const RuleSpikeScores& o = sc.rules[k];
      const bool ok = o.steps_in_window == w && o.loss_spikes == nl && o.grad_norm_spikes == ng &&
                      o.combined_spikes == nc && o.total_loss_spikes == tl && o.total_grad_norm_spikes == tg &&
                      o.total_combined_spikes == tc && o.loss == static_cast<double>(nl) / w &&
                      o.grad_norm == static_cast<double>(ng) / w && o.combined == static_cast<double>(nc) / w &&
                      o.last_loss_spike == fl[k][static_cast<size_t>(t)] &&
                      o.last_grad_norm_spike == fg[k][static_cast<size_t>(t)];
      EXPECT_TRUE(ok) << "rule " << rules[k].name << " step " << t << ": monitor loss/grad/combined " << o.loss_spikes
                      << "/" << o.grad_norm_spikes << "/" << o.combined_spikes << " totals " << o.total_loss_spikes
                      << "/" << o.total_grad_norm_spikes << "/" << o.total_combined_spikes << ", reference " << nl
                      << "/" << ng << "/" << nc << " totals " << tl << "/" << tg << "/" << tc;
      mismatches += !ok;
    }
  }
}

void feed(SpikeMonitor& m, const Series& s, long from, long to) {
  for (long t = from; t < to; ++t) observe(m, s.loss[static_cast<size_t>(t)], s.grad[static_cast<size_t>(t)]);
}

void expect_same(const SpikeScores& a, const SpikeScores& b, const std::string& where) {
  ASSERT_EQ(a.steps, b.steps) << where;
  ASSERT_EQ(a.rules.size(), b.rules.size()) << where;
  for (size_t k = 0; k < a.rules.size(); ++k) {
    const auto &x = a.rules[k], &y = b.rules[k];
    const bool same = x.name == y.name && x.steps_in_window == y.steps_in_window && x.loss_spikes == y.loss_spikes &&
                      x.grad_norm_spikes == y.grad_norm_spikes && x.combined_spikes == y.combined_spikes &&
                      x.loss == y.loss && x.grad_norm == y.grad_norm && x.combined == y.combined &&
                      x.total_loss_spikes == y.total_loss_spikes &&
                      x.total_grad_norm_spikes == y.total_grad_norm_spikes &&
                      x.total_combined_spikes == y.total_combined_spikes && x.total_loss == y.total_loss &&
                      x.total_grad_norm == y.total_grad_norm && x.total_combined == y.total_combined &&
                      x.last_loss_spike == y.last_loss_spike && x.last_grad_norm_spike == y.last_grad_norm_spike;
    EXPECT_TRUE(same) << where << ", rule " << x.name;
  }
}

// The flat layout exactly as the writer before the named arrays laid it out (restore_monitor_flat
// reads it): magic, version, counts, the rules; then the retained values, the exact running sums and
// the retained flags. validation/mpi/to_v1_checkpoint.py builds the same vector from the arrays.
std::vector<double> flat_state(const SpikeMonitor& m) {
  auto at = [](long i, size_t n) { return static_cast<size_t>(i) % n; };
  const long cap = static_cast<long>(m.loss.ring.size());
  std::vector<double> v{1936289131,
                        1,
                        static_cast<double>(m.rules.size()),
                        static_cast<double>(m.steps),
                        static_cast<double>(m.loss.count),
                        static_cast<double>(m.grad_norm.count),
                        static_cast<double>(cap)};
  for (const auto& r : m.rules) {
    v.insert(v.end(), {static_cast<double>(r.window), static_cast<double>(r.lookback), r.sigmas,
                       r.two_sided ? 1.0 : 0.0, static_cast<double>(r.name.size())});
    for (unsigned char c : r.name) v.push_back(c);
  }
  for (const SpikeSeries* s : {&m.loss, &m.grad_norm}) {
    const long kept = std::min(s->count, cap);
    for (long i = s->count - kept; i < s->count; ++i) v.push_back(s->ring[at(i, s->ring.size())]);
  }
  for (size_t r = 0; r < m.rules.size(); ++r) {
    const SpikeRuleState& st = m.state[r];
    for (const RollingMoments* mo : {&st.loss, &st.grad_norm})
      v.insert(v.end(), {mo->shift, mo->sum, mo->sumsq, mo->peak, static_cast<double>(mo->since_recompute)});
    v.insert(v.end(), {static_cast<double>(st.total_loss), static_cast<double>(st.total_grad_norm),
                       static_cast<double>(st.total_combined)});
    const long kept = std::min(m.steps, m.rules[r].window);
    for (long s = m.steps - kept; s < m.steps; ++s) v.push_back(st.flags[at(s, st.flags.size())]);
  }
  return v;
}

io::CheckpointPart part_of(const SpikeMonitor& m) { return monitor_part(m, "spike_monitor"); }

size_t part_size(const io::CheckpointPart& p) {
  size_t n = 0;
  for (const auto& [name, v] : p.arrays) n += v.size();
  return n;
}

// The part with `array` replaced by `values`.
io::CheckpointPart with(io::CheckpointPart p, const std::string& array, std::vector<double> values) {
  for (auto& [name, v] : p.arrays)
    if (name == array) v = std::move(values);
  return p;
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace

TEST(SpikeMonitor, BuiltinRules) {
  const SpikeRule p = builtin_spike_rule("paper"), o = builtin_spike_rule("olmo");
  EXPECT_EQ(p.name, "paper");
  EXPECT_EQ(p.window, 1000);
  EXPECT_EQ(p.sigmas, 7.0);
  EXPECT_TRUE(p.two_sided);
  EXPECT_EQ(p.lookback, 1000);
  EXPECT_EQ(o.name, "olmo");
  EXPECT_EQ(o.window, 10000);
  EXPECT_EQ(o.sigmas, 6.0);
  EXPECT_FALSE(o.two_sided);
  EXPECT_EQ(o.lookback, 128);
  const auto d = default_spike_rules();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "paper");
  EXPECT_EQ(d[1].name, "olmo");
  expect_error([] { builtin_spike_rule("zscore"); }, "no such built-in rule");
}

TEST(SpikeMonitor, RejectsBadRules) {
  expect_error([] { make_spike_monitor({}); }, "at least one rule");
  expect_error([] { make_spike_monitor({{"", 10, 3, false, 5}}); }, "empty name");
  expect_error([] { make_spike_monitor({{"w", 0, 3, false, 5}}); }, "'w': window 0");
  expect_error([] { make_spike_monitor({{"l", 10, 3, false, 1}}); }, "'l': lookback 1");
  expect_error([] { make_spike_monitor({{"s", 10, 0, false, 5}}); }, "'s': sigmas 0");
  expect_error([] { make_spike_monitor({{"s", 10, kNaN, false, 5}}); }, "'s': sigmas");
  expect_error([] { make_spike_monitor({paper_spike_rule(), paper_spike_rule()}); }, "'paper' appears twice");
  expect_error([] { rule_scores(spike_scores(make_spike_monitor(default_spike_rules())), "x"); },
               "no rule 'x' (rules: paper, olmo)");
}

TEST(SpikeMonitor, FlatSeriesScoresZero) {
  for (double c : {0.1, 2.5, 1e6, 0.0}) {
    SpikeMonitor m = make_spike_monitor(default_spike_rules());
    for (int t = 0; t < 3000; ++t) observe(m, c, c / 3);
    const SpikeScores s = spike_scores(m);
    EXPECT_EQ(s.steps, 3000);
    for (const auto& r : s.rules) {
      EXPECT_EQ(r.total_combined_spikes, 0) << r.name << " at " << c;
      EXPECT_EQ(r.combined, 0.0) << r.name << " at " << c;
      EXPECT_EQ(r.total_combined, 0.0) << r.name << " at " << c;
    }
  }
}

// Bounded noise with spikes of ±~35σ at known steps, under the two built-in rules: upward spikes
// count in both, downward spikes only in the two-sided "paper" rule, and nothing is flagged before
// a rule's lookback is full (step 50 for both, step 500 for "paper").
TEST(SpikeMonitor, InjectedSpikesCountedExactly) {
  Series s = bounded_noise(3000, 2.5, 0.8, 0.01, 1);  // σ = 0.00577
  for (long t : {50, 500, 1100, 1600, 2300, 2900}) s.loss[static_cast<size_t>(t)] += 0.2;
  for (long t : {1350, 2600}) s.loss[static_cast<size_t>(t)] -= 0.2;
  for (long t : {1200, 1600, 2750}) s.grad[static_cast<size_t>(t)] += 0.2;
  s.grad[2100] -= 0.2;
  SpikeMonitor m = make_spike_monitor(default_spike_rules());
  for (long t = 0; t < s.size(); ++t) {
    feed(m, s, t, t + 1);
    const SpikeScores sc = spike_scores(m);
    if (t == 1350) {
      EXPECT_TRUE(rule_scores(sc, "paper").last_loss_spike);
      EXPECT_FALSE(rule_scores(sc, "olmo").last_loss_spike);
    }
    if (t == 1600) {
      EXPECT_TRUE(rule_scores(sc, "olmo").last_loss_spike && rule_scores(sc, "olmo").last_grad_norm_spike);
    }
    if (t == 1601) {
      EXPECT_FALSE(rule_scores(sc, "olmo").last_loss_spike || rule_scores(sc, "olmo").last_grad_norm_spike);
    }
  }
  const SpikeScores sc = spike_scores(m);
  const auto& p = rule_scores(sc, "paper");
  // Whole run: loss 1100 1350 1600 2300 2600 2900; grad 1200 1600 2100 2750; union 9 steps.
  EXPECT_EQ(p.total_loss_spikes, 6);
  EXPECT_EQ(p.total_grad_norm_spikes, 4);
  EXPECT_EQ(p.total_combined_spikes, 9);
  EXPECT_DOUBLE_EQ(p.total_combined, 9.0 / 3000);
  // Last 1000 steps (2000-2999): loss 2300 2600 2900; grad 2100 2750.
  EXPECT_EQ(p.steps_in_window, 1000);
  EXPECT_EQ(p.loss_spikes, 3);
  EXPECT_EQ(p.grad_norm_spikes, 2);
  EXPECT_EQ(p.combined_spikes, 5);
  EXPECT_DOUBLE_EQ(p.loss, 0.003);
  EXPECT_DOUBLE_EQ(p.grad_norm, 0.002);
  EXPECT_DOUBLE_EQ(p.combined, 0.005);
  const auto& o = rule_scores(sc, "olmo");
  // Upward only: loss 500 1100 1600 2300 2900; grad 1200 1600 2750; union 7; window not yet full.
  EXPECT_EQ(o.steps_in_window, 3000);
  EXPECT_EQ(o.loss_spikes, 5);
  EXPECT_EQ(o.grad_norm_spikes, 3);
  EXPECT_EQ(o.combined_spikes, 7);
  EXPECT_DOUBLE_EQ(o.combined, 7.0 / 3000);
  EXPECT_EQ(o.total_combined_spikes, 7);
}

TEST(SpikeMonitor, SidednessOfCustomRules) {
  for (bool two : {false, true}) {
    SpikeMonitor m = make_spike_monitor({{"r", 100, 4, two, 30}});
    Series s = bounded_noise(100, 1.0, 1.0, 0.01, 2);
    s.loss[40] -= 0.1;  // downward, ~17σ
    s.grad[70] += 0.1;  // upward
    feed(m, s, 0, 100);
    const RuleSpikeScores r = spike_scores(m).rules[0];  // a copy: the scores are a temporary
    EXPECT_EQ(r.loss_spikes, two ? 1 : 0) << (two ? "two-sided" : "one-sided");
    EXPECT_EQ(r.grad_norm_spikes, 1);
  }
}

TEST(SpikeMonitor, NothingFlaggedBeforeLookbackFullAndEarlyDenominator) {
  SpikeMonitor m = make_spike_monitor({{"e", 1000, 5, true, 50}});
  Series s = bounded_noise(100, 1.0, 1.0, 0.01, 3);
  s.loss[10] += 0.5;  // only 10 values before it: cannot be flagged
  s.loss[60] += 0.5;
  feed(m, s, 0, 30);
  EXPECT_EQ(spike_scores(m).rules[0].total_loss_spikes, 0);
  EXPECT_EQ(spike_scores(m).rules[0].steps_in_window, 30);
  feed(m, s, 30, 100);
  const RuleSpikeScores r = spike_scores(m).rules[0];  // a copy: the scores are a temporary
  EXPECT_EQ(r.steps_in_window, 100);
  EXPECT_EQ(r.loss_spikes, 1);
  EXPECT_DOUBLE_EQ(r.loss, 0.01);
  const SpikeScores empty = spike_scores(make_spike_monitor({{"e", 1000, 5, true, 50}}));
  EXPECT_EQ(empty.rules[0].steps_in_window, 0);
  EXPECT_EQ(empty.rules[0].combined, 0.0);
}

TEST(SpikeMonitor, WindowSlides) {
  SpikeMonitor m = make_spike_monitor({{"w", 100, 5, false, 20}});
  Series s = bounded_noise(400, 1.0, 1.0, 0.01, 4);
  s.grad[0] = kNaN;  // the very first step, flagged
  s.loss[200] += 0.5;
  feed(m, s, 0, 100);
  EXPECT_EQ(spike_scores(m).rules[0].grad_norm_spikes, 1);
  feed(m, s, 100, 101);  // window = steps 1..100
  EXPECT_EQ(spike_scores(m).rules[0].grad_norm_spikes, 0);
  EXPECT_EQ(spike_scores(m).rules[0].total_grad_norm_spikes, 1);
  feed(m, s, 101, 201);
  EXPECT_EQ(spike_scores(m).rules[0].loss_spikes, 1);
  EXPECT_DOUBLE_EQ(spike_scores(m).rules[0].loss, 0.01);
  feed(m, s, 201, 300);  // window = steps 200..299
  EXPECT_EQ(spike_scores(m).rules[0].loss_spikes, 1);
  feed(m, s, 300, 301);                                // window = steps 201..300
  const RuleSpikeScores r = spike_scores(m).rules[0];  // a copy: the scores are a temporary
  EXPECT_EQ(r.loss_spikes, 0);
  EXPECT_EQ(r.loss, 0.0);
  EXPECT_EQ(r.total_loss_spikes, 1);
  EXPECT_DOUBLE_EQ(r.total_loss, 1.0 / 301);
}

TEST(SpikeMonitor, CombinedIsTheUnionOfBothSeries) {
  SpikeMonitor m = make_spike_monitor({{"c", 1000, 5, false, 20}});
  Series s = bounded_noise(300, 1.0, 1.0, 0.01, 5);
  s.loss[100] += 0.5;
  s.loss[150] += 0.5;
  s.grad[150] += 0.5;
  s.grad[200] += 0.5;
  feed(m, s, 0, 300);
  const RuleSpikeScores r = spike_scores(m).rules[0];  // a copy: the scores are a temporary
  EXPECT_EQ(r.loss_spikes, 2);
  EXPECT_EQ(r.grad_norm_spikes, 2);
  EXPECT_EQ(r.combined_spikes, 3);  // step 150 counts once
  EXPECT_DOUBLE_EQ(r.combined, 0.01);
}

// NaN/±inf always count (also early, also downward for a one-sided rule) and stay out of the
// reference: the finite steps get the same flags as in the series with the non-finite steps cut.
TEST(SpikeMonitor, NonFiniteValuesAreSpikesAndStayOutOfTheStatistics) {
  const SpikeRule rule{"n", 1000, 5, false, 20};
  Series s = bounded_noise(120, 1.0, 1.0, 0.01, 6);
  s.loss[5] = kNaN;
  s.loss[30] = kInf;
  s.loss[31] = kNaN;
  s.loss[40] = -kInf;
  s.loss[45] += 0.3;  // a genuine spike right after them (NaN statistics would flag nothing)
  SpikeMonitor a = make_spike_monitor({rule}), b = make_spike_monitor({rule});
  std::vector<bool> fa, fb;
  for (long t = 0; t < s.size(); ++t) {
    const double x = s.loss[static_cast<size_t>(t)];
    observe(a, x, 1.0);
    fa.push_back(spike_scores(a).rules[0].last_loss_spike);
    if (std::isfinite(x)) {
      observe(b, x, 1.0);
      fb.push_back(spike_scores(b).rules[0].last_loss_spike);
    }
  }
  EXPECT_TRUE(fa[5] && fa[30] && fa[31] && fa[40]);
  EXPECT_TRUE(fa[45]);
  EXPECT_EQ(spike_scores(a).rules[0].total_loss_spikes, 5);
  std::vector<bool> finite_a;
  for (long t = 0; t < s.size(); ++t)
    if (std::isfinite(s.loss[static_cast<size_t>(t)])) finite_a.push_back(fa[static_cast<size_t>(t)]);
  EXPECT_EQ(finite_a, fb);
}

TEST(SpikeMonitor, MatchesBruteForceReference) {
  const Series s = random_series(6000, 7);
  expect_matches_reference(s, {{"a", 300, 4, true, 64},
                               {"b", 500, 3, false, 100},
                               {"c", 50, 2.5, true, 7},
                               {"d", 40, 3.5, false, 257},  // lookback longer than the window
                               paper_spike_rule(),
                               olmo_spike_rule()});
  // The reference must see a non-trivial number of spikes for the comparison to mean something.
  long flagged = 0;
  for (bool f : reference_flags(s.loss, {"c", 50, 2.5, true, 7})) flagged += f;
  EXPECT_GT(flagged, 50);
}

// 1e6 (and 1e9) + noise of σ ≈ 6e-4: naive running sums of x and x² would lose the variance to
// cancellation; no false spikes, and ~35σ spikes at known steps are found exactly.
TEST(SpikeMonitor, LargeOffsetsGiveNoFalseSpikes) {
  for (double offset : {1e6, 1e9}) {
    Series s = bounded_noise(5000, offset, offset, 1e-3, 8);
    SpikeMonitor flat = make_spike_monitor(default_spike_rules());
    feed(flat, s, 0, s.size());
    const SpikeScores none = spike_scores(flat);
    for (const auto& r : none.rules) EXPECT_EQ(r.total_combined_spikes, 0) << r.name << " at " << offset;
    for (long t : {1500, 3000, 4500}) s.loss[static_cast<size_t>(t)] += 0.02;
    s.grad[2500] -= 0.02;
    SpikeMonitor m = make_spike_monitor(default_spike_rules());
    feed(m, s, 0, s.size());
    const SpikeScores sc = spike_scores(m);
    EXPECT_EQ(rule_scores(sc, "paper").total_loss_spikes, 3) << offset;
    EXPECT_EQ(rule_scores(sc, "paper").total_grad_norm_spikes, 1) << offset;
    EXPECT_EQ(rule_scores(sc, "olmo").total_loss_spikes, 3) << offset;
    EXPECT_EQ(rule_scores(sc, "olmo").total_grad_norm_spikes, 0) << offset;
  }
  // Gaussian noise at an offset of 1e6, against the reference with small windows.
  Series g = random_series(3000, 9);
  for (auto* v : {&g.loss, &g.grad})
    for (double& x : *v) x = 1e6 + (x - 3.0) * 0.05;
  expect_matches_reference(g, {{"a", 200, 3, true, 50}, {"b", 100, 4, false, 300}});
}

// Saving at step k and continuing from the restored part gives, at every later step, exactly the
// scores of the run that never stopped, and in the end the same state. The flat layout of older
// checkpoints restores to the same state as the named one.
TEST(SpikeMonitor, ResumeIsBitExact) {
  const std::vector<SpikeRule> rules{paper_spike_rule(), olmo_spike_rule(), {"small", 64, 3, true, 16}};
  const Series s = random_series(5000, 10);
  SpikeMonitor a = make_spike_monitor(rules);
  std::vector<SpikeScores> ref;
  for (long t = 0; t < s.size(); ++t) {
    feed(a, s, t, t + 1);
    ref.push_back(spike_scores(a));
  }
  for (long k : {0L, 1L, 63L, 1000L, 1667L, 2345L, 4999L}) {
    SpikeMonitor b = make_spike_monitor(rules);
    feed(b, s, 0, k);
    const io::CheckpointPart saved = part_of(b);
    SpikeMonitor c = make_spike_monitor(rules), flat = make_spike_monitor(rules);
    if (k == 1000) feed(c, s, 3000, 3500);  // restoring replaces whatever c had seen
    restore_monitor(c, saved);
    EXPECT_EQ(c.steps, k);
    restore_monitor(flat, io::CheckpointPart{"spike_monitor", {{"state", flat_state(b)}}});
    EXPECT_EQ(part_of(flat).arrays, saved.arrays) << "flat layout, saved at " << k;
    for (long t = k; t < s.size(); ++t) {
      feed(c, s, t, t + 1);
      expect_same(spike_scores(c), ref[static_cast<size_t>(t)],
                  "resumed at " + std::to_string(k) + ", step " + std::to_string(t));
      if (testing::Test::HasFailure()) return;
    }
    EXPECT_EQ(part_of(c).arrays, part_of(a).arrays) << "resumed at " << k;
  }
}

// Rule names that could not be HDF5 names are data, not array names.
TEST(SpikeMonitor, PartArraysAreNamedByQuantity) {
  SpikeMonitor m = make_spike_monitor({{"a/b c.é", 8, 3, true, 4}, olmo_spike_rule()});
  feed(m, random_series(20, 13), 0, 20);
  std::vector<std::string> names;
  for (const auto& [name, v] : part_of(m).arrays) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"steps", "value_counts", "loss_values", "grad_norm_values", "rule_window",
                                      "rule_sigmas", "rule_two_sided", "rule_lookback", "rule_name_length",
                                      "rule_name_bytes", "loss_moments", "grad_norm_moments", "totals", "flags"}));
  const io::CheckpointPart p = part_of(m);
  EXPECT_EQ(p.at("rule_name_length"), (std::vector<double>{8, 4}));  // é is two bytes
  EXPECT_EQ(p.at("loss_moments").size(), 2u * 5);
  EXPECT_EQ(p.at("totals").size(), 2u * 3);
  EXPECT_EQ(p.at("flags").size(), 8u + 20);
  SpikeMonitor back = make_spike_monitor(m.rules);
  restore_monitor(back, p);
  EXPECT_EQ(part_of(back).arrays, p.arrays);
}

TEST(SpikeMonitor, RestoreRejectsBadParts) {
  const std::vector<SpikeRule> rules = default_spike_rules();
  SpikeMonitor src = make_spike_monitor(rules);
  const Series s = random_series(1500, 11);
  feed(src, s, 0, s.size());
  const io::CheckpointPart good = part_of(src);
  SpikeMonitor m = make_spike_monitor(rules);
  feed(m, s, 0, 200);
  const SpikeScores before = spike_scores(m);
  auto restore = [&](io::CheckpointPart p) { return [&m, p] { restore_monitor(m, p); }; };
  auto changed = [&](const std::string& array, size_t i, double x) {
    std::vector<double> v = good.at(array);
    v[i] = x;
    return with(good, array, v);
  };

  io::CheckpointPart missing = good;
  missing.arrays.pop_back();
  expect_error(restore(missing), "part 'spike_monitor' has no array 'flags'");
  expect_error(restore(changed("rule_sigmas", 1, 5)),
               "/spike_monitor: rule 1 was saved as 'olmo' (window 10000, 5σ, one-sided, lookback 128), the "
               "monitor has 'olmo' (window 10000, 6σ");
  expect_error(restore(changed("rule_two_sided", 0, 0)), "rule 0 was saved as 'paper' (window 1000, 7σ, one-sided");
  expect_error(restore(changed("rule_name_bytes", 0, 'P')), "rule 0 was saved as 'Paper'");
  expect_error(restore(with(good, "rule_window", {1000})), "/spike_monitor/rule_window: 1 rules, the monitor has 2");
  expect_error(restore(changed("steps", 0, -4)), "/spike_monitor/steps: step count at index 0 is -4");
  expect_error(restore(changed("value_counts", 1, 1e9)), "/spike_monitor/value_counts: grad_norm value count");
  expect_error(restore(changed("flags", good.at("flags").size() - 1, 7)),
               "/spike_monitor/flags: rule 'olmo' flag of step 1499 at index 2499 is 7");
  expect_error(restore(changed("loss_values", 3, kNaN)), "/spike_monitor/loss_values: loss value ");
  expect_error(restore(changed("grad_norm_moments", 8, -1)),
               "grad_norm_moments: rule 'olmo' grad_norm moments has a negative peak");
  expect_error(restore(changed("totals", 2, 0)), "spike monitor part /spike_monitor: rule 'paper' spike totals");
  std::vector<double> longer = good.at("totals");
  longer.push_back(0);
  expect_error(restore(with(good, "totals", longer)),
               "/spike_monitor/totals: 7 values, but the part's counts and rules describe 6");
  std::vector<double> shorter = good.at("loss_values");
  shorter.pop_back();
  expect_error(restore(with(good, "loss_values", shorter)), "/spike_monitor/loss_values: ends after 999 values");

  SpikeMonitor swapped = make_spike_monitor({olmo_spike_rule(), paper_spike_rule()});
  expect_error([&] { restore_monitor(swapped, good); }, "rule 0 was saved as 'paper'");
  SpikeMonitor renamed = make_spike_monitor({{"p", 1000, 7, true, 1000}, olmo_spike_rule()});
  expect_error([&] { restore_monitor(renamed, good); }, "monitor has 'p'");

  expect_same(spike_scores(m), before, "after failed restores");  // a failed restore changes nothing
  restore_monitor(m, good);
  expect_same(spike_scores(m), spike_scores(src), "after a good restore");
}

// The flat layout of checkpoints written before the named arrays.
TEST(SpikeMonitor, RestoreRejectsBadStates) {
  const std::vector<SpikeRule> rules = default_spike_rules();
  SpikeMonitor src = make_spike_monitor(rules);
  const Series s = random_series(1500, 11);
  feed(src, s, 0, s.size());
  const std::vector<double> good = flat_state(src);
  SpikeMonitor m = make_spike_monitor(rules);
  feed(m, s, 0, 200);
  const SpikeScores before = spike_scores(m);
  auto restore = [&](std::vector<double> v) { return [&m, v] { restore_monitor_flat(m, v); }; };

  expect_error(restore({}), "empty");
  expect_error(restore({1, 2, 3}), "not the magic number");
  auto v = good;
  v[1] = 99;
  expect_error(restore(v), "version 99");
  expect_error(restore(std::vector<double>(good.begin(), good.begin() + 5)), "ends after 5 values");
  expect_error(restore(std::vector<double>(good.begin(), good.end() - 1)), "truncated");
  v = good;
  v.push_back(0);
  expect_error(restore(v), "but its header describes");
  v = good;
  v[3] = -4;  // step count
  expect_error(restore(v), "step count at index 3 is -4");
  v = good;
  v[4] = 1e9;  // more loss values than steps
  expect_error(restore(v), "loss value count");
  v = good;
  v.back() = 7;  // a flag must be 0-3
  expect_error(restore(v), "flag of step 1499");
  v = good;
  v[v.size() - 10] = 0.5;
  expect_error(restore(v), "not an integer");
  v = good;
  v[7 + (5 + 5) + (5 + 4)] = kNaN;  // the first retained loss value, after the two rule headers
  expect_error(restore(v), "not finite");
  v = good;
  v[9] = 6;  // paper's sigmas
  expect_error(restore(v), "rule 0 was saved as 'paper' (window 1000, 6σ");

  SpikeMonitor other = make_spike_monitor({olmo_spike_rule()});
  expect_error([&] { restore_monitor_flat(other, good); }, "has 2 rules, the monitor has 1");
  SpikeMonitor swapped = make_spike_monitor({olmo_spike_rule(), paper_spike_rule()});
  expect_error([&] { restore_monitor_flat(swapped, good); }, "rule 0 was saved as 'paper'");
  SpikeMonitor shorter = make_spike_monitor({{"paper", 1000, 7, true, 500}, olmo_spike_rule()});
  expect_error([&] { restore_monitor_flat(shorter, good); }, "value capacity 1000, the monitor's rules need 500");
  SpikeMonitor renamed = make_spike_monitor({{"p", 1000, 7, true, 1000}, olmo_spike_rule()});
  expect_error([&] { restore_monitor_flat(renamed, good); }, "monitor has 'p'");

  expect_same(spike_scores(m), before, "after failed restores");  // a failed restore changes nothing
  restore_monitor_flat(m, good);
  expect_same(spike_scores(m), spike_scores(src), "after a good restore");
}

TEST(SpikeMonitor, MemoryDoesNotGrowWithRunLength) {
  SpikeMonitor m = make_spike_monitor(default_spike_rules());
  const Series s = random_series(30000, 12);
  feed(m, s, 0, 12000);
  const size_t state_after_windows = part_size(part_of(m));
  feed(m, s, 12000, 30000);
  EXPECT_EQ(part_size(part_of(m)), state_after_windows);
  EXPECT_EQ(m.loss.ring.size(), 1000u);
  EXPECT_EQ(m.grad_norm.ring.size(), 1000u);
  EXPECT_EQ(m.state[0].flags.size(), 1000u);
  EXPECT_EQ(m.state[1].flags.size(), 10000u);
  EXPECT_EQ(spike_scores(m).steps, 30000);
}
