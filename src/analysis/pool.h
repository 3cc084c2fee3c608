// The study-level analysis: per-configuration tables, seed noise, configuration differences with
// bootstrap intervals, regressions, the attention-diagnostics summaries, and the plot data, as a
// Report (report.h). Everything that cannot be computed is recorded in Report::cannot with why.
#pragma once

#include "analysis/analyze_config.h"
#include "analysis/report.h"
#include "analysis/study.h"

namespace headroom::analysis {

Report build_report(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& diag_opt);

}  // namespace headroom::analysis
