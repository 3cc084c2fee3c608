// The `prepare` stage: text files → tokenizer → train.h5 / val.h5 token shards.
#pragma once

#include "data/documents.h"
#include "data/shard.h"
#include "data/tokenizer.h"

#include <functional>
#include <string>
#include <vector>

namespace headroom::data {

struct PrepareOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string tokenizer;  // "byte", "bpe" (train one), a tokenizer file, or an HF directory/tokenizer.json
  long vocab_size = 0;    // for "bpe"
  double val_fraction = 0;
  unsigned long seed = 0;
  bool split_digits = false;  // for "bpe": no merge holds a digit
};

// Whole documents go to val when a hash of (seed, document text) falls below val_fraction, so the
// split does not depend on input order; at least one document lands on each side when there are two.
std::vector<bool> split_validation(const std::vector<std::string>& texts, double val_fraction, unsigned long seed);

// Encodes documents (each as BOS + tokens) in parallel; progress(done_bytes, total_bytes).
ShardContents encode_documents(const Tokenizer& tok, const std::vector<const std::string*>& docs,
                               const std::function<void(int64_t, int64_t)>& progress = {});

struct PrepareSummary {
  std::string tokenizer_id;
  int64_t train_docs = 0, train_tokens = 0, val_docs = 0, val_tokens = 0, bytes = 0;
  double tokenizer_seconds = 0, encode_seconds = 0;
};

// What prepare reads and checks before it writes anything (the output directory included): the
// documents and their train/val split, refused when either split would be empty.
struct PrepareInput {
  Documents docs;
  std::vector<bool> is_val;
};
PrepareInput read_prepare_input(const PrepareOptions& opt);

// Runs the stage on checked input; `log` receives progress lines. Writes <output>/train.h5,
// val.h5, tokenizer.txt (Hugging Face: tokenizer.json + tokenizer_config.json) (each atomically).
// `config_ini` is stored in both shards.
PrepareSummary run_prepare(const PrepareOptions& opt, const PrepareInput& in, const std::string& config_ini,
                           const std::function<void(const std::string&)>& log);
// Both steps at once.
PrepareSummary run_prepare(const PrepareOptions& opt, const std::string& config_ini,
                           const std::function<void(const std::string&)>& log);

}  // namespace headroom::data
