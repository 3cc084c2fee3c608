#include "eval/loss_by_position.h"

#include "data/loader.h"
#include "util/error.h"

namespace headroom::eval {

std::vector<std::pair<int64_t, int64_t>> position_buckets(int64_t length) {
  std::vector<std::pair<int64_t, int64_t>> b;
  int64_t start = 0, end = 16;
  while (start < length) {
    b.emplace_back(start, std::min(end, length));
    start = end;
    end *= 2;
  }
  return b;
}

std::vector<double> window_bucket_losses(Decoder& dec, const data::ShardReader& val, int64_t length, uint64_t seed,
                                         int64_t index) {
  if (data::window_count(val.n_tokens, length) < 1)
    fail("loss_by_position: the val shard ", val.path, " holds ", val.n_tokens, " tokens, fewer than one window of ",
         length + 1, "; use a larger data.val or shorter eval.lengths");
  std::vector<int32_t> window(static_cast<size_t>(length + 1));
  data::read_sample(val, {length, seed}, index, window.data());
  const std::vector<double> lp = token_logprobs(dec, window);
  const auto buckets = position_buckets(length);
  std::vector<double> out(2 * buckets.size(), 0.0);
  for (size_t b = 0; b < buckets.size(); ++b)
    for (int64_t t = buckets[b].first; t < buckets[b].second; ++t) {
      out[2 * b] -= lp[static_cast<size_t>(t)];
      out[2 * b + 1] += 1;
    }
  return out;
}

}  // namespace headroom::eval
