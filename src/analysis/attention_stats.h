// Attention statistics of one attention row (the probabilities one query puts on the keys it can
// see) and their per-head accumulation. Pure functions of explicit rows, so the metrics are tested
// on hand-built patterns; diagnostics.h produces the rows from a model, one at a time.
//
// Definitions (a row p over the visible keys j = first .. last, Σ p = 1; positions are absolute
// token positions in the prompt, 0 = BOS):
//   entropy            H = −Σ p_j ln p_j, in nats (0·ln 0 = 0).
//   normalized entropy H / ln(n) with n the number of visible keys (1 for uniform attention over
//                      them, 0 for one-hot). Undefined for n = 1 (no choice): such rows are left
//                      out of the normalized mean and counted apart.
//   sink share         Σ p_j over positions j < k (the first k tokens of the context; k =
//                      analyze.sink_tokens). Keys a sliding window hides contribute 0.
//   first-token mass   p_0 when position 0 is visible; the per-head mean over the queries that see
//                      position 0 is Gu et al.'s α_h^l(0) ("When Attention Sink Emerges", 2024), and
//                      the sink rate is the share of all heads (layers × heads) with α > ε (ε = 0.3).
//   needle mass        Σ p_j over the needle span [a, b), taken from the last prompt position (the
//                      query that starts the answer), at prefill.
//   retrieval score    Wu et al. ("Retrieval Head Mechanistically Explains Long-Context
//                      Factuality", 2024): at each generated token, for each head take the key
//                      position with the largest attention (the first one on a tie) of the query
//                      that produced the token; when it lies in the needle span and the generated
//                      token equals the prompt token there, the head gains 1 / (span length). A
//                      test's score is that sum; a head's score is the mean over the tests whose
//                      answer was correct; a head with score > threshold (0.1) is a retrieval head.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace headroom::analysis {

// One attention row: p[i] is the weight on key position first + i.
struct RowView {
  std::span<const double> p;
  int64_t first = 0;
};

double row_entropy(RowView r);
// NaN when the row has fewer than two keys.
double row_normalized_entropy(RowView r);
double row_mass(RowView r, int64_t begin, int64_t end);  // Σ p over positions [begin, end)
double row_sink_share(RowView r, int64_t k);             // row_mass(r, 0, k)
// Absolute position of the largest weight (the first on a tie).
int64_t row_top1(RowView r);

// Softmax of logits (in place into `p`, double): p_j = exp(s_j − max) / Σ.
void softmax(std::span<const float> logits, std::span<double> p);

// Running per-head sums over query rows. One per (layer, head).
struct HeadAccum {
  double entropy_sum = 0;
  int64_t rows = 0;
  double norm_entropy_sum = 0;
  int64_t norm_rows = 0;  // rows with at least two keys
  double sink_sum = 0;
  double first_sum = 0;
  int64_t first_rows = 0;  // rows that see position 0
  double needle_sum = 0;
  int64_t needle_probes = 0;

  void add_row(RowView r, int64_t sink_tokens);
  void add_needle(RowView r, int64_t begin, int64_t end);
  void merge(const HeadAccum& o);

  double entropy() const;  // NaN when no row
  double norm_entropy() const;
  double sink_share() const;
  double first_token_mass() const;  // Gu et al.'s α for position 0
  double needle_mass() const;
};

// Share of heads whose first-token mass exceeds eps (heads with no row seeing position 0 are
// counted as not exceeding; NaN when `heads` is empty).
double sink_rate(const std::vector<HeadAccum>& heads, double eps);

// Wu et al.'s per-test score of one head, from the generation steps of one test.
struct RetrievalTest {
  int64_t needle_begin = 0, needle_end = 0;  // span [begin, end) in prompt positions
  const int32_t* prompt = nullptr;           // prompt token ids (positions index into it)
  int64_t prompt_len = 0;

  // Score contribution of one generation step: 1/(span length) when top1 lies in the span and
  // generated == prompt[top1], else 0.
  double step(int64_t top1, int32_t generated) const;
};

// Per-head mean of the test scores over the tests that count (correct answers).
struct RetrievalAccum {
  std::vector<double> sum;  // per head
  int64_t tests = 0;        // tests counted

  explicit RetrievalAccum(size_t heads = 0) : sum(heads, 0.0) {}
  void add_test(const std::vector<double>& per_head_scores);
  std::vector<double> scores() const;  // NaN for every head when no test counted
};

// Heads with score > threshold; `scores` NaN counts as not a retrieval head.
int64_t count_above(const std::vector<double>& scores, double threshold);

}  // namespace headroom::analysis
