// KV-cache inference reproduces the training forward pass: logits at every position agree whether
// the prompt is prefilled in one chunk, in uneven chunks, or one token at a time — within 10x the
// noise floor of fp32 for this model (validation/noise_floor.py): the distance of the fp32 forward
// pass to the same model's forward pass in fp64, overall and for the worst position.
#include "model/decode.h"
#include "model/forward.h"
#include "model_fixtures.h"
#include "noise_floor.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

using namespace headroom;
using namespace headroom::model;
using headroom::fixtures::random_batch;
using headroom::fixtures::tiny_model;

namespace {

double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]), r += b[i] * b[i];
  return std::sqrt(d / r);
}

std::vector<float> row(const std::vector<float>& x, int64_t t, int64_t V) {
  return std::vector<float>(x.begin() + t * V, x.begin() + (t + 1) * V);
}

void check_decode(const config::ModelConfig& cfg, int64_t T) {
  const int64_t V = cfg.vocab_size;
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  Activations<float> a = make_activations(m, 1, T);
  const auto batch = random_batch(V, 1, T, 5);
  std::vector<float> full(static_cast<size_t>(T * V));
  forward_loss<float>(m, a, batch.ids.data(), batch.targets.data(), full.data());
  // The floor: the same model (the same seed's weights) in fp64.
  Model<double> m64 = make_model(cfg, kernels::cpu_ops_f64());
  Activations<double> a64 = make_activations(m64, 1, T);
  std::vector<double> full64d(full.size());
  forward_loss<double>(m64, a64, batch.ids.data(), batch.targets.data(), full64d.data());
  const std::vector<float> full64(full64d.begin(), full64d.end());
  const double floor = rel_error(full, full64);
  double row_floor = 0;
  for (int64_t t = 0; t < T; ++t) row_floor = std::max(row_floor, rel_error(row(full, t, V), row(full64, t, V)));
  for (int64_t chunk : {T, int64_t{3}, int64_t{1}}) {
    KvCache<float> cache = make_kv_cache(m, T, chunk);
    std::vector<float> logits(full.size());
    const auto last = prefill(m, cache, batch.ids.data(), T, logits.data());
    const std::string c = "decode chunk " + std::to_string(chunk);
    EXPECT_TRUE(validation::within_noise_floor(c, rel_error(logits, full), floor));
    // Per position, not just overall: the worst row must agree too.
    double worst = 0;
    for (int64_t t = 0; t < T; ++t) worst = std::max(worst, rel_error(row(logits, t, V), row(full, t, V)));
    EXPECT_TRUE(validation::within_noise_floor(c + " worst position", worst, row_floor));
    EXPECT_TRUE(validation::within_noise_floor(c + " last position", rel_error(last, row(full, T - 1, V)), row_floor));
  }
}

}  // namespace

TEST(Decode, MatchesFullForwardMha) { check_decode(tiny_model({}), 11); }

TEST(Decode, MatchesFullForwardSlidingGqaQkNormPostNorm) {
  check_decode(tiny_model({{"n_heads", "4"},
                           {"n_kv_heads", "2"},
                           {"layer_pattern", "SF"},
                           {"window", "4"},
                           {"qk_norm", "layer"},
                           {"norm_order", "post"}}),
               13);
}

TEST(Decode, MatchesFullForwardPartialRopeYarnHeadNorm) {
  check_decode(tiny_model({{"head_dim_qk", "8"},
                           {"rope_dims_full", "4"},
                           {"qk_norm", "head"},
                           {"rope_scaling", "yarn"},
                           {"yarn_factor", "2"},
                           {"yarn_original_len", "8"},
                           {"layer_pattern", "SSF"},
                           {"window", "5"}}),
               12);
}

