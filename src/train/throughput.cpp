#include "train/throughput.h"

#include "buffer.h"
#include "model/model.h"
#include "model/params.h"

#ifdef HEADROOM_HAVE_CUDA
#include "cuda/device.h"
#endif

#include <algorithm>
#include <chrono>

namespace headroom::train {

double head_flops_per_row(const config::ModelConfig& m) {
  return 6.0 * static_cast<double>(m.vocab_size) * static_cast<double>(m.d_model);
}

double keys_per_query(const config::ModelConfig& m, long seq_len) {
  double keys = 0;
  const double causal = (static_cast<double>(seq_len) + 1) / 2;
  for (long i = 0; i < m.n_layers; ++i) {
    keys += model::is_sliding(m, i) ? std::min(static_cast<double>(m.window), causal) : causal;
  }
  return keys;
}

double flops_per_token(const config::ModelConfig& m, long seq_len) {
  // The LM head is counted by its work, which a tied head does too (it has no tensor of its own).
  double n = 0;
  for (const auto& s : model::param_specs(m))
    if (s.name != "embed.weight" && s.name != "lm_head.weight") n += static_cast<double>(s.numel());
  return 6.0 * n + head_flops_per_row(m) +
         6.0 * static_cast<double>(config::q_width(m) + config::attn_out_width(m)) * keys_per_query(m, seq_len);
}

double attention_forward_flops(const config::ModelConfig& m, long seq_len) {
  return 2.0 * static_cast<double>(config::q_width(m) + config::attn_out_width(m)) * keys_per_query(m, seq_len) *
         static_cast<double>(seq_len);
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

double nominal_bf16_peak(const std::string& device_name) {
  // Most specific first: "A10" is in "A100", "L4" in "L40S", "H100" in "H100 PCIe".
  static const std::pair<const char*, double> kTable[] = {
      {"H100 PCIe", 756e12}, {"GH200", 989e12}, {"H100", 989e12}, {"H200", 989e12}, {"H800", 989e12}, {"B200", 2250e12},
      {"A100", 312e12},      {"A800", 312e12},  {"L40S", 362e12}, {"L40", 181e12},  {"L4", 121e12},   {"A10", 125e12}};
  for (const auto& [name, peak] : kTable)
    if (device_name.find(name) != std::string::npos) return peak;
  return 0;
}

double mfu_peak(const config::TrainConfig& t, const kernels::Ops& ops, std::string& source) {
  if (t.peak_tflops > 0) {
    source = "train.peak_tflops";
    return t.peak_tflops * 1e12;
  }
#ifdef HEADROOM_HAVE_CUDA
  if (t.device == config::Device::kCuda) {
    const std::string name = kernels::cuda::describe_device(kernels::cuda::current_device());
    if (const double peak = nominal_bf16_peak(name); peak > 0) {
      source = "nominal bf16 peak of " + name;
      return peak;
    }
  }
#endif
  source = "GEMM rate measured at start";
  return measure_matmul_rate(ops);
}

}  // namespace headroom::train
