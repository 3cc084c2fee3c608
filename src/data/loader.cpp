#include "data/loader.h"

#include "util/error.h"
#include "util/random.h"

namespace headroom::data {

int64_t window_count(int64_t n_tokens, int64_t seq_len) { return n_tokens > 0 ? (n_tokens - 1) / seq_len : 0; }

int64_t permute_index(int64_t i, int64_t n, uint64_t key) {
  if (n <= 1) return 0;
  // Smallest even number of bits covering n, split into two halves for the Feistel rounds.
  int bits = 2;
  while ((int64_t{1} << bits) < n) bits += 2;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  uint64_t x = static_cast<uint64_t>(i);
  do {  // cycle walking: re-permute until the value lands inside [0, n)
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f = mix64(key ^ mix64(right + (round << 56))) & mask;
      const uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= static_cast<uint64_t>(n));
  return static_cast<int64_t>(x);
}

int64_t window_start(int64_t n_tokens, const StreamSpec& spec, int64_t index) {
  const int64_t n = window_count(n_tokens, spec.seq_len);
  if (n == 0) fail("the shard holds ", n_tokens, " tokens, fewer than one window of seq_len + 1 = ", spec.seq_len + 1);
  const int64_t epoch = index / n;
  const uint64_t key = mix64(spec.seed ^ mix64(static_cast<uint64_t>(epoch) + 0x5eed));
  return permute_index(index % n, n, key) * spec.seq_len;
}

void read_sample(const ShardReader& shard, const StreamSpec& spec, int64_t index, int32_t* out) {
  read_tokens(shard, window_start(shard.n_tokens, spec, index), spec.seq_len + 1, out);
}

SampleRange dp_slice(int64_t step, int64_t global_batch, int dp_size, int dp_rank) {
  if (dp_size <= 0 || dp_rank < 0 || dp_rank >= dp_size)
    fail("internal: data-parallel rank ", dp_rank, " of ", dp_size);
  if (global_batch % dp_size != 0)
    fail("train.global_batch = ", global_batch, " is not divisible by the data-parallel size ", dp_size);
  const int64_t per_rank = global_batch / dp_size;
  return {step * global_batch + dp_rank * per_rank, per_rank};
}

}  // namespace headroom::data
