// The study-level analysis as a Report (report.h): the sections of sections.h in order, from the
// runs and configurations through RULER, training, seed noise and differences, the probe, the
// findings, the regressions and the attention diagnostics.
#pragma once

#include "analysis/analyze_config.h"
#include "analysis/diagnostics.h"
#include "analysis/report.h"
#include "analysis/study.h"

namespace headroom::analysis {

Report build_report(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& diag_opt);

}  // namespace headroom::analysis
