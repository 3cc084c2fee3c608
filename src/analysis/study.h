// A study as analyze reads it: for each evaluate run directory, results.json (and samples.jsonl
// when present), the checkpoint it names, that checkpoint's lineage (every training stage with its
// run directory and resolved configuration), and each stage's metrics.jsonl, each through the reader
// that sits beside its writer (eval/results.h, eval/sample_log.h, train/run_logs.h). Anything
// missing is recorded as a problem of the run, never fatal. Grouping the runs into configurations
// is config_groups.h's; a run's scores by name, run_scores.h's.
#pragma once

#include "analysis/analyze_config.h"
#include "analysis/diagnostics.h"
#include "analysis/features.h"
#include "eval/results.h"
#include "train/run_logs.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace headroom::analysis {

// A training run's logs as train/run_logs.h reads them.
using train::MetricPoint;
using train::ProbePoint;
using train::SpikeFinal;

struct StageRun {
  std::string stage;
  std::string run_dir_recorded;      // as the lineage records it
  std::string run_dir;               // resolved; empty when not found
  std::vector<MetricPoint> metrics;  // by step, the last line of a step kept (resumes repeat steps)
  std::vector<SpikeFinal> spikes;
  std::optional<double> final_loss;  // mean of the last final_loss_steps logged losses
  std::vector<ProbePoint> probe;     // by step (a repeated step keeps its last line); empty without a probe
};

using SampleId = std::tuple<std::string, int64_t, int64_t>;  // task, length, index

struct RunData {
  std::string dir;   // as given
  std::string name;  // short unique name
  bool has_results = false;
  eval::Results results;
  bool has_samples = false;
  std::map<SampleId, double> samples;  // scored samples, score in [0, 1]
  std::string checkpoint;
  RunConfig config;
  std::string config_source;  // "checkpoint lineage" | "evaluate config.ini" | ""
  std::vector<StageRun> stages;
  std::string config_key;  // the configuration without seed and ignored keys
  std::string seed_text;   // the seed keys' values
  long config_index = -1;  // into Study::configs (pool runs only)
  bool in_pool = false;
  std::optional<Diagnostics> diag;
  std::vector<std::string> problems;  // what is missing for this run and what that costs
};

struct ConfigGroup {
  std::string id;  // C1, C2, ...
  std::string
      label;  // what tables and plots call it: `name` when the names tell configurations apart, else `keys_label`
  std::string
      name;  // its runs' directories without the seed: "wide/evaluate_base" for wide-s1/evaluate_base, wide-s2/...
  std::string keys_label;  // the varying profile keys' values
  std::vector<size_t> runs;
  std::map<std::string, std::string> keys;  // flattened "stage:section.key" -> value (seeds and ignored keys removed)
  // For reading: "section.key" -> its value, or its values along the lineage joined by "→" when the
  // stages differ (e.g. train.seq_len = 4096→65536); "stages" -> the lineage's stage names.
  std::map<std::string, std::string> profile;
};

struct Study {
  std::vector<RunData> runs;
  std::vector<ConfigGroup> configs;       // pool runs only
  std::vector<std::string> varying_keys;  // profile keys that differ between configurations
  std::string pool;                       // what the comparable pool shares
  std::vector<std::string> notes;         // study-level problems
};

// Reads every run; `log` gets progress lines.
Study load_study(const AnalyzeConfig& cfg, const std::function<void(const std::string&)>& log);

// samples.jsonl text (eval/sample_log.h) as scores of its scored samples.
std::map<SampleId, double> parse_samples(const std::string& text, const std::string& origin);
// metrics.jsonl (train/run_logs.h) into the stage: its points, the last line's spikes, and the
// final loss (mean of the last final_steps logged losses); throws when no step was logged.
void parse_metrics(const std::string& text, StageRun& s, long final_steps);

}  // namespace headroom::analysis
