// The [analyze] section and analyze's top-level options, declared over a plain struct as apps
// declare their own sections (config/schema.h).
#pragma once

#include "config/choices.h"
#include "config/schema.h"
#include "util/text.h"

#include <string>
#include <vector>

namespace headroom::analysis {

struct AnalyzeConfig {
  // Top level.
  std::vector<std::string> runs;  // evaluate run directories
  std::string out;
  // Scores.
  std::string long_score;   // ruler | ruler@LENGTH
  std::string short_score;  // mc_acc | mc_acc_norm | ruler@LENGTH
  long perplexity_length;   // 0 = the shortest loss_by_position length
  long final_loss_steps;    // logged steps averaged for "final" losses
  // Configurations and seeds.
  std::string seed_keys;              // comma-separated keys that only choose a seed
  std::string ignore_keys;            // keys that do not change the model (layout, logging); * globs
  std::vector<std::string> features;  // name=predicate
  std::string regression_configs;     // predicates joined by '&' selecting the regressions' configurations; "" = all
  std::vector<std::string> findings;  // "NAME: A over B" (findings.h)
  std::string finding_scores;         // comma-separated score names; "" = long_score
  // Statistics.
  long bootstrap_samples;
  unsigned long bootstrap_seed;
  double confidence;
  // Attention diagnostics.
  bool diagnostics;
  std::string probe_lengths;  // "" = each run's shortest evaluation length
  std::string probe_depths;
  long probe_samples;  // probes per (length, depth)
  unsigned long probe_seed;
  long max_new_tokens;
  long query_rows;
  long sink_tokens;
  double sink_epsilon;
  double retrieval_threshold;
  std::string needle_span;  // value | sentence
  bool retrieval_all_tests;
  long rank_tokens;
  bool rank_center;
  long prefill_chunk;
  config::Device device;  // of the diagnostics pass: auto = cuda when this process sees a GPU
  std::string word_dir;
  // Plots.
  bool plots;
  std::string python;
};

// Adds the top-level keys (runs, out) and the [analyze] section bound to `cfg`.
void add_analyze_keys(config::Schema& schema, AnalyzeConfig& cfg);

// Checks that relate keys (parseable lists, feature expressions); throws one Error listing problems.
void check_analyze_config(const AnalyzeConfig& cfg);

std::vector<double> parse_doubles(const std::string& s, const std::string& key);

}  // namespace headroom::analysis
