// The "Seed noise" section and the configuration differences with their intervals, laid out from
// seed_noise.h's and config_differences.h's statistics.
#include "analysis/sections.h"

#include "analysis/config_differences.h"
#include "analysis/report_helpers.h"
#include "analysis/seed_noise.h"
#include "util/error.h"

namespace headroom::analysis {

namespace {

Table pairs_table(const Study& s, const AnalyzeConfig& cfg, const ScoreName& score, const NoiseSummary& noise) {
  Table t{"seed_pairs",
          cat("Seed pairs (runs that differ only in seed keys: ", cfg.seed_keys, "), score ", score.text),
          {"config", "run_a", "run_b", "seeds_a", "seeds_b", "score_a", "score_b", "swing", "swing_pct_of_range"},
          {},
          ""};
  for (const auto& p : noise.swings)
    t.rows.push_back({s.configs[p.config].id, s.runs[p.run_a].name, s.runs[p.run_b].name, s.runs[p.run_a].seed_text,
                      s.runs[p.run_b].seed_text, fmt(p.a), fmt(p.b), fmt(p.swing),
                      fmt(percent_of(p.swing, noise.range))});
  return t;
}

// One row per score: the long score, then RULER at each length of the pool's first run.
Table summary_table(const Study& s, const ScoreName& score) {
  Table t{"seed_noise",
          "Seed swing per score: |a − b| over every pair of seeds of one configuration; range = max − min over every "
          "pool run",
          {"score", "pairs", "mean_swing", "max_swing", "cross_pool_range", "mean_swing_pct", "max_swing_pct"},
          {},
          ""};
  std::vector<ScoreName> names{score};
  if (const RunData* ref = first_pool_run(s))
    for (auto L : ref->results.lengths) names.push_back({ScoreName::kRulerAt, L, "ruler@" + std::to_string(L)});
  for (const auto& n : names) {
    const NoiseSummary ns = seed_noise(s, n);
    if (!ns.ok) continue;
    t.rows.push_back({n.text, std::to_string(ns.pairs), fmt(ns.mean), fmt(ns.max), fmt(ns.range),
                      fmt(percent_of(ns.mean, ns.range)), fmt(percent_of(ns.max, ns.range))});
  }
  return t;
}

std::string mark_text(NoiseMark m) {
  switch (m) {
    case NoiseMark::kNoDifference:
      return "no difference (difference and swing both 0)";
    case NoiseMark::kWithin:
      return "within seed noise";
    case NoiseMark::kBeyond:
      return "beyond mean swing";
    case NoiseMark::kUnknown:
      break;
  }
  return "unknown (no seed pairs)";
}

std::vector<std::string> difference_row(const Study& s, const ConfigDifference& d) {
  const auto& a = s.configs[d.a];
  const auto& b = s.configs[d.b];
  std::vector<std::string> row{a.id, b.id, short_keys_differing(a, b), fmt(d.score_a.mean), fmt(d.score_b.mean)};
  if (!d.difference)
    row.insert(row.end(), {"", "", "", "", ""});
  else if (!d.ci.ok)
    row.insert(row.end(), {fmt(d.difference), mark_text(d.mark), "", "", ""});
  else
    row.insert(row.end(), {fmt(d.difference), mark_text(d.mark), fmt(d.ci.lo), fmt(d.ci.hi), d.method});
  row.push_back(std::to_string(d.score_a.n));
  row.push_back(std::to_string(d.score_b.n));
  return row;
}

void differences(const Study& s, const AnalyzeConfig& cfg, const ScoreName& score, const NoiseSummary& main,
                 Report& rep) {
  rep.heading("Configuration differences");
  if (s.configs.size() < 2) {
    rep.cannot_compute("configuration differences", "the pool has fewer than two configurations");
    return;
  }
  const DifferenceStats ds =
      config_differences(s, score, main, cfg.bootstrap_samples, cfg.bootstrap_seed, cfg.confidence);
  Table d{"config_differences",
          cat("Differences in ", score.text, " between configurations (a − b, means over seeds), with ",
              fmt(100 * cfg.confidence, 3), "% paired-bootstrap intervals"),
          {"config_a", "config_b", "keys_differing", "score_a", "score_b", "difference", "seed_noise", "ci_low",
           "ci_high", "bootstrap", "seeds_a", "seeds_b"},
          {},
          main.ok ? cat("'within seed noise': |difference| < the mean seed swing ", fmt(main.mean),
                        "; 'beyond': at least the mean swing; a difference of 0 against a swing of 0 is no "
                        "difference (the score did not move at all), never an effect.")
                  : "No seed pairs, so no difference is classified against seed noise."};
  for (const auto& p : ds.pairs) d.rows.push_back(difference_row(s, p));
  if (!ds.no_interval.empty()) rep.cannot_compute("some bootstrap intervals", ds.no_interval);
  if (ds.pool_lacks_samples)
    rep.text(
        "Some runs have no samples.jsonl (per-sample scores), so differences involving them are bootstrapped over "
        "seeds × tasks within each length instead of seeds × samples.");
  if (main.ok) rep.text(cat(ds.within, " difference(s) within seed noise, ", ds.beyond, " beyond the mean swing."));
  rep.text(
      "Bootstrap: each resample draws the seeds of each configuration with replacement and, shared by both "
      "configurations (paired), the samples of every task × length cell with replacement; the score is recomputed "
      "as RULER averages it (samples → task → length → mean over lengths). Percentile interval.");
  rep.table(std::move(d));
}

}  // namespace

void section_noise_and_differences(const Study& s, const AnalyzeConfig& cfg, Report& rep) {
  rep.heading("Seed noise");
  const ScoreName score = parse_score_name(cfg.long_score, "analyze.long_score");
  if (runs_with_score(s, score) == 0) {
    rep.cannot_compute(
        cat("seed noise, configuration differences (score ", score.text, ")"),
        cat("no pool run has the score ", score.text, " (analyze.long_score; is the length evaluated?)"));
    return;
  }
  for (const auto& [c, i] : repeated_seed_runs(s))
    rep.text(cat("Note: ", s.runs[i].name, " evaluated the same seeds as another run of ", s.configs[c].id,
                 " (a repeated evaluation, not a seed replicate); it is left out of the seed pairs."));
  const NoiseSummary main = seed_noise(s, score);
  if (!main.ok) {
    rep.cannot_compute(
        "seed noise (swing, share of the cross-pool range) and the 'within seed noise' marks",
        "no configuration has two runs that differ only in seed; every configuration here has a single seed");
    rep.text(
        "No seed pairs: seed noise cannot be estimated, so no configuration difference below is marked as within "
        "or beyond seed noise.");
  } else {
    const Opt share = percent_of(main.mean, main.range);
    rep.text(cat(main.pairs, " seed pair(s). Mean swing of ", score.text, ": ", fmt(main.mean), " (",
                 share ? fmt(*share, 3) : "–", "% of the cross-pool range ", fmt(main.range), "); max swing ",
                 fmt(main.max), "."));
    rep.table(pairs_table(s, cfg, score, main));
    rep.table(summary_table(s, score));
  }
  differences(s, cfg, score, main, rep);
}

}  // namespace headroom::analysis
