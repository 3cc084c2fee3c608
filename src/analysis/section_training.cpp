// The "Training" section: final losses and spike scores per run, and per configuration from
// training_means.h's statistics.
#include "analysis/sections.h"

#include "analysis/report_helpers.h"
#include "analysis/training_means.h"
#include "util/error.h"

namespace headroom::analysis {

using nlohmann::json;

namespace {

// One row per run, stage and spike rule (a stage without spike scores: one row without them).
Table runs_table(const Study& s) {
  Table t{
      "training",
      "Final training losses (mean of the last logged steps) and spike scores at the end of each stage",
      {"run", "config", "stage", "steps_logged", "last_step", "final_loss", "rule", "spike_loss", "spike_grad_norm",
       "spike_combined"},
      {},
      "Spike scores are the window scores of the stage's last metrics.jsonl line (src/train/spike_monitor.h: paper = "
      "7σ two-sided over the previous 1000 steps, window 1000; olmo = mean + 6σ of the previous 128, window 10000)."};
  for (const auto& r : s.runs)
    for (const auto& st : r.stages) {
      if (st.metrics.empty()) continue;
      const std::vector<SpikeFinal> spikes =
          st.spikes.empty() ? std::vector<SpikeFinal>{{"", kNaN, kNaN, kNaN}} : st.spikes;
      for (const auto& sp : spikes)
        t.rows.push_back({r.name, config_name(s, r.config_index), st.stage, std::to_string(st.metrics.size()),
                          std::to_string(st.metrics.back().step), fmt(st.final_loss), sp.rule, fmt(sp.loss),
                          fmt(sp.grad_norm), fmt(sp.combined)});
    }
  return t;
}

// Loss curves per stage, one per run, at most 2000 points each.
json loss_curves(const Study& s) {
  json curves = json::object();
  for (const auto& r : s.runs)
    for (const auto& st : r.stages) {
      if (st.metrics.empty()) continue;
      std::vector<double> steps, loss;
      for (const auto& p : st.metrics) steps.push_back(static_cast<double>(p.step)), loss.push_back(p.loss);
      curves[st.stage].push_back(
          {{"label", r.name + (r.config_index >= 0 ? " (" + config_name(s, r.config_index) + ")" : "")},
           {"steps", downsample(steps, 2000)},
           {"loss", downsample(loss, 2000)}});
    }
  return curves;
}

}  // namespace

void section_training(const Study& s, Report& rep) {
  rep.heading("Training: final losses and spike scores");
  Table t = runs_table(s);
  if (t.rows.empty()) {
    rep.cannot_compute("training losses and spike scores", "no run's lineage led to a readable metrics.jsonl");
    return;
  }
  Table c{"training_by_config",
          "Per configuration (mean over seeds)",
          {"config", "label", "pretrain_final_loss", "extend_final_loss"},
          {},
          ""};
  const std::vector<std::string> rules = spike_rules(s);
  for (const auto& stage : {std::string("pretrain"), std::string("extend")})
    for (const auto& rule : rules) c.header.push_back(stage + "_spike_" + rule + "_combined");
  json spikes = json::object();
  json labels = json::array();
  for (const auto& m : training_means(s, rules)) {
    const ConfigGroup& g = s.configs[m.config];
    std::vector<std::string> row{g.id, g.label};
    for (const auto& st : m.stages) row.push_back(fmt(st.final_loss.mean));
    labels.push_back(g.id);
    for (const auto& st : m.stages)
      for (size_t k = 0; k < rules.size(); ++k) {
        row.push_back(fmt(st.spikes[k].mean));
        spikes[st.stage][rules[k]].push_back(num(st.spikes[k].mean));
      }
    c.rows.push_back(row);
  }
  rep.table(std::move(t));
  rep.table(std::move(c));
  rep.plot_data["loss_curves"] = loss_curves(s);
  rep.plot("loss_curves.png", "Training loss curves: pretraining and extension (one line per run)");
  rep.plot_data["spikes"] = {{"configs", labels}, {"scores", spikes}};
  rep.plot("spike_scores.png", "Combined spike scores at the end of each stage, per configuration and rule");
}

}  // namespace headroom::analysis
