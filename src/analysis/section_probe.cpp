// The "Retrieval probe: learning curves" section, laid out from probe_summary.h's statistics.
#include "analysis/sections.h"

#include "analysis/probe_summary.h"
#include "analysis/report_helpers.h"
#include "analysis/run_scores.h"

namespace headroom::analysis {

using nlohmann::json;

namespace {

// One run's curve for plots.py.
json probe_curve(const ConfigGroup& g, const RunData& r) {
  json steps = json::array(), tokens = json::array(), acc = json::array();
  for (const auto& p : probe_stage(r)->probe)
    steps.push_back(p.step), tokens.push_back(p.tokens), acc.push_back(p.token_acc);
  return {{"config", g.id},  {"label", g.id + " " + g.label}, {"run", r.name}, {"tokens", tokens}, {"steps", steps},
          {"token_acc", acc}};
}

}  // namespace

void section_probe(const Study& s, Report& rep) {
  bool any = false;
  for (const auto& r : s.runs) any |= probe_stage(r) != nullptr;
  if (!any) return;  // no run was trained with train.probe_every
  rep.heading("Retrieval probe: learning curves");
  rep.text(
      "The retrieval probe (train.probe_every; src/train/probe.h) scores the same held-out synthetic examples, "
      "each filling a whole training window, at intervals during training: token accuracy is the share of "
      "answer tokens (and the EOS after them) that are the model's argmax prediction, exact the share of examples "
      "answered entirely (what greedy decoding would get right); auc is the mean token accuracy over the curve.");
  Table t{"probe_by_config",
          "Retrieval probe per configuration (mean over seeds; min..max over seeds)",
          {"config", "label", "stage", "seeds", "probe_acc", "probe_acc_range", "probe_exact", "probe_auc",
           "probe_auc_range", "probe_loss"},
          {},
          ""};
  json curves = json::array();
  for (const auto& p : probe_summaries(s)) {
    const ConfigGroup& g = s.configs[p.config];
    for (size_t i : p.runs) curves.push_back(probe_curve(g, s.runs[i]));
    t.rows.push_back({g.id, g.label, p.stage, std::to_string(p.runs.size()), fmt(p.acc.mean),
                      range_text(p.acc.lo, p.acc.hi), fmt(p.exact.mean), fmt(p.auc.mean),
                      range_text(p.auc.lo, p.auc.hi), fmt(p.loss.mean)});
  }
  rep.table(std::move(t));
  rep.plot_data["probe_curves"] = curves;
  rep.plot("probe_curves.png",
           "Retrieval probe token accuracy against training tokens: one thin line per run, the "
           "thick line is the configuration's mean over seeds");
}

}  // namespace headroom::analysis
