#include "train/spike_monitor.h"

#include "io/checkpoint.h"
#include "util/error.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <set>

namespace headroom::train {

namespace {

// The flat layout of checkpoints written before the named arrays (restore_monitor_flat).
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
  for (size_t r = 0; r < m.rules.size(); ++r) m.state[r].flags.assign(static_cast<size_t>(m.rules[r].window), 0);
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

// Checkpoints. Both layouts hold the same quantities; one reader (read_saved) validates them
// whichever array each comes from.
namespace {

// Sequential reader over one saved array, with messages that name the array (`source`), the
// quantity being read, its index and its value.
struct Reader {
  std::string source;  // "spike monitor state" (the flat layout) or a dataset, e.g. /spike_monitor/flags
  std::span<const double> v;
  size_t pos = 0;

  double next(const std::string& what) {
    if (pos >= v.size())
      fail(source, ": ends after ", v.size(), " values while reading ", what,
           " (truncated or not a spike monitor state)");
    return v[pos++];
  }
  double finite(const std::string& what) {
    const double x = next(what);
    if (!std::isfinite(x)) fail(source, ": ", what, " at index ", pos - 1, " is ", x, ", not finite");
    return x;
  }
  long count(const std::string& what, double max) {
    const double x = next(what);
    if (!(x >= 0 && x <= max && x == std::floor(x)))
      fail(source, ": ", what, " at index ", pos - 1, " is ", x, ", not an integer in [0, ", max, "] (corrupted)");
    return static_cast<long>(x);
  }
  // Refuses values left over; `fixed_by` says what fixed the length ("its header describes").
  void expect_end(const std::string& fixed_by) const {
    if (pos != v.size())
      fail(source, ": ", v.size(), " values, but ", fixed_by, " ", pos, " (corrupted, or saved by another version)");
  }
};

// Where each quantity of a saved state is read from. The flat layout holds them all in one vector,
// interleaved in the order read_saved reads them, so it passes its one reader for every field; the
// named layout has one array, and so one reader, per quantity.
struct Sources {
  std::string where;                                                    // for messages about the state as a whole
  Reader &window, &lookback, &sigmas, &two_sided, &name_length, &name;  // per rule
  Reader &loss_values, &grad_norm_values;
  Reader &loss_moments, &grad_norm_moments, &totals, &flags;  // per rule
};

struct SavedCounts {
  long steps = 0, loss = 0, grad_norm = 0;  // observe() calls; finite values of each series
};

SpikeRule read_rule(const Sources& in, size_t k) {
  const auto what = cat("rule ", k, " ");
  SpikeRule s;
  s.window = in.window.count(what + "window", kMaxLength);
  s.lookback = in.lookback.count(what + "lookback", kMaxLength);
  s.sigmas = in.sigmas.finite(what + "sigmas");
  s.two_sided = in.two_sided.count(what + "sidedness", 1) == 1;
  const long len = in.name_length.count(what + "name length", 4096);
  for (long c = 0; c < len; ++c) s.name.push_back(static_cast<char>(in.name.count(what + "name", 255)));
  return s;
}

std::string describe(const SpikeRule& r) {
  return cat("'", r.name, "' (window ", r.window, ", ", r.sigmas, "σ, ", r.two_sided ? "two" : "one",
             "-sided, lookback ", r.lookback, ")");
}

// A state saved under other rules would resume scores that mean something else.
void check_saved_rule(const std::string& where, size_t k, const SpikeRule& saved, const SpikeRule& rule) {
  if (saved.name != rule.name || saved.window != rule.window || saved.lookback != rule.lookback ||
      saved.sigmas != rule.sigmas || saved.two_sided != rule.two_sided)
    fail(where, ": rule ", k, " was saved as ", describe(saved), ", the monitor has ", describe(rule));
}

// The retained finite values of s, oldest first.
void read_values(Reader& in, SpikeSeries& s, const char* series) {
  const long kept = std::min(s.count, static_cast<long>(s.ring.size()));
  for (long i = s.count - kept; i < s.count; ++i) s.ring[idx(i, s.ring.size())] = in.finite(cat(series, " value ", i));
}

RollingMoments read_moments(Reader& in, long lookback, const std::string& what) {
  RollingMoments mo;
  mo.shift = in.finite(what);
  mo.sum = in.finite(what);
  mo.sumsq = in.finite(what);
  mo.peak = in.finite(what);
  mo.since_recompute = in.count(what, static_cast<double>(lookback));
  if (mo.peak < 0) fail(in.source, ": ", what, " has a negative peak (corrupted)");
  return mo;
}

// The flags of the last min(steps, window) steps, oldest first, and the window's spike counts.
void read_flags(Reader& in, SpikeRuleState& st, long steps, long window, const std::string& what) {
  for (long s = steps - std::min(steps, window); s < steps; ++s) {
    const auto code = static_cast<std::uint8_t>(in.count(cat(what, "flag of step ", s), 3));
    st.flags[idx(s, st.flags.size())] = code;
    st.window_loss += code & 1;
    st.window_grad_norm += (code >> 1) & 1;
    st.window_combined += code != 0;
  }
}

// Totals that the window's flags or each other rule out mean a corrupted state.
void check_totals(const std::string& where, const SpikeRuleState& st, const std::string& what) {
  if (st.total_loss < st.window_loss || st.total_grad_norm < st.window_grad_norm ||
      st.total_combined < st.window_combined || st.total_combined < std::max(st.total_loss, st.total_grad_norm) ||
      st.total_combined > st.total_loss + st.total_grad_norm)
    fail(where, ": ", what, "spike totals (loss ", st.total_loss, ", grad_norm ", st.total_grad_norm, ", combined ",
         st.total_combined, ") disagree with its window flags (loss ", st.window_loss, ", grad_norm ",
         st.window_grad_norm, ", combined ", st.window_combined, ") (corrupted)");
}

void read_rule_state(const Sources& in, SpikeMonitor& r, size_t k) {
  SpikeRuleState& st = r.state[k];
  const SpikeRule& rule = r.rules[k];
  const auto what = cat("rule '", rule.name, "' ");
  st.loss = read_moments(in.loss_moments, rule.lookback, what + "loss moments");
  st.grad_norm = read_moments(in.grad_norm_moments, rule.lookback, what + "grad_norm moments");
  const auto steps = static_cast<double>(r.steps);
  st.total_loss = in.totals.count(what + "loss spike total", steps);
  st.total_grad_norm = in.totals.count(what + "grad_norm spike total", steps);
  st.total_combined = in.totals.count(what + "combined spike total", steps);
  read_flags(in.flags, st, r.steps, rule.window, what);
  check_totals(in.where, st, what);
}

// A monitor with `rules` in the saved state; throws when the state was saved under other rules.
SpikeMonitor read_saved(const std::vector<SpikeRule>& rules, const SavedCounts& c, const Sources& in) {
  SpikeMonitor r = make_spike_monitor(rules);
  r.steps = c.steps;
  r.loss.count = c.loss;
  r.grad_norm.count = c.grad_norm;
  for (size_t k = 0; k < r.rules.size(); ++k) check_saved_rule(in.where, k, read_rule(in, k), r.rules[k]);
  read_values(in.loss_values, r.loss, "loss");
  read_values(in.grad_norm_values, r.grad_norm, "grad_norm");
  for (size_t k = 0; k < r.rules.size(); ++k) read_rule_state(in, r, k);
  return r;
}

using Arrays = std::vector<std::pair<std::string, std::vector<double>>>;

std::vector<double> retained_values(const SpikeSeries& s) {
  std::vector<double> v;
  for (long i = s.count - std::min(s.count, static_cast<long>(s.ring.size())); i < s.count; ++i)
    v.push_back(s.ring[idx(i, s.ring.size())]);
  return v;
}

// The rules' parameters, one array per parameter, in rule order; names as their bytes.
Arrays rule_arrays(const std::vector<SpikeRule>& rules) {
  std::vector<double> window, sigmas, two_sided, lookback, name_length, name_bytes;
  for (const SpikeRule& r : rules) {
    window.push_back(static_cast<double>(r.window));
    sigmas.push_back(r.sigmas);
    two_sided.push_back(r.two_sided ? 1.0 : 0.0);
    lookback.push_back(static_cast<double>(r.lookback));
    name_length.push_back(static_cast<double>(r.name.size()));
    for (unsigned char c : r.name) name_bytes.push_back(c);
  }
  return {{"rule_window", window},     {"rule_sigmas", sigmas},           {"rule_two_sided", two_sided},
          {"rule_lookback", lookback}, {"rule_name_length", name_length}, {"rule_name_bytes", name_bytes}};
}

void append_moments(std::vector<double>& v, const RollingMoments& mo) {
  v.insert(v.end(), {mo.shift, mo.sum, mo.sumsq, mo.peak, static_cast<double>(mo.since_recompute)});
}

// Each rule's running sums, spike totals and retained flags, one array per quantity, in rule order.
Arrays rule_state_arrays(const SpikeMonitor& m) {
  std::vector<double> loss_moments, grad_norm_moments, totals, flags;
  for (size_t k = 0; k < m.rules.size(); ++k) {
    const SpikeRuleState& st = m.state[k];
    append_moments(loss_moments, st.loss);
    append_moments(grad_norm_moments, st.grad_norm);
    totals.insert(totals.end(), {static_cast<double>(st.total_loss), static_cast<double>(st.total_grad_norm),
                                 static_cast<double>(st.total_combined)});
    for (long s = m.steps - std::min(m.steps, m.rules[k].window); s < m.steps; ++s)
      flags.push_back(st.flags[idx(s, st.flags.size())]);
  }
  return {
      {"loss_moments", loss_moments}, {"grad_norm_moments", grad_norm_moments}, {"totals", totals}, {"flags", flags}};
}

bool has_array(const io::CheckpointPart& p, const std::string& array) {
  return std::any_of(p.arrays.begin(), p.arrays.end(), [&](const auto& a) { return a.first == array; });
}

// The named layout (monitor_part): one reader per array, each of which must be read to its end.
void restore_monitor_named(SpikeMonitor& m, const io::CheckpointPart& p) {
  auto array = [&p](const char* a) { return Reader{cat("/", p.name, "/", a), p.at(a)}; };
  Reader steps = array("steps"), value_counts = array("value_counts");
  Reader window = array("rule_window"), sigmas = array("rule_sigmas"), two_sided = array("rule_two_sided"),
         lookback = array("rule_lookback"), name_length = array("rule_name_length"), name = array("rule_name_bytes");
  Reader loss_values = array("loss_values"), grad_norm_values = array("grad_norm_values");
  Reader loss_moments = array("loss_moments"), grad_norm_moments = array("grad_norm_moments"), totals = array("totals"),
         flags = array("flags");
  if (window.v.size() != m.rules.size())
    fail(window.source, ": ", window.v.size(), " rules, the monitor has ", m.rules.size());
  SavedCounts c;
  c.steps = steps.count("step count", kMaxCount);
  c.loss = value_counts.count("loss value count", static_cast<double>(c.steps));
  c.grad_norm = value_counts.count("grad_norm value count", static_cast<double>(c.steps));
  const Sources in{cat("spike monitor part /", p.name),
                   window,
                   lookback,
                   sigmas,
                   two_sided,
                   name_length,
                   name,
                   loss_values,
                   grad_norm_values,
                   loss_moments,
                   grad_norm_moments,
                   totals,
                   flags};
  SpikeMonitor r = read_saved(m.rules, c, in);
  for (const Reader* a : {&steps, &value_counts, &window, &sigmas, &two_sided, &lookback, &name_length, &name,
                          &loss_values, &grad_norm_values, &loss_moments, &grad_norm_moments, &totals, &flags})
    a->expect_end("the part's counts and rules describe");
  m = std::move(r);
}

}  // namespace

io::CheckpointPart monitor_part(const SpikeMonitor& m, const std::string& name) {
  io::CheckpointPart p{name,
                       {{"steps", {static_cast<double>(m.steps)}},
                        {"value_counts", {static_cast<double>(m.loss.count), static_cast<double>(m.grad_norm.count)}},
                        {"loss_values", retained_values(m.loss)},
                        {"grad_norm_values", retained_values(m.grad_norm)}}};
  for (const Arrays& more : {rule_arrays(m.rules), rule_state_arrays(m)})
    p.arrays.insert(p.arrays.end(), more.begin(), more.end());
  return p;
}

void restore_monitor(SpikeMonitor& m, const io::CheckpointPart& part) {
  if (has_array(part, "state") && !has_array(part, "steps"))
    restore_monitor_flat(m, part.at("state"));
  else
    restore_monitor_named(m, part);
}

void restore_monitor_flat(SpikeMonitor& m, std::span<const double> state) {
  Reader in{"spike monitor state", state};
  if (state.empty()) fail(in.source, ": empty (0 values)");
  if (in.next("magic") != kMagic)
    fail(in.source, ": index 0 is ", state[0], ", not the magic number ", kMagic, " (not a spike monitor state)");
  const double version = in.next("version");
  if (version != kVersion) fail(in.source, ": version ", version, ", this build reads version ", kVersion);
  const long n_rules = in.count("rule count", kMaxCount);
  if (n_rules != static_cast<long>(m.rules.size()))
    fail(in.source, ": has ", n_rules, " rules, the monitor has ", m.rules.size());
  SavedCounts c;
  c.steps = in.count("step count", kMaxCount);
  c.loss = in.count("loss value count", static_cast<double>(c.steps));
  c.grad_norm = in.count("grad_norm value count", static_cast<double>(c.steps));
  const long cap = static_cast<long>(m.loss.ring.size());
  const long saved_cap = in.count("value capacity", kMaxCount);
  if (saved_cap != cap) fail(in.source, ": value capacity ", saved_cap, ", the monitor's rules need ", cap);
  SpikeMonitor r = read_saved(m.rules, c, Sources{in.source, in, in, in, in, in, in, in, in, in, in, in, in});
  in.expect_end("its header describes");
  m = std::move(r);
}

}  // namespace headroom::train
