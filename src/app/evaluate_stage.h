// The evaluate app around run_evaluation: options and configuration (the checkpoint's stored
// configuration is the base that --config files and --section.key flags override), the checks
// that refuse bad input before any work, the run directory and the output files.
#pragma once

namespace headroom::app {

// The whole app on every rank; returns the exit status (errors throw; mpi_main turns them into
// status 2 on every rank).
int run_evaluate_stage(int argc, char** argv);

}  // namespace headroom::app
