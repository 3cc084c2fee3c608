// A run's scores by name (RULER overall or at a length, multiple choice, the training probe), its
// perplexity, and the lineage stages they come from.
#pragma once

#include "analysis/study.h"

#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

// The last lineage stage with probe points, or null.
const StageRun* probe_stage(const RunData& r);
// Mean token accuracy over a probe curve: trapezoids over steps / steps covered (one point: itself).
std::optional<double> probe_auc(const std::vector<ProbePoint>& p);

// A run's score by name; empty when it has none.
std::optional<double> score_of(const RunData& r, const ScoreName& s);
// exp(mean loss) at `length` (0 = the shortest) of loss_by_position.
std::optional<double> perplexity_of(const RunData& r, int64_t length);
const StageRun* stage_of(const RunData& r, const std::string& stage);  // the last stage of that name
bool is_ruler_task(const std::string& t);                              // one of the suite's RULER tasks (eval/tasks.h)

}  // namespace headroom::analysis
