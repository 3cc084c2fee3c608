// The retrieval probe (train.probe_every) per configuration: its end-of-training scores over the
// seeds that ran one.
#pragma once

#include "analysis/stats.h"
#include "analysis/study.h"

#include <string>
#include <vector>

namespace headroom::analysis {

struct ProbeSummary {
  size_t config = 0;         // into Study::configs
  std::string stage;         // the probed stage (of the configuration's last probed run)
  std::vector<size_t> runs;  // the runs with probe points
  // Over those runs: the last probe point's token accuracy, exact share and loss, and the curve's
  // mean token accuracy (run_scores.h probe_auc).
  Spread acc, exact, auc, loss;
};

// Configurations without a probed run are left out.
std::vector<ProbeSummary> probe_summaries(const Study& s);

}  // namespace headroom::analysis
