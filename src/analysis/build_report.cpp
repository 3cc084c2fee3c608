#include "analysis/build_report.h"

#include "analysis/sections.h"

namespace headroom::analysis {

Report build_report(const Study& s, const AnalyzeConfig& cfg, const DiagOptions& diag_opt) {
  Report rep;
  section_runs(s, rep);
  section_configs(s, rep);
  section_ruler(s, rep);
  section_short(s, rep);
  section_training(s, rep);
  section_noise_and_differences(s, cfg, rep);
  section_probe(s, rep);
  section_findings(s, cfg, rep);
  section_regressions(s, cfg, rep);
  section_diagnostics(s, cfg, diag_opt, rep);
  return rep;
}

}  // namespace headroom::analysis
