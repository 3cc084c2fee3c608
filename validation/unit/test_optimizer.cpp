// AdamW over the registry (decay groups, frozen parameters), clipping, non-finite detection and the
// learning-rate schedules.
#include "model/forward.h"
#include "model_fixtures.h"
#include "util/error.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/throughput.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace headroom;
using namespace headroom::model;
using namespace headroom::train;
using headroom::fixtures::random_batch;
using headroom::fixtures::tiny_model;

TEST(Optimizer, DecayGroups) {
  for (const auto& s : param_specs(tiny_model({{"qk_norm", "layer"}}))) {
    const bool is_norm = s.name.find("norm") != std::string::npos;
    const bool is_emb = s.name == "embed.weight" || s.name == "lm_head.weight";
    EXPECT_EQ(decays(s, false), !is_norm && !is_emb) << s.name;
    EXPECT_EQ(decays(s, true), !is_norm) << s.name;
  }
}

TEST(Optimizer, FrozenParametersDoNotMoveOthersDo) {
  const auto cfg = tiny_model({});
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  Activations<float> a = make_activations(m, 2, 6);
  const auto b = random_batch(cfg.vocab_size, 2, 6, 3);
  AdamW<float> opt = make_adamw(m, AdamWConfig{0.9, 0.95, 1e-8, 0.1, false, "layers.*.attn.w?"});
  std::vector<float> before(m.params.get(), m.params.get() + m.n_params);
  zero_grads(m);
  forward_backward<float>(m, a, b.ids.data(), b.targets.data(), 1.0f / 12);
  adamw_step(m, opt, 1e-2, 1.0);
  for (size_t i = 0; i < m.specs.size(); ++i) {
    bool changed = false;
    for (int64_t e = 0; e < m.specs[i].numel(); ++e)
      changed |= m.params.get()[m.offsets[i] + e] != before[static_cast<size_t>(m.offsets[i] + e)];
    const bool frozen = m.specs[i].name.find(".attn.w") != std::string::npos;
    EXPECT_EQ(changed, !frozen) << m.specs[i].name;
  }
}

TEST(Optimizer, TrainingReducesLossOnARepeatedBatch) {
  const auto cfg = tiny_model({{"qk_norm", "head"}, {"layer_pattern", "SF"}});
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  Activations<float> a = make_activations(m, 2, 8);
  const auto b = random_batch(cfg.vocab_size, 2, 8, 4);
  AdamW<float> opt = make_adamw(m, AdamWConfig{});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    zero_grads(m);
    const auto l = forward_backward<float>(m, a, b.ids.data(), b.targets.data(), 1.0f / 16);
    (step == 0 ? first : last) = l.sum / l.count;
    adamw_step(m, opt, 3e-2, clip_scale(grad_norm(m, opt), 1.0));
  }
  EXPECT_LT(last, 0.5 * first);
}

