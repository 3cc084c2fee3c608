#include "train/probe.h"

#include "model/forward.h"
#include "util/error.h"

#include <algorithm>
#include <vector>

namespace headroom::train {
namespace {

struct ProbeSums {
  double loss = 0;
  int64_t tokens = 0, correct = 0, exact = 0, examples = 0;
};

// Argmax per answer position of one micro-batch; adds to `s`.
void score_batch(const std::vector<float>& logits, const std::vector<int32_t>& targets, int64_t used,
                 int64_t T, int64_t V, ProbeSums& s) {
  for (int64_t b = 0; b < used; ++b) {
    bool all = true;
    int64_t answer = 0;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = b * T + t;
      const int32_t want = targets[static_cast<size_t>(row)];
      if (want < 0) continue;
      const float* l = logits.data() + row * V;
      const int64_t best = std::max_element(l, l + V) - l;
      const bool ok = best == want;
      s.correct += ok;
      all = all && ok;
      ++answer;
    }
    s.tokens += answer;
    s.exact += (all && answer > 0);
    ++s.examples;
  }
}

}  // namespace

ProbeScores run_probe(model::Model<float>& m, model::Activations<float>& acts, const SampleFn& sample,
                      int64_t count, const parallel::Grid& grid, std::vector<float>& logits) {
  const int64_t B = acts.B, T = acts.T_len, V = m.cfg.vocab_size;
  std::vector<int32_t> ids(static_cast<size_t>(B * T)), targets(ids.size());
  // forward_loss overwrites every row.
  logits.resize(static_cast<size_t>(B * T * V));
  ProbeSums s;
  const int64_t batches = (count + B - 1) / B;
  for (int64_t k = grid.dp_rank; k < batches; k += grid.dp) {
    const int64_t first = k * B, used = std::min(B, count - first);
    std::fill(ids.begin(), ids.end(), 0);
    std::fill(targets.begin(), targets.end(), -1);  // unused rows: no loss, not scored
    for (int64_t b = 0; b < used; ++b) sample(first + b, ids.data() + b * T, targets.data() + b * T);
    const model::LossSum l = model::forward_loss<float>(m, acts, ids.data(), targets.data(), logits.data());
    s.loss += l.sum;
    score_batch(logits, targets, used, T, V, s);
  }
  // Every TP rank of a data-parallel replica computed the same sums: reduce over dp only.
  grid.dp_group->allreduce_sum(&s.loss, 1);
  int64_t n[4] = {s.tokens, s.correct, s.exact, s.examples};
  grid.dp_group->allreduce_sum(n, 4);
  if (n[0] == 0) fail("retrieval probe: no answer token in ", count, " examples");
  ProbeScores out;
  out.loss = s.loss / static_cast<double>(n[0]);
  out.token_acc = static_cast<double>(n[1]) / static_cast<double>(n[0]);
  out.exact = static_cast<double>(n[2]) / static_cast<double>(n[3]);
  out.examples = n[3];
  out.answer_tokens = n[0];
  return out;
}

}  // namespace headroom::train
