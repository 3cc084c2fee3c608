// The parameter registry: names and shapes per knob, and initialisation that depends only on
// (seed, name, element index).
#include "model/model.h"
#include "model/params.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace headroom;
using namespace headroom::model;
using headroom::fixtures::tiny_model;

namespace {
std::map<std::string, std::vector<int64_t>> shapes(const config::ModelConfig& c) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& s : param_specs(c)) out[s.name] = s.shape;
  return out;
}
}  // namespace

TEST(Params, ShapesFollowTheKnobs) {
  auto s = shapes(tiny_model(
      {{"n_heads", "4"}, {"n_kv_heads", "1"}, {"head_dim_qk", "6"}, {"head_dim_v", "2"}, {"qk_norm", "layer"}}));
  EXPECT_EQ(s["layers.1.attn.wq"], (std::vector<int64_t>{24, 8}));
  EXPECT_EQ(s["layers.1.attn.wk"], (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(s["layers.1.attn.wv"], (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(s["layers.1.attn.wo"], (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(s["layers.0.attn.q_norm.weight"], (std::vector<int64_t>{24}));
  EXPECT_EQ(s["layers.0.attn.k_norm.weight"], (std::vector<int64_t>{6}));
  EXPECT_EQ(s["lm_head.weight"], (std::vector<int64_t>{13, 8}));
  auto h = shapes(tiny_model({{"qk_norm", "head"}, {"tie_embeddings", "true"}}));
  EXPECT_EQ(h["layers.0.attn.q_norm.weight"], (std::vector<int64_t>{4}));
  EXPECT_EQ(h.count("lm_head.weight"), 0u);
  EXPECT_EQ(shapes(tiny_model({})).count("layers.0.attn.q_norm.weight"), 0u);
}

TEST(Params, InitDependsOnSeedNameAndIndexOnly) {
  const auto a = tiny_model({{"d_ff", "12"}});
  const auto b = tiny_model({{"d_ff", "20"}});
  const auto specs_a = param_specs(a), specs_b = param_specs(b);
  auto find = [](const std::vector<ParamSpec>& v, const std::string& n) {
    for (const auto& s : v)
      if (s.name == n) return s;
    throw std::runtime_error(n);
  };
  // Same name and shape: same values. A wider d_ff keeps the first rows of w_gate.
  std::vector<float> x(96), y(96), z(160);
  init_values(find(specs_a, "layers.0.attn.wq"), 7, 0, 32, x.data());
  init_values(find(specs_b, "layers.0.attn.wq"), 7, 0, 32, y.data());
  EXPECT_EQ(std::vector<float>(x.begin(), x.begin() + 32), std::vector<float>(y.begin(), y.begin() + 32));
  init_values(find(specs_a, "layers.0.mlp.w_gate"), 7, 0, 96, x.data());
  init_values(find(specs_b, "layers.0.mlp.w_gate"), 7, 0, 160, z.data());
  EXPECT_EQ(x, std::vector<float>(z.begin(), z.begin() + 96));
  // A slice computed on its own equals the same slice of the whole (any rank can init any shard).
  init_values(find(specs_a, "layers.0.mlp.w_gate"), 7, 40, 8, y.data());
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 8), std::vector<float>(x.begin() + 40, x.begin() + 48));
  // Other seed, other name: other values. Statistics match init_std.
  init_values(find(specs_a, "layers.0.mlp.w_gate"), 8, 0, 96, y.data());
  EXPECT_NE(x, y);
  init_values(find(specs_a, "layers.0.mlp.w_up"), 7, 0, 96, y.data());
  EXPECT_NE(x, y);
  std::vector<double> big(20000);
  ParamSpec spec{"probe", {20000}, Split::kNone, Init::kNormal, 0.02, true, false};
  init_values(spec, 1, 0, 20000, big.data());
  double mean = 0, var = 0;
  for (double v : big) mean += v;
  mean /= 20000;
  for (double v : big) var += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(std::sqrt(var / 20000), 0.02, 0.0005);
}

TEST(Params, FreezePatterns) {
  EXPECT_TRUE(matches_any("layers.3.attn.wq", "layers.*.attn.w?"));
  EXPECT_TRUE(matches_any("embed.weight", "lm_head.weight, embed.weight"));
  EXPECT_FALSE(matches_any("layers.3.attn.q_norm.weight", "layers.*.attn.w?"));
  EXPECT_FALSE(matches_any("layers.3.mlp.w_up", ""));
}
