#include "train/probe.h"

#include "model/forward.h"
#include "model/token_layout.h"
#include "util/error.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace headroom::train {
namespace {

struct ProbeSums {
  double loss = 0;
  int64_t tokens = 0, correct = 0, exact = 0, examples = 0;
};

// Answer tokens and correct ones per example of one micro-batch (counts[b], counts[B + b]), from
// the logits of this rank's residual rows (of its a.rows tokens, token_layout.h). Under context or
// sequence parallelism an example's answer is spread over ranks, so the counts are summed over
// them before an example is judged exact.
void count_batch(const std::vector<float>& logits, const std::vector<int32_t>& targets,
                 const model::Activations<float>& a, int64_t V, std::vector<int64_t>& counts) {
  const int64_t row0 = a.layout.res_row0(a.B);
  for (int64_t r = 0; r < a.res_rows; ++r) {
    const int64_t row = row0 + r, b = row / a.T_len;
    const int32_t want = targets[static_cast<size_t>(row)];
    if (want < 0) continue;
    const float* l = logits.data() + r * V;
    ++counts[static_cast<size_t>(b)];
    counts[static_cast<size_t>(a.B + b)] += (std::max_element(l, l + V) - l) == want;
  }
}

// Sums over the ranks that hold other tokens of the same examples.
template <class N>
void sum_over_token_ranks(const model::Model<float>& m, N* x, int64_t n) {
  if (m.tp.sequence_parallel && std::is_same_v<N, int64_t>) m.tp.comm->allreduce_sum(x, n);
  if (m.cp.comm) m.cp.comm->allreduce_sum(x, n);
}

}  // namespace

ProbeScores run_probe(model::Model<float>& m, model::Activations<float>& acts, const SampleFn& sample, int64_t count,
                      const parallel::Grid& grid, std::vector<float>& logits) {
  const int64_t B = acts.B, T = acts.layout.T_full, V = m.cfg.vocab_size;
  std::vector<int32_t> ids(static_cast<size_t>(B * T)), targets(ids.size());
  std::vector<int32_t> local_ids(static_cast<size_t>(acts.rows)), local_targets(local_ids.size());
  // forward_loss overwrites every row.
  logits.resize(static_cast<size_t>(acts.res_rows * V));
  ProbeSums s;
  const int64_t batches = (count + B - 1) / B;
  for (int64_t k = grid.dp_rank; k < batches; k += grid.dp) {
    const int64_t first = k * B, used = std::min(B, count - first);
    std::fill(ids.begin(), ids.end(), 0);
    std::fill(targets.begin(), targets.end(), -1);  // unused rows: no loss, not scored
    for (int64_t b = 0; b < used; ++b) sample(first + b, ids.data() + b * T, targets.data() + b * T);
    model::take_local(acts.layout, B, ids.data(), local_ids.data());
    model::take_local(acts.layout, B, targets.data(), local_targets.data());
    double loss = model::forward_loss<float>(m, acts, local_ids.data(), local_targets.data(), logits.data()).sum;
    sum_over_token_ranks(m, &loss, 1);  // forward_loss summed the sequence-parallel ranks already
    s.loss += loss;
    std::vector<int64_t> counts(static_cast<size_t>(2 * B), 0);
    count_batch(logits, local_targets, acts, V, counts);
    sum_over_token_ranks(m, counts.data(), 2 * B);
    for (int64_t b = 0; b < used; ++b) {
      const int64_t answer = counts[static_cast<size_t>(b)], right = counts[static_cast<size_t>(B + b)];
      s.tokens += answer;
      s.correct += right;
      s.exact += answer > 0 && right == answer;
      ++s.examples;
    }
  }
  // Every tp and cp rank of a data-parallel replica now holds the same sums: reduce over dp only.
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
