#include "analysis/pool.h"

#include "analysis/findings.h"
#include "analysis/linalg.h"
#include "analysis/stats.h"
#include "eval/tasks.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace headroom::analysis {
namespace {

using nlohmann::json;
using Opt = std::optional<double>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Mean {
  Opt mean;
  int64_t n = 0;
  double lo = kNaN, hi = kNaN;
};

Mean mean_of(const std::vector<Opt>& v) {
  Mean m;
  double s = 0;
  for (const auto& x : v)
    if (x && std::isfinite(*x)) {
      s += *x, ++m.n;
      m.lo = std::isnan(m.lo) ? *x : std::min(m.lo, *x);
      m.hi = std::isnan(m.hi) ? *x : std::max(m.hi, *x);
    }
  if (m.n) m.mean = s / static_cast<double>(m.n);
  return m;
}

json num(const Opt& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

bool is_ruler_task(const std::string& t) {
  try {
    return eval::find_task(t).ruler;
  } catch (const std::exception&) {
    return false;
  }
}

const RunData* first_pool_run(const Study& s) {
  for (const auto& r : s.runs)
    if (r.in_pool) return &r;
  return nullptr;
}

std::string config_name(const Study& s, long idx) {
  return idx < 0 ? std::string() : s.configs[static_cast<size_t>(idx)].id;
}

// Per-configuration mean of a per-run value.
Mean config_mean(const Study& s, const ConfigGroup& g, const std::function<Opt(const RunData&)>& f) {
  std::vector<Opt> v;
  for (size_t i : g.runs) v.push_back(f(s.runs[i]));
  return mean_of(v);
}

std::string short_keys_differing(const ConfigGroup& a, const ConfigGroup& b) {
  std::string out;
  for (const auto& k : profile_differences(a, b)) out.append(out.empty() ? "" : " ").append(k);
  return out;
}

std::vector<double> downsample(const std::vector<double>& v, size_t max_points) {
  if (v.size() <= max_points) return v;
  std::vector<double> o;
  for (size_t i = 0; i < max_points; ++i) o.push_back(v[i * (v.size() - 1) / (max_points - 1)]);
  return o;
}

// ---------------------------------------------------------------------------------------------

void section_runs(const Study& s, Report& rep) {
  rep.heading("Runs");
  Table t{"runs", "Runs", {"run", "dir", "config", "seeds", "stage", "step", "checkpoint", "tokenizer", "lengths",
                           "ruler_average", "in_pool", "samples"}, {}, ""};
  for (const auto& r : s.runs) {
    std::string lens;
    for (auto L : r.results.lengths) lens.append(lens.empty() ? "" : " ").append(std::to_string(L));
    t.rows.push_back({r.name, r.dir, config_name(s, r.config_index), r.seed_text, r.results.stage,
                      r.has_results ? std::to_string(r.results.step) : "", r.checkpoint, r.results.tokenizer_id, lens,
                      fmt(r.results.ruler_average), r.in_pool ? "yes" : "no", r.has_samples ? "yes" : "no"});
  }
  rep.text(s.pool.empty() ? "No comparable pool." : "Pool (the runs compared with each other): " + s.pool + ".");
  rep.table(std::move(t));
  Table p{"run_problems", "Problems found in the inputs", {"run", "problem"}, {}, ""};
  for (const auto& r : s.runs)
    for (const auto& pr : r.problems) p.rows.push_back({r.name, pr});
  for (const auto& n : s.notes) p.rows.push_back({"(study)", n});
  if (!p.rows.empty()) rep.table(std::move(p));
}

void section_configs(const Study& s, Report& rep) {
  rep.heading("Configurations");
  std::string keys;
  for (const auto& k : s.varying_keys) keys.append(keys.empty() ? "" : ", ").append(k);
  rep.text(s.configs.empty()
               ? "No configuration could be formed."
               : cat(s.configs.size(), " configuration(s): runs whose lineage configurations (every stage's resolved "
                     "INI) agree once the seed keys and the ignored keys are removed. Keys that differ between "
                     "configurations (a → joins a key's values along the lineage when a later stage changed it; "
                     "'stages' is the lineage): ", keys.empty() ? "none" : keys, "."));
  Table t{"configs", "Configurations", {"config", "label", "keys", "runs", "seeds"}, {}, ""};
  for (const auto& g : s.configs) {
    std::string runs, seeds;
    for (size_t i : g.runs) {
      runs.append(runs.empty() ? "" : " ").append(s.runs[i].name);
      seeds.append(seeds.empty() ? "" : " | ").append(s.runs[i].seed_text);
    }
    t.rows.push_back({g.id, g.label, g.keys_label, runs, seeds});
  }
  rep.table(std::move(t));
}

void section_ruler(const Study& s, Report& rep) {
  rep.heading("RULER");
  const RunData* ref = first_pool_run(s);
  if (!ref) {
    rep.cannot_compute("RULER tables", "no run in the pool");
    return;
  }
  const auto& lengths = ref->results.lengths;
  Table t{"ruler_by_length", "RULER average by context length (mean over seeds; overall = mean over lengths)",
          {"config", "label", "seeds"}, {}, ""};
  for (auto L : lengths) t.header.push_back(std::to_string(L));
  t.header.insert(t.header.end(), {"overall", "overall_min", "overall_max"});
  json series = json::array();
  for (const auto& g : s.configs) {
    std::vector<std::string> row{g.id, g.label, std::to_string(g.runs.size())};
    json ys = json::array();
    for (auto L : lengths) {
      const Mean m = config_mean(s, g, [&](const RunData& r) { return score_of(r, {ScoreName::kRulerAt, L, ""}); });
      row.push_back(fmt(m.mean));
      ys.push_back(num(m.mean));
    }
    const Mean o = config_mean(s, g, [&](const RunData& r) { return r.results.ruler_average; });
    row.insert(row.end(), {fmt(o.mean), fmt(o.lo), fmt(o.hi)});
    t.rows.push_back(row);
    series.push_back({{"label", g.id + " " + g.label}, {"scores", ys}});
  }
  rep.table(std::move(t));
  rep.plot_data["ruler_by_length"] = {{"lengths", lengths}, {"series", series}};
  rep.plot("ruler_by_length.png", "RULER average vs context length, per configuration (mean over seeds)");

  Table pr{"ruler_by_length_runs", "RULER average by context length, per run", {"run", "config"}, {}, ""};
  for (auto L : lengths) pr.header.push_back(std::to_string(L));
  pr.header.push_back("overall");
  for (const auto& r : s.runs) {
    if (!r.has_results) continue;
    std::vector<std::string> row{r.name, config_name(s, r.config_index)};
    for (auto L : lengths) row.push_back(fmt(score_of(r, {ScoreName::kRulerAt, L, ""})));
    row.push_back(fmt(r.results.ruler_average));
    pr.rows.push_back(row);
  }
  rep.table(std::move(pr));

  Table tt{"ruler_tasks", "", {"config", "task", "length", "score", "seeds"}, {}, ""};
  for (const auto& g : s.configs) {
    std::vector<std::pair<std::string, int64_t>> cells;
    for (const auto& ts : s.runs[g.runs[0]].results.task_scores) cells.push_back({ts.task, ts.length});
    for (const auto& [task, L] : cells) {
      const Mean m = config_mean(s, g, [&](const RunData& r) -> Opt {
        for (const auto& ts : r.results.task_scores)
          if (ts.task == task && ts.length == L) return ts.score;
        return std::nullopt;
      });
      tt.rows.push_back({g.id, task, std::to_string(L), fmt(m.mean), std::to_string(m.n)});
    }
  }
  rep.text(cat("Per-task scores (mean over seeds) are in tables/ruler_tasks.csv (", tt.rows.size(), " rows)."));
  rep.tables.push_back(std::move(tt));
}

void section_short(const Study& s, Report& rep) {
  rep.heading("Short context: multiple choice and loss by position");
  Table mc{"multiple_choice", "Multiple choice (mean over seeds)", {"config", "label", "items", "acc", "acc_norm"}, {}, ""};
  bool any_mc = false;
  for (const auto& g : s.configs) {
    const Mean a = config_mean(s, g, [](const RunData& r) -> Opt { return r.results.mc ? Opt(r.results.mc->acc) : std::nullopt; });
    const Mean an = config_mean(s, g, [](const RunData& r) -> Opt { return r.results.mc ? Opt(r.results.mc->acc_norm) : std::nullopt; });
    const auto& r0 = s.runs[g.runs[0]];
    any_mc |= a.n > 0;
    mc.rows.push_back({g.id, g.label, r0.results.mc ? std::to_string(r0.results.mc->n) : "", fmt(a.mean), fmt(an.mean)});
  }
  if (any_mc) rep.table(std::move(mc));
  else rep.cannot_compute("multiple choice table", "no run in the pool has multiple-choice results (evaluate task mc)");

  Table lp{"loss_by_position", "Held-out loss by token position (nats, mean over seeds)",
           {"config", "length", "start", "end", "mean_loss", "seeds"}, {}, ""};
  Table lo{"loss_overall", "Held-out loss and perplexity per evaluated length (mean over seeds)",
           {"config", "label", "length", "mean_loss", "perplexity"}, {}, ""};
  for (const auto& g : s.configs) {
    const auto& r0 = s.runs[g.runs[0]];
    for (const auto& c : r0.results.loss) {
      const Mean m = config_mean(s, g, [&](const RunData& r) -> Opt {
        for (const auto& x : r.results.loss)
          if (x.length == c.length) return x.mean_loss;
        return std::nullopt;
      });
      lo.rows.push_back({g.id, g.label, std::to_string(c.length), fmt(m.mean), fmt(m.mean ? Opt(std::exp(*m.mean)) : std::nullopt)});
      for (size_t b = 0; b < c.buckets.size(); ++b) {
        const Mean mb = config_mean(s, g, [&](const RunData& r) -> Opt {
          for (const auto& x : r.results.loss)
            if (x.length == c.length && b < x.buckets.size()) return x.buckets[b].mean_loss;
          return std::nullopt;
        });
        lp.rows.push_back({g.id, std::to_string(c.length), std::to_string(c.buckets[b].start),
                           std::to_string(c.buckets[b].end), fmt(mb.mean), std::to_string(mb.n)});
      }
    }
  }
  if (lo.rows.empty()) {
    rep.cannot_compute("loss by position", "no run in the pool has loss_by_position results (evaluate task loss_by_position)");
  } else {
    rep.table(std::move(lo));
    rep.table(std::move(lp));
  }
}

void section_training(const Study& s, Report& rep) {
  rep.heading("Training: final losses and spike scores");
  Table t{"training", "Final training losses (mean of the last logged steps) and spike scores at the end of each stage",
          {"run", "config", "stage", "steps_logged", "last_step", "final_loss", "rule", "spike_loss", "spike_grad_norm",
           "spike_combined"}, {}, "Spike scores are the window scores of the stage's last metrics.jsonl line (src/train/spike_monitor.h: paper = 7σ two-sided over the previous 1000 steps, window 1000; olmo = mean + 6σ of the previous 128, window 10000)."};
  json curves = json::object();
  std::set<std::string> rules_seen;
  for (const auto& r : s.runs) {
    for (const auto& st : r.stages) {
      if (st.metrics.empty()) continue;
      const std::vector<SpikeFinal> spikes = st.spikes.empty() ? std::vector<SpikeFinal>{{"", kNaN, kNaN, kNaN}} : st.spikes;
      for (const auto& sp : spikes) {
        if (!sp.rule.empty()) rules_seen.insert(sp.rule);
        t.rows.push_back({r.name, config_name(s, r.config_index), st.stage, std::to_string(st.metrics.size()),
                          std::to_string(st.metrics.back().step), fmt(st.final_loss), sp.rule, fmt(sp.loss),
                          fmt(sp.grad_norm), fmt(sp.combined)});
      }
      std::vector<double> steps, loss;
      for (const auto& p : st.metrics) steps.push_back(static_cast<double>(p.step)), loss.push_back(p.loss);
      curves[st.stage].push_back({{"label", r.name + (r.config_index >= 0 ? " (" + config_name(s, r.config_index) + ")" : "")},
                                  {"steps", downsample(steps, 2000)}, {"loss", downsample(loss, 2000)}});
    }
  }
  if (t.rows.empty()) {
    rep.cannot_compute("training losses and spike scores", "no run's lineage led to a readable metrics.jsonl");
    return;
  }
  // Per configuration.
  Table c{"training_by_config", "Per configuration (mean over seeds)", {"config", "label", "pretrain_final_loss",
                                                                         "extend_final_loss"}, {}, ""};
  std::vector<std::string> rules(rules_seen.begin(), rules_seen.end());
  for (const auto& stage : {std::string("pretrain"), std::string("extend")})
    for (const auto& rule : rules) c.header.push_back(stage + "_spike_" + rule + "_combined");
  json spikes = json::object();
  json labels = json::array();
  for (const auto& g : s.configs) {
    auto final_loss = [&](const std::string& stage) {
      return config_mean(s, g, [&](const RunData& r) -> Opt {
        const StageRun* st = stage_of(r, stage);
        return st ? st->final_loss : std::nullopt;
      });
    };
    std::vector<std::string> row{g.id, g.label, fmt(final_loss("pretrain").mean), fmt(final_loss("extend").mean)};
    labels.push_back(g.id);
    for (const auto& stage : {std::string("pretrain"), std::string("extend")})
      for (const auto& rule : rules) {
        const Mean m = config_mean(s, g, [&](const RunData& r) -> Opt {
          const StageRun* st = stage_of(r, stage);
          if (!st) return std::nullopt;
          for (const auto& sp : st->spikes)
            if (sp.rule == rule) return sp.combined;
          return std::nullopt;
        });
        row.push_back(fmt(m.mean));
        spikes[stage][rule].push_back(num(m.mean));
      }
    c.rows.push_back(row);
  }
  rep.table(std::move(t));
  rep.table(std::move(c));
  rep.plot_data["loss_curves"] = curves;
  rep.plot("loss_curves.png", "Training loss curves: pretraining and extension (one line per run)");
  rep.plot_data["spikes"] = {{"configs", labels}, {"scores", spikes}};
  rep.plot("spike_scores.png", "Combined spike scores at the end of each stage, per configuration and rule");
}

// ---------------------------------------------------------------------------------------------

}  // namespace

NoiseSummary seed_noise(const Study& s, const ScoreName& score, Table* pairs_table) {
  NoiseSummary n;
  std::vector<std::vector<size_t>> runs;
  std::vector<std::vector<double>> scores;
  std::vector<double> all;
  for (const auto& g : s.configs) {
    runs.emplace_back();
    scores.emplace_back();
    std::set<std::string> seeds_seen;
    for (size_t i : g.runs)
      if (const Opt v = score_of(s.runs[i], score)) {
        all.push_back(*v);
        // Two evaluations of the same seeds are not a seed pair: only the first one pairs.
        if (!seeds_seen.insert(s.runs[i].seed_text).second) continue;
        runs.back().push_back(i);
        scores.back().push_back(*v);
      }
  }
  if (all.size() >= 2) n.range = *std::max_element(all.begin(), all.end()) - *std::min_element(all.begin(), all.end());
  const auto pairs = seed_pairs(runs, scores);
  n.pairs = pairs.size();
  if (pairs.empty()) return n;
  for (const auto& p : pairs) {
    n.mean += p.swing / static_cast<double>(pairs.size());
    n.max = std::max(n.max, p.swing);
    if (pairs_table)
      pairs_table->rows.push_back({s.configs[p.config].id, s.runs[p.run_a].name, s.runs[p.run_b].name,
                                   s.runs[p.run_a].seed_text, s.runs[p.run_b].seed_text, fmt(p.a), fmt(p.b), fmt(p.swing),
                                   n.range > 0 ? fmt(100 * p.swing / n.range) : ""});
  }
  n.ok = true;
  return n;
}

// Bootstrap cells of configurations a and b for `score` (RULER tasks; all lengths or one).
std::vector<BootCell> boot_cells(const Study& s, const ConfigGroup& a, const ConfigGroup& b, const ScoreName& score,
                                 bool& per_sample, std::string& method) {
  std::vector<size_t> runs_a, runs_b;
  for (size_t i : a.runs)
    if (score_of(s.runs[i], score)) runs_a.push_back(i);
  for (size_t i : b.runs)
    if (score_of(s.runs[i], score)) runs_b.push_back(i);
  std::vector<BootCell> cells;
  if (runs_a.empty() || runs_b.empty() || is_probe_score(score)) return cells;  // probe: no per-task cells
  per_sample = true;
  for (size_t i : runs_a) per_sample &= s.runs[i].has_samples;
  for (size_t i : runs_b) per_sample &= s.runs[i].has_samples;
  const auto& ref = s.runs[runs_a[0]].results;
  for (const auto& ts : ref.task_scores) {
    if (!is_ruler_task(ts.task)) continue;
    if (score.kind == ScoreName::kRulerAt && ts.length != score.length) continue;
    BootCell c;
    c.length = ts.length;
    c.task = ts.task;
    if (per_sample) {
      // Sample indices scored in every run of both configurations.
      std::set<int64_t> common;
      bool first = true;
      std::vector<size_t> all = runs_a;
      all.insert(all.end(), runs_b.begin(), runs_b.end());
      for (size_t i : all) {
        std::set<int64_t> mine;
        for (auto it = s.runs[i].samples.lower_bound({ts.task, ts.length, INT64_MIN});
             it != s.runs[i].samples.end() && std::get<0>(it->first) == ts.task && std::get<1>(it->first) == ts.length; ++it)
          mine.insert(std::get<2>(it->first));
        if (first) common = mine, first = false;
        else {
          std::set<int64_t> x;
          std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(x, x.begin()));
          common = x;
        }
      }
      if (common.empty()) continue;
      auto side = [&](const std::vector<size_t>& runs) {
        std::vector<std::vector<double>> v;
        for (size_t i : runs) {
          v.emplace_back();
          for (int64_t k : common) v.back().push_back(s.runs[i].samples.at({ts.task, ts.length, k}));
        }
        return v;
      };
      c.a = side(runs_a);
      c.b = side(runs_b);
    } else {
      auto side = [&](const std::vector<size_t>& runs, bool& ok) {
        std::vector<std::vector<double>> v;
        for (size_t i : runs) {
          Opt x;
          for (const auto& t2 : s.runs[i].results.task_scores)
            if (t2.task == ts.task && t2.length == ts.length) x = t2.score;
          if (!x) ok = false;
          v.push_back({x ? *x / 100.0 : 0.0});
        }
        return v;
      };
      bool ok = true;
      c.a = side(runs_a, ok);
      c.b = side(runs_b, ok);
      if (!ok) continue;
    }
    cells.push_back(std::move(c));
  }
  method = per_sample ? "seeds x samples (within task x length)" : "seeds x tasks (within length)";
  return cells;
}

