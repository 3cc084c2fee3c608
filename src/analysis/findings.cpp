// The retrieval probe's learning curves and the Findings table (pool.h declares both sections).
#include "analysis/findings.h"

#include "analysis/run_scores.h"
#include "analysis/sections.h"
#include "analysis/seed_noise.h"
#include "analysis/stats.h"
#include "util/error.h"
#include "util/text.h"

#include <cmath>
#include <regex>
#include <set>

namespace headroom::analysis {
namespace {

using nlohmann::json;
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
      fail(where, ": '", one, "' is not a predicate 'KEY OP VALUE' (OP one of == != < <= > >= "
           "contains !contains, separated by spaces; predicates joined by &)");
    }
    if (amp == std::string::npos) break;
    from = amp + 1;
  }
  return out;
}

namespace {

struct Side {
  std::vector<size_t> configs;
  std::vector<double> config_means;
  std::vector<double> run_scores;
  double mean = std::nan("");
};

Side select(const Study& s, const std::vector<Predicate>& preds, const ScoreName& score, std::string& why) {
  Side out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    const auto& g = s.configs[c];
    if (g.runs.empty()) continue;
    // Runs of one configuration share every non-seed key: the first decides.
    const auto holds = side_holds(preds, s.runs[g.runs[0]].config, why);
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
  return out;
}

std::string ids(const Study& s, const Side& side) {
  std::string out;
  for (size_t c : side.configs) out.append(out.empty() ? "" : " ").append(s.configs[c].id);
  return out;
}

// "lo..hi" of a non-empty list.
std::string min_max(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return cat(fmt(*lo, 4), "..", fmt(*hi, 4));
}

std::string spread(const Side& side) {
  if (side.run_scores.empty()) return "";
  return cat(min_max(side.run_scores), " (", side.run_scores.size(), " runs)");
}

}  // namespace

