// The "RULER" section and the short-context tasks (multiple choice, loss by position), laid out
// from config_scores.h's statistics.
#include "analysis/sections.h"

#include "analysis/config_scores.h"
#include "analysis/report_helpers.h"
#include "analysis/run_scores.h"
#include "util/error.h"

namespace headroom::analysis {

using nlohmann::json;

namespace {

// HELMET's recall category, as a column beside RULER's when any run was evaluated on it.
bool any_helmet_recall(const Study& s) {
  for (const auto& r : s.runs)
    if (r.has_results && r.results.helmet_recall) return true;
  return false;
}

void ruler_by_length(const Study& s, const std::vector<int64_t>& lengths, Report& rep) {
  Table t{"ruler_by_length",
          "RULER average by context length (mean over seeds; overall = mean over lengths; helmet_recall, when "
          "evaluated: HELMET's recall category, mean over seeds)",
          {"config", "label", "seeds"},
          {},
          ""};
  for (auto L : lengths) t.header.push_back(std::to_string(L));
  t.header.insert(t.header.end(), {"overall", "overall_min", "overall_max"});
  const bool helmet = any_helmet_recall(s);
  if (helmet) t.header.push_back("helmet_recall");
  json series = json::array();
  for (const auto& m : ruler_means(s, lengths)) {
    const ConfigGroup& g = s.configs[m.config];
    std::vector<std::string> row{g.id, g.label, std::to_string(g.runs.size())};
    json ys = json::array();
    for (const auto& l : m.by_length) row.push_back(fmt(l.mean)), ys.push_back(num(l.mean));
    row.insert(row.end(), {fmt(m.overall.mean), fmt(m.overall.lo), fmt(m.overall.hi)});
    if (helmet) row.push_back(fmt(config_mean(s, g, [](const RunData& r) { return r.results.helmet_recall; }).mean));
    t.rows.push_back(row);
    series.push_back({{"label", g.id + " " + g.label}, {"scores", ys}});
  }
  rep.table(std::move(t));
  rep.plot_data["ruler_by_length"] = {{"lengths", lengths}, {"series", series}};
  rep.plot("ruler_by_length.png", "RULER average vs context length, per configuration (mean over seeds)");
}

Table ruler_by_length_runs(const Study& s, const std::vector<int64_t>& lengths) {
  Table t{"ruler_by_length_runs", "RULER average by context length, per run", {"run", "config"}, {}, ""};
  for (auto L : lengths) t.header.push_back(std::to_string(L));
  t.header.push_back("overall");
  const bool helmet = any_helmet_recall(s);
  if (helmet) t.header.push_back("helmet_recall");
  for (const auto& r : s.runs) {
    if (!r.has_results) continue;
    std::vector<std::string> row{r.name, config_name(s, r.config_index)};
    for (auto L : lengths) row.push_back(fmt(score_of(r, {ScoreName::kRulerAt, L, ""})));
    row.push_back(fmt(r.results.ruler_average));
    if (helmet) row.push_back(fmt(r.results.helmet_recall));
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace

void section_ruler(const Study& s, Report& rep) {
  rep.heading("RULER");
  const RunData* ref = first_pool_run(s);
  if (!ref) {
    rep.cannot_compute("RULER tables", "no run in the pool");
    return;
  }
  ruler_by_length(s, ref->results.lengths, rep);
  rep.table(ruler_by_length_runs(s, ref->results.lengths));
  Table tt{"ruler_tasks", "", {"config", "task", "length", "score", "seeds"}, {}, ""};
  for (const auto& m : ruler_task_means(s))
    tt.rows.push_back(
        {s.configs[m.config].id, m.task, std::to_string(m.length), fmt(m.score.mean), std::to_string(m.score.n)});
  rep.text(cat("Per-task scores (mean over seeds) are in tables/ruler_tasks.csv (", tt.rows.size(), " rows)."));
  rep.tables.push_back(std::move(tt));
}

void section_short(const Study& s, Report& rep) {
  rep.heading("Short context: multiple choice and loss by position");
  Table mc{
      "multiple_choice", "Multiple choice (mean over seeds)", {"config", "label", "items", "acc", "acc_norm"}, {}, ""};
  bool any_mc = false;
  for (const auto& m : mc_means(s)) {
    const ConfigGroup& g = s.configs[m.config];
    any_mc |= m.acc.n > 0;
    mc.rows.push_back({g.id, g.label, m.items ? std::to_string(*m.items) : "", fmt(m.acc.mean), fmt(m.acc_norm.mean)});
  }
  if (any_mc)
    rep.table(std::move(mc));
  else
    rep.cannot_compute("multiple choice table", "no run in the pool has multiple-choice results (evaluate task mc)");

  Table lp{"loss_by_position",
           "Held-out loss by token position (nats, mean over seeds)",
           {"config", "length", "start", "end", "mean_loss", "seeds"},
           {},
           ""};
  Table lo{"loss_overall",
           "Held-out loss and perplexity per evaluated length (mean over seeds)",
           {"config", "label", "length", "mean_loss", "perplexity"},
           {},
           ""};
  for (const auto& m : loss_means(s)) {
    const ConfigGroup& g = s.configs[m.config];
    lo.rows.push_back({g.id, g.label, std::to_string(m.length), fmt(m.loss.mean), fmt(m.perplexity)});
    for (const auto& b : m.buckets)
      lp.rows.push_back({g.id, std::to_string(m.length), std::to_string(b.start), std::to_string(b.end),
                         fmt(b.loss.mean), std::to_string(b.loss.n)});
  }
  if (lo.rows.empty()) {
    rep.cannot_compute("loss by position",
                       "no run in the pool has loss_by_position results (evaluate task loss_by_position)");
  } else {
    rep.table(std::move(lo));
    rep.table(std::move(lp));
  }
}

}  // namespace headroom::analysis
