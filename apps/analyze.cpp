// analyze: evaluate run directories → study report (tables, regressions, seed noise, attention
// diagnostics, plots). One process; see `analyze --help`.
#include "app/analyze_stage.h"
#include "app/cli.h"

int main(int argc, char** argv) {
  return headroom::app::guarded_main("analyze", [&] { return headroom::app::run_analyze_stage(argc, argv); });
}
