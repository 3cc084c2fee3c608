#include "analysis/study.h"

#include "config/ini_text.h"
#include "eval/tasks.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "util/error.h"
#include "util/jsonl.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace headroom::analysis {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<double> opt_number(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) fail("'", key, "' is not a number");
  return j[key].get<double>();
}

bool key_matches(const std::string& key, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (p == key) return true;
    if (p.size() > 2 && p.substr(p.size() - 2) == ".*" && key.rfind(p.substr(0, p.size() - 1), 0) == 0) return true;
    if (p == "*") return true;
  }
  return false;
}

// Where a recorded run directory is now: as written (absolute, or relative to the working
// directory), then relative to the parent of the evaluate run directory.
std::string resolve_dir(const std::string& recorded, const fs::path& eval_dir) {
  if (recorded.empty()) return "";
  std::error_code ec;
  const fs::path p(recorded);
  if (fs::is_directory(p, ec)) return p.string();
  if (p.is_relative()) {
    const fs::path q = eval_dir.parent_path() / p;
    if (fs::is_directory(q, ec)) return q.string();
    const fs::path r = eval_dir.parent_path() / p.filename();
    if (fs::is_directory(r, ec)) return r.string();
  }
  return "";
}

std::string read_text(const fs::path& p) { return io::read_file(p); }

std::vector<StageConfig> lineage_stages(const std::string& lineage_json, const std::string& origin) {
  std::vector<StageConfig> out;
  json l;
  try {
    l = json::parse(lineage_json.empty() ? "[]" : lineage_json);
  } catch (const std::exception& e) {
    fail(origin, ": the lineage attribute is not JSON (", e.what(), ")");
  }
  if (!l.is_array()) fail(origin, ": the lineage attribute is not a JSON array");
  for (const auto& e : l) {
    if (!e.is_object()) fail(origin, ": a lineage entry is not an object");
    StageConfig s;
    s.stage = e.value("stage", std::string("?"));
    s.keys = config::ini_map(e.value("config", std::string()));
    s.keys["__run_dir"] = e.value("run_dir", std::string());
    out.push_back(std::move(s));
  }
  return out;
}

