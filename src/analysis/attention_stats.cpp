#include "analysis/attention_stats.h"

#include "analysis/means.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace headroom::analysis {

double row_entropy(RowView r) {
  double h = 0;
  for (double p : r.p)
    if (p > 0) h -= p * std::log(p);
  return h;
}

double row_normalized_entropy(RowView r) {
  if (r.p.size() < 2) return kNaN;
  return row_entropy(r) / std::log(static_cast<double>(r.p.size()));
}

double row_mass(RowView r, int64_t begin, int64_t end) {
  const int64_t n = static_cast<int64_t>(r.p.size());
  const int64_t a = std::max(begin, r.first) - r.first, b = std::min(end, r.first + n) - r.first;
  double s = 0;
  for (int64_t i = a; i < b; ++i) s += r.p[static_cast<size_t>(i)];
  return s;
}

double row_sink_share(RowView r, int64_t k) { return row_mass(r, 0, k); }

int64_t row_top1(RowView r) {
  if (r.p.empty()) fail("row_top1: empty attention row");
  size_t best = 0;
  for (size_t i = 1; i < r.p.size(); ++i)
    if (r.p[i] > r.p[best]) best = i;
  return r.first + static_cast<int64_t>(best);
}

void softmax(std::span<const float> s, std::span<double> p) {
  float mx = -std::numeric_limits<float>::infinity();
  for (float v : s) mx = std::max(mx, v);
  double z = 0;
  for (size_t i = 0; i < s.size(); ++i) z += p[i] = std::exp(static_cast<double>(s[i]) - mx);
  const double inv = 1.0 / z;
  for (size_t i = 0; i < s.size(); ++i) p[i] *= inv;
}

void HeadAccum::add_row(RowView r, int64_t sink_tokens) {
  entropy_sum += row_entropy(r);
  ++rows;
  if (r.p.size() >= 2) norm_entropy_sum += row_normalized_entropy(r), ++norm_rows;
  sink_sum += row_sink_share(r, sink_tokens);
  if (r.first == 0) first_sum += r.p[0], ++first_rows;
}

void HeadAccum::add_needle(RowView r, int64_t begin, int64_t end) {
  needle_sum += row_mass(r, begin, end);
  ++needle_probes;
}

void HeadAccum::merge(const HeadAccum& o) {
  entropy_sum += o.entropy_sum, rows += o.rows;
  norm_entropy_sum += o.norm_entropy_sum, norm_rows += o.norm_rows;
  sink_sum += o.sink_sum;
  first_sum += o.first_sum, first_rows += o.first_rows;
  needle_sum += o.needle_sum, needle_probes += o.needle_probes;
}

double HeadAccum::entropy() const { return rows ? entropy_sum / static_cast<double>(rows) : kNaN; }
double HeadAccum::norm_entropy() const { return norm_rows ? norm_entropy_sum / static_cast<double>(norm_rows) : kNaN; }
double HeadAccum::sink_share() const { return rows ? sink_sum / static_cast<double>(rows) : kNaN; }
double HeadAccum::first_token_mass() const { return first_rows ? first_sum / static_cast<double>(first_rows) : kNaN; }
double HeadAccum::needle_mass() const { return needle_probes ? needle_sum / static_cast<double>(needle_probes) : kNaN; }

double sink_rate(const std::vector<HeadAccum>& heads, double eps) {
  if (heads.empty()) return kNaN;
  int64_t n = 0;
  for (const auto& h : heads)
    if (h.first_rows > 0 && h.first_token_mass() > eps) ++n;
  return static_cast<double>(n) / static_cast<double>(heads.size());
}

double RetrievalTest::step(int64_t top1, int32_t generated) const {
  if (needle_end <= needle_begin) return 0;
  if (top1 < needle_begin || top1 >= needle_end || top1 >= prompt_len) return 0;
  return prompt[top1] == generated ? 1.0 / static_cast<double>(needle_end - needle_begin) : 0.0;
}

void RetrievalAccum::add_test(const std::vector<double>& s) {
  if (s.size() != sum.size()) fail("RetrievalAccum: ", s.size(), " head scores for ", sum.size(), " heads");
  for (size_t i = 0; i < s.size(); ++i) sum[i] += s[i];
  ++tests;
}

std::vector<double> RetrievalAccum::scores() const {
  std::vector<double> out(sum.size(), kNaN);
  if (tests == 0) return out;
  for (size_t i = 0; i < sum.size(); ++i) out[i] = sum[i] / static_cast<double>(tests);
  return out;
}

int64_t count_above(const std::vector<double>& scores, double threshold) {
  int64_t n = 0;
  for (double s : scores)
    if (s > threshold) ++n;  // NaN compares false
  return n;
}

}  // namespace headroom::analysis
