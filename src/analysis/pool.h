// The study-level analysis: per-configuration tables, seed noise, configuration differences with
// bootstrap intervals, regressions, the attention-diagnostics summaries, and the plot data, as a
// Report (report.h). Everything that cannot be computed is recorded in Report::cannot with why.
#pragma once

#include "analysis/analyze_config.h"
#include "analysis/report.h"
#include "analysis/study.h"

namespace headroom::analysis {

Report build_report(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& diag_opt);

// Seed swing of `score`: |a − b| over every pair of seeds of one configuration (pairs_table, when
// given, gets one row per pair); range = max − min over every pool run with the score.
struct NoiseSummary {
  bool ok = false;  // at least one seed pair
  double mean = 0, max = 0, range = 0;
  size_t pairs = 0;
};
NoiseSummary seed_noise(const Study& s, const ScoreName& score, Table* pairs_table);

// findings.cpp: the retrieval probe's learning curves, and the study's findings against seed noise.
void section_probe(const Study& s, Report& rep);
void section_findings(const Study& s, const AnalyzeConfig& cfg, Report& rep);

}  // namespace headroom::analysis
