// Seed swings and the paired bootstrap's cells (seed_noise.h).
#include "analysis/seed_noise.h"

#include "analysis/means.h"
#include "analysis/run_scores.h"
#include "eval/score_groups.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace headroom::analysis {

NoiseSummary seed_noise(const Study& s, const ScoreName& score) {
  NoiseSummary n;
  std::vector<std::vector<size_t>> runs;
  std::vector<std::vector<double>> scores;
  std::vector<double> all;
  for (const auto& g : s.configs) {
    runs.emplace_back();
    scores.emplace_back();
    std::set<std::string> seeds_seen;
    for (size_t i : g.runs)
      if (const Opt v = score_of(s.runs[i], score)) {
        all.push_back(*v);
        // Two evaluations of the same seeds are not a seed pair: only the first one pairs.
        if (!seeds_seen.insert(s.runs[i].seed_text).second) continue;
        runs.back().push_back(i);
        scores.back().push_back(*v);
      }
  }
  if (all.size() >= 2) n.range = *std::max_element(all.begin(), all.end()) - *std::min_element(all.begin(), all.end());
  n.swings = seed_pairs(runs, scores);
  n.pairs = n.swings.size();
  if (n.swings.empty()) return n;
  for (const auto& p : n.swings) {
    n.mean += p.swing / static_cast<double>(n.swings.size());
    n.max = std::max(n.max, p.swing);
  }
  n.ok = true;
  return n;
}

int64_t runs_with_score(const Study& s, const ScoreName& score) {
  int64_t n = 0;
  for (const auto& r : s.runs) n += r.in_pool && score_of(r, score).has_value();
  return n;
}

std::vector<std::pair<size_t, size_t>> repeated_seed_runs(const Study& s) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t c = 0; c < s.configs.size(); ++c) {
    std::set<std::string> seen;
    for (size_t i : s.configs[c].runs)
      if (!seen.insert(s.runs[i].seed_text).second) out.emplace_back(c, i);
  }
  return out;
}

// Bootstrap cells of configurations a and b for `score` (RULER tasks; all lengths or one).
std::vector<BootCell> boot_cells(const Study& s, const ConfigGroup& a, const ConfigGroup& b, const ScoreName& score,
                                 bool& per_sample, std::string& method) {
  std::vector<size_t> runs_a, runs_b;
  for (size_t i : a.runs)
    if (score_of(s.runs[i], score)) runs_a.push_back(i);
  for (size_t i : b.runs)
    if (score_of(s.runs[i], score)) runs_b.push_back(i);
  std::vector<BootCell> cells;
  if (runs_a.empty() || runs_b.empty() || is_probe_score(score)) return cells;  // probe: no per-task cells
  per_sample = true;
  for (size_t i : runs_a) per_sample &= s.runs[i].has_samples;
  for (size_t i : runs_b) per_sample &= s.runs[i].has_samples;
  const auto& ref = s.runs[runs_a[0]].results;
  for (const auto& ts : ref.task_scores) {
    if (score.kind == ScoreName::kHelmetRecall ? !eval::is_helmet_recall_task(ts.task) : !is_ruler_task(ts.task))
      continue;
    if (score.kind == ScoreName::kRulerAt && ts.length != score.length) continue;
    BootCell c;
    c.length = ts.length;
    c.task = ts.task;
    if (per_sample) {
      // Sample indices scored in every run of both configurations.
      std::set<int64_t> common;
      bool first = true;
      std::vector<size_t> all = runs_a;
      all.insert(all.end(), runs_b.begin(), runs_b.end());
      for (size_t i : all) {
        std::set<int64_t> mine;
        for (auto it = s.runs[i].samples.lower_bound({ts.task, ts.length, INT64_MIN});
             it != s.runs[i].samples.end() && std::get<0>(it->first) == ts.task && std::get<1>(it->first) == ts.length;
             ++it)
          mine.insert(std::get<2>(it->first));
        if (first)
          common = mine, first = false;
        else {
          std::set<int64_t> x;
          std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(x, x.begin()));
          common = x;
        }
      }
      if (common.empty()) continue;
      auto side = [&](const std::vector<size_t>& runs) {
        std::vector<std::vector<double>> v;
        for (size_t i : runs) {
          v.emplace_back();
          for (int64_t k : common) v.back().push_back(s.runs[i].samples.at({ts.task, ts.length, k}));
        }
        return v;
      };
      c.a = side(runs_a);
      c.b = side(runs_b);
    } else {
      auto side = [&](const std::vector<size_t>& runs, bool& ok) {
        std::vector<std::vector<double>> v;
        for (size_t i : runs) {
          Opt x;
          for (const auto& t2 : s.runs[i].results.task_scores)
            if (t2.task == ts.task && t2.length == ts.length) x = t2.score;
          if (!x) ok = false;
          v.push_back({x ? *x / 100.0 : 0.0});
        }
        return v;
      };
      bool ok = true;
      c.a = side(runs_a, ok);
      c.b = side(runs_b, ok);
      if (!ok) continue;
    }
    cells.push_back(std::move(c));
  }
  method = per_sample ? "seeds x samples (within task x length)" : "seeds x tasks (within length)";
  return cells;
}

}  // namespace headroom::analysis
