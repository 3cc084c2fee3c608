// One streaming pass of `prepare` over one rank's input files: documents are read a batch at a
// time (at most batch_bytes of text), encoded in parallel (one Encoder per thread), and appended in
// input order to the shard of their split; a shard is closed when it holds shard_bytes of tokens.
// Memory is the batch, its tokens and one document, whatever the size of the corpus.
#pragma once

#include "data/documents.h"
#include "data/shard.h"
#include "data/tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace headroom::data {

// A document's identity, the same for any process layout: its file's index in the list of all
// inputs and its index among that file's (non-empty) documents.
struct DocId {
  int64_t file = -1, doc = -1;
  auto operator<=>(const DocId&) const = default;
};

// The split draw of a document, uniform in [0, 1): a hash of (seed, text), so the split does not
// depend on input order or layout. The document is val when the draw is below val_fraction.
double split_draw(const std::string& text, unsigned long seed);

struct PassSpec {
  std::filesystem::path dir;  // where the shards go
  std::string name_prefix;    // shard names: <split>-<prefix><index>.h5
  double val_fraction = 0;
  unsigned long seed = 0;
  int64_t batch_bytes = 0, shard_bytes = 0, max_document_bytes = 0;
  std::map<DocId, bool> overrides;  // documents whose split is set (true = val), not drawn
  std::string prepare_config;
};

// The documents with the lowest and highest split draw (ties: the first in input order), so that
// the stage can move one across when a split would be empty.
struct Extreme {
  double draw = 0;
  DocId id;
};

struct PassResult {
  std::vector<std::filesystem::path> train_shards, val_shards;      // complete, in order
  int64_t docs[2] = {0, 0}, tokens[2] = {0, 0}, bytes[2] = {0, 0};  // [train, val]
  Extreme lowest{2.0, {}}, highest{-1.0, {}};
  double seconds = 0;
};

// `files`: (index among all inputs, file) of this rank, in order. `progress(bytes_read)` is
// called after each batch.
PassResult run_prepare_pass(const PassSpec& spec, const Tokenizer& tok,
                            const std::vector<std::pair<int64_t, InputFile>>& files,
                            const std::function<void(int64_t)>& progress);

}  // namespace headroom::data
