#include "analysis/diagnostics_summary.h"

#include <cmath>

namespace headroom::analysis {
namespace {

template <class Get>
double mean_over_heads(const std::vector<HeadAccum>& heads, Get get) {
  double sum = 0;
  int64_t n = 0;
  for (const auto& h : heads)
    if (const double v = get(h); std::isfinite(v)) sum += v, ++n;
  return n ? sum / static_cast<double>(n) : kNaN;
}

}  // namespace

DiagSummary summarize_diagnostics(const Diagnostics& d) {
  DiagSummary out;
  out.probes = static_cast<int64_t>(d.probes.size());
  for (const auto& p : d.probes) out.answered += p.correct;
  out.entropy = mean_over_heads(d.heads, [](const HeadAccum& h) { return h.entropy(); });
  out.norm_entropy = mean_over_heads(d.heads, [](const HeadAccum& h) { return h.norm_entropy(); });
  out.sink_share = mean_over_heads(d.heads, [](const HeadAccum& h) { return h.sink_share(); });
  out.needle_mass = mean_over_heads(d.heads, [](const HeadAccum& h) { return h.needle_mass(); });
  out.sink_rate = d.sink_rate;
  out.tests = d.retrieval.tests;
  out.retrieval_heads = d.retrieval_heads;
  out.heads = static_cast<int64_t>(d.heads.size());
  if (out.tests) out.retrieval_fraction = static_cast<double>(out.retrieval_heads) / static_cast<double>(out.heads);
  return out;
}

std::vector<ConfigDiag> config_diagnostics(const Study& s) {
  std::vector<ConfigDiag> out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    // mean_of skips what is missing or not finite: a NaN summary counts as no value.
    std::vector<Opt> entropy, norm_entropy, sink_share, sink_rate, needle_mass, heads, fraction;
    for (size_t i : s.configs[c].runs) {
      if (!s.runs[i].diag) continue;
      const DiagSummary d = summarize_diagnostics(*s.runs[i].diag);
      entropy.push_back(d.entropy), norm_entropy.push_back(d.norm_entropy), sink_share.push_back(d.sink_share);
      sink_rate.push_back(d.sink_rate), needle_mass.push_back(d.needle_mass);
      heads.push_back(d.tests ? Opt(static_cast<double>(d.retrieval_heads)) : std::nullopt);
      fraction.push_back(d.retrieval_fraction);
    }
    if (entropy.empty()) continue;
    out.push_back({c, static_cast<int64_t>(entropy.size()), mean_of(entropy), mean_of(norm_entropy),
                   mean_of(sink_share), mean_of(sink_rate), mean_of(needle_mass), mean_of(heads), mean_of(fraction)});
  }
  return out;
}

}  // namespace headroom::analysis
