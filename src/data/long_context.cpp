#include "data/long_context.h"

#include "data/loader.h"
#include "util/error.h"
#include "util/random.h"

#include <algorithm>

namespace headroom::data {

DocumentStream::DocumentStream(std::vector<uint64_t> doc_offsets, int64_t seq_len, uint64_t seed)
    : offsets_(std::move(doc_offsets)), window_(seq_len + 1), seed_(seed) {
  if (offsets_.size() < 2) fail("the shard holds no document: cannot build long-context windows");
  n_docs_ = static_cast<int64_t>(offsets_.size()) - 1;
  if (seq_len < 1) fail("internal: long-context window of ", seq_len, " tokens");
  if (offsets_.back() == offsets_.front()) fail("the shard's documents hold no token");
}

int64_t DocumentStream::doc_length(int64_t d) const {
  return static_cast<int64_t>(offsets_[static_cast<size_t>(d + 1)] - offsets_[static_cast<size_t>(d)]);
}

const DocumentStream::Plan& DocumentStream::plan(int64_t epoch) {
  if (plan_.epoch == epoch) return plan_;
  Plan p;
  p.epoch = epoch;
  p.key = mix64(seed_ ^ mix64(static_cast<uint64_t>(epoch) + 0xd0c5ull));
  int64_t filled = window_;  // start a new window at the first document
  for (int64_t k = 0; k < n_docs_; ++k) {
    if (filled >= window_) {
      p.first.push_back(k);
      filled = 0;
    }
    filled += doc_length(permute_index(k, n_docs_, p.key));
  }
  // The last window may be short of documents: it wraps around to the epoch's first documents
  // (see pieces()), so every window is full.
  plan_ = std::move(p);
  return plan_;
}

int64_t DocumentStream::windows_in_epoch(int64_t epoch) { return static_cast<int64_t>(plan(epoch).first.size()); }

std::vector<DocumentPiece> DocumentStream::pieces(int64_t index) {
  if (index < 0) fail("internal: negative sample index ", index);
  // Find the epoch: extend the table of epoch starts as far as needed.
  while (epoch_first_sample_.back() <= index) {
    const int64_t e = static_cast<int64_t>(epoch_first_sample_.size()) - 1;
    epoch_first_sample_.push_back(epoch_first_sample_.back() + windows_in_epoch(e));
  }
  const auto it = std::upper_bound(epoch_first_sample_.begin(), epoch_first_sample_.end(), index);
  const int64_t epoch = (it - epoch_first_sample_.begin()) - 1;
  const Plan& p = plan(epoch);
  const int64_t w = index - epoch_first_sample_[static_cast<size_t>(epoch)];
  std::vector<DocumentPiece> out;
  int64_t need = window_;
  for (int64_t k = p.first[static_cast<size_t>(w)]; need > 0; ++k) {
    const int64_t d = permute_index(k % n_docs_, n_docs_, p.key);
    const int64_t len = doc_length(d);
    const int64_t take = std::min(len, need);
    out.push_back({d, take, take == len});
    need -= take;
  }
  return out;
}

void DocumentStream::read(const ShardReader& shard, int64_t index, int32_t* out) {
  int64_t at = 0;
  for (const auto& piece : pieces(index)) {
    read_tokens(shard, static_cast<int64_t>(offsets_[static_cast<size_t>(piece.doc)]), piece.length, out + at);
    at += piece.length;
  }
}

}  // namespace headroom::data
