#include "train/throughput.h"

#include "buffer.h"
#include "model/params.h"

#include <algorithm>
#include <chrono>

namespace headroom::train {

double flops_per_token(const config::ModelConfig& m, long seq_len) {
  const double n = static_cast<double>(model::count_non_embedding(model::param_specs(m)));
  double keys = 0;
  const double causal = (static_cast<double>(seq_len) + 1) / 2;
  for (long i = 0; i < m.n_layers; ++i) {
    const bool sliding = m.layer_pattern[static_cast<size_t>(i) % m.layer_pattern.size()] == 'S';
    keys += sliding ? std::min(static_cast<double>(m.window), causal) : causal;
  }
  return 6.0 * n + 6.0 * static_cast<double>(m.n_heads * (m.head_dim_qk + m.head_dim_v)) * keys;
}

double measure_matmul_rate(const kernels::Ops& ops) {
  const int64_t M = 2048, N = 1024, K = 512;
  kernels::Buffer<float, kernels::Ops> a(ops, M * K), b(ops, K * N), c(ops, M * N);
  ops.fill(a.get(), 0.5f, M * K);
  ops.fill(b.get(), 0.25f, K * N);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    ops.matmul(a.get(), b.get(), c.get(), M, N, K, false, false, false);
    ops.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * M * N * K / s);
  }
  return best;
}

}  // namespace headroom::train
