// The plotting script analyze runs (with analyze.python, Debian's /usr/bin/python3 and
// python3-matplotlib): src/analysis/plots.py, compiled in as text (CMake generates
// analysis/plots_py.h from it) so the analyze binary needs no source tree. analyze writes it to
// OUT/plots/plots.py next to OUT/plots/plot_data.json and runs
//   python3 OUT/plots/plots.py OUT
// which can be rerun by hand to redraw the figures.
#include "analysis/plots_script.h"

#include "analysis/plots_py.h"

namespace headroom::analysis {

const char* plots_script() { return kPlotsPy; }

}  // namespace headroom::analysis
