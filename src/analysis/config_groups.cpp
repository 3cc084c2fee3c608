#include "analysis/config_groups.h"

#include "eval/tasks.h"
#include "util/error.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

namespace headroom::analysis {
namespace fs = std::filesystem;

namespace {

bool key_matches(const std::string& key, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (p == key) return true;
    if (p.size() > 2 && p.substr(p.size() - 2) == ".*" && key.rfind(p.substr(0, p.size() - 1), 0) == 0) return true;
    if (p == "*") return true;
  }
  return false;
}

std::string ruler_task_list(const eval::Results& r) {
  std::string out;
  for (const auto& t : r.tasks) {
    bool ruler = false;
    try {
      ruler = eval::find_task(t).ruler;
    } catch (const std::exception&) {}
    if (ruler) out.append(out.empty() ? "" : ",").append(t);
  }
  return out;
}

std::string lengths_text(const std::vector<int64_t>& v) {
  std::string out;
  for (auto L : v) out.append(out.empty() ? "" : ",").append(std::to_string(L));
  return out;
}

}  // namespace

std::map<std::string, std::string> config_profile(const std::map<std::string, std::string>& flat,
                                                  const std::vector<std::string>& stage_names) {
  // section.key -> values in stage order.
  std::map<std::string, std::vector<std::string>> along;
  for (const auto& st : stage_names)
    for (const auto& [k, v] : flat) {
      const size_t colon = k.find(':');
      if (k.substr(0, colon) == st) along[k.substr(colon + 1)].push_back(v);
    }
  std::map<std::string, std::string> out;
  for (const auto& [key, vals] : along) {
    bool same = true;
    for (const auto& v : vals) same &= v == vals[0];
    std::string text = vals[0];
    if (!same)
      for (size_t i = 1; i < vals.size(); ++i) text += "→" + vals[i];
    out[key] = text;
  }
  std::string stages;
  for (const auto& st : stage_names) stages.append(stages.empty() ? "" : "→").append(st);
  out["stages"] = stages;
  return out;
}

std::string profile_label(const std::map<std::string, std::string>& profile, const std::vector<std::string>& keys) {
  std::map<std::string, int> short_count;
  auto short_of = [](const std::string& k) { return k.substr(k.find('.') + 1); };
  for (const auto& k : keys) short_count[short_of(k)]++;
  std::string out;
  for (const auto& k : keys) {
    auto it = profile.find(k);
    const std::string name = short_count[short_of(k)] > 1 ? k : short_of(k);
    out.append(out.empty() ? "" : " ")
        .append(name)
        .append("=")
        .append(it == profile.end() ? std::string("(unset)") : it->second);
  }
  return out.empty() ? "all runs" : out;
}

namespace {

// A run directory without its seed: <chain>-s<seed>/<stage> -> <chain>/<stage> (run_study's and
// submit_pipeline's layout); "" when the path is not of that shape.
std::string unseeded_name(const std::string& dir) {
  const fs::path p = fs::path(dir).lexically_normal();
  fs::path leaf = p.filename(), parent = p.parent_path();
  if (leaf.empty()) leaf = parent.filename(), parent = parent.parent_path();
  const std::string chain = parent.filename().string();
  const size_t s = chain.rfind("-s");
  if (s == std::string::npos || s + 2 == chain.size() ||
      !std::all_of(chain.begin() + static_cast<std::ptrdiff_t>(s) + 2, chain.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
    return "";
  return chain.substr(0, s) + "/" + leaf.string();
}

void name_configs(Study& s) {
  std::set<std::string> names;
  bool distinct = true;
  for (auto& g : s.configs) {
    g.keys_label = profile_label(g.profile, s.varying_keys);
    std::set<std::string> mine;
    for (size_t i : g.runs) mine.insert(unseeded_name(s.runs[i].dir));
    g.name = mine.size() == 1 ? *mine.begin() : "";
    distinct = distinct && !g.name.empty() && names.insert(g.name).second;
  }
  // The key values are exact but long (a lineage's every differing key); a study's own directory
  // names are what its author calls the configurations.
  for (auto& g : s.configs) g.label = distinct ? g.name : g.keys_label;
}

std::string loss_windows_text(const eval::Results& r) {
  std::string out;
  for (const auto& c : r.loss) out += cat(out.empty() ? "" : ", ", c.windows, " at ", c.length);
  return out;
}

// Pooled runs evaluated on other samples (eval.seed), with other sample counts or other loss
// windows stay comparable but noisier against each other than their seed pairs suggest: kept, and
// said, against the setting most of the pool shares.
void note_mixed_settings(Study& s) {
  const std::vector<std::pair<std::string, std::function<std::string(const eval::Results&)>>> settings{
      {"eval.seed", [](const eval::Results& r) { return std::to_string(r.seed); }},
      {"eval.samples", [](const eval::Results& r) { return std::to_string(r.samples); }},
      {"loss_by_position windows", loss_windows_text}};
  for (const auto& [name, value_of] : settings) {
    std::map<std::string, int> count;
    for (const auto& r : s.runs)
      if (r.in_pool) ++count[value_of(r.results)];
    if (count.size() < 2) continue;
    const auto common = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
                          return a.second < b.second;
                        })->first;
    std::string others;
    for (auto& r : s.runs) {
      if (!r.in_pool || value_of(r.results) == common) continue;
      others += (others.empty() ? "" : ", ") + r.name;
      r.problems.push_back(cat("evaluated with ", name, " = ", value_of(r.results), " where most of the pool has ",
                               common, ": pooled all the same, its differences carry that too"));
    }
    s.notes.push_back(cat("the pool mixes ", name, " values (most runs: ", common, "; other: ", others,
                          "): differences between those runs include the change of evaluation"));
  }
}

}  // namespace

