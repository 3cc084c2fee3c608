#include "analysis/training_means.h"

#include "analysis/run_scores.h"

#include <set>

namespace headroom::analysis {

std::vector<std::string> spike_rules(const Study& s) {
  std::set<std::string> rules;
  for (const auto& r : s.runs)
    for (const auto& st : r.stages)
      if (!st.metrics.empty())
        for (const auto& sp : st.spikes)
          if (!sp.rule.empty()) rules.insert(sp.rule);
  return {rules.begin(), rules.end()};
}

namespace {

StageMeans stage_means(const Study& s, const ConfigGroup& g, const std::string& stage,
                       const std::vector<std::string>& rules) {
  StageMeans m;
  m.stage = stage;
  m.final_loss = config_mean(s, g, [&](const RunData& r) -> Opt {
    const StageRun* st = stage_of(r, stage);
    return st ? st->final_loss : std::nullopt;
  });
  for (const auto& rule : rules)
    m.spikes.push_back(config_mean(s, g, [&](const RunData& r) -> Opt {
      const StageRun* st = stage_of(r, stage);
      if (!st) return std::nullopt;
      for (const auto& sp : st->spikes)
        if (sp.rule == rule) return sp.combined;
      return std::nullopt;
    }));
  return m;
}

}  // namespace

std::vector<TrainingMeans> training_means(const Study& s, const std::vector<std::string>& rules) {
  std::vector<TrainingMeans> out;
  for (size_t c = 0; c < s.configs.size(); ++c)
    out.push_back(
        {c, {stage_means(s, s.configs[c], "pretrain", rules), stage_means(s, s.configs[c], "extend", rules)}});
  return out;
}

}  // namespace headroom::analysis
