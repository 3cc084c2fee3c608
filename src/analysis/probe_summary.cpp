#include "analysis/probe_summary.h"

#include "analysis/run_scores.h"

namespace headroom::analysis {

std::vector<ProbeSummary> probe_summaries(const Study& s) {
  std::vector<ProbeSummary> out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    ProbeSummary p;
    p.config = c;
    std::vector<double> acc, exact, auc, loss;
    for (size_t i : s.configs[c].runs) {
      const StageRun* st = probe_stage(s.runs[i]);
      if (!st) continue;
      p.stage = st->stage;
      p.runs.push_back(i);
      acc.push_back(st->probe.back().token_acc);
      exact.push_back(st->probe.back().exact);
      loss.push_back(st->probe.back().loss);
      auc.push_back(*probe_auc(st->probe));
    }
    if (p.runs.empty()) continue;
    p.acc = spread_of(acc), p.exact = spread_of(exact), p.auc = spread_of(auc), p.loss = spread_of(loss);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace headroom::analysis
