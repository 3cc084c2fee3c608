// The "Findings" section, laid out from findings.h's statistics.
#include "analysis/sections.h"

#include "analysis/findings.h"
#include "analysis/report_helpers.h"
#include "analysis/seed_noise.h"
#include "util/error.h"
#include "util/text.h"

namespace headroom::analysis {

namespace {

std::string ids(const Study& s, const FindingSide& side) {
  std::string out;
  for (size_t c : side.configs) out.append(out.empty() ? "" : " ").append(s.configs[c].id);
  return out;
}

// The seed spread behind a side's mean: "lo..hi (n runs)".
std::string spread(const FindingSide& side) {
  if (side.run_scores.empty()) return "";
  return cat(range_text(side.runs.lo, side.runs.hi), " (", side.run_scores.size(), " runs)");
}

Table findings_table(const AnalyzeConfig& cfg) {
  return {
      "findings",
      "Findings: effect = mean score of A's configurations − B's (each a mean over its seeds)",
      {"finding", "score", "configs_a", "configs_b", "mean_a", "mean_b", "effect", "mean_seed_swing",
       "effect_over_swing", "verdict", "ci_low", "ci_high", "bootstrap", "seeds_to_resolve", "runs_a", "runs_b"},
      {},
      cat("Mean seed swing: |a − b| over every pair of seeds of one configuration, averaged over the pool's pairs "
          "(the 'Seed noise' section for the long score). Verdict: reproduces when effect > 2 × mean swing, reversed "
          "when effect < −2 × mean swing, no signal when the effect and the swing are both 0, otherwise not "
          "resolved at this noise. ci: ",
          fmt(100 * cfg.confidence, 3),
          "% bootstrap interval of the effect. "
          "seeds_to_resolve (unresolved findings): seeds per configuration at which an effect of the measured "
          "size would exceed two standard errors of a difference of means, with the seed deviation the mean "
          "swing implies (σ = swing·√π/2; n = 8σ²/effect²): a small number means too few seeds, a large one or "
          "'none' means no effect of consequence.")};
}

std::vector<std::string> finding_row(const Study& s, const Finding& f, const ScoreName& score,
                                     const NoiseSummary& noise, const FindingResult& r) {
  std::vector<std::string> row{f.name, score.text, ids(s, r.a), ids(s, r.b), fmt(r.a.mean), fmt(r.b.mean)};
  if (!r.computed) {
    row.insert(row.end(), {"", "", "", "not computed", "", "", "", "", spread(r.a), spread(r.b)});
    return row;
  }
  row.insert(row.end(), {fmt(r.effect), noise.ok ? fmt(noise.mean) : "", fmt(r.effect_over_swing, 3), r.verdict,
                         r.ci.ok ? fmt(r.ci.lo) : "", r.ci.ok ? fmt(r.ci.hi) : "", r.ci.ok ? r.method : r.ci.why,
                         r.seeds, spread(r.a), spread(r.b)});
  return row;
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
  Table t = findings_table(cfg);
  for (const auto& entry : cfg.findings) {
    const Finding f = parse_finding(entry);
    rep.text(cat("**", f.name, "**: ", f.a_text, "  over  ", f.b_text));
    for (size_t k = 0; k < scores.size(); ++k) {
      // Each row's bootstrap draws its own stream: the seed moves with the row.
      const FindingResult r = evaluate_finding(s, f, scores[k], noises[k], cfg.bootstrap_samples, cfg.confidence,
                                               cfg.bootstrap_seed + 7919 * t.rows.size());
      if (!r.computed)
        rep.cannot_compute(cat("finding ", f.name, " on ", scores[k].text),
                           cat("no configuration with the score matches side ", r.a.configs.empty() ? "A" : "B",
                               r.why.empty() ? "" : " (" + r.why + ")"));
      t.rows.push_back(finding_row(s, f, scores[k], noises[k], r));
    }
  }
  rep.table(std::move(t));
}

}  // namespace headroom::analysis
