#include "analysis/config_scores.h"

#include "analysis/run_scores.h"

#include <cmath>

namespace headroom::analysis {

std::vector<RulerMeans> ruler_means(const Study& s, const std::vector<int64_t>& lengths) {
  std::vector<RulerMeans> out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    const ConfigGroup& g = s.configs[c];
    RulerMeans m;
    m.config = c;
    for (auto L : lengths)
      m.by_length.push_back(config_mean(s, g, [&](const RunData& r) {
        return score_of(r, {ScoreName::kRulerAt, L, ""});
      }));
    m.overall = config_mean(s, g, [&](const RunData& r) { return r.results.ruler_average; });
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<TaskMean> ruler_task_means(const Study& s) {
  std::vector<TaskMean> out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    const ConfigGroup& g = s.configs[c];
    for (const auto& cell : s.runs[g.runs[0]].results.task_scores) {
      const std::string task = cell.task;
      const int64_t L = cell.length;
      out.push_back({c, task, L, config_mean(s, g, [&](const RunData& r) -> Opt {
                       for (const auto& ts : r.results.task_scores)
                         if (ts.task == task && ts.length == L) return ts.score;
                       return std::nullopt;
                     })});
    }
  }
  return out;
}

std::vector<McMeans> mc_means(const Study& s) {
  std::vector<McMeans> out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    const ConfigGroup& g = s.configs[c];
    const auto& mc0 = s.runs[g.runs[0]].results.mc;
    out.push_back(
        {c, mc0 ? std::optional<int64_t>(mc0->n) : std::nullopt,
         config_mean(s, g,
                     [](const RunData& r) -> Opt { return r.results.mc ? Opt(r.results.mc->acc) : std::nullopt; }),
         config_mean(
             s, g, [](const RunData& r) -> Opt { return r.results.mc ? Opt(r.results.mc->acc_norm) : std::nullopt; })});
  }
  return out;
}

namespace {

// The configuration's mean loss in bucket b at one length.
Mean bucket_mean(const Study& s, const ConfigGroup& g, int64_t length, size_t b) {
  return config_mean(s, g, [&](const RunData& r) -> Opt {
    for (const auto& x : r.results.loss)
      if (x.length == length && b < x.buckets.size()) return x.buckets[b].mean_loss;
    return std::nullopt;
  });
}

}  // namespace

std::vector<LossMeans> loss_means(const Study& s) {
  std::vector<LossMeans> out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    const ConfigGroup& g = s.configs[c];
    for (const auto& curve : s.runs[g.runs[0]].results.loss) {
      LossMeans m;
      m.config = c;
      m.length = curve.length;
      m.loss = config_mean(s, g, [&](const RunData& r) -> Opt {
        for (const auto& x : r.results.loss)
          if (x.length == curve.length) return x.mean_loss;
        return std::nullopt;
      });
      if (m.loss.mean) m.perplexity = std::exp(*m.loss.mean);
      for (size_t b = 0; b < curve.buckets.size(); ++b)
        m.buckets.push_back({curve.buckets[b].start, curve.buckets[b].end, bucket_mean(s, g, curve.length, b)});
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace headroom::analysis
