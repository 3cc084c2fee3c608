#include "train/spike_monitor.h"

#include "util/error.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <set>

namespace headroom::train {

namespace {

constexpr double kMagic = 1936289131;  // "spik" as a big-endian 32-bit integer
constexpr double kVersion = 1;
constexpr long kMaxLength = config::kMaxSpikeLength;
constexpr double kMaxCount = 9007199254740992.0;  // 2^53: integers exact in a double
// Recompute the sums when the largest d² added since the last recomputation exceeds this multiple
// of the current Σd²: a value that dwarfed the rest has left the window, and subtracting it left
// rounding error of order DBL_EPSILON·d² in the sums.
constexpr double kCancellationRatio = 1e6;

size_t idx(long i, size_t n) { return static_cast<size_t>(i) % n; }

// Recompute the moments from the last n finite values of s (n ≥ 1), shifted by their median.
void recompute(RollingMoments& r, const SpikeSeries& s, long n, std::vector<double>& scratch) {
  const size_t cap = s.ring.size();
  scratch.resize(static_cast<size_t>(n));
  for (long k = 0; k < n; ++k) scratch[static_cast<size_t>(k)] = s.ring[idx(s.count - n + k, cap)];
  auto mid = scratch.begin() + n / 2;
  std::nth_element(scratch.begin(), mid, scratch.end());
  r.shift = *mid;
  r.sum = r.sumsq = r.peak = 0;
  for (long k = 0; k < n; ++k) {  // oldest to newest: a fixed order, so resumes are bit-exact
    const double d = s.ring[idx(s.count - n + k, cap)] - r.shift;
    r.sum += d;
    r.sumsq += d * d;
    r.peak = std::max(r.peak, d * d);
  }
  r.since_recompute = 0;
}

// Whether finite x spikes against the reference held in r (full lookback assumed).
bool is_spike(const RollingMoments& r, long n, double x, const SpikeRule& rule) {
  const double m1 = r.sum / static_cast<double>(n);
  const double var = std::max(0.0, r.sumsq / static_cast<double>(n) - m1 * m1);
  const double mean = r.shift + m1;
  const double sd = std::sqrt(var);
  if (!(sd > std::max(1e-10, 64 * DBL_EPSILON * std::fabs(mean)))) return false;
  const double dev = x - mean;
  const double thr = rule.sigmas * sd;
  return rule.two_sided ? std::fabs(dev) > thr : dev > thr;
}

RollingMoments& moments(SpikeRuleState& st, int series) { return series == 0 ? st.loss : st.grad_norm; }

// Sets bit `series` of the current step's flag in each rule's flag ring when x spikes, then x
// enters the reference if finite.
void observe_series(SpikeMonitor& m, int series, double x) {
  SpikeSeries& s = series == 0 ? m.loss : m.grad_norm;
  const bool finite = std::isfinite(x);
  for (size_t r = 0; r < m.rules.size(); ++r) {
    const long L = m.rules[r].lookback;
    const bool spike = !finite || (s.count >= L && is_spike(moments(m.state[r], series), L, x, m.rules[r]));
    SpikeRuleState& st = m.state[r];
    st.flags[idx(m.steps, st.flags.size())] |= static_cast<std::uint8_t>(spike << series);
  }
  if (!finite) return;
  const size_t cap = s.ring.size();
  // Update the sums before the ring slot of the value leaving the largest lookback is overwritten.
  for (size_t r = 0; r < m.rules.size(); ++r) {
    RollingMoments& mo = moments(m.state[r], series);
    const long L = m.rules[r].lookback;
    if (s.count == 0) mo.shift = x;
    const double d = x - mo.shift;
    mo.sum += d;
    mo.sumsq += d * d;
    mo.peak = std::max(mo.peak, d * d);
    ++mo.since_recompute;
    if (s.count >= L) {
      const double out = s.ring[idx(s.count - L, cap)] - mo.shift;
      mo.sum -= out;
      mo.sumsq -= out * out;
    }
  }
  s.ring[idx(s.count, cap)] = x;
  ++s.count;
  for (size_t r = 0; r < m.rules.size(); ++r) {
    RollingMoments& mo = moments(m.state[r], series);
    const long L = m.rules[r].lookback;
    if (mo.since_recompute >= L || mo.peak > kCancellationRatio * mo.sumsq)
      recompute(mo, s, std::min(s.count, L), m.scratch);
  }
}

void check_rule(const SpikeRule& r) {
  if (const std::string why = config::spike_rule_problem(r); !why.empty())
    fail("spike rule", r.name.empty() ? std::string() : cat(" '", r.name, "'"), ": ", why);
}

// Sequential reader over a saved state with messages that say what was being read.
struct Reader {
  std::span<const double> v;
  size_t pos = 0;

