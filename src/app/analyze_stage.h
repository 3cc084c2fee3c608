// The analyze app: options, reading the study, attention diagnostics of each run's evaluated
// checkpoint, the report (report.md, tables/*.csv, plots/*.png) in the output directory.
#pragma once

#include "analysis/diagnostics.h"
#include "analysis/study.h"

#include <functional>
#include <string>

namespace headroom::analysis {

int run_analyze_stage(int argc, char** argv);

// Diagnostics of one run's checkpoint (its tokenizer, prompt template and model); fills r.diag, or
// adds the reason to r.problems.
void diagnose_run(RunData& r, const AnalyzeConfig& cfg, const DiagOptions& opt, const eval::Resources& res,
                  const std::function<void(const std::string&)>& log);

DiagOptions diag_options(const AnalyzeConfig& cfg);

}  // namespace headroom::analysis
