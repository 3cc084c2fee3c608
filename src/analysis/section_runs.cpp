// The "Runs" and "Configurations" sections.
#include "analysis/sections.h"

#include "analysis/report_helpers.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

using nlohmann::json;

void section_runs(const Study& s, Report& rep) {
  rep.heading("Runs");
  Table t{"runs",
          "Runs",
          {"run", "dir", "config", "seeds", "stage", "step", "checkpoint", "tokenizer", "lengths", "ruler_average",
           "in_pool", "samples"},
          {},
          ""};
  for (const auto& r : s.runs) {
    std::string lens;
    for (auto L : r.results.lengths) lens.append(lens.empty() ? "" : " ").append(std::to_string(L));
    t.rows.push_back({r.name, r.dir, config_name(s, r.config_index), r.seed_text, r.results.stage,
                      r.has_results ? std::to_string(r.results.step) : "", r.checkpoint, r.results.tokenizer_id, lens,
                      fmt(r.results.ruler_average), r.in_pool ? "yes" : "no", r.has_samples ? "yes" : "no"});
  }
  rep.text(s.pool.empty() ? "No comparable pool." : "Pool (the runs compared with each other): " + s.pool + ".");
  rep.table(std::move(t));
  Table p{"run_problems", "Problems found in the inputs", {"run", "problem"}, {}, ""};
  for (const auto& r : s.runs)
    for (const auto& pr : r.problems) p.rows.push_back({r.name, pr});
  for (const auto& n : s.notes) p.rows.push_back({"(study)", n});
  if (!p.rows.empty()) rep.table(std::move(p));
}

void section_configs(const Study& s, Report& rep) {
  rep.heading("Configurations");
  std::string keys;
  for (const auto& k : s.varying_keys) keys.append(keys.empty() ? "" : ", ").append(k);
  rep.text(s.configs.empty()
               ? "No configuration could be formed."
               : cat(s.configs.size(),
                     " configuration(s): runs whose lineage configurations (every stage's resolved "
                     "INI) agree once the seed keys and the ignored keys are removed. Keys that differ between "
                     "configurations (a → joins a key's values along the lineage when a later stage changed it; "
                     "'stages' is the lineage): ",
                     keys.empty() ? "none" : keys, "."));
  Table t{"configs", "Configurations", {"config", "label", "keys", "runs", "seeds"}, {}, ""};
  for (const auto& g : s.configs) {
    std::string runs, seeds;
    for (size_t i : g.runs) {
      runs.append(runs.empty() ? "" : " ").append(s.runs[i].name);
      seeds.append(seeds.empty() ? "" : " | ").append(s.runs[i].seed_text);
    }
    t.rows.push_back({g.id, g.label, g.keys_label, runs, seeds});
  }
  rep.table(std::move(t));
}

}  // namespace headroom::analysis
