// Long-context windows for `extend` (data.sampler = documents): each window of seq_len + 1 tokens
// is a run of whole documents of the shard, concatenated in their stored form (every document
// begins with BOS, so documents are BOS-separated), cut at the window's end. Only the last
// document of a window is cut; a document longer than the window fills it alone (its beginning).
//
// Deterministic from (seed, sample index): epoch e orders all documents by a seeded permutation
// (permute_index with a key of (seed, e)) and packs them greedily into windows; the tail of a cut
// document is not reused, the next window starts with the next document. Sample i belongs to the
// epoch whose window range holds it; plans are computed on demand (O(n_docs) per epoch) and the
// current one is cached, so resuming at any sample index needs nothing but the index.
#pragma once

#include "data/shard.h"

#include <cstdint>
#include <vector>

namespace headroom::data {

struct DocumentPiece {
  int64_t doc = 0;     // document index in the shard
  int64_t length = 0;  // tokens of it in the window (from its beginning)
  bool whole = false;  // the whole document is in the window
};

class DocumentStream {
 public:
  // doc_offsets: n_docs + 1 entries (read_doc_offsets). Throws when the shard has no document.
  DocumentStream(std::vector<uint64_t> doc_offsets, int64_t seq_len, uint64_t seed);

  // The documents that make up sample `index`, in order; their lengths sum to seq_len + 1.
  std::vector<DocumentPiece> pieces(int64_t index);

  // Reads sample `index` into out[0, seq_len + 1).
  void read(const ShardReader& shard, int64_t index, int32_t* out);

  int64_t windows_in_epoch(int64_t epoch);

 private:
  struct Plan {
    int64_t epoch = -1;
    uint64_t key = 0;
    std::vector<int64_t> first;  // per window: position (in permuted order) of its first document
  };
  const Plan& plan(int64_t epoch);
  int64_t doc_length(int64_t d) const;

  std::vector<uint64_t> offsets_;
  int64_t n_docs_ = 0, window_ = 0;
  uint64_t seed_ = 0;
  Plan plan_;
  std::vector<int64_t> epoch_first_sample_{0};  // first global sample of epoch e (computed so far)
};

}  // namespace headroom::data