TEST(Optimizer, ClippingAndNonFiniteDetection) {
  EXPECT_DOUBLE_EQ(clip_scale(10.0, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(clip_scale(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clip_scale(10.0, 0.0), 1.0);
  const auto cfg = tiny_model({});
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  zero_grads(m);
  EXPECT_EQ(first_nonfinite_grad(m), "");
  const int i = find_param(m, "layers.1.mlp.w_up");
  m.grads.get()[m.offsets[static_cast<size_t>(i)] + 3] = std::numeric_limits<float>::quiet_NaN();
  m.grads.get()[m.n_params - 1] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(first_nonfinite_grad(m), "layers.1.mlp.w_up");
}

// The global gradient norm sums runs of contiguous counted tensors at once; it must equal the
// per-tensor definition, frozen tensors (which split the runs) left out.
TEST(Optimizer, GradNormSkipsFrozenTensorsAndMatchesThePerTensorSum) {
  const auto cfg = tiny_model({});
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  AdamW<float> opt = make_adamw(m, AdamWConfig{0.9, 0.95, 1e-8, 0.1, false, "layers.0.attn.w?"});
  for (int64_t e = 0; e < m.n_params; ++e) m.grads.get()[e] = static_cast<float>((e % 7) - 3) * 0.25f;
  double want = 0;
  int frozen = 0;
  for (size_t i = 0; i < m.specs.size(); ++i) {
    frozen += opt.frozen[i];
    if (opt.frozen[i]) continue;
    for (int64_t e = 0; e < m.shards[i].numel(); ++e) {
      const double g = m.grads.get()[m.offsets[i] + e];
      want += g * g;
    }
  }
  ASSERT_EQ(frozen, 4) << "layer 0's W_Q, W_K, W_V, W_O";
  EXPECT_NEAR(grad_norm(m, opt), std::sqrt(want), 1e-12 * std::sqrt(want));
}

TEST(Schedule, WarmupCosineWsdLinear) {
  Schedule cos{config::Schedule::kCosine, 1.0, 0.1, 10, 110, 0};
  EXPECT_DOUBLE_EQ(learning_rate(cos, 0), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(cos, 9), 1.0);
  EXPECT_NEAR(learning_rate(cos, 60), 0.55, 1e-12);
  EXPECT_NEAR(learning_rate(cos, 110), 0.1, 1e-12);
  Schedule wsd{config::Schedule::kWsd, 1.0, 0.0, 10, 100, 20};
  EXPECT_DOUBLE_EQ(learning_rate(wsd, 50), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(wsd, 79), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(wsd, 90), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate(wsd, 100), 0.0);
  Schedule lin{config::Schedule::kLinear, 2.0, 0.0, 0, 100, 0};
  EXPECT_DOUBLE_EQ(learning_rate(lin, 0), 2.0);
  EXPECT_DOUBLE_EQ(learning_rate(lin, 25), 1.5);
}

// The one FLOP formula (train/throughput.h): 6 per weight and token, and for attention 6·(dqk + dv)
// per head and key seen, with (T+1)/2 keys per query on a causal layer and at most `window` on a
// sliding one; for dqk = dv it is PaLM's causal 6·N + 6·L·T·d_attn (up to T+1 for T).
TEST(Throughput, FlopsPerTokenCountsWeightsAndTheKeysEachQuerySees) {
  const config::ModelConfig full = tiny_model({});
  const double n = static_cast<double>(count_non_embedding(param_specs(full)));
  const long T = 63;
  const double attn = static_cast<double>(full.n_heads * (full.head_dim_qk + full.head_dim_v));
  EXPECT_DOUBLE_EQ(flops_per_token(full, T), 6 * n + 6 * attn * static_cast<double>(full.n_layers) * (T + 1) / 2.0);
  const double d_attn = static_cast<double>(full.n_heads * full.head_dim_qk);
  EXPECT_NEAR(flops_per_token(full, T), 6 * n + 6 * static_cast<double>(full.n_layers) * T * d_attn,
              6 * static_cast<double>(full.n_layers) * d_attn)
      << "PaLM's causal formula, to one token";
  const config::ModelConfig sliding = tiny_model({{"layer_pattern", "SF"}, {"window", "4"}});
  const double keys = 4.0 + (T + 1) / 2.0;  // layer 0 sliding (window 4), layer 1 full
  EXPECT_DOUBLE_EQ(flops_per_token(sliding, T), 6 * n + 6 * attn * keys);
}

// The LM head is counted by its work: tied or not, the same FLOPs, and its share is 6·vocab·d_model
// (what a row without a target saves, since the head runs only on rows with one).
TEST(Throughput, TheLmHeadIsCountedTiedOrNot) {
  const config::ModelConfig untied = tiny_model({}), tied = tiny_model({{"tie_embeddings", "true"}});
  EXPECT_DOUBLE_EQ(flops_per_token(tied, 63), flops_per_token(untied, 63));
  double head = 0;
  for (const auto& s : param_specs(untied))
    if (s.name == "lm_head.weight") head = static_cast<double>(s.numel());
  ASSERT_GT(head, 0);
  EXPECT_DOUBLE_EQ(head_flops_per_row(untied), 6 * head);
}

// The MFU denominator: train.peak_tflops when set, the nominal bf16 peak of a known GPU, else the
// GEMM rate measured now. Names as CUDA reports them; the specific entries win over their prefixes.
TEST(Throughput, PeakForMfu) {
  EXPECT_EQ(nominal_bf16_peak("NVIDIA H200"), 989e12);
  EXPECT_EQ(nominal_bf16_peak("NVIDIA H100 80GB HBM3"), 989e12);
  EXPECT_EQ(nominal_bf16_peak("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(nominal_bf16_peak("NVIDIA A100-SXM4-80GB"), 312e12) << "not A10's";
  EXPECT_EQ(nominal_bf16_peak("NVIDIA A10"), 125e12);
  EXPECT_EQ(nominal_bf16_peak("NVIDIA L40S"), 362e12) << "not L40's or L4's";
  EXPECT_EQ(nominal_bf16_peak("NVIDIA L4"), 121e12);
  EXPECT_EQ(nominal_bf16_peak("Tesla T4"), 0.0) << "unknown: measured instead";
  config::TrainConfig t{};
  t.device = config::Device::kCpu;
  t.peak_tflops = 12.5;
  std::string source;
  EXPECT_EQ(mfu_peak(t, kernels::cpu_ops(), source), 12.5e12);
  EXPECT_EQ(source, "train.peak_tflops");
  t.peak_tflops = 0;
  EXPECT_GT(mfu_peak(t, kernels::cpu_ops(), source), 1e9) << "a CPU core does more than 1 GFLOP/s";
  EXPECT_EQ(source, "GEMM rate measured at start");
}
