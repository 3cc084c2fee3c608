// Multiple choice with lm-evaluation-harness conventions: each choice is a continuation of the
// query; its score is the summed log-likelihood of the continuation's tokens given the query.
// acc: the highest log-likelihood is the gold choice; acc_norm: the highest log-likelihood per
// character of the choice (lm-eval's acc_norm). Tokenization as lm-eval's _encode_pair: trailing
// spaces of the query move to the continuation; the continuation's tokens are those of
// query + choice after the query's own tokens.
#pragma once

#include "eval/decoder.h"
#include "eval/prompt.h"

#include <filesystem>
#include <string>
#include <vector>

namespace headroom::eval {

struct McItem {
  std::string query;
  std::vector<std::string> choices;
  int64_t gold = 0;
};

// JSONL of {"query": str, "choices": [str, ...], "gold": int}; throws naming the file and line.
std::vector<McItem> read_mc_file(const std::filesystem::path& path);

// Context and continuation ids for one choice (the context starts with BOS; the prompt template
// wraps the query).
std::pair<std::vector<int32_t>, std::vector<int32_t>> encode_pair(PromptBuilder& prompts, const std::string& query,
                                                                  const std::string& choice);

struct McResult {
  std::vector<double> loglik;    // per choice
  double acc = 0, acc_norm = 0;  // 0 or 1
};

McResult score_mc_item(Decoder& dec, PromptBuilder& prompts, const McItem& item);

// Index of the largest value; the first on ties (numpy.argmax, as lm-eval).
int64_t argmax(const std::vector<double>& v);

}  // namespace headroom::eval
