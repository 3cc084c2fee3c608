// The `prepare` stage: text files → tokenizer → a dataset of token shards (dataset.h), streaming
// in bounded memory, split over MPI ranks by input file.
#pragma once

#include "data/shard.h"
#include "data/tokenizer.h"
#include "parallel/comm.h"

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
  long shard_mib = 2048;      // tokens per shard file, in MiB as stored
  long batch_mib = 64;        // text read and encoded at a time by one rank
  long max_document_mib = 64;
  long bpe_sample_mib = 256;  // "bpe": text of the training sample
};

// Whole documents go to val when split_draw(text, seed) < val_fraction, so the split does not
// depend on input order or layout; when that leaves a split empty and there are at least two
// documents, the document of lowest draw goes to val (highest: to train).
std::vector<bool> split_validation(const std::vector<std::string>& texts, double val_fraction, unsigned long seed);

struct PrepareSummary {
  std::string tokenizer_id;
  int64_t train_docs = 0, train_tokens = 0, val_docs = 0, val_tokens = 0, bytes = 0;
  int64_t train_shards = 0, val_shards = 0;
  int64_t peak_rss_mib = 0;  // the largest of any rank's
  // The largest of any rank's growth of its resident set from the start (the program itself: code
  // and libraries, which differ between builds) to its peak: what the memory budget bounds.
  int64_t work_rss_mib = 0;
  double tokenizer_seconds = 0, encode_seconds = 0;
};

// Runs the stage on every rank of `comm` (nullptr: this process alone); each rank reads its share
// of the input files (balanced by size; large uncompressed .jsonl files in pieces) and writes its
// own shards. `log` receives progress lines (rank 0's). Writes <output>/dataset.json, the shards
// it names, and tokenizer.txt (Hugging Face: tokenizer.json + tokenizer_config.json); shards are
// written under <output>/partial/ and moved into <output> only when every rank has finished, so an
// interrupted run leaves no shard where complete ones are expected (a rerun starts over).
// `config_ini` is stored in every shard.
PrepareSummary run_prepare(const PrepareOptions& opt, const std::string& config_ini,
                           const std::function<void(const std::string&)>& log, parallel::Comm* comm = nullptr);

}  // namespace headroom::data
