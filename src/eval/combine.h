// Combining per-sample results across MPI ranks so the result does not depend on the rank count.
// Each rank computes a disjoint set of samples; results are placed by global sample index into
// arrays that are zero elsewhere, and summed across ranks. Every element has exactly one non-zero
// contributor, so the sum is exact (x + 0 = x) and the aggregate that follows runs over the same
// numbers in the same order on any rank count.
#pragma once

#include "parallel/comm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::eval {

// In place: the element-wise sum over ranks of `values` (each rank filled only its own entries).
void combine_exact(parallel::Comm& comm, std::vector<double>& values);

// Every rank's strings, placed by index: rank r passes its (index, text) pairs; every rank gets
// the full vector of n entries (indices nobody sent stay empty).
std::vector<std::string> gather_strings(parallel::Comm& comm, const std::vector<std::pair<int64_t, std::string>>& mine,
                                        int64_t n);

}  // namespace headroom::eval
