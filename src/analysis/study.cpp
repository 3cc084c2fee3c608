#include "analysis/study.h"

#include "config/ini_text.h"
#include "eval/sample_log.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace headroom::analysis {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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
    r.problems.push_back(cat("no results.json in ", r.dir,
                             " (evaluate did not finish there, or this is not an "
                             "evaluate run directory): the run is left out of every table"));
    return;
  }
  try {
    r.results = eval::parse_results_json(read_text(rj), rj.string());
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
      r.problems.push_back(cat(s.stage, " run directory '", s.run_dir_recorded,
                               "' (from the checkpoint lineage) not "
                               "found, also not next to ",
                               r.dir, ": no ", s.stage, " losses or spike scores"));
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

std::map<SampleId, double> parse_samples(const std::string& text, const std::string& origin) {
  std::map<SampleId, double> out;
  for (const eval::SampleRecord& s : eval::parse_sample_log(text, origin))
    if (s.score) out[{s.task, s.length, s.index}] = *s.score;  // skipped samples have no score
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
    if (log)
      log(cat("read run ", i + 1, "/", cfg.runs.size(), ": ", r.dir, r.has_results ? "" : " (no results)",
              r.problems.empty() ? "" : cat(" — ", r.problems.size(), " problem(s)")));
    s.runs.push_back(std::move(r));
  }
  return s;
}

}  // namespace headroom::analysis