void load_run(RunData& r, const AnalyzeConfig& cfg) {
  const fs::path dir(r.dir);
  std::error_code ec;
  const fs::path rj = dir / "results.json";
  if (!fs::is_regular_file(rj, ec)) {
    r.problems.push_back(cat("no results.json in ", r.dir, " (evaluate did not finish there, or this is not an "
                             "evaluate run directory): the run is left out of every table"));
    return;
  }
  try {
    r.results = parse_results(read_text(rj), rj.string());
    r.has_results = true;
  } catch (const std::exception& e) {
    r.problems.push_back(cat(e.what(), ": the run is left out of every table"));
    return;
  }
  const fs::path sj = dir / "samples.jsonl";
  if (fs::is_regular_file(sj, ec)) {
    try {
      r.samples = parse_samples(read_text(sj), sj.string());
      r.has_samples = true;
    } catch (const std::exception& e) {
      r.problems.push_back(cat(e.what(), ": per-sample scores of this run are not used"));
    }
  }
  // The checkpoint and its lineage.
  r.checkpoint = r.results.checkpoint;
  fs::path ck(r.checkpoint);
  if (!ck.empty() && !fs::exists(ck, ec) && ck.is_relative() && fs::exists(dir.parent_path() / ck, ec))
    ck = dir.parent_path() / ck;
  std::string ck_problem;
  if (r.checkpoint.empty()) {
    ck_problem = "results.json names no checkpoint";
  } else {
    try {
      const io::CheckpointInfo info = io::read_checkpoint_info(ck);
      r.checkpoint = ck.string();
      auto stages = lineage_stages(info.lineage, ck.string());
      if (stages.empty()) {  // a checkpoint without lineage: its own configuration only
        StageConfig s;
        s.stage = info.stage;
        s.keys = config::ini_map(info.config_ini);
        s.keys["__run_dir"] = ck.parent_path().parent_path().string();
        stages.push_back(std::move(s));
      }
      r.config.stages = std::move(stages);
      r.config_source = "checkpoint lineage";
    } catch (const std::exception& e) {
      ck_problem = e.what();
    }
  }
  if (!ck_problem.empty()) {
    const fs::path ci = dir / "config.ini";
    if (fs::is_regular_file(ci, ec)) {
      StageConfig s;
      s.stage = r.results.stage.empty() ? "unknown" : r.results.stage;
      for (auto& [k, v] : config::ini_map(read_text(ci)))
        if (k.rfind("model.", 0) == 0 || k.rfind("train.", 0) == 0 || k.rfind("data.", 0) == 0 ||
            k.rfind("parallel.", 0) == 0)
          s.keys[k] = v;
      r.config.stages.push_back(std::move(s));
      r.config_source = "evaluate config.ini";
      r.problems.push_back(cat("checkpoint not readable (", ck_problem, "): the configuration comes from ", ci.string(),
                               " (last stage only, so earlier stages' keys are unknown); no training curves, "
                               "losses or attention diagnostics for this run"));
    } else {
      r.problems.push_back(cat("checkpoint not readable (", ck_problem, ") and no config.ini in ", r.dir,
                               ": the run's configuration is unknown, so it has no configuration group"));
    }
    return;
  }
  // Each stage's run directory and metrics.
  for (size_t i = 0; i < r.config.stages.size(); ++i) {
    auto& sc = r.config.stages[i];
    StageRun s;
    s.stage = sc.stage;
    s.run_dir_recorded = sc.keys["__run_dir"];
    sc.keys.erase("__run_dir");
    s.run_dir = resolve_dir(s.run_dir_recorded, dir);
    if (s.run_dir.empty() && i + 1 == r.config.stages.size()) {
      const fs::path own = ck.parent_path().parent_path();
      if (fs::is_directory(own, ec)) s.run_dir = own.string();
    }
    if (s.run_dir.empty()) {
      r.problems.push_back(cat(s.stage, " run directory '", s.run_dir_recorded, "' (from the checkpoint lineage) not "
                               "found, also not next to ", r.dir, ": no ", s.stage, " losses or spike scores"));
    } else {
      const fs::path mj = fs::path(s.run_dir) / "metrics.jsonl";
      if (!fs::is_regular_file(mj, ec)) {
        r.problems.push_back(cat("no metrics.jsonl in ", s.run_dir, ": no ", s.stage, " losses or spike scores"));
      } else {
        try {
          parse_metrics(read_text(mj), s, cfg.final_loss_steps);
        } catch (const std::exception& e) {
          r.problems.push_back(cat(mj.string(), ": ", e.what(), ": no ", s.stage, " losses or spike scores"));
        }
      }
      const fs::path pj = fs::path(s.run_dir) / "probe.jsonl";  // only when train.probe_every > 0
      if (fs::is_regular_file(pj, ec)) {
        try {
          s.probe = train::parse_probe_log(read_text(pj));
        } catch (const std::exception& e) {
          r.problems.push_back(cat(pj.string(), ": ", e.what(), ": no ", s.stage, " probe scores"));
        }
      }
    }
    r.stages.push_back(std::move(s));
  }
}

}  // namespace

