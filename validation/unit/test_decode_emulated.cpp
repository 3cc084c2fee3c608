// Decoding with the KV cache in the table's precision on the emulated GPU (the CUDA backend's
// kernels on the CPU emulator): the bf16 tables keep bf16 keys and values, which their attention
// reads in bf16 anyway. So against an fp32 cache on the same table the logits are the same bits and
// greedy decoding the same tokens, on every attention path a decoding call can take, with sliding
// layers whose windows move; and against the CPU's fp32 logits the distance stays within the bf16
// noise floor: how far the CPU's logits move when the weights alone are rounded to bf16 (as
// test_emulated_device.sh and test_gpu_cases.h derive theirs).
#include "cuda/emu/runtime_emu.h"
#include "cuda/table.h"
#include "model/decode.h"
#include "model_fixtures.h"
#include "noise_floor.h"
#include "util/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace headroom;
using namespace headroom::model;
using headroom::fixtures::random_batch;
using headroom::fixtures::tiny_model;

namespace {

double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]), r += double(b[i]) * b[i];
  return std::sqrt(d / r);
}

// GQA, a sliding layer before a full one, a window the prefill chunks overrun many times.
config::ModelConfig decoding_model() {
  return tiny_model({{"n_heads", "4"}, {"n_kv_heads", "2"}, {"layer_pattern", "SF"}, {"window", "5"}});
}

// `to`'s weights set to `from`'s (host), each rounded to bf16 when asked.
void copy_weights(const Model<float>& from, Model<float>& to, bool round) {
  std::vector<float> w(static_cast<size_t>(from.n_params));
  from.ops->copy_to_host(w.data(), from.params.get(), w.size() * sizeof(float));
  if (round)
    for (float& x : w) x = util::bf16_to_float(util::float_to_bf16(x));
  to.ops->copy_from_host(to.params.get(), w.data(), w.size() * sizeof(float));
}

struct Decoded {
  std::vector<float> logits;  // every prompt position's, [T, V]
  std::vector<int32_t> tokens;
  int64_t cache_bytes = 0;
};

Decoded decode(Model<float>& m, const std::vector<int32_t>& prompt, int64_t chunk, KvPrecision precision) {
  const int64_t T = static_cast<int64_t>(prompt.size()), V = m.cfg.vocab_size, max_new = 12;
  KvCache<float> cache = make_kv_cache(m, T + max_new, chunk, KvWindows::kWindowOnly, precision);
  Decoded d;
  for (size_t i = 0; i < cache.k.size(); ++i) d.cache_bytes += cache.k[i].size() + cache.v[i].size();
  d.logits.resize(static_cast<size_t>(T * V));
  prefill(m, cache, prompt.data(), T, d.logits.data());
  EXPECT_GT(cache.first[0], 0) << "the sliding layer's window never moved";
  cache.len = 0;
  d.tokens = greedy_generate(m, cache, prompt, max_new, -1);
  return d;
}

struct Path {
  const char* name;
  kernels::AttentionKernel kernel;
};

}  // namespace

TEST(DecodeEmulated, Bf16CacheGivesTheFp32CachesLogitsBitForBit) {
  const auto cfg = decoding_model();
  Model<float> cpu = make_model(cfg, kernels::cpu_ops());
  const int64_t T = 40;
  const auto prompt = random_batch(cfg.vocab_size, 1, T, 21).ids;
  for (const Path& p : {Path{"flash", kernels::AttentionKernel::kFlash},
                        Path{"blocked", kernels::AttentionKernel::kBlocked},
                        Path{"auto", kernels::AttentionKernel::kAuto}}) {
    const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, p.kernel);
    ASSERT_EQ(table.kv_bytes, 2) << p.name;
    Model<float> m = make_model(cfg, table, {}, {.random_weights = false, .gradients = false});
    copy_weights(cpu, m, false);
    for (int64_t chunk : {int64_t{1}, int64_t{7}}) {
      const std::string what = std::string(p.name) + ", chunks of " + std::to_string(chunk);
      const Decoded fp32 = decode(m, prompt, chunk, KvPrecision::kCompute);
      const Decoded bf16 = decode(m, prompt, chunk, KvPrecision::kTable);
      EXPECT_EQ(bf16.cache_bytes * 2, fp32.cache_bytes) << what;
      EXPECT_EQ(bf16.logits, fp32.logits) << what;
      EXPECT_EQ(bf16.tokens, fp32.tokens) << what;
    }
  }
}

TEST(DecodeEmulated, Bf16CacheLogitsWithinTheBf16FloorOfTheCpu) {
  const auto cfg = decoding_model();
  Model<float> cpu = make_model(cfg, kernels::cpu_ops());
  Model<float> cpu_bf16_weights = make_model(cfg, kernels::cpu_ops(), {}, {.random_weights = false, .gradients = false});
  copy_weights(cpu, cpu_bf16_weights, true);
  const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
  Model<float> m = make_model(cfg, table, {}, {.random_weights = false, .gradients = false});
  copy_weights(cpu, m, false);
  const auto prompt = random_batch(cfg.vocab_size, 1, 40, 22).ids;
  const Decoded reference = decode(cpu, prompt, 7, KvPrecision::kTable);
  const double floor = rel_error(decode(cpu_bf16_weights, prompt, 7, KvPrecision::kTable).logits, reference.logits);
  const Decoded device = decode(m, prompt, 7, KvPrecision::kTable);
  EXPECT_TRUE(validation::within_noise_floor("emulated bf16 KV cache logits", rel_error(device.logits, reference.logits),
                                             floor));
}