Finding parse_finding(const std::string& entry) {
  const size_t colon = entry.find(':');
  if (colon == std::string::npos || colon == 0)
    fail("analyze.finding '", entry, "': write 'NAME: A over B', e.g. 'wider_heads: model.head_dim_qk == 32 over "
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

void section_probe(const Study& s, Report& rep) {
  bool any = false;
  for (const auto& r : s.runs) any |= probe_stage(r) != nullptr;
  if (!any) return;  // no run was trained with train.probe_every
  rep.heading("Retrieval probe: learning curves");
  rep.text("The retrieval probe (train.probe_every; src/train/probe.h) scores the same held-out synthetic examples, "
           "each filling a whole training window, at intervals during training: token accuracy is the share of "
           "answer tokens (and the EOS after them) that are the model's argmax prediction, exact the share of examples "
           "answered entirely (what greedy decoding would get right); auc is the mean token accuracy over the curve.");
  Table t{"probe_by_config", "Retrieval probe per configuration (mean over seeds; min..max over seeds)",
          {"config", "label", "stage", "seeds", "probe_acc", "probe_acc_range", "probe_exact", "probe_auc",
           "probe_auc_range", "probe_loss"}, {}, ""};
  json curves = json::array();
  for (const auto& g : s.configs) {
    std::vector<double> acc, exact, auc, loss;
    std::string stage;
    for (size_t i : g.runs) {
      const StageRun* st = probe_stage(s.runs[i]);
      if (!st) continue;
      stage = st->stage;
      acc.push_back(st->probe.back().token_acc);
      exact.push_back(st->probe.back().exact);
      loss.push_back(st->probe.back().loss);
      auc.push_back(*probe_auc(st->probe));
      json steps = json::array(), tokens = json::array(), a = json::array();
      for (const auto& p : st->probe) steps.push_back(p.step), tokens.push_back(p.tokens), a.push_back(p.token_acc);
      curves.push_back({{"config", g.id}, {"label", g.id + " " + g.label}, {"run", s.runs[i].name},
                        {"tokens", tokens}, {"steps", steps}, {"token_acc", a}});
    }
    if (acc.empty()) continue;
    auto mean = [](const std::vector<double>& v) {
      double x = 0;
      for (double y : v) x += y;
      return x / static_cast<double>(v.size());
    };
    t.rows.push_back({g.id, g.label, stage, std::to_string(acc.size()), fmt(mean(acc)), min_max(acc), fmt(mean(exact)),
                      fmt(mean(auc)), min_max(auc), fmt(mean(loss))});
  }
  rep.table(std::move(t));
  rep.plot_data["probe_curves"] = curves;
  rep.plot("probe_curves.png", "Retrieval probe token accuracy against training tokens: one thin line per run, the "
                               "thick line is the configuration's mean over seeds");
}

namespace {

// The bootstrap interval of A − B: paired over samples (or tasks) when each side is one
// configuration with RULER cells, else over the seeds (runs) of each side.
BootResult finding_interval(const Study& s, const Side& a, const Side& b, const ScoreName& score,
                            const AnalyzeConfig& cfg, uint64_t seed, std::string& method) {
  if (a.configs.size() == 1 && b.configs.size() == 1) {
    bool per_sample = false;
    const auto cells = boot_cells(s, s.configs[a.configs[0]], s.configs[b.configs[0]], score, per_sample, method);
    if (!cells.empty()) return paired_bootstrap(cells, !per_sample, cfg.bootstrap_samples, seed, cfg.confidence);
  }
  BootCell c;
  for (double v : a.run_scores) c.a.push_back({v});
  for (double v : b.run_scores) c.b.push_back({v});
  method = "seeds (runs) of each side";
  return paired_bootstrap({c}, false, cfg.bootstrap_samples, seed, cfg.confidence, false);
}

}  // namespace

void section_findings(const Study& s, const AnalyzeConfig& cfg, Report& rep) {
  if (cfg.findings.empty()) return;
  rep.heading("Findings");
  std::vector<ScoreName> scores;
  std::vector<NoiseSummary> noises;  // per score: the same for every finding
  for (const auto& n : split_list(cfg.finding_scores.empty() ? cfg.long_score : cfg.finding_scores)) {
    scores.push_back(parse_score_name(n, "analyze.finding_scores"));
    noises.push_back(seed_noise(s, scores.back()));
  }
  Table t{"findings", "Findings: effect = mean score of A's configurations − B's (each a mean over its seeds)",
          {"finding", "score", "configs_a", "configs_b", "mean_a", "mean_b", "effect", "mean_seed_swing",
           "effect_over_swing", "verdict", "ci_low", "ci_high", "bootstrap", "seeds_to_resolve", "runs_a", "runs_b"}, {},
          cat("Mean seed swing: |a − b| over every pair of seeds of one configuration, averaged over the pool's pairs "
              "(the 'Seed noise' section for the long score). Verdict: reproduces when effect > 2 × mean swing, reversed "
              "when effect < −2 × mean swing, no signal when the effect and the swing are both 0, otherwise not "
              "resolved at this noise. ci: ", fmt(100 * cfg.confidence, 3), "% bootstrap interval of the effect. "
              "seeds_to_resolve (unresolved findings): seeds per configuration at which an effect of the measured "
              "size would exceed two standard errors of a difference of means, with the seed deviation the mean "
              "swing implies (σ = swing·√π/2; n = 8σ²/effect²): a small number means too few seeds, a large one or "
              "'none' means no effect of consequence.")};
  for (const auto& entry : cfg.findings) {
    const Finding f = parse_finding(entry);
    rep.text(cat("**", f.name, "**: ", f.a_text, "  over  ", f.b_text));
    for (size_t k = 0; k < scores.size(); ++k) {
      const ScoreName& score = scores[k];
      const NoiseSummary& noise = noises[k];
      std::string why;
      const Side a = select(s, f.a, score, why), b = select(s, f.b, score, why);
      std::vector<std::string> row{f.name, score.text, ids(s, a), ids(s, b), fmt(a.mean), fmt(b.mean)};
      if (a.configs.empty() || b.configs.empty()) {
        rep.cannot_compute(cat("finding ", f.name, " on ", score.text),
                           cat("no configuration with the score matches side ", a.configs.empty() ? "A" : "B",
                               why.empty() ? "" : " (" + why + ")"));
        row.insert(row.end(), {"", "", "", "not computed", "", "", "", "", spread(a), spread(b)});
      } else {
        const double effect = a.mean - b.mean;
        const std::string verdict = finding_verdict(effect, noise.ok, noise.mean);
        std::string method;
        const BootResult ci = finding_interval(s, a, b, score, cfg, cfg.bootstrap_seed + 7919 * t.rows.size(), method);
        row.insert(row.end(), {fmt(effect), noise.ok ? fmt(noise.mean) : "", noise.ok && noise.mean > 0 ? fmt(effect / noise.mean, 3) : "",
                               verdict, ci.ok ? fmt(ci.lo) : "", ci.ok ? fmt(ci.hi) : "", ci.ok ? method : ci.why,
                               seeds_needed(effect, noise.ok, noise.mean, verdict), spread(a), spread(b)});
      }
      t.rows.push_back(row);
    }
  }
  rep.table(std::move(t));
}

}  // namespace headroom::analysis
