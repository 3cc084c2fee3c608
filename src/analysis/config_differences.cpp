#include "analysis/config_differences.h"

#include "analysis/run_scores.h"

#include <cmath>

namespace headroom::analysis {
namespace {

NoiseMark noise_mark(double diff, const NoiseSummary& noise) {
  if (!noise.ok) return NoiseMark::kUnknown;
  if (diff == 0 && noise.mean == 0) return NoiseMark::kNoDifference;  // nothing measured: not an effect
  return std::abs(diff) < noise.mean ? NoiseMark::kWithin : NoiseMark::kBeyond;
}

}  // namespace

DifferenceStats config_differences(const Study& s, const ScoreName& score, const NoiseSummary& noise, int64_t resamples,
                                   uint64_t seed, double confidence) {
  DifferenceStats out;
  auto mean_score = [&](const ConfigGroup& g) {
    return config_mean(s, g, [&](const RunData& r) { return score_of(r, score); });
  };
  for (size_t i = 0; i < s.configs.size(); ++i)
    for (size_t j = i + 1; j < s.configs.size(); ++j) {
      ConfigDifference d{i,  j, mean_score(s.configs[i]), mean_score(s.configs[j]), std::nullopt, NoiseMark::kUnknown,
                         {}, ""};
      if (d.score_a.mean && d.score_b.mean) {
        d.difference = *d.score_a.mean - *d.score_b.mean;
        d.mark = noise_mark(*d.difference, noise);
        out.within += d.mark == NoiseMark::kWithin;
        out.beyond += d.mark == NoiseMark::kBeyond;
        bool per_sample = false;
        const auto cells = boot_cells(s, s.configs[i], s.configs[j], score, per_sample, d.method);
        d.ci = paired_bootstrap(cells, !per_sample, resamples, seed + i * 1000003ull + j, confidence);
        if (!d.ci.ok) out.no_interval = d.ci.why;
      }
      out.pairs.push_back(std::move(d));
    }
  for (const auto& r : s.runs) out.pool_lacks_samples |= r.in_pool && !r.has_samples;
  return out;
}

}  // namespace headroom::analysis
