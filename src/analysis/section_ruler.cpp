// The "RULER" section and the short-context tasks (JSON KV, loss by position, multiple choice).
#include "analysis/sections.h"

#include "analysis/report_helpers.h"
#include "analysis/run_scores.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

using nlohmann::json;

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

}  // namespace headroom::analysis