namespace {

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

// ---------------------------------------------------------------------------------------------

// The pool's configurations that analyze.regression_configs selects (all when it is empty), as a
// study of their runs only.
Study regression_pool(const Study& s, const AnalyzeConfig& cfg, Report& rep) {
  if (cfg.regression_configs.empty()) return s;
  const auto preds = parse_conjunction(cfg.regression_configs, "analyze.regression_configs");
  Study sub = s;
  sub.configs.clear();
  for (const auto& g : s.configs) {
    std::string why;
    const auto holds = side_holds(preds, s.runs[g.runs[0]].config, why);
    if (holds.value_or(false)) sub.configs.push_back(g);
  }
  rep.text(cat("Fitted over the ", sub.configs.size(), " of ", s.configs.size(), " configurations that match `",
               cfg.regression_configs, "` (analyze.regression_configs)."));
  return sub;
}

void section_regressions(const Study& all, const AnalyzeConfig& cfg, Report& rep) {
  rep.heading("What predicts the long-context score");
  const Study s = regression_pool(all, cfg, rep);
  const ScoreName score = parse_score_name(cfg.long_score, "analyze.long_score");
  const ScoreName short_score = parse_score_name(cfg.short_score, "analyze.short_score");
  const std::vector<Feature> features = cfg.features.empty() ? default_features() : [&] {
    std::vector<Feature> f;
    for (const auto& e : cfg.features) f.push_back(parse_feature(e));
    return f;
  }();
  struct Predictor {
    std::string name, label;
    std::function<Opt(const RunData&)> f;
  };
  const std::vector<Predictor> preds{
      {"pretrain_loss", "final pretraining loss", [](const RunData& r) -> Opt {
         const StageRun* st = stage_of(r, "pretrain");
         return st ? st->final_loss : std::nullopt;
       }},
      {"extend_loss", "final extension loss", [](const RunData& r) -> Opt {
         const StageRun* st = stage_of(r, "extend");
         return st ? st->final_loss : std::nullopt;
       }},
      {"short_score", "short-context score (" + short_score.text + ")", [&](const RunData& r) { return score_of(r, short_score); }},
      {"perplexity", "held-out perplexity", [&](const RunData& r) { return perplexity_of(r, cfg.perplexity_length); }},
  };
  Table data{"predictors", cat("One row per configuration (means over seeds): the score ", score.text,
                               ", the predictors and the features"),
             {"config", "label", "seeds", "score"}, {}, ""};
  for (const auto& p : preds) data.header.push_back(p.name);
  for (const auto& f : features) data.header.push_back("feature_" + f.name);
  data.header.push_back("feature_count");
  std::vector<Opt> y;
  std::vector<std::vector<Opt>> xs(preds.size());
  std::vector<std::vector<int>> fv;  // per config; -1 unknown
  std::set<std::string> feature_problems;
  for (const auto& g : s.configs) {
    const Mean m = config_mean(s, g, [&](const RunData& r) { return score_of(r, score); });
    y.push_back(m.mean);
    std::vector<std::string> row{g.id, g.label, std::to_string(m.n), fmt(m.mean)};
    for (size_t k = 0; k < preds.size(); ++k) {
      const Mean pm = config_mean(s, g, preds[k].f);
      xs[k].push_back(pm.mean);
      row.push_back(fmt(pm.mean));
    }
    fv.emplace_back();
    int count = 0;
    bool known = true;
    for (const auto& f : features) {
      std::string why;
      const auto v = eval_feature(f, s.runs[g.runs[0]].config, why);
      fv.back().push_back(v ? *v : -1);
      if (!v) known = false, feature_problems.insert(cat(g.id, ": ", why));
      count += v ? *v : 0;
      row.push_back(v ? std::to_string(*v) : "");
    }
    row.push_back(known ? std::to_string(count) : "");
    data.rows.push_back(row);
  }
  std::string fnote = "Features: ";
  for (const auto& f : features) fnote += f.name + " = [" + f.text + "]; ";
  data.note = fnote;
  rep.table(std::move(data));
  for (const auto& p : feature_problems) rep.cannot_compute("a feature value", p);

  Table reg{"regressions", cat("Linear regressions of ", score.text, " over configurations (ordinary least squares with "
                               "intercept; leave-one-out R² = 1 − Σ(y − ŷ₋ᵢ)² / Σ(y − ȳ)²)"),
            {"model", "predictors", "n", "r2", "loo_r2", "coefficients", "note"}, {}, ""};
  json scatter = json::array();
  for (size_t k = 0; k < preds.size(); ++k) {
    std::vector<double> x, yy;
    std::vector<std::string> labels;
    for (size_t g = 0; g < s.configs.size(); ++g)
      if (y[g] && xs[k][g]) x.push_back(*xs[k][g]), yy.push_back(*y[g]), labels.push_back(s.configs[g].id);
    const OlsFit f = ols(x, static_cast<int64_t>(x.size()), 1, yy);
    std::string coefs;
    if (f.ok) coefs = cat("b0=", fmt(f.coef[0], 6), " b1=", fmt(f.coef[1], 6));
    reg.rows.push_back({"single: " + preds[k].name, preds[k].name, std::to_string(x.size()), f.ok ? fmt(f.r2) : "",
                        f.loo_ok ? fmt(f.loo_r2) : "", coefs, f.ok ? f.loo_why : f.why});
    if (!f.ok) {
      rep.cannot_compute(cat("R² of ", preds[k].label), f.why);
      continue;
    }
    const std::string file = "scatter_" + preds[k].name + ".png";
    scatter.push_back({{"file", file}, {"x_label", preds[k].label}, {"y_label", score.text}, {"x", x}, {"y", yy},
                       {"labels", labels}, {"r2", f.r2}, {"coef", f.coef}});
    rep.plot(file, cat(score.text, " vs ", preds[k].label, " (R² = ", fmt(f.r2, 3), ", n = ", x.size(), ")"));
  }
  // Feature models over configurations whose features are all known.
  std::vector<size_t> use;
  for (size_t g = 0; g < s.configs.size(); ++g) {
    bool ok = y[g].has_value();
    for (int v : fv[g]) ok &= v >= 0;
    if (ok) use.push_back(g);
  }
  {
    std::vector<double> x, yy;
    for (size_t g : use) {
      int c = 0;
      for (int v : fv[g]) c += v;
      x.push_back(c);
      yy.push_back(*y[g]);
    }
    const OlsFit f = ols(x, static_cast<int64_t>(x.size()), 1, yy);
    reg.rows.push_back({"feature count", cat("count of ", features.size(), " features"), std::to_string(x.size()),
                        f.ok ? fmt(f.r2) : "", f.loo_ok ? fmt(f.loo_r2) : "",
                        f.ok ? cat("b0=", fmt(f.coef[0], 6), " b1=", fmt(f.coef[1], 6)) : "", f.ok ? f.loo_why : f.why});
    if (!f.ok) rep.cannot_compute("the feature-count model", f.why);
    else {
      std::vector<std::string> labels;
      for (size_t g : use) labels.push_back(s.configs[g].id);
      scatter.push_back({{"file", "scatter_feature_count.png"}, {"x_label", "feature count"}, {"y_label", score.text},
                         {"x", x}, {"y", yy}, {"labels", labels}, {"r2", f.r2}, {"coef", f.coef}});
      rep.plot("scatter_feature_count.png", cat(score.text, " vs number of features (R² = ", fmt(f.r2, 3), ")"));
    }
  }
  {
    // Separate features: constant columns carry nothing and make the design singular: dropped.
    std::vector<size_t> cols;
    std::string dropped;
    for (size_t k = 0; k < features.size(); ++k) {
      std::set<int> vals;
      for (size_t g : use) vals.insert(fv[g][k]);
      if (vals.size() > 1) cols.push_back(k);
      else dropped.append(dropped.empty() ? "" : ", ").append(features[k].name);
    }
    std::vector<double> x, yy;
    for (size_t g : use) {
      for (size_t k : cols) x.push_back(fv[g][k]);
      yy.push_back(*y[g]);
    }
    std::string names;
    for (size_t k : cols) names.append(names.empty() ? "" : " ").append(features[k].name);
    const OlsFit f = ols(x, static_cast<int64_t>(use.size()), static_cast<int64_t>(cols.size()), yy);
    std::string coefs;
    if (f.ok) {
      coefs = "b0=" + fmt(f.coef[0], 6);
      for (size_t k = 0; k < cols.size(); ++k) coefs += " " + features[cols[k]].name + "=" + fmt(f.coef[k + 1], 6);
    }
    std::string note = f.ok ? f.loo_why : f.why;
    if (!dropped.empty()) note.append(note.empty() ? "" : "; ").append("constant over the pool, left out: ").append(dropped);
    reg.rows.push_back({"features separately", names.empty() ? "(none vary)" : names, std::to_string(use.size()),
                        f.ok ? fmt(f.r2) : "", f.loo_ok ? fmt(f.loo_r2) : "", coefs, note});
    if (!f.ok) rep.cannot_compute("the regression on the features separately", f.why);
  }
  rep.table(std::move(reg));
  rep.plot_data["scatter"] = scatter;
}

// ---------------------------------------------------------------------------------------------

void section_diagnostics(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& opt, Report& rep) {
  rep.heading("Attention diagnostics");
  if (!cfg.diagnostics) {
    rep.text("Not computed (analyze.diagnostics = false).");
    return;
  }
  rep.text(cat(
      "Probes: niah_single_1 prompts (evaluate's template, noise haystack, needle \"One of the special magic numbers for "
      "KEY is: VALUE.\") at lengths ", cfg.probe_lengths.empty() ? "(each run's shortest evaluation length)" : cfg.probe_lengths,
      " and depths ", cfg.probe_depths, ", ", cfg.probe_samples, " each. Per head: attention entropy in nats (raw, and "
      "divided by ln(visible keys)), sink share (mass on the first ", cfg.sink_tokens, " tokens), Gu et al.'s first-token "
      "mass α (mean over the queries that see token 0) — the sink rate is the share of heads with α > ", cfg.sink_epsilon,
      " — averaged over ", cfg.query_rows == 0 ? std::string("every query position") : cat(cfg.query_rows, " evenly spaced query positions"),
      " per probe; needle mass (attention from the last prompt token to the needle's ", cfg.needle_span,
      " tokens, at prefill); Wu et al.'s retrieval score over greedy generation (", cfg.max_new_tokens,
      " tokens), averaged over ", cfg.retrieval_all_tests ? "all probes" : "correctly answered probes",
      "; score > ", cfg.retrieval_threshold, " = retrieval head. Effective rank per layer: exp of the entropy of the "
      "singular values normalised to sum 1 (σ, not σ²; the seed paper's definition) of ", cfg.rank_tokens,
      " residual-stream rows after the block", cfg.rank_center ? ", mean-centred" : ", not centred", "."));
  Table sum{"diagnostics", "Per run (heads pooled over layers)",
            {"run", "config", "probes", "answered", "entropy", "norm_entropy", "sink_share", "sink_rate", "needle_mass",
             "retrieval_tests", "retrieval_heads", "heads", "retrieval_fraction"}, {}, ""};
  Table heads{"diagnostics_heads", "", {"run", "config", "layer", "head", "entropy", "norm_entropy", "sink_share",
                                        "first_token_mass", "needle_mass", "retrieval_score", "retrieval_head"}, {}, ""};
  Table probes{"diagnostics_probes", "", {"run", "length", "depth", "index", "prompt_tokens", "needle_begin", "needle_end",
                                          "correct", "prediction", "seconds"}, {}, ""};
  Table rank{"effective_rank", "Residual-stream effective rank per layer (block output)", {"run", "config"}, {}, ""};
  json heat = json::array(), rank_series = json::array();
  int64_t max_layers = 0;
  for (const auto& r : s.runs)
    if (r.diag) max_layers = std::max(max_layers, r.diag->n_layers);
  for (int64_t l = 0; l < max_layers; ++l) rank.header.push_back(cat("L", l));
  bool any = false;
  std::string no_retrieval;
  for (const auto& r : s.runs) {
    if (!r.diag) continue;
    any = true;
    const Diagnostics& d = *r.diag;
    HeadAccum all;
    for (const auto& h : d.heads) all.merge(h);
    int64_t answered = 0;
    for (const auto& p : d.probes) answered += p.correct;
    const auto total = static_cast<int64_t>(d.heads.size());
    // Per-head means pooled as means of head means (each head weighs the same).
    auto mean_heads = [&](auto get) {
      double s2 = 0;
      int64_t n = 0;
      for (const auto& h : d.heads)
        if (const double v = get(h); std::isfinite(v)) s2 += v, ++n;
      return n ? s2 / static_cast<double>(n) : kNaN;
    };
    sum.rows.push_back({r.name, config_name(s, r.config_index), std::to_string(d.probes.size()), std::to_string(answered),
                        fmt(mean_heads([](const HeadAccum& h) { return h.entropy(); })),
                        fmt(mean_heads([](const HeadAccum& h) { return h.norm_entropy(); })),
                        fmt(mean_heads([](const HeadAccum& h) { return h.sink_share(); })), fmt(d.sink_rate),
                        fmt(mean_heads([](const HeadAccum& h) { return h.needle_mass(); })),
                        std::to_string(d.retrieval.tests), d.retrieval.tests ? std::to_string(d.retrieval_heads) : "",
                        std::to_string(total),
                        d.retrieval.tests ? fmt(static_cast<double>(d.retrieval_heads) / static_cast<double>(total)) : ""});
    json grid = json::array();
    for (int64_t l = 0; l < d.n_layers; ++l) {
      json rowj = json::array();
      for (int64_t h = 0; h < d.n_heads; ++h) {
        const size_t i = static_cast<size_t>(l * d.n_heads + h);
        const HeadAccum& a = d.heads[i];
        const double rs = d.retrieval_scores.empty() ? kNaN : d.retrieval_scores[i];
        heads.rows.push_back({r.name, config_name(s, r.config_index), std::to_string(l), std::to_string(h), fmt(a.entropy()),
                              fmt(a.norm_entropy()), fmt(a.sink_share()), fmt(a.first_token_mass()), fmt(a.needle_mass()),
                              fmt(rs), std::isfinite(rs) ? (rs > opt.retrieval_threshold ? "1" : "0") : ""});
        rowj.push_back(num(rs));
      }
      grid.push_back(rowj);
    }
    for (const auto& p : d.probes)
      probes.rows.push_back({r.name, std::to_string(p.length), fmt(p.depth), std::to_string(p.index),
                             std::to_string(p.prompt_tokens), std::to_string(p.needle_begin), std::to_string(p.needle_end),
                             p.correct ? "1" : "0", p.prediction, fmt(p.seconds, 3)});
    std::vector<std::string> rrow{r.name, config_name(s, r.config_index)};
    json rv = json::array();
    for (int64_t l = 0; l < max_layers; ++l) {
      const double v = l < static_cast<int64_t>(d.effective_rank.size()) ? d.effective_rank[static_cast<size_t>(l)] : kNaN;
      rrow.push_back(fmt(v));
      rv.push_back(num(v));
    }
    rank.rows.push_back(rrow);
    rank_series.push_back({{"label", r.name}, {"values", rv}});
    const std::string file = "retrieval_heads_" + slug(r.name) + ".png";
    heat.push_back({{"file", file},
                    {"title", cat("Retrieval scores: ", r.name, r.config_index >= 0 ? " (" + config_name(s, r.config_index) + ")" : "")},
                    {"scores", grid}, {"threshold", opt.retrieval_threshold}, {"tests", d.retrieval.tests}});
    for (const auto& n : d.notes)
      if (n.rfind("retrieval-head scores:", 0) == 0) no_retrieval.append(no_retrieval.empty() ? "" : ", ").append(r.name);
      else rep.cannot_compute(cat("diagnostics of ", r.name), n);
  }
  if (!no_retrieval.empty())
    rep.cannot_compute(cat("retrieval-head scores of ", no_retrieval),
                       "none of their probes was answered correctly, and Wu et al.'s score averages over correctly "
                       "answered tests only (analyze.retrieval_all_tests = true averages over every probe)");
  if (!any) {
    rep.cannot_compute("attention diagnostics", "no run's checkpoint could be loaded and probed (see the problems table)");
    return;
  }
  rep.table(std::move(sum));
  // Per configuration (mean over seeds) of the summary numbers.
  Table byc{"diagnostics_by_config", "Per configuration (mean over seeds)",
            {"config", "label", "runs", "entropy", "norm_entropy", "sink_share", "sink_rate", "needle_mass",
             "retrieval_heads", "retrieval_fraction"}, {}, ""};
  for (const auto& g : s.configs) {
    std::vector<std::vector<Opt>> cols(7);
    int64_t n = 0;
    for (size_t i : g.runs) {
      const auto& r = s.runs[i];
      if (!r.diag) continue;
      ++n;
      const Diagnostics& d = *r.diag;
      auto mean_heads = [&](auto get) -> Opt {
        double s2 = 0;
        int64_t k = 0;
        for (const auto& h : d.heads)
          if (const double v = get(h); std::isfinite(v)) s2 += v, ++k;
        return k ? Opt(s2 / static_cast<double>(k)) : std::nullopt;
      };
      cols[0].push_back(mean_heads([](const HeadAccum& h) { return h.entropy(); }));
      cols[1].push_back(mean_heads([](const HeadAccum& h) { return h.norm_entropy(); }));
      cols[2].push_back(mean_heads([](const HeadAccum& h) { return h.sink_share(); }));
      cols[3].push_back(d.sink_rate);
      cols[4].push_back(mean_heads([](const HeadAccum& h) { return h.needle_mass(); }));
      cols[5].push_back(d.retrieval.tests ? Opt(static_cast<double>(d.retrieval_heads)) : std::nullopt);
      cols[6].push_back(d.retrieval.tests ? Opt(static_cast<double>(d.retrieval_heads) / static_cast<double>(d.heads.size()))
                                          : std::nullopt);
    }
    if (!n) continue;
    std::vector<std::string> row{g.id, g.label, std::to_string(n)};
    for (const auto& c : cols) row.push_back(fmt(mean_of(c).mean));
    byc.rows.push_back(row);
  }
  if (!byc.rows.empty()) rep.table(std::move(byc));
  rep.table(std::move(rank));
  rep.plot_data["effective_rank"] = {{"series", rank_series}};
  rep.plot("effective_rank.png", "Residual-stream effective rank per layer");
  rep.plot_data["heatmaps"] = heat;
  for (const auto& h : heat)
    rep.plot(h["file"].get<std::string>(), h["title"].get<std::string>() + " — layer × head; retrieval heads above " +
                                               fmt(opt.retrieval_threshold));
  rep.text(cat("Per-head values: tables/diagnostics_heads.csv (", heads.rows.size(), " rows); probes and the models' "
               "answers: tables/diagnostics_probes.csv."));
  rep.tables.push_back(std::move(heads));
  rep.tables.push_back(std::move(probes));
}

}  // namespace

Report build_report(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& diag_opt) {
  Report rep;
  section_runs(s, rep);
  section_configs(s, rep);
  section_ruler(s, rep);
  section_short(s, rep);
  section_training(s, rep);
  section_noise_and_differences(s, cfg, rep);
  section_probe(s, rep);
  section_findings(s, cfg, rep);
  section_regressions(s, cfg, rep);
  section_diagnostics(s, cfg, diag_opt, rep);
  return rep;
}

}  // namespace headroom::analysis
