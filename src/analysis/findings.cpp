// Findings: parsing the claims, selecting each side's configurations, and the effect, verdict and
// interval of each finding (findings.h). The Findings section lays them out (section_findings.cpp).
#include "analysis/findings.h"

#include "analysis/run_scores.h"
#include "util/error.h"
#include "util/text.h"

namespace headroom::analysis {
namespace {

using Opt = std::optional<double>;

std::vector<Predicate> parse_side(const std::string& side, const std::string& entry) {
  return parse_conjunction(side, cat("analyze.finding '", entry, "'"));
}

}  // namespace

std::vector<Predicate> parse_conjunction(const std::string& side, const std::string& where) {
  std::vector<Predicate> out;
  size_t from = 0;
  for (;;) {
    const size_t amp = side.find('&', from);
    const std::string one = trim(side.substr(from, amp == std::string::npos ? std::string::npos : amp - from));
    try {
      out.push_back(parse_feature("x=" + one).pred);
    } catch (const std::exception&) {
      fail(where, ": '", one,
           "' is not a predicate 'KEY OP VALUE' (OP one of == != < <= > >= "
           "contains !contains, separated by spaces; predicates joined by &)");
    }
    if (amp == std::string::npos) break;
    from = amp + 1;
  }
  return out;
}

Finding parse_finding(const std::string& entry) {
  const size_t colon = entry.find(':');
  if (colon == std::string::npos || colon == 0)
    fail("analyze.finding '", entry,
         "': write 'NAME: A over B', e.g. 'wider_heads: model.head_dim_qk == 32 over "
         "model.head_dim_qk == 8'");
  Finding f;
  f.name = trim(entry.substr(0, colon));
  f.text = trim(entry.substr(colon + 1));
  const size_t over = f.text.find(" over ");
  if (over == std::string::npos || f.text.find(" over ", over + 1) != std::string::npos)
    fail("analyze.finding '", entry, "': the comparison needs exactly one ' over ' between the two sides");
  f.a_text = trim(f.text.substr(0, over));
  f.b_text = trim(f.text.substr(over + 6));
  f.a = parse_side(f.a_text, entry);
  f.b = parse_side(f.b_text, entry);
  if (f.name.empty() || f.name.find_first_of(" ,\t") != std::string::npos)
    fail("analyze.finding '", entry, "': the name must be one word");
  return f;
}

std::string finding_verdict(double effect, bool noise_ok, double mean_swing) {
  if (!noise_ok) return "unknown (no seed pairs)";
  if (effect == 0 && mean_swing == 0) return "no signal (effect and swing both 0)";
  if (effect > 2 * mean_swing) return "reproduces";
  if (effect < -2 * mean_swing) return "reversed";
  return "not resolved (|effect| <= 2 x swing)";
}

std::string seeds_needed(double effect, bool noise_ok, double mean_swing, const std::string& verdict) {
  if (!noise_ok || verdict.rfind("not resolved", 0) != 0) return "";
  if (effect == 0) return "none: no effect measured";
  const int64_t n = seeds_to_resolve(effect, mean_swing);
  return n >= kSeedsNever ? "none: effect ~0" : std::to_string(n);
}

std::optional<bool> side_holds(const std::vector<Predicate>& side, const RunConfig& cfg, std::string& why) {
  for (const auto& p : side) {
    const auto v = eval_feature(Feature{"finding", p, ""}, cfg, why);
    if (!v) return std::nullopt;
    if (!*v) return false;
  }
  return true;
}

FindingSide select_side(const Study& s, const std::vector<Predicate>& side, const ScoreName& score, std::string& why) {
  FindingSide out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    const auto& g = s.configs[c];
    if (g.runs.empty()) continue;
    // Runs of one configuration share every non-seed key: the first decides.
    const auto holds = side_holds(side, s.runs[g.runs[0]].config, why);
    if (!holds || !*holds) continue;
    double sum = 0;
    int n = 0;
    for (size_t i : g.runs)
      if (const Opt v = score_of(s.runs[i], score)) sum += *v, ++n, out.run_scores.push_back(*v);
    if (!n) continue;
    out.configs.push_back(c);
    out.config_means.push_back(sum / n);
  }
  if (!out.config_means.empty()) {
    double sum = 0;
    for (double m : out.config_means) sum += m;
    out.mean = sum / static_cast<double>(out.config_means.size());
  }
  if (!out.run_scores.empty()) out.runs = spread_of(out.run_scores);
  return out;
}

namespace {

BootResult finding_interval(const Study& s, const FindingSide& a, const FindingSide& b, const ScoreName& score,
                            int64_t resamples, double confidence, uint64_t seed, std::string& method) {
  if (a.configs.size() == 1 && b.configs.size() == 1) {
    bool per_sample = false;
    const auto cells = boot_cells(s, s.configs[a.configs[0]], s.configs[b.configs[0]], score, per_sample, method);
    if (!cells.empty()) return paired_bootstrap(cells, !per_sample, resamples, seed, confidence);
  }
  BootCell c;
  for (double v : a.run_scores) c.a.push_back({v});
  for (double v : b.run_scores) c.b.push_back({v});
  method = "seeds (runs) of each side";
  return paired_bootstrap({c}, false, resamples, seed, confidence, false);
}

}  // namespace

FindingResult evaluate_finding(const Study& s, const Finding& f, const ScoreName& score, const NoiseSummary& noise,
                               int64_t resamples, double confidence, uint64_t seed) {
  FindingResult r;
  r.a = select_side(s, f.a, score, r.why);
  r.b = select_side(s, f.b, score, r.why);
  if (r.a.configs.empty() || r.b.configs.empty()) return r;
  r.computed = true;
  r.effect = r.a.mean - r.b.mean;
  if (noise.ok && noise.mean > 0) r.effect_over_swing = r.effect / noise.mean;
  r.verdict = finding_verdict(r.effect, noise.ok, noise.mean);
  r.ci = finding_interval(s, r.a, r.b, score, resamples, confidence, seed, r.method);
  r.seeds = seeds_needed(r.effect, noise.ok, noise.mean, r.verdict);
  return r;
}

}  // namespace headroom::analysis
