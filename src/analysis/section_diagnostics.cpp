// The "Attention diagnostics" section: entropy, sinks, needle mass, retrieval heads, effective
// rank, laid out from the diagnostics (diagnostics.h) and their summaries (diagnostics_summary.h).
#include "analysis/sections.h"

#include "analysis/diagnostics_summary.h"
#include "analysis/report_helpers.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

using nlohmann::json;

namespace {

std::string method_text(const AnalyzeConfig& cfg) {
  return cat(
      "Probes: niah_single_1 prompts (evaluate's template, noise haystack, needle \"One of the special magic numbers "
      "for "
      "KEY is: VALUE.\") at lengths ",
      cfg.probe_lengths.empty() ? "(each run's shortest evaluation length)" : cfg.probe_lengths, " and depths ",
      cfg.probe_depths, ", ", cfg.probe_samples,
      " each. Per head: attention entropy in nats (raw, and "
      "divided by ln(visible keys)), sink share (mass on the first ",
      cfg.sink_tokens,
      " tokens), Gu et al.'s first-token "
      "mass α (mean over the queries that see token 0) — the sink rate is the share of heads with α > ",
      cfg.sink_epsilon, " — averaged over ",
      cfg.query_rows == 0 ? std::string("every query position") : cat(cfg.query_rows, " evenly spaced query positions"),
      " per probe; needle mass (attention from the last prompt token to the needle's ", cfg.needle_span,
      " tokens, at prefill); Wu et al.'s retrieval score over greedy generation (", cfg.max_new_tokens,
      " tokens), averaged over ", cfg.retrieval_all_tests ? "all probes" : "correctly answered probes", "; score > ",
      cfg.retrieval_threshold,
      " = retrieval head. Effective rank per layer: exp of the entropy of the "
      "singular values normalised to sum 1 (σ, not σ²; the seed paper's definition) of ",
      cfg.rank_tokens, " residual-stream rows after the block", cfg.rank_center ? ", mean-centred" : ", not centred",
      ".");
}

// The tables and plot data filled run by run.
struct DiagLayout {
  Table sum{"diagnostics",
            "Per run (heads pooled over layers)",
            {"run", "config", "probes", "answered", "entropy", "norm_entropy", "sink_share", "sink_rate", "needle_mass",
             "retrieval_tests", "retrieval_heads", "heads", "retrieval_fraction"},
            {},
            ""};
  Table heads{"diagnostics_heads",
              "",
              {"run", "config", "layer", "head", "entropy", "norm_entropy", "sink_share", "first_token_mass",
               "needle_mass", "retrieval_score", "retrieval_head"},
              {},
              ""};
  Table probes{"diagnostics_probes",
               "",
               {"run", "length", "depth", "index", "prompt_tokens", "needle_begin", "needle_end", "correct",
                "prediction", "seconds"},
               {},
               ""};
  Table rank{"effective_rank", "Residual-stream effective rank per layer (block output)", {"run", "config"}, {}, ""};
  json heat = json::array(), rank_series = json::array();
  int64_t max_layers = 0;
};

std::vector<std::string> summary_row(const Study& s, const RunData& r, const DiagSummary& d) {
  return {r.name,
          config_name(s, r.config_index),
          std::to_string(d.probes),
          std::to_string(d.answered),
          fmt(d.entropy),
          fmt(d.norm_entropy),
          fmt(d.sink_share),
          fmt(d.sink_rate),
          fmt(d.needle_mass),
          std::to_string(d.tests),
          d.tests ? std::to_string(d.retrieval_heads) : "",
          std::to_string(d.heads),
          fmt(d.retrieval_fraction)};
}

// Per-head rows, and the layer × head grid of retrieval scores for the heat map.
json head_rows(const Study& s, const RunData& r, const DiagOptions& opt, Table& heads) {
  const Diagnostics& d = *r.diag;
  json grid = json::array();
  for (int64_t l = 0; l < d.n_layers; ++l) {
    json rowj = json::array();
    for (int64_t h = 0; h < d.n_heads; ++h) {
      const size_t i = static_cast<size_t>(l * d.n_heads + h);
      const HeadAccum& a = d.heads[i];
      const double rs = d.retrieval_scores.empty() ? kNaN : d.retrieval_scores[i];
      heads.rows.push_back({r.name, config_name(s, r.config_index), std::to_string(l), std::to_string(h),
                            fmt(a.entropy()), fmt(a.norm_entropy()), fmt(a.sink_share()), fmt(a.first_token_mass()),
                            fmt(a.needle_mass()), fmt(rs),
                            std::isfinite(rs) ? (rs > opt.retrieval_threshold ? "1" : "0") : ""});
      rowj.push_back(num(rs));
    }
    grid.push_back(rowj);
  }
  return grid;
}

void rank_row(const Study& s, const RunData& r, DiagLayout& out) {
  const Diagnostics& d = *r.diag;
  std::vector<std::string> row{r.name, config_name(s, r.config_index)};
  json values = json::array();
  for (int64_t l = 0; l < out.max_layers; ++l) {
    const double v =
        l < static_cast<int64_t>(d.effective_rank.size()) ? d.effective_rank[static_cast<size_t>(l)] : kNaN;
    row.push_back(fmt(v));
    values.push_back(num(v));
  }
  out.rank.rows.push_back(row);
  out.rank_series.push_back({{"label", r.name}, {"values", values}});
}

void run_rows(const Study& s, const RunData& r, const DiagOptions& opt, DiagLayout& out) {
  const Diagnostics& d = *r.diag;
  out.sum.rows.push_back(summary_row(s, r, summarize_diagnostics(d)));
  const json grid = head_rows(s, r, opt, out.heads);
  for (const auto& p : d.probes)
    out.probes.rows.push_back({r.name, std::to_string(p.length), fmt(p.depth), std::to_string(p.index),
                               std::to_string(p.prompt_tokens), std::to_string(p.needle_begin),
                               std::to_string(p.needle_end), p.correct ? "1" : "0", p.prediction, fmt(p.seconds, 3)});
  rank_row(s, r, out);
  out.heat.push_back({{"file", "retrieval_heads_" + slug(r.name) + ".png"},
                      {"title", cat("Retrieval scores: ", r.name,
                                    r.config_index >= 0 ? " (" + config_name(s, r.config_index) + ")" : "")},
                      {"scores", grid},
                      {"threshold", opt.retrieval_threshold},
                      {"tests", d.retrieval.tests}});
}

Table by_config_table(const Study& s) {
  Table t{"diagnostics_by_config",
          "Per configuration (mean over seeds)",
          {"config", "label", "runs", "entropy", "norm_entropy", "sink_share", "sink_rate", "needle_mass",
           "retrieval_heads", "retrieval_fraction"},
          {},
          ""};
  for (const auto& c : config_diagnostics(s)) {
    const ConfigGroup& g = s.configs[c.config];
    t.rows.push_back({g.id, g.label, std::to_string(c.runs), fmt(c.entropy.mean), fmt(c.norm_entropy.mean),
                      fmt(c.sink_share.mean), fmt(c.sink_rate.mean), fmt(c.needle_mass.mean),
                      fmt(c.retrieval_heads.mean), fmt(c.retrieval_fraction.mean)});
  }
  return t;
}

}  // namespace

