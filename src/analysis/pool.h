// The study-level analysis: per-configuration tables, seed noise, configuration differences with
// bootstrap intervals, regressions, the attention-diagnostics summaries, and the plot data, as a
// Report (report.h). Everything that cannot be computed is recorded in Report::cannot with why.
#pragma once

#include "analysis/analyze_config.h"
#include "analysis/report.h"
#include "analysis/stats.h"
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

// The paired-bootstrap cells of configurations a and b for a RULER score (empty for probe scores):
// per sample when every run has samples.jsonl (per_sample), else per task; `method` names which.
std::vector<BootCell> boot_cells(const Study& s, const ConfigGroup& a, const ConfigGroup& b, const ScoreName& score,
                                 bool& per_sample, std::string& method);

// findings.cpp: the retrieval probe's learning curves, and the study's findings against seed noise.
void section_probe(const Study& s, Report& rep);
void section_findings(const Study& s, const AnalyzeConfig& cfg, Report& rep);

}  // namespace headroom::analysis