  double next(const std::string& what) {
    if (pos >= v.size())
      fail("spike monitor state: ends after ", v.size(), " values while reading ", what,
           " (truncated or not a spike monitor state)");
    return v[pos++];
  }
  double finite(const std::string& what) {
    const double x = next(what);
    if (!std::isfinite(x)) fail("spike monitor state: ", what, " at index ", pos - 1, " is ", x, ", not finite");
    return x;
  }
  long count(const std::string& what, double max) {
    const double x = next(what);
    if (!(x >= 0 && x <= max && x == std::floor(x)))
      fail("spike monitor state: ", what, " at index ", pos - 1, " is ", x,
           ", not an integer in [0, ", max, "] (corrupted)");
    return static_cast<long>(x);
  }
};

}  // namespace

SpikeMonitor make_spike_monitor(std::vector<SpikeRule> rules) {
  if (rules.empty()) fail("spike monitor: needs at least one rule");
  std::set<std::string> names;
  long cap = 0;
  for (const auto& r : rules) {
    check_rule(r);
    if (!names.insert(r.name).second) fail("spike monitor: rule name '", r.name, "' appears twice");
    cap = std::max(cap, r.lookback);
  }
  SpikeMonitor m;
  m.rules = std::move(rules);
  m.state.resize(m.rules.size());
  for (size_t r = 0; r < m.rules.size(); ++r)
    m.state[r].flags.assign(static_cast<size_t>(m.rules[r].window), 0);
  m.loss.ring.assign(static_cast<size_t>(cap), 0.0);
  m.grad_norm.ring.assign(static_cast<size_t>(cap), 0.0);
  return m;
}

void observe(SpikeMonitor& m, double loss, double grad_norm) {
  for (size_t r = 0; r < m.rules.size(); ++r) {  // the step leaving the window frees its slot
    SpikeRuleState& st = m.state[r];
    std::uint8_t& slot = st.flags[idx(m.steps, st.flags.size())];
    if (m.steps >= m.rules[r].window) {
      st.window_loss -= slot & 1;
      st.window_grad_norm -= (slot >> 1) & 1;
      st.window_combined -= slot != 0;
    }
    slot = 0;
  }
  observe_series(m, 0, loss);
  observe_series(m, 1, grad_norm);
  for (size_t r = 0; r < m.rules.size(); ++r) {
    SpikeRuleState& st = m.state[r];
    const std::uint8_t code = st.flags[idx(m.steps, st.flags.size())];
    const long l = code & 1, g = (code >> 1) & 1, c = code != 0;
    st.window_loss += l;
    st.window_grad_norm += g;
    st.window_combined += c;
    st.total_loss += l;
    st.total_grad_norm += g;
    st.total_combined += c;
  }
  ++m.steps;
}

SpikeScores spike_scores(const SpikeMonitor& m) {
  SpikeScores s;
  s.steps = m.steps;
  for (size_t r = 0; r < m.rules.size(); ++r) {
    const SpikeRuleState& st = m.state[r];
    RuleSpikeScores o;
    o.name = m.rules[r].name;
    o.steps_in_window = std::min(m.steps, m.rules[r].window);
    o.loss_spikes = st.window_loss;
    o.grad_norm_spikes = st.window_grad_norm;
    o.combined_spikes = st.window_combined;
    o.total_loss_spikes = st.total_loss;
    o.total_grad_norm_spikes = st.total_grad_norm;
    o.total_combined_spikes = st.total_combined;
    if (o.steps_in_window > 0) {
      const double w = static_cast<double>(o.steps_in_window), t = static_cast<double>(m.steps);
      o.loss = static_cast<double>(st.window_loss) / w;
      o.grad_norm = static_cast<double>(st.window_grad_norm) / w;
      o.combined = static_cast<double>(st.window_combined) / w;
      o.total_loss = static_cast<double>(st.total_loss) / t;
      o.total_grad_norm = static_cast<double>(st.total_grad_norm) / t;
      o.total_combined = static_cast<double>(st.total_combined) / t;
      const std::uint8_t last = st.flags[idx(m.steps - 1, st.flags.size())];
      o.last_loss_spike = last & 1;
      o.last_grad_norm_spike = (last >> 1) & 1;
    }
    s.rules.push_back(std::move(o));
  }
  return s;
}

const RuleSpikeScores& rule_scores(const SpikeScores& s, std::string_view name) {
  for (const auto& r : s.rules)
    if (r.name == name) return r;
  std::string have;
  for (const auto& r : s.rules) have += (have.empty() ? "" : ", ") + r.name;
  fail("spike scores: no rule '", name, "' (rules: ", have, ")");
}

std::vector<double> monitor_state(const SpikeMonitor& m) {
  const long cap = static_cast<long>(m.loss.ring.size());
  std::vector<double> v{kMagic, kVersion, static_cast<double>(m.rules.size()), static_cast<double>(m.steps),
                        static_cast<double>(m.loss.count), static_cast<double>(m.grad_norm.count),
                        static_cast<double>(cap)};
  for (const auto& r : m.rules) {
    v.insert(v.end(), {static_cast<double>(r.window), static_cast<double>(r.lookback), r.sigmas,
                       r.two_sided ? 1.0 : 0.0, static_cast<double>(r.name.size())});
    for (unsigned char c : r.name) v.push_back(c);
  }
  for (const SpikeSeries* s : {&m.loss, &m.grad_norm}) {
    const long kept = std::min(s->count, cap);
    for (long i = s->count - kept; i < s->count; ++i) v.push_back(s->ring[idx(i, s->ring.size())]);
  }
  for (size_t r = 0; r < m.rules.size(); ++r) {
    const SpikeRuleState& st = m.state[r];
    for (const RollingMoments* mo : {&st.loss, &st.grad_norm})
      v.insert(v.end(), {mo->shift, mo->sum, mo->sumsq, mo->peak, static_cast<double>(mo->since_recompute)});
    v.insert(v.end(), {static_cast<double>(st.total_loss), static_cast<double>(st.total_grad_norm),
                       static_cast<double>(st.total_combined)});
    const long kept = std::min(m.steps, m.rules[r].window);
    for (long s = m.steps - kept; s < m.steps; ++s) v.push_back(st.flags[idx(s, st.flags.size())]);
  }
  return v;
}

void restore_monitor(SpikeMonitor& m, std::span<const double> state) {
  Reader in{state};
  if (state.empty()) fail("spike monitor state: empty (0 values)");
  if (in.next("magic") != kMagic)
    fail("spike monitor state: index 0 is ", state[0], ", not the magic number ", kMagic,
         " (not a spike monitor state)");
  const double version = in.next("version");
  if (version != kVersion)
    fail("spike monitor state: version ", version, ", this build reads version ", kVersion);
  const long n_rules = in.count("rule count", kMaxCount);
  if (n_rules != static_cast<long>(m.rules.size()))
    fail("spike monitor state: has ", n_rules, " rules, the monitor has ", m.rules.size());
  SpikeMonitor r = make_spike_monitor(m.rules);
  const long cap = static_cast<long>(r.loss.ring.size());
  r.steps = in.count("step count", kMaxCount);
  r.loss.count = in.count("loss value count", static_cast<double>(r.steps));
  r.grad_norm.count = in.count("grad_norm value count", static_cast<double>(r.steps));
  const long saved_cap = in.count("value capacity", kMaxCount);
  if (saved_cap != cap)
    fail("spike monitor state: value capacity ", saved_cap, ", the monitor's rules need ", cap);
  for (size_t k = 0; k < r.rules.size(); ++k) {
    const SpikeRule& rule = r.rules[k];
    const auto what = cat("rule ", k, " ");
    const long window = in.count(what + "window", kMaxLength);
    const long lookback = in.count(what + "lookback", kMaxLength);
    const double sigmas = in.finite(what + "sigmas");
    const long two_sided = in.count(what + "sidedness", 1);
    const long len = in.count(what + "name length", 4096);
    std::string name;
    for (long c = 0; c < len; ++c) name.push_back(static_cast<char>(in.count(what + "name", 255)));
    if (name != rule.name || window != rule.window || lookback != rule.lookback || sigmas != rule.sigmas ||
        (two_sided == 1) != rule.two_sided)
      fail("spike monitor state: rule ", k, " was saved as '", name, "' (window ", window, ", ", sigmas,
           "σ, ", two_sided ? "two" : "one", "-sided, lookback ", lookback, "), the monitor has '",
           rule.name, "' (window ", rule.window, ", ", rule.sigmas, "σ, ", rule.two_sided ? "two" : "one",
           "-sided, lookback ", rule.lookback, ")");
  }
  for (SpikeSeries* s : {&r.loss, &r.grad_norm}) {
    const char* sname = s == &r.loss ? "loss" : "grad_norm";
    const long kept = std::min(s->count, cap);
    for (long i = s->count - kept; i < s->count; ++i)
      s->ring[idx(i, s->ring.size())] = in.finite(cat(sname, " value ", i));
  }
  for (size_t k = 0; k < r.rules.size(); ++k) {
    SpikeRuleState& st = r.state[k];
    const auto what = cat("rule '", r.rules[k].name, "' ");
    for (RollingMoments* mo : {&st.loss, &st.grad_norm}) {
      const auto w = what + (mo == &st.loss ? "loss" : "grad_norm") + " moments";
      mo->shift = in.finite(w);
      mo->sum = in.finite(w);
      mo->sumsq = in.finite(w);
      mo->peak = in.finite(w);
      mo->since_recompute = in.count(w, static_cast<double>(r.rules[k].lookback));
      if (mo->peak < 0) fail("spike monitor state: ", w, " has a negative peak (corrupted)");
    }
    st.total_loss = in.count(what + "loss spike total", static_cast<double>(r.steps));
    st.total_grad_norm = in.count(what + "grad_norm spike total", static_cast<double>(r.steps));
    st.total_combined = in.count(what + "combined spike total", static_cast<double>(r.steps));
    const long kept = std::min(r.steps, r.rules[k].window);
    for (long s = r.steps - kept; s < r.steps; ++s) {
      const auto code = static_cast<std::uint8_t>(in.count(cat(what, "flag of step ", s), 3));
      st.flags[idx(s, st.flags.size())] = code;
      st.window_loss += code & 1;
      st.window_grad_norm += (code >> 1) & 1;
      st.window_combined += code != 0;
    }
    if (st.total_loss < st.window_loss || st.total_grad_norm < st.window_grad_norm ||
        st.total_combined < st.window_combined ||
        st.total_combined < std::max(st.total_loss, st.total_grad_norm) ||
        st.total_combined > st.total_loss + st.total_grad_norm)
      fail("spike monitor state: ", what, "spike totals (loss ", st.total_loss, ", grad_norm ",
           st.total_grad_norm, ", combined ", st.total_combined, ") disagree with its window flags (loss ",
           st.window_loss, ", grad_norm ", st.window_grad_norm, ", combined ", st.window_combined,
           ") (corrupted)");
  }
  if (in.pos != state.size())
    fail("spike monitor state: ", state.size(), " values, but its header describes ", in.pos,
         " (corrupted, or saved by another version)");
  m = std::move(r);
}

}  // namespace headroom::train
