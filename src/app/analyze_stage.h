// The analyze app: options, reading the study, attention diagnostics of each run's evaluated
// checkpoint, the report (report.md, tables/*.csv, plots/*.png) in the output directory.
#pragma once

namespace headroom::app {

// The whole app (one process); returns the exit status (errors throw; guarded_main prints them).
int run_analyze_stage(int argc, char** argv);

}  // namespace headroom::app