eval::Results parse_results(const std::string& text, const std::string& origin) {
  eval::Results r;
  try {
    const json j = json::parse(text);
    if (j.value("format", std::string()) != "headroom-eval-results")
      fail("format is '", j.value("format", std::string()), "', expected headroom-eval-results");
    r.checkpoint = j.value("checkpoint", std::string());
    r.stage = j.value("stage", std::string());
    r.step = j.value("step", int64_t{0});
    r.config_id = j.value("config_id", std::string());
    r.tokenizer_id = j.value("tokenizer_id", std::string());
    r.prompt_template = j.value("prompt_template", std::string());
    r.code_version = j.value("code_version", std::string());
    if (j.contains("settings") && j["settings"].is_object()) {
      const auto& s = j["settings"];
      r.seed = s.value("seed", uint64_t{0});
      r.samples = s.value("samples", int64_t{0});
      if (s.contains("lengths")) r.lengths = s["lengths"].get<std::vector<int64_t>>();
      if (s.contains("tasks")) r.tasks = s["tasks"].get<std::vector<std::string>>();
    }
    for (const auto& t : j.value("tasks", json::array())) {
      eval::TaskScore ts;
      ts.task = t.at("task").get<std::string>();
      ts.length = t.at("length").get<int64_t>();
      ts.score = opt_number(t, "score");
      ts.n = t.value("n", int64_t{0});
      ts.skipped = t.value("skipped", int64_t{0});
      ts.metric = t.value("metric", std::string());
      r.task_scores.push_back(ts);
    }
    if (j.contains("ruler") && j["ruler"].is_object()) {
      for (const auto& a : j["ruler"].value("by_length", json::array()))
        r.ruler_by_length.push_back({a.at("length").get<int64_t>(), opt_number(a, "score"), a.value("n_tasks", int64_t{0})});
      r.ruler_average = opt_number(j["ruler"], "average");
    }
    for (const auto& c : j.value("loss_by_position", json::array())) {
      eval::LossCurve lc;
      lc.length = c.at("length").get<int64_t>();
      lc.windows = c.value("windows", int64_t{0});
      lc.mean_loss = c.at("mean_loss").get<double>();
      for (const auto& b : c.value("buckets", json::array()))
        lc.buckets.push_back({b.at("start").get<int64_t>(), b.at("end").get<int64_t>(), b.at("mean_loss").get<double>(),
                              b.value("tokens", int64_t{0})});
      r.loss.push_back(lc);
    }
    if (j.contains("multiple_choice") && j["multiple_choice"].is_object()) {
      const auto& m = j["multiple_choice"];
      r.mc = eval::McSummary{m.value("file", std::string()), m.value("n", int64_t{0}), m.at("acc").get<double>(),
                             m.at("acc_norm").get<double>()};
    }
  } catch (const std::exception& e) {
    fail(origin, ": not a readable results.json (", e.what(), ")");
  }
  return r;
}


std::map<SampleId, double> parse_samples(const std::string& text, const std::string& origin) {
  std::map<SampleId, double> out;
  std::vector<std::pair<int64_t, json>> lines;
  try {
    lines = jsonl_lines(text);
  } catch (const std::exception& e) {
    fail(origin, ": ", e.what());
  }
  for (const auto& [n, j] : lines) {
    if (!j.contains("score") || j["score"].is_null()) continue;  // skipped sample
    try {
      out[{j.at("task").get<std::string>(), j.at("length").get<int64_t>(), j.at("index").get<int64_t>()}] =
          j["score"].get<double>();
    } catch (const std::exception& e) {
      fail(origin, " line ", n, ": ", e.what());
    }
  }
  return out;
}

void parse_metrics(const std::string& text, StageRun& s, long final_steps) {
  train::MetricsLog log = train::parse_metrics_log(text);
  if (log.points.empty()) fail("no logged step");
  s.metrics = std::move(log.points);
  s.spikes = std::move(log.last_spikes);
  double sum = 0;
  int64_t k = 0;
  for (auto it = s.metrics.rbegin(); it != s.metrics.rend() && k < final_steps; ++it)
    if (std::isfinite(it->loss)) sum += it->loss, ++k;
  if (k > 0) s.final_loss = sum / static_cast<double>(k);
}

const StageRun* probe_stage(const RunData& r) {
  const StageRun* out = nullptr;
  for (const auto& s : r.stages)
    if (!s.probe.empty()) out = &s;
  return out;
}

