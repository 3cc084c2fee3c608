// The "Seed noise" section and the configuration differences with their intervals.
#include "analysis/sections.h"

#include "analysis/report_helpers.h"
#include "analysis/run_scores.h"
#include "analysis/seed_noise.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace headroom::analysis {

using nlohmann::json;

void section_noise_and_differences(const Study& s, const AnalyzeConfig& cfg, Report& rep) {
  rep.heading("Seed noise");
  const ScoreName score = parse_score_name(cfg.long_score, "analyze.long_score");
  Table pairs{"seed_pairs", cat("Seed pairs (runs that differ only in seed keys: ", cfg.seed_keys, "), score ", score.text),
              {"config", "run_a", "run_b", "seeds_a", "seeds_b", "score_a", "score_b", "swing", "swing_pct_of_range"}, {}, ""};
  int64_t with_score = 0;
  for (const auto& r : s.runs) with_score += r.in_pool && score_of(r, score).has_value();
  if (with_score == 0) {
    rep.cannot_compute(cat("seed noise, configuration differences (score ", score.text, ")"),
                       cat("no pool run has the score ", score.text, " (analyze.long_score; is the length evaluated?)"));
    return;
  }
  for (const auto& g : s.configs) {
    std::set<std::string> seen;
    for (size_t i : g.runs)
      if (!seen.insert(s.runs[i].seed_text).second)
        rep.text(cat("Note: ", s.runs[i].name, " evaluated the same seeds as another run of ", g.id,
                     " (a repeated evaluation, not a seed replicate); it is left out of the seed pairs."));
  }
  const NoiseSummary main = seed_noise(s, score, &pairs);
  Table sum{"seed_noise", "Seed swing per score: |a − b| over every pair of seeds of one configuration; range = max − min over every pool run",
            {"score", "pairs", "mean_swing", "max_swing", "cross_pool_range", "mean_swing_pct", "max_swing_pct"}, {}, ""};
  std::vector<ScoreName> names{score};
  const RunData* ref = first_pool_run(s);
  if (ref)
    for (auto L : ref->results.lengths) names.push_back({ScoreName::kRulerAt, L, "ruler@" + std::to_string(L)});
  for (const auto& n : names) {
    const NoiseSummary ns = seed_noise(s, n, nullptr);
    if (!ns.ok) continue;
    sum.rows.push_back({n.text, std::to_string(ns.pairs), fmt(ns.mean), fmt(ns.max), fmt(ns.range),
                        ns.range > 0 ? fmt(100 * ns.mean / ns.range) : "", ns.range > 0 ? fmt(100 * ns.max / ns.range) : ""});
  }
  if (!main.ok) {
    rep.cannot_compute("seed noise (swing, share of the cross-pool range) and the 'within seed noise' marks",
                       "no configuration has two runs that differ only in seed; every configuration here has a single seed");
    rep.text("No seed pairs: seed noise cannot be estimated, so no configuration difference below is marked as within "
             "or beyond seed noise.");
  } else {
    rep.text(cat(main.pairs, " seed pair(s). Mean swing of ", score.text, ": ", fmt(main.mean), " (", 
                 main.range > 0 ? fmt(100 * main.mean / main.range, 3) : "–", "% of the cross-pool range ",
                 fmt(main.range), "); max swing ", fmt(main.max), "."));
    rep.table(std::move(pairs));
    rep.table(std::move(sum));
  }

  rep.heading("Configuration differences");
  if (s.configs.size() < 2) {
    rep.cannot_compute("configuration differences", "the pool has fewer than two configurations");
    return;
  }
  Table d{"config_differences",
          cat("Differences in ", score.text, " between configurations (a − b, means over seeds), with ",
              fmt(100 * cfg.confidence, 3), "% paired-bootstrap intervals"),
          {"config_a", "config_b", "keys_differing", "score_a", "score_b", "difference", "seed_noise", "ci_low", "ci_high",
           "bootstrap", "seeds_a", "seeds_b"}, {},
          main.ok ? cat("'within seed noise': |difference| < the mean seed swing ", fmt(main.mean),
                        "; 'beyond': at least the mean swing; a difference of 0 against a swing of 0 is no "
                        "difference (the score did not move at all), never an effect.")
                  : "No seed pairs, so no difference is classified against seed noise."};
  int64_t within = 0, beyond = 0;
  std::string no_boot;
  for (size_t i = 0; i < s.configs.size(); ++i)
    for (size_t j = i + 1; j < s.configs.size(); ++j) {
      const auto& a = s.configs[i];
      const auto& b = s.configs[j];
      const Mean ma = config_mean(s, a, [&](const RunData& r) { return score_of(r, score); });
      const Mean mb = config_mean(s, b, [&](const RunData& r) { return score_of(r, score); });
      std::vector<std::string> row{a.id, b.id, short_keys_differing(a, b), fmt(ma.mean), fmt(mb.mean)};
      if (ma.mean && mb.mean) {
        const double diff = *ma.mean - *mb.mean;
        row.push_back(fmt(diff));
        if (main.ok && diff == 0 && main.mean == 0) {
          row.push_back("no difference (difference and swing both 0)");  // nothing measured: not an effect
        } else if (main.ok) {
          const bool w = std::abs(diff) < main.mean;
          (w ? within : beyond)++;
          row.push_back(w ? "within seed noise" : "beyond mean swing");
        } else {
          row.push_back("unknown (no seed pairs)");
        }
        bool per_sample = false;
        std::string method;
        const auto cells = boot_cells(s, a, b, score, per_sample, method);
        const BootResult br = paired_bootstrap(cells, !per_sample, cfg.bootstrap_samples,
                                               cfg.bootstrap_seed + i * 1000003ull + j, cfg.confidence);
        if (br.ok) {
          row.insert(row.end(), {fmt(br.lo), fmt(br.hi), method});
        } else {
          row.insert(row.end(), {"", "", ""});
          no_boot = br.why;
        }
      } else {
        row.insert(row.end(), {"", "", "", "", ""});
      }
      row.push_back(std::to_string(ma.n));
      row.push_back(std::to_string(mb.n));
      d.rows.push_back(row);
    }
  if (!no_boot.empty()) rep.cannot_compute("some bootstrap intervals", no_boot);
  bool any_missing_samples = false;
  for (const auto& r : s.runs) any_missing_samples |= r.in_pool && !r.has_samples;
  if (any_missing_samples)
    rep.text("Some runs have no samples.jsonl (per-sample scores), so differences involving them are bootstrapped over "
             "seeds × tasks within each length instead of seeds × samples.");
  if (main.ok) rep.text(cat(within, " difference(s) within seed noise, ", beyond, " beyond the mean swing."));
  rep.text("Bootstrap: each resample draws the seeds of each configuration with replacement and, shared by both "
           "configurations (paired), the samples of every task × length cell with replacement; the score is recomputed "
           "as RULER averages it (samples → task → length → mean over lengths). Percentile interval.");
  rep.table(std::move(d));
}

}  // namespace headroom::analysis