void section_diagnostics(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& opt, Report& rep) {
  rep.heading("Attention diagnostics");
  if (!cfg.diagnostics) {
    rep.text("Not computed (analyze.diagnostics = false).");
    return;
  }
  rep.text(method_text(cfg));
  DiagLayout out;
  for (const auto& r : s.runs)
    if (r.diag) out.max_layers = std::max(out.max_layers, r.diag->n_layers);
  for (int64_t l = 0; l < out.max_layers; ++l) out.rank.header.push_back(cat("L", l));
  bool any = false;
  std::string no_retrieval;
  for (const auto& r : s.runs) {
    if (!r.diag) continue;
    any = true;
    run_rows(s, r, opt, out);
    for (const auto& n : r.diag->notes)
      if (n.rfind("retrieval-head scores:", 0) == 0)
        no_retrieval.append(no_retrieval.empty() ? "" : ", ").append(r.name);
      else
        rep.cannot_compute(cat("diagnostics of ", r.name), n);
  }
  if (!no_retrieval.empty())
    rep.cannot_compute(cat("retrieval-head scores of ", no_retrieval),
                       "none of their probes was answered correctly, and Wu et al.'s score averages over correctly "
                       "answered tests only (analyze.retrieval_all_tests = true averages over every probe)");
  if (!any) {
    rep.cannot_compute("attention diagnostics",
                       "no run's checkpoint could be loaded and probed (see the problems table)");
    return;
  }
  rep.table(std::move(out.sum));
  Table byc = by_config_table(s);
  if (!byc.rows.empty()) rep.table(std::move(byc));
  rep.table(std::move(out.rank));
  rep.plot_data["effective_rank"] = {{"series", out.rank_series}};
  rep.plot("effective_rank.png", "Residual-stream effective rank per layer");
  rep.plot_data["heatmaps"] = out.heat;
  for (const auto& h : out.heat)
    rep.plot(h["file"].get<std::string>(),
             h["title"].get<std::string>() + " — layer × head; retrieval heads above " + fmt(opt.retrieval_threshold));
  rep.text(cat("Per-head values: tables/diagnostics_heads.csv (", out.heads.rows.size(),
               " rows); probes and the models' "
               "answers: tables/diagnostics_probes.csv."));
  rep.tables.push_back(std::move(out.heads));
  rep.tables.push_back(std::move(out.probes));
}

}  // namespace headroom::analysis
