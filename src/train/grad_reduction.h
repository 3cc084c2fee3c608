// How a step's gradients are summed over the cp × dp ranks that hold the same weights: all-reduced,
// or with ZeRO-2 reduce-scattered so that each rank receives the sum of only the range whose AdamW
// moments it keeps; in one call after the backward pass, or in buckets started as soon as the
// backward is done with them, so that the reduction overlaps the rest of it.
#pragma once

#include "model/model.h"
#include "parallel/comm.h"
#include "train/optimizer.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace headroom::train {

struct GradReduction {
  parallel::Comm* replicas = nullptr;
  bool scatter = false;  // ZeRO-2: rank r's sum lands in its optimizer range only
  parallel::WirePrecision wire = parallel::WirePrecision::kFp32;
  // Parameter index ranges [first, end), each contiguous in the arena, in the order they start: the
  // last parameters first, as the backward pass finishes them.
  std::vector<std::pair<size_t, size_t>> buckets;
  size_t started = 0;  // buckets[0, started) are in flight
};

// bucket_mib = 0 or a single replica: one bucket, started by finish_reduction. scatter needs opt's
// ZeRO-1 ranges.
GradReduction make_grad_reduction(const model::Model<float>& m, const AdamW<float>& opt, parallel::Comm* replicas,
                                  bool scatter, double bucket_mib, parallel::WirePrecision wire);

// The backward pass is done with every parameter of index ≥ k (forward_backward's grads_final):
// starts each bucket that completes, after summing its TP-partial gradients over the TP group.
void start_ready_buckets(model::Model<float>& m, const AdamW<float>& opt, GradReduction& r, size_t k);

// Starts the buckets left and waits for all. Then every gradient is the sum over the replicas (with
// scatter: those in this rank's optimizer range; the rest hold this rank's own part).
void finish_reduction(model::Model<float>& m, const AdamW<float>& opt, GradReduction& r);

}  // namespace headroom::train
