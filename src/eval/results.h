// The outputs of evaluate: results.json (read back by parse_results_json, which analyze uses; schema
// in src/eval/README.md), results.csv (one row per task × length) and a compact table for stdout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::eval {

struct TaskScore {
  std::string task;
  std::string metric;
  int64_t length = 0;
  std::optional<double> score;  // 0–100, mean over scored samples; empty when none was scored
  int64_t n = 0;                // samples scored
  int64_t skipped = 0;          // samples that did not fit the length (see skip_reason)
  std::string skip_reason;
  double mean_tokens = 0;  // prompt tokens as fed to the model, over scored samples
  double mean_units = 0;   // haystack units
};

struct LengthAverage {
  int64_t length = 0;
  std::optional<double> score;  // mean of the group's task scores at this length
  int64_t n_tasks = 0;
};

struct LossBucket {
  int64_t start = 0, end = 0;  // token positions [start, end)
  double mean_loss = 0;        // nats per token
  int64_t tokens = 0;
};

struct LossCurve {
  int64_t length = 0;
  int64_t windows = 0;
  double mean_loss = 0;
  std::vector<LossBucket> buckets;
};

struct McSummary {
  std::string file;
  int64_t n = 0;
  double acc = 0, acc_norm = 0;  // 0–100
};

struct Results {
  // Provenance.
  std::string checkpoint, stage, config_id, tokenizer_id, prompt_template, code_version, created_utc;
  int64_t step = 0;
  std::string prompt_template_text;  // the template with {prompt} and {answer_prefix} slots
  int ranks = 1;
  uint64_t seed = 0;
  int64_t samples = 0;
  int64_t addressable_length = 0;
  bool allow_beyond_training = false;
  std::vector<int64_t> lengths;
  std::vector<std::string> tasks;
  double seconds = 0;
  // Scores.
  std::vector<TaskScore> task_scores;  // RULER tasks, then json_kv; by task, then length
  std::vector<LengthAverage> ruler_by_length;
  std::optional<double> ruler_average;  // mean of ruler_by_length over lengths with a score
  // HELMET's synthetic-recall category (eval/score_groups.h); empty unless all four tasks ran.
  std::vector<LengthAverage> helmet_recall_by_length;
  std::optional<double> helmet_recall;
  std::vector<LossCurve> loss;
  std::optional<McSummary> mc;
};

std::string results_json(const Results& r);
// results.json text back into Results (every field results_json writes); throws headroom::Error
// naming `origin` when the text is not a headroom-eval-results document of format version 1.
Results parse_results_json(const std::string& text, const std::string& origin);
std::string results_csv(const Results& r);
std::string results_table(const Results& r);

}  // namespace headroom::eval
