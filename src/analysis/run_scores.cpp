#include "analysis/run_scores.h"

#include "eval/tasks.h"

#include <cmath>

namespace headroom::analysis {

const StageRun* probe_stage(const RunData& r) {
  const StageRun* out = nullptr;
  for (const auto& s : r.stages)
    if (!s.probe.empty()) out = &s;
  return out;
}

std::optional<double> probe_auc(const std::vector<ProbePoint>& p) {
  if (p.empty()) return std::nullopt;
  if (p.size() == 1) return p[0].token_acc;
  double area = 0;
  for (size_t i = 1; i < p.size(); ++i)
    area += 0.5 * (p[i].token_acc + p[i - 1].token_acc) * static_cast<double>(p[i].step - p[i - 1].step);
  const auto span = static_cast<double>(p.back().step - p.front().step);
  return span > 0 ? std::optional<double>(area / span) : std::optional<double>(p.back().token_acc);
}

std::optional<double> score_of(const RunData& r, const ScoreName& s) {
  if (is_probe_score(s)) {
    const StageRun* st = probe_stage(r);
    if (!st) return std::nullopt;
    if (s.kind == ScoreName::kProbeAuc) return probe_auc(st->probe);
    return s.kind == ScoreName::kProbeAcc ? st->probe.back().token_acc : st->probe.back().exact;
  }
  if (!r.has_results) return std::nullopt;
  switch (s.kind) {
    case ScoreName::kRuler:
      return r.results.ruler_average;
    case ScoreName::kRulerAt:
      for (const auto& a : r.results.ruler_by_length)
        if (a.length == s.length) return a.score;
      return std::nullopt;
    case ScoreName::kHelmetRecall:
      return r.results.helmet_recall;
    case ScoreName::kMcAcc:
      return r.results.mc ? std::optional<double>(r.results.mc->acc) : std::nullopt;
    case ScoreName::kMcAccNorm:
      return r.results.mc ? std::optional<double>(r.results.mc->acc_norm) : std::nullopt;
    default:
      break;
  }
  return std::nullopt;
}

std::optional<double> perplexity_of(const RunData& r, int64_t length) {
  if (!r.has_results || r.results.loss.empty()) return std::nullopt;
  const eval::LossCurve* best = nullptr;
  for (const auto& c : r.results.loss)
    if (length > 0 ? c.length == length : (!best || c.length < best->length)) best = &c;
  if (!best) return std::nullopt;
  return std::exp(best->mean_loss);
}

const StageRun* stage_of(const RunData& r, const std::string& stage) {
  const StageRun* out = nullptr;
  for (const auto& s : r.stages)
    if (s.stage == stage) out = &s;
  return out;
}

bool is_ruler_task(const std::string& t) {
  try {
    return eval::find_task(t).ruler;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace headroom::analysis