std::vector<std::string> profile_differences(const ConfigGroup& a, const ConfigGroup& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.profile) keys.insert(k);
  for (const auto& [k, v] : b.profile) keys.insert(k);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    auto ia = a.profile.find(k), ib = b.profile.find(k);
    if ((ia == a.profile.end()) != (ib == b.profile.end()) || (ia != a.profile.end() && ia->second != ib->second))
      out.push_back(k);
  }
  return out;
}

void group_configs(Study& s, const AnalyzeConfig& cfg) {
  // The comparable pool: the most common (tokenizer, lengths, RULER tasks) among runs with results.
  std::map<std::string, int> count;
  std::vector<std::string> order;
  auto compat = [](const RunData& r) {
    return r.results.tokenizer_id + "|" + lengths_text(r.results.lengths) + "|" + ruler_task_list(r.results);
  };
  for (const auto& r : s.runs)
    if (r.has_results) {
      if (!count[compat(r)]++) order.push_back(compat(r));
    }
  if (order.empty()) {
    s.notes.push_back("no run has a readable results.json: nothing to compare");
    return;
  }
  std::string pool = order[0];
  for (const auto& k : order)
    if (count[k] > count[pool]) pool = k;
  const RunData* ref = nullptr;
  for (const auto& r : s.runs)
    if (r.has_results && compat(r) == pool) {
      ref = &r;
      break;
    }
  s.pool = cat("tokenizer ", ref->results.tokenizer_id, ", evaluation lengths ", lengths_text(ref->results.lengths),
               ", RULER tasks ", ruler_task_list(ref->results).empty() ? "(none)" : ruler_task_list(ref->results));
  const auto seed_keys = split_list(cfg.seed_keys), ignore = split_list(cfg.ignore_keys);
  for (auto& r : s.runs) {
    if (!r.has_results) continue;
    if (compat(r) != pool) {
      std::string why;
      if (r.results.tokenizer_id != ref->results.tokenizer_id)
        why = cat("tokenizer '", r.results.tokenizer_id, "' differs from the pool's '", ref->results.tokenizer_id,
                  "' (scores and lengths are counted in different tokens)");
      else if (r.results.lengths != ref->results.lengths)
        why = cat("evaluation lengths ", lengths_text(r.results.lengths), " differ from the pool's ",
                  lengths_text(ref->results.lengths), " (RULER averages over different lengths)");
      else
        why = cat("RULER tasks '", ruler_task_list(r.results), "' differ from the pool's '",
                  ruler_task_list(ref->results), "'");
      r.problems.push_back(cat("left out of the pool statistics (seed pairs, differences, regressions): ", why,
                               "; its own tables are still reported"));
      continue;
    }
    if (r.config.stages.empty()) {
      r.problems.push_back("no configuration: left out of the configuration groups and the pool statistics");
      continue;
    }
    r.in_pool = true;
    std::map<std::string, std::string> flat;
    std::set<std::string> seeds;
    std::map<std::string, int> occurrence;
    std::vector<std::string> stage_names;
    for (const auto& st : r.config.stages) {
      const int k = ++occurrence[st.stage];
      const std::string sname = k == 1 ? st.stage : st.stage + std::to_string(k);
      stage_names.push_back(sname);
      for (const auto& [key, v] : st.keys) {
        if (key_matches(key, seed_keys)) {
          seeds.insert(key + "=" + v);
          continue;
        }
        if (key_matches(key, ignore)) continue;
        flat[sname + ":" + key] = v;
      }
    }
    std::string key, seed_text;
    for (const auto& [k, v] : flat) key += k + "=" + v + "\n";
    for (const auto& sd : seeds) seed_text.append(seed_text.empty() ? "" : " ").append(sd);
    r.config_key = key;
    r.seed_text = seed_text;
    long idx = -1;
    for (size_t g = 0; g < s.configs.size(); ++g)
      if (s.runs[s.configs[g].runs[0]].config_key == key) idx = static_cast<long>(g);
    if (idx < 0) {
      ConfigGroup g;
      g.id = cat("C", s.configs.size() + 1);
      g.keys = flat;
      g.profile = config_profile(flat, stage_names);
      s.configs.push_back(g);
      idx = static_cast<long>(s.configs.size()) - 1;
    }
    r.config_index = idx;
    s.configs[static_cast<size_t>(idx)].runs.push_back(static_cast<size_t>(&r - s.runs.data()));
  }
  // Profile keys whose values differ between configurations ("stages" first, then by name).
  std::set<std::string> all;
  for (const auto& g : s.configs)
    for (const auto& [k, v] : g.profile) all.insert(k);
  for (const auto& k : all) {
    std::set<std::string> vals;
    for (const auto& g : s.configs) {
      auto it = g.profile.find(k);
      vals.insert(it == g.profile.end() ? "(unset)" : it->second);
    }
    if (vals.size() > 1) s.varying_keys.push_back(k);
  }
  std::stable_partition(s.varying_keys.begin(), s.varying_keys.end(),
                        [](const std::string& k) { return k == "stages"; });
  name_configs(s);
  note_mixed_settings(s);
}

}  // namespace headroom::analysis
