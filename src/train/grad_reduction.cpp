#include "train/grad_reduction.h"

#include <algorithm>

namespace headroom::train {

GradReduction make_grad_reduction(const model::Model<float>& m, const AdamW<float>& opt, parallel::Comm* replicas,
                                  bool scatter, double bucket_mib, parallel::WirePrecision wire) {
  GradReduction r{replicas, scatter && opt.zero != nullptr, wire, {}, 0};
  const size_t n = m.specs.size();
  if (bucket_mib <= 0 || replicas->size() == 1) {  // nothing to overlap without replicas
    r.buckets.emplace_back(0, n);
    return r;
  }
  // Whole parameters, walked from the last: a bucket closes once it holds bucket_mib.
  const double limit = bucket_mib * 1024 * 1024;
  size_t end = n;
  double bytes = 0;
  for (size_t i = n; i-- > 0;) {
    bytes += static_cast<double>(m.shards[i].numel()) * sizeof(float);
    if (bytes >= limit || i == 0) {
      r.buckets.emplace_back(i, end);
      end = i;
      bytes = 0;
    }
  }
  return r;
}

namespace {

void start_bucket(model::Model<float>& m, const AdamW<float>& opt, GradReduction& r) {
  const auto [first, end] = r.buckets[r.started++];
  model::sync_partial_grads(m, first, end);
  const int64_t a = m.offsets[first], b = m.offsets[end - 1] + m.shards[end - 1].numel();
  float* g = m.grads.get();
  if (!r.scatter) return r.replicas->start_allreduce_sum(g + a, b - a, r.wire);
  // Each rank's optimizer range, cut to this bucket.
  std::vector<int64_t> counts(opt.counts.size()), displs(opt.displs.size());
  for (size_t q = 0; q < counts.size(); ++q) {
    displs[q] = std::clamp(opt.displs[q], a, b);
    counts[q] = std::clamp(opt.displs[q] + opt.counts[q], a, b) - displs[q];
  }
  r.replicas->start_reduce_scatter_sum(g, counts.data(), displs.data(), r.wire);
}

}  // namespace

void start_ready_buckets(model::Model<float>& m, const AdamW<float>& opt, GradReduction& r, size_t k) {
  while (r.started < r.buckets.size() && r.buckets[r.started].first >= k) start_bucket(m, opt, r);
}

void finish_reduction(model::Model<float>& m, const AdamW<float>& opt, GradReduction& r) {
  while (r.started < r.buckets.size()) start_bucket(m, opt, r);
  r.replicas->wait_all();
  r.started = 0;
}

}  // namespace headroom::train
