#include "model/token_layout.h"

#include "util/error.h"

namespace headroom::model {

void check_layout(const TokenLayout& l, int64_t B) {
  if (l.cp < 1) fail("parallel.cp = ", l.cp, " must be at least 1");
  if (l.cp > 1 && l.T_full % (2 * l.cp) != 0)
    fail("train.seq_len = ", l.T_full, " is not a multiple of 2 · parallel.cp = ", 2 * l.cp,
         " (context parallelism cuts each window into 2·cp equal chunks)");
  if (l.sp > 1 && (B * l.T_len()) % l.sp != 0)
    fail("parallel.sequence_parallel: the micro-batch's ", B * l.T_len(), " tokens per rank (train.micro_batch = ", B,
         " × train.seq_len / parallel.cp = ", l.T_len(), ") are not a multiple of parallel.tp = ", l.sp);
}

void take_local(const TokenLayout& l, int64_t B, const int32_t* full, int32_t* local) {
  const int64_t T = l.T_len();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) local[b * T + t] = full[b * l.T_full + l.position(t)];
}

}  // namespace headroom::model
