// The "Attention diagnostics" section: entropy, sinks, needle mass, retrieval heads, effective rank.
#include "analysis/sections.h"

#include "analysis/report_helpers.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

using nlohmann::json;

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

}  // namespace headroom::analysis