std::optional<double> probe_auc(const std::vector<ProbePoint>& p) {
  if (p.empty()) return std::nullopt;
  if (p.size() == 1) return p[0].token_acc;
  double area = 0;
  for (size_t i = 1; i < p.size(); ++i)
    area += 0.5 * (p[i].token_acc + p[i - 1].token_acc) * static_cast<double>(p[i].step - p[i - 1].step);
  const auto span = static_cast<double>(p.back().step - p.front().step);
  return span > 0 ? std::optional<double>(area / span) : std::optional<double>(p.back().token_acc);
}

std::optional<double> score_of(const RunData& r, const ScoreName& s) {
  if (is_probe_score(s)) {
    const StageRun* st = probe_stage(r);
    if (!st) return std::nullopt;
    if (s.kind == ScoreName::kProbeAuc) return probe_auc(st->probe);
    return s.kind == ScoreName::kProbeAcc ? st->probe.back().token_acc : st->probe.back().exact;
  }
  if (!r.has_results) return std::nullopt;
  switch (s.kind) {
    case ScoreName::kRuler: return r.results.ruler_average;
    case ScoreName::kRulerAt:
      for (const auto& a : r.results.ruler_by_length)
        if (a.length == s.length) return a.score;
      return std::nullopt;
    case ScoreName::kMcAcc: return r.results.mc ? std::optional<double>(r.results.mc->acc) : std::nullopt;
    case ScoreName::kMcAccNorm: return r.results.mc ? std::optional<double>(r.results.mc->acc_norm) : std::nullopt;
    default: break;
  }
  return std::nullopt;
}

std::optional<double> perplexity_of(const RunData& r, int64_t length) {
  if (!r.has_results || r.results.loss.empty()) return std::nullopt;
  const eval::LossCurve* best = nullptr;
  for (const auto& c : r.results.loss)
    if (length > 0 ? c.length == length : (!best || c.length < best->length)) best = &c;
  if (!best) return std::nullopt;
  return std::exp(best->mean_loss);
}

const StageRun* stage_of(const RunData& r, const std::string& stage) {
  const StageRun* out = nullptr;
  for (const auto& s : r.stages)
    if (s.stage == stage) out = &s;
  return out;
}

Study load_study(const AnalyzeConfig& cfg, const std::function<void(const std::string&)>& log) {
  Study s;
  std::map<std::string, int> names;
  for (const auto& d : cfg.runs) names[fs::path(d).lexically_normal().filename().string()]++;
  for (size_t i = 0; i < cfg.runs.size(); ++i) {
    RunData r;
    r.dir = cfg.runs[i];
    const fs::path p = fs::path(r.dir).lexically_normal();
    std::string name = p.filename().string();
    if (name.empty()) name = p.parent_path().filename().string();
    if (names[name] > 1) name = p.parent_path().filename().string() + "/" + name;
    r.name = name;
    load_run(r, cfg);
    if (log) log(cat("read run ", i + 1, "/", cfg.runs.size(), ": ", r.dir, r.has_results ? "" : " (no results)",
                     r.problems.empty() ? "" : cat(" — ", r.problems.size(), " problem(s)")));
    s.runs.push_back(std::move(r));
  }
  return s;
}

namespace {

std::string ruler_task_list(const eval::Results& r) {
  std::string out;
  for (const auto& t : r.tasks) {
    bool ruler = false;
    try {
      ruler = eval::find_task(t).ruler;
    } catch (const std::exception&) {
    }
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
    out.append(out.empty() ? "" : " ").append(name).append("=").append(it == profile.end() ? std::string("(unset)") : it->second);
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
      !std::all_of(chain.begin() + static_cast<std::ptrdiff_t>(s) + 2, chain.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
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
        why = cat("RULER tasks '", ruler_task_list(r.results), "' differ from the pool's '", ruler_task_list(ref->results),
                  "'");
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
  std::stable_partition(s.varying_keys.begin(), s.varying_keys.end(), [](const std::string& k) { return k == "stages"; });
  name_configs(s);
}

}  // namespace headroom::analysis
