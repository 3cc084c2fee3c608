// The report's sections, in report order (build_report.cpp calls them). Each appends its heading,
// prose, tables and plot data to the Report, and records in Report::cannot what it cannot compute
// and why.
#pragma once

#include "analysis/analyze_config.h"
#include "analysis/diagnostics.h"
#include "analysis/report.h"
#include "analysis/study.h"

namespace headroom::analysis {

void section_runs(const Study& s, Report& rep);      // section_runs.cpp: the runs and problems found
void section_configs(const Study& s, Report& rep);   // section_runs.cpp: configurations and their keys
void section_ruler(const Study& s, Report& rep);     // section_ruler.cpp: RULER by task and length
void section_short(const Study& s, Report& rep);     // section_ruler.cpp: JSON KV, loss by position, MC
void section_training(const Study& s, Report& rep);  // section_training.cpp: losses and spike scores
void section_noise_and_differences(const Study& s, const AnalyzeConfig& cfg, Report& rep);  // section_noise.cpp
void section_probe(const Study& s, Report& rep);  // section_probe.cpp: the retrieval probe's curves
void section_findings(const Study& s, const AnalyzeConfig& cfg, Report& rep);       // section_findings.cpp
void section_regressions(const Study& all, const AnalyzeConfig& cfg, Report& rep);  // section_regressions.cpp
void section_diagnostics(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& opt,
                         Report& rep);  // section_diagnostics.cpp

}  // namespace headroom::analysis
