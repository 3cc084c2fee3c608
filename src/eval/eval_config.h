// The [eval] section: what evaluate runs and where its inputs are. Declared here over a plain
// struct, as apps declare their own sections (config/schema.h).
#pragma once

#include "config/schema.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::eval {

struct EvalConfig {
  std::string tasks;    // comma-separated task names or groups (tasks.h)
  std::string lengths;  // comma-separated context lengths in tokens; "" = the addressable length
  long samples;         // per task and length
  unsigned long seed;
  bool allow_beyond_training;
  long max_new_tokens;                   // 0 = each task's own (RULER's tokens_to_generate)
  std::string essay;                     // JSONL file or directory of the essay haystack
  std::string word_dir;                  // adjectives.txt, nouns.txt, verbs.txt
  std::string mc_file;                   // JSONL {"query", "choices", "gold"}
  long loss_windows;                     // held-out windows per length for loss_by_position
  long prefill_chunk;                    // tokens per prefill block (memory: one block's activations)
  long tp;                               // ranks that split one model's heads and MLP columns
  bool write_samples;                    // samples.jsonl with every prompt's prediction and score
  bool ruler_pred;                       // ruler_pred/<length>/<task>.jsonl in RULER's prediction-file fields
  config::PromptChoice prompt_template;  // eval.template
};

// Adds the [eval] section bound to `cfg` (which must outlive the schema).
void add_eval_keys(config::Schema& schema, EvalConfig& cfg);

// "1024,2K,4k" -> {1024, 2048, 4096}; throws naming eval.lengths on a malformed or non-positive
// entry. Order kept, duplicates dropped.
std::vector<int64_t> parse_lengths(const std::string& list);

}  // namespace headroom::eval
