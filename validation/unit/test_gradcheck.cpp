// The backward pass of every architecture knob against central finite differences, in fp64: for
// each parameter tensor, the analytic gradient of the mean masked loss must match
// (L(θ + εe) − L(θ − εe)) / 2ε for every element, to 1e-6 relative (tensor norm).
#include "document_starts.h"
#include "model/forward.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace headroom;
using namespace headroom::model;
using headroom::fixtures::random_batch;
using headroom::fixtures::tiny_model;

namespace {

// docs: the document mask's starts [B·T], or empty for none.
double mean_loss(Model<double>& m, Activations<double>& a, const fixtures::Batch& b, const std::vector<int32_t>& docs) {
  const LossSum l =
      forward_loss<double>(m, a, b.ids.data(), b.targets.data(), nullptr, docs.empty() ? nullptr : docs.data());
  return l.sum / static_cast<double>(l.count);
}

void check_gradients(const config::ModelConfig& cfg, int64_t B, int64_t T, const fixtures::Batch& batch,
                     const std::vector<int32_t>& docs = {}) {
  Model<double> m = make_model(cfg, kernels::cpu_ops_f64());
  Activations<double> a = make_activations(m, B, T);
  int64_t count = 0;
  for (int32_t t : batch.targets) count += t >= 0;
  zero_grads(m);
  forward_backward<double>(m, a, batch.ids.data(), batch.targets.data(), 1.0 / static_cast<double>(count),
                           docs.empty() ? nullptr : docs.data());
  std::vector<double> analytic(static_cast<size_t>(m.n_params));
  std::copy(m.grads.get(), m.grads.get() + m.n_params, analytic.begin());

  const double eps = 1e-5;
  for (size_t p = 0; p < m.specs.size(); ++p) {
    double diff2 = 0, ref2 = 0;
    for (int64_t e = 0; e < m.specs[p].numel(); ++e) {
      double& w = m.params.get()[m.offsets[p] + e];
      const double saved = w;
      w = saved + eps;
      const double up = mean_loss(m, a, batch, docs);
      w = saved - eps;
      const double down = mean_loss(m, a, batch, docs);
      w = saved;
      const double numeric = (up - down) / (2 * eps);
      const double g = analytic[static_cast<size_t>(m.offsets[p] + e)];
      diff2 += (g - numeric) * (g - numeric);
      ref2 += numeric * numeric;
    }
    const double rel = std::sqrt(diff2) / std::max(std::sqrt(ref2), 1e-12);
    EXPECT_LT(rel, 1e-6) << m.specs[p].name << ": |analytic - numeric| / |numeric| = " << rel;
    EXPECT_GT(ref2, 0.0) << m.specs[p].name << " has an all-zero gradient; the check would be vacuous";
  }
}

void check_gradients(const config::ModelConfig& cfg, int64_t B, int64_t T, int mask_every = 0) {
  check_gradients(cfg, B, T, random_batch(cfg.vocab_size, B, T, 99, mask_every));
}

}  // namespace

TEST(GradCheck, Baseline) { check_gradients(tiny_model({}), 2, 5); }
TEST(GradCheck, PostNorm) { check_gradients(tiny_model({{"norm_order", "post"}}), 2, 5); }
TEST(GradCheck, LayerQkNormPre) { check_gradients(tiny_model({{"qk_norm", "layer"}}), 2, 5); }
TEST(GradCheck, LayerQkNormPost) { check_gradients(tiny_model({{"qk_norm", "layer"}, {"norm_order", "post"}}), 2, 5); }
TEST(GradCheck, HeadQkNormPre) { check_gradients(tiny_model({{"qk_norm", "head"}}), 2, 5); }
TEST(GradCheck, HeadQkNormPost) { check_gradients(tiny_model({{"qk_norm", "head"}, {"norm_order", "post"}}), 2, 5); }
TEST(GradCheck, GroupedQueryAttention) {
  check_gradients(tiny_model({{"n_heads", "4"}, {"n_kv_heads", "2"}, {"qk_norm", "layer"}}), 2, 5);
}
TEST(GradCheck, MultiQueryAttention) {
  check_gradients(tiny_model({{"n_heads", "4"}, {"n_kv_heads", "1"}, {"qk_norm", "head"}}), 2, 5);
}
TEST(GradCheck, AsymmetricQkAndV) {
  check_gradients(tiny_model({{"head_dim_qk", "6"}, {"head_dim_v", "2"}}), 2, 5);
  check_gradients(tiny_model({{"head_dim_qk", "2"}, {"head_dim_v", "6"}}), 1, 5);
}
TEST(GradCheck, SlidingWindowPattern) { check_gradients(tiny_model({{"layer_pattern", "SF"}, {"window", "2"}}), 2, 7); }
TEST(GradCheck, PartialRopeAndNope) {
  check_gradients(
      tiny_model({{"head_dim_qk", "6"}, {"rope_dims_full", "2"}, {"rope_dims_swa", "0"}, {"layer_pattern", "SF"}}), 1,
      6);
}
TEST(GradCheck, Yarn) {
  check_gradients(tiny_model({{"rope_scaling", "yarn"},
                              {"yarn_factor", "4"},
                              {"yarn_original_len", "4"},
                              {"yarn_layers", "full"},
                              {"layer_pattern", "SF"},
                              {"rope_base_full", "50"}}),
                  1, 8);
}
TEST(GradCheck, TiedEmbeddings) { check_gradients(tiny_model({{"tie_embeddings", "true"}}), 2, 5); }
TEST(GradCheck, LossMask) { check_gradients(tiny_model({}), 2, 6, 3); }

// Packed documents (data.document_mask): three in the first window, boundaries 3 later in the second
// (document_starts.h), alone and under a sliding-window layer.
TEST(GradCheck, DocumentMask) {
  const int64_t B = 2, T = 8;
  const auto docs = kernels::document_starts(B, T, 0, {3, 5});
  check_gradients(tiny_model({}), B, T, random_batch(tiny_model({}).vocab_size, B, T, 99), docs);
  const auto sliding = tiny_model({{"layer_pattern", "SF"}, {"window", "3"}});
  check_gradients(sliding, B, T, random_batch(sliding.vocab_size, B, T, 99), docs);
}

// A synthetic pretraining window has targets only on its answers: the LM head runs on those rows
// alone, and every other row's gradient must come only through attention from later answers.
TEST(GradCheck, TargetsOnAFewRowsOnly) {
  const int64_t B = 3, T = 6;
  fixtures::Batch b = random_batch(tiny_model({}).vocab_size, B, T, 99);
  for (int64_t i = 0; i < B * T; ++i)
    if (i != 3 && i != 4 && i != 2 * T + 5) b.targets[static_cast<size_t>(i)] = -1;  // sequence 1 has none
  check_gradients(tiny_model({}), B, T, b);
}
