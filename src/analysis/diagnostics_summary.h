// The attention diagnostics summarised per run (heads pooled over layers) and per configuration
// (means over seeds of the run summaries).
#pragma once

#include "analysis/diagnostics.h"
#include "analysis/means.h"
#include "analysis/study.h"

#include <cstdint>
#include <vector>

namespace headroom::analysis {

struct DiagSummary {
  int64_t probes = 0, answered = 0;
  // Means of the head means (each head weighs the same); NaN when no head has the value.
  double entropy = kNaN, norm_entropy = kNaN, sink_share = kNaN, needle_mass = kNaN;
  double sink_rate = kNaN;
  int64_t tests = 0;  // retrieval tests counted
  int64_t retrieval_heads = 0, heads = 0;
  double retrieval_fraction = kNaN;  // retrieval_heads / heads; NaN without a counted test
};
DiagSummary summarize_diagnostics(const Diagnostics& d);

struct ConfigDiag {
  size_t config = 0;  // into Study::configs
  int64_t runs = 0;   // with diagnostics
  Mean entropy, norm_entropy, sink_share, sink_rate, needle_mass, retrieval_heads, retrieval_fraction;
};
// Configurations without a diagnosed run are left out.
std::vector<ConfigDiag> config_diagnostics(const Study& s);

}  // namespace headroom::analysis