TEST(Decode, GreedyGenerationIsDeterministicAndStopsAtCapacity) {
  const auto cfg = tiny_model({});
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  std::vector<int32_t> prompt{1, 2, 3, 4};
  KvCache<float> c1 = make_kv_cache(m, 10, 2), c2 = make_kv_cache(m, 10, 4);
  const auto g1 = greedy_generate(m, c1, prompt, 100, -1);
  const auto g2 = greedy_generate(m, c2, prompt, 100, -1);
  EXPECT_EQ(g1, g2);
  EXPECT_EQ(g1.size(), 7u);  // 4 prompt tokens + 6 cached generated + the last one unrun
  // Continuing greedy from the prompt + first generated token reproduces the rest.
  KvCache<float> c3 = make_kv_cache(m, 10, 3);
  std::vector<int32_t> longer = prompt;
  longer.push_back(g1[0]);
  const auto g3 = greedy_generate(m, c3, longer, 100, -1);
  EXPECT_EQ(std::vector<int32_t>(g1.begin() + 1, g1.end()), g3);
  KvCache<float> c4 = make_kv_cache(m, 3, 2);
  EXPECT_THROW(prefill(m, c4, prompt.data(), 4), Error);
}

// Sliding-window layers keep a window of rows that moves to the front as the context grows
// (KvWindows::kWindowOnly): at a length twelve times the window, in chunks that do and do not divide it,
// every position's logits agree with the full cache and greedy decoding picks the same tokens.
TEST(Decode, WindowedCacheDecodesAsTheFullCache) {
  const auto cfg = tiny_model({{"n_heads", "4"}, {"n_kv_heads", "2"}, {"layer_pattern", "SSF"}, {"window", "5"}});
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  const int64_t T = 60, V = cfg.vocab_size, max_new = 20;
  const auto batch = random_batch(V, 1, T, 11);
  for (int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{7}}) {
    const std::string c = "chunk " + std::to_string(chunk);
    KvCache<float> full = make_kv_cache(m, T + max_new, chunk);
    KvCache<float> ring = make_kv_cache(m, T + max_new, chunk, KvWindows::kWindowOnly);
    for (long i = 0; i < cfg.n_layers; ++i) {
      const auto li = static_cast<size_t>(i);
      const int64_t rows = is_sliding(cfg, i) ? 2 * (cfg.window - 1) + chunk : T + max_new;
      EXPECT_EQ(ring.rows[li], rows) << c << " layer " << i;
      // GQA: only the KV heads are stored.
      EXPECT_EQ(ring.k[li].size(), rows * cfg.n_kv_heads * cfg.head_dim_qk * 4) << c;
      EXPECT_EQ(ring.v[li].size(), rows * cfg.n_kv_heads * cfg.head_dim_v * 4) << c;
    }
    std::vector<float> a(static_cast<size_t>(T * V)), b(a.size());
    prefill(m, full, batch.ids.data(), T, a.data());
    prefill(m, ring, batch.ids.data(), T, b.data());
    EXPECT_GT(ring.first[0], 0) << c << ": the window never moved";
    EXPECT_LT(rel_error(b, a), 1e-6) << c;
    full.len = ring.len = 0;
    const auto g_full = greedy_generate(m, full, batch.ids, max_new, -1);
    const auto g_ring = greedy_generate(m, ring, batch.ids, max_new, -1);
    EXPECT_EQ(g_ring, g_full) << c;
    EXPECT_EQ(g_ring.size(), static_cast<size_t>(max_new)) << c;
  }
}

TEST(Decode, LayerObserversNeedTheFullCache) {
  const auto cfg = tiny_model({{"layer_pattern", "SF"}, {"window", "4"}});
  Model<float> m = make_model(cfg, kernels::cpu_ops());
  KvCache<float> ring = make_kv_cache(m, 20, 4, KvWindows::kWindowOnly);
  const std::vector<int32_t> ids(12, 1);
  EXPECT_THROW(prefill<float>(m, ring, ids.data(), 12, nullptr, [](const LayerOutput<float>&) {}), Error);
}
