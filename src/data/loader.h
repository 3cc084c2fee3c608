// The deterministic training stream. Sample i of a run is a pure function of (seed, i): the shard is
// cut into non-overlapping windows of seq_len + 1 tokens on a fixed grid (start = w · seq_len, so
// consecutive windows share one token: the last target of one is the first input of the next), and
// epoch e = i / n_windows visits all windows in an order given by a seeded bijection of
// [0, n_windows). Resuming at sample i, or computing only one data-parallel rank's slice, needs
// nothing but i.
//
// Windows are cut from the concatenated documents and may span a document boundary; each document
// starts with BOS, which is how the model sees the boundary (attention is not masked across it,
// as in GPT-style packing).
#pragma once

#include "data/shard.h"

#include <cstdint>
#include <vector>

namespace headroom::data {

struct StreamSpec {
  int64_t seq_len = 0;
  uint64_t seed = 0;
};

int64_t window_count(int64_t n_tokens, int64_t seq_len);

// Bijection of [0, n) keyed by (seed, round): a 4-round Feistel network with cycle walking.
int64_t permute_index(int64_t i, int64_t n, uint64_t key);

// First token of global sample `index`.
int64_t window_start(int64_t n_tokens, const StreamSpec& spec, int64_t index);

// Reads sample `index` into out[0, seq_len + 1).
void read_sample(const ShardReader& shard, const StreamSpec& spec, int64_t index, int32_t* out);

// The contiguous range of global sample indices one data-parallel rank reads at `step`:
// [step · global_batch + rank · global_batch / dp, ... + global_batch / dp).
struct SampleRange {
  int64_t first = 0;
  int64_t count = 0;
};
SampleRange dp_slice(int64_t step, int64_t global_batch, int dp_size, int dp_rank);

}  // namespace headroom::data
