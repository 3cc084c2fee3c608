// analyze's building blocks on inputs with known answers: attention metrics on hand-built
// probability rows (entropy, sink share, Gu et al.'s sink rate, needle mass, Wu et al.'s retrieval
// score), the eigen-solver and effective rank, least squares with in-sample and leave-one-out R²
// (against the hat-matrix identity), the bootstrap's point estimate and degenerate intervals, seed
// pairs, feature predicates, the readers of evaluate's and training's outputs, and the sections'
// statistics (means over seeds, predictors and fits, differences, findings, probe, training and
// diagnostics summaries) on hand-built studies.
#include "analysis/attention_stats.h"
#include "analysis/config_differences.h"
#include "analysis/config_scores.h"
#include "analysis/diagnostics_summary.h"
#include "analysis/features.h"
#include "analysis/findings.h"
#include "analysis/linalg.h"
#include "analysis/predictors.h"
#include "analysis/probe_summary.h"
#include "analysis/probes.h"
#include "analysis/run_scores.h"
#include "analysis/seed_noise.h"
#include "analysis/stats.h"
#include "analysis/study.h"
#include "analysis/training_means.h"
#include "config/ini_text.h"
#include "eval/niah.h"
#include "eval/sample_log.h"
#include "eval/resources.h"
#include "eval/results.h"
#include "eval/tasks.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <regex>

using namespace headroom;
using namespace headroom::analysis;

namespace {

RowView view(const std::vector<double>& p, int64_t first = 0) { return {std::span<const double>(p), first}; }

// A pool of configurations C1, C2, ...: ruler[c] lists the RULER averages of configuration c's runs
// (distinct seeds), ini[c] its resolved configuration.
Study study_of(const std::vector<std::vector<double>>& ruler, const std::vector<std::string>& ini = {}) {
  Study s;
  for (size_t c = 0; c < ruler.size(); ++c) {
    ConfigGroup g;
    g.id = "C" + std::to_string(c + 1);
    for (size_t k = 0; k < ruler[c].size(); ++k) {
      RunData r;
      r.name = g.id + "-s" + std::to_string(k + 1);
      r.seed_text = std::to_string(k + 1);
      r.has_results = true;
      r.results.ruler_average = ruler[c][k];
      r.config.stages.push_back({"pretrain", config::ini_map(c < ini.size() ? ini[c] : "")});
      r.in_pool = true;
      r.config_index = static_cast<long>(c);
      g.runs.push_back(s.runs.size());
      s.runs.push_back(r);
    }
    s.configs.push_back(g);
  }
  return s;
}

}  // namespace

// ------------------------------------------------------------------ attention metrics

TEST(AttentionStats, EntropyOfUniformOneHotAndTwoPoint) {
  const std::vector<double> uniform(8, 1.0 / 8), onehot{0, 0, 1, 0}, two{0.5, 0.5}, one{1.0};
  EXPECT_NEAR(row_entropy(view(uniform)), std::log(8.0), 1e-12);
  EXPECT_NEAR(row_normalized_entropy(view(uniform)), 1.0, 1e-12);
  EXPECT_EQ(row_entropy(view(onehot)), 0.0);
  EXPECT_EQ(row_normalized_entropy(view(onehot)), 0.0);
  EXPECT_NEAR(row_entropy(view(two)), std::log(2.0), 1e-12);
  // A single visible key: no choice, normalised entropy undefined.
  EXPECT_TRUE(std::isnan(row_normalized_entropy(view(one))));
  // p = (0.7, 0.2, 0.1): H = −Σ p ln p.
  const std::vector<double> p{0.7, 0.2, 0.1};
  const double h = -(0.7 * std::log(0.7) + 0.2 * std::log(0.2) + 0.1 * std::log(0.1));
  EXPECT_NEAR(row_entropy(view(p)), h, 1e-12);
  EXPECT_NEAR(row_normalized_entropy(view(p)), h / std::log(3.0), 1e-12);
}

TEST(AttentionStats, SinkShareAndNeedleMassRespectAbsolutePositions) {
  const std::vector<double> p{0.6, 0.1, 0.1, 0.2};
  EXPECT_NEAR(row_sink_share(view(p), 1), 0.6, 1e-12);
  EXPECT_NEAR(row_sink_share(view(p), 2), 0.7, 1e-12);
  EXPECT_NEAR(row_sink_share(view(p), 100), 1.0, 1e-12);
  EXPECT_NEAR(row_mass(view(p), 2, 4), 0.3, 1e-12);
  // A sliding-window row starting at position 3: positions 3..6; nothing of the first 2 is visible.
  EXPECT_EQ(row_sink_share(view(p, 3), 2), 0.0);
  EXPECT_NEAR(row_sink_share(view(p, 3), 5), 0.7, 1e-12);  // positions 3, 4
  EXPECT_NEAR(row_mass(view(p, 3), 5, 7), 0.3, 1e-12);
  EXPECT_EQ(row_top1(view(p, 3)), 3);
  const std::vector<double> tie{0.1, 0.4, 0.4, 0.1};
  EXPECT_EQ(row_top1(view(tie, 10)), 11);  // the first of equal maxima
}

TEST(AttentionStats, HeadAccumulatorMeansAndGuSinkRate) {
  HeadAccum h;
  const std::vector<double> r1{1.0}, r2{0.5, 0.5}, r3{0.25, 0.25, 0.25, 0.25};
  const std::vector<double> slid{0.5, 0.5};  // positions 5, 6: does not see token 0
  h.add_row(view(r1), 1);
  h.add_row(view(r2), 1);
  h.add_row(view(r3), 1);
  h.add_row(view(slid, 5), 1);
  EXPECT_NEAR(h.entropy(), (0 + std::log(2.0) + std::log(4.0) + std::log(2.0)) / 4, 1e-12);
  EXPECT_NEAR(h.norm_entropy(), 1.0, 1e-12);  // the one-key row is left out; the others are uniform
  EXPECT_NEAR(h.sink_share(), (1 + 0.5 + 0.25 + 0) / 4, 1e-12);
  // Gu et al.'s α: mean of p_0 over the queries that see position 0 (not the sliding one).
  EXPECT_NEAR(h.first_token_mass(), (1 + 0.5 + 0.25) / 3, 1e-12);
  h.add_needle(view(r3), 1, 3);
  EXPECT_NEAR(h.needle_mass(), 0.5, 1e-12);

  // Sink rate: share of all heads with α > ε = 0.3; a head that never sees token 0 counts as no sink.
  std::vector<HeadAccum> heads(4);
  const std::vector<double> a{0.5, 0.5}, b{0.31, 0.69}, c{0.29, 0.71};
  heads[0].add_row(view(a), 1);
  heads[1].add_row(view(b), 1);
  heads[2].add_row(view(c), 1);
  heads[3].add_row(view(a, 7), 1);
  EXPECT_NEAR(sink_rate(heads, 0.3), 0.5, 1e-12);
  EXPECT_NEAR(sink_rate(heads, 0.6), 0.0, 1e-12);
}

TEST(AttentionStats, RetrievalScoreFollowsWuEtAl) {
  // Prompt: BOS 5 6 7 8 9; needle span [2, 5) = tokens 6 7 8 (length 3).
  const std::vector<int32_t> prompt{256, 5, 6, 7, 8, 9};
  const RetrievalTest t{2, 5, prompt.data(), static_cast<int64_t>(prompt.size())};
  double s = 0;
  s += t.step(2, 6);  // copies the token it attends to inside the needle: +1/3
  s += t.step(3, 9);  // attends inside the needle but generates another token: 0
  s += t.step(1, 5);  // copies, but outside the needle: 0
  s += t.step(4, 8);  // +1/3
  s += t.step(-1, 6);
  EXPECT_NEAR(s, 2.0 / 3, 1e-12);

  // Per-head means over the counted tests; > 0.1 is a retrieval head.
  RetrievalAccum acc(3);
  EXPECT_TRUE(std::isnan(acc.scores()[0]));
  acc.add_test({2.0 / 3, 0.05, 0.0});
  acc.add_test({1.0 / 3, 0.25, 0.0});
  const auto sc = acc.scores();
  EXPECT_NEAR(sc[0], 0.5, 1e-12);
  EXPECT_NEAR(sc[1], 0.15, 1e-12);
  EXPECT_EQ(sc[2], 0.0);
  EXPECT_EQ(count_above(sc, 0.1), 2);
  EXPECT_EQ(count_above(sc, 0.2), 1);
  EXPECT_THROW(acc.add_test({1.0}), Error);
}

TEST(AttentionStats, SoftmaxMatchesTheDefinition) {
  const std::vector<float> s{1.0f, 2.0f, -1.0f, 0.5f};
  std::vector<double> p(4);
  softmax(s, p);
  double z = 0;
  for (float v : s) z += std::exp(static_cast<double>(v));
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(p[i], std::exp(static_cast<double>(s[i])) / z, 1e-12);
}

// ------------------------------------------------------------------ linear algebra

TEST(Linalg, JacobiRecoversPrescribedEigenvalues) {
  const auto two = symmetric_eigenvalues({2, 1, 1, 2}, 2);
  EXPECT_NEAR(two[0], 1, 1e-14);
  EXPECT_NEAR(two[1], 3, 1e-14);
  // A = Q diag(λ) Qᵀ with Q a product of Householder reflections.
  const int64_t n = 7;
  const std::vector<double> lambda{-2.5, -0.1, 0, 0.3, 1, 4, 9};
  std::mt19937_64 rng(3);
  std::normal_distribution<double> N;
  std::vector<double> Q(n * n, 0);
  for (int64_t i = 0; i < n; ++i) Q[i * n + i] = 1;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> v(n);
    double nv = 0;
    for (auto& x : v) x = N(rng), nv += x * x;
    std::vector<double> H(n * n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) H[i * n + j] = (i == j) - 2 * v[i] * v[j] / nv;
    std::vector<double> P(n * n, 0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < n; ++j) P[i * n + j] += Q[i * n + k] * H[k * n + j];
    Q = P;
  }
  std::vector<double> A(n * n, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k) A[i * n + j] += Q[i * n + k] * lambda[k] * Q[j * n + k];
  const auto ev = symmetric_eigenvalues(A, n);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(ev[i], lambda[i], 1e-10);
}

TEST(Linalg, SingularValuesAndEffectiveRank) {
  // Rows scaled orthonormal vectors: σ = 3, 2, 1 whichever side the Gram matrix is taken on.
  const double r = 1 / std::sqrt(2.0);
  const std::vector<double> x{3 * r, 3 * r, 0, 0, 0, 2 * r, -2 * r, 0, 0, 0, 0, 0, 0, 1, 0};  // 3 × 5
  auto sv = singular_values(x, 3, 5);
  ASSERT_EQ(sv.size(), 3u);
  EXPECT_NEAR(sv[0], 3, 1e-12);
  EXPECT_NEAR(sv[1], 2, 1e-12);
  EXPECT_NEAR(sv[2], 1, 1e-12);
  std::vector<double> xt(15);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) xt[j * 3 + i] = x[i * 5 + j];
  sv = singular_values(xt, 5, 3);
  EXPECT_NEAR(sv[0], 3, 1e-12);
  EXPECT_NEAR(sv[2], 1, 1e-12);
  // exp(H(σ/Σσ)): equal σ → their count; one σ → 1; (3, 1) → p = (3/4, 1/4).
  EXPECT_NEAR(effective_rank({2, 2, 2, 2}), 4, 1e-12);
  EXPECT_NEAR(effective_rank({5, 0, 0}), 1, 1e-12);
  EXPECT_NEAR(effective_rank({3, 1}), std::exp(-(0.75 * std::log(0.75) + 0.25 * std::log(0.25))), 1e-12);
  EXPECT_NEAR(effective_rank({3, 1}), 1.7547653, 1e-6);
  // σ, not σ²: with σ² the same matrix would give p = (0.9, 0.1).
  EXPECT_GT(effective_rank({3, 1}), std::exp(-(0.9 * std::log(0.9) + 0.1 * std::log(0.1))));
  EXPECT_EQ(effective_rank({0, 0}), 0);
}

TEST(Linalg, OlsR2AndLeaveOneOutAgainstTheHatMatrix) {
  // The textbook example: y = 2.2 + 0.6 x, R² = 0.6.
  const std::vector<double> x{1, 2, 3, 4, 5}, y{2, 4, 5, 4, 5};
  const OlsFit f = ols(x, 5, 1, y);
  ASSERT_TRUE(f.ok) << f.why;
  EXPECT_NEAR(f.coef[0], 2.2, 1e-12);
  EXPECT_NEAR(f.coef[1], 0.6, 1e-12);
  EXPECT_NEAR(f.r2, 0.6, 1e-12);
  // PRESS = Σ (e_i / (1 − h_ii))², h_ii = 1/n + (x_i − x̄)² / Sxx for one predictor.
  double press = 0, ss_tot = 0;
  for (int i = 0; i < 5; ++i) {
    const double e = y[i] - (2.2 + 0.6 * x[i]);
    const double h = 1.0 / 5 + (x[i] - 3) * (x[i] - 3) / 10;
    press += (e / (1 - h)) * (e / (1 - h));
    ss_tot += (y[i] - 4) * (y[i] - 4);
  }
  ASSERT_TRUE(f.loo_ok);
  EXPECT_NEAR(f.loo_r2, 1 - press / ss_tot, 1e-12);
  // An exact fit with two predictors.
  const std::vector<double> x2{0, 1, 1, 0, 2, 1, 3, 5, 4, 2, 1, 1};  // 6 rows × 2 predictors
  std::vector<double> yy;
  for (int i = 0; i < 6; ++i) yy.push_back(1 + 2 * x2[2 * i] - 0.5 * x2[2 * i + 1]);
  const OlsFit g = ols(x2, 6, 2, yy);
  ASSERT_TRUE(g.ok) << g.why;
  EXPECT_NEAR(g.r2, 1, 1e-12);
  EXPECT_NEAR(g.loo_r2, 1, 1e-9);
  EXPECT_NEAR(g.coef[1], 2, 1e-9);
  EXPECT_NEAR(g.coef[2], -0.5, 1e-9);
}

TEST(Linalg, OlsRefusesWhatItCannotFit) {
  EXPECT_FALSE(ols({1, 2}, 2, 1, {1, 2}).ok);                          // too few points
  EXPECT_FALSE(ols({1, 2, 3, 4}, 4, 1, {5, 5, 5, 5}).ok);              // nothing to explain
  EXPECT_FALSE(ols({1, 2, 2, 4, 3, 6, 4, 8}, 4, 2, {1, 3, 2, 5}).ok);  // collinear columns
  // A feature value present at a single point: in-sample fine, leave-one-out singular.
  const OlsFit f = ols({0, 0, 0, 1}, 4, 1, {1, 2, 3, 7});
  EXPECT_TRUE(f.ok);
  EXPECT_FALSE(f.loo_ok);
  EXPECT_FALSE(f.loo_why.empty());
}

// ------------------------------------------------------------------ seed pairs and bootstrap

TEST(Stats, SeedPairsAndPercentile) {
  const auto pairs = seed_pairs({{0, 1}, {2}, {3, 4, 5}}, {{10, 12}, {7}, {1, 2, 4}});
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(pairs[0].swing, 2);
  EXPECT_EQ(pairs[3].swing, 2);                          // runs 4 and 5: |2 − 4|
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 25), 1.75);  // numpy.percentile's linear rule
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 100), 4);
}

TEST(Stats, BootstrapEstimateIsTheRulerAverageDifference) {
  // Two lengths; length 1 has two tasks. Config A: two seeds, B: one seed.
  std::vector<BootCell> cells(3);
  cells[0] = {1, "t1", {{1, 0, 1, 1}, {1, 1, 1, 1}}, {{0, 0, 1, 0}}};
  cells[1] = {1, "t2", {{0, 0}, {0, 1}}, {{1, 1}}};
  cells[2] = {2, "t1", {{0, 1, 0}, {0, 1, 0}}, {{0, 0, 0}}};
  // A: length 1 = mean(7/8, 1/4) = 0.5625, length 2 = 1/3 → 0.447917; B: mean(1/4, 1) = 0.625, 0 → 0.3125.
  const BootResult r = paired_bootstrap(cells, false, 500, 7, 0.9);
  ASSERT_TRUE(r.ok);
  EXPECT_NEAR(r.estimate, 100 * ((0.5625 + 1.0 / 3) / 2 - 0.3125), 1e-9);
  EXPECT_LE(r.lo, r.estimate);
  EXPECT_GE(r.hi, r.estimate);
  // Same seed → same interval.
  const BootResult again = paired_bootstrap(cells, false, 500, 7, 0.9);
  EXPECT_EQ(again.lo, r.lo);
  EXPECT_EQ(again.hi, r.hi);
}

TEST(Stats, BootstrapIntervalCollapsesWhenNothingVaries) {
  // Every unit of every seed differs by exactly 0.25: the difference is 25 in every resample,
  // for sample resampling and for cell resampling alike.
  std::vector<BootCell> cells;
  for (int64_t L : {1, 2})
    for (const char* t : {"a", "b"}) cells.push_back({L, t, {{0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}}, {{0.25, 0.25, 0.25}}});
  for (bool by_cells : {false, true}) {
    const BootResult r = paired_bootstrap(cells, by_cells, 200, 1, 0.95);
    ASSERT_TRUE(r.ok);
    EXPECT_NEAR(r.estimate, 25, 1e-9);
    EXPECT_NEAR(r.lo, 25, 1e-9);
    EXPECT_NEAR(r.hi, 25, 1e-9);
  }
  EXPECT_FALSE(paired_bootstrap({}, false, 100, 1, 0.95).ok);
}

// ------------------------------------------------------------------ configurations and features

TEST(Features, IniLookupAndPredicates) {
  const auto ini = config::ini_map(
      "# c\n[model]\nqk_norm = layer # an inline comment, as Boost reads it\nn_heads = 8\nn_kv_heads = 2\n"
      "layer_pattern = SSSF\n[train]\nseq_len = 4096\n[data]\nlist = a\nlist = b\n");
  EXPECT_EQ(ini.at("model.n_heads"), "8");
  EXPECT_EQ(ini.at("data.list"), "a\nb");
  RunConfig cfg;
  cfg.stages.push_back({"pretrain", ini});
  auto ext = ini;
  ext["train.seq_len"] = "65536";
  ext["model.qk_norm"] = "none";
  cfg.stages.push_back({"extend", ext});
  EXPECT_EQ(*lookup(cfg, "train.seq_len"), "65536");  // the evaluated checkpoint's stage
  EXPECT_EQ(*lookup(cfg, "pretrain.train.seq_len"), "4096");
  EXPECT_FALSE(lookup(cfg, "sft.train.seq_len"));
  std::string why;
  auto f = default_features();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(*eval_feature(f[0], cfg, why), 0);  // qk_norm none in the last stage
  EXPECT_EQ(*eval_feature(f[1], cfg, why), 1);  // 2 < 8
  EXPECT_EQ(*eval_feature(f[2], cfg, why), 1);  // SSSF contains S
  EXPECT_EQ(*eval_feature(f[3], cfg, why), 1);  // pretrain 4096 < 8192
  EXPECT_EQ(*eval_feature(parse_feature("x=model.n_heads == 8.0"), cfg, why), 1);
  EXPECT_EQ(*eval_feature(parse_feature("x=model.layer_pattern !contains S"), cfg, why), 0);
  EXPECT_EQ(*eval_feature(parse_feature("x=pretrain.model.qk_norm == layer"), cfg, why), 1);
  EXPECT_FALSE(eval_feature(parse_feature("x=model.qk_norm < 3"), cfg, why));
  EXPECT_NE(why.find("two numbers"), std::string::npos);
  EXPECT_FALSE(eval_feature(parse_feature("x=model.missing == 1"), cfg, why));
  EXPECT_THROW(parse_feature("model.qk_norm != none"), Error);
  EXPECT_THROW(parse_feature("x=model.qk_norm ~ none"), Error);
  EXPECT_THROW(parse_feature("x=3 < model.n_heads"), Error);
  EXPECT_EQ(parse_score_name("ruler@4K", "k").length, 4096);
  EXPECT_THROW(parse_score_name("helmet", "k"), Error);
}

// ------------------------------------------------------------------ readers

TEST(Readers, ResultsJsonRoundTripsEvaluatesWriter) {
  eval::Results r;
  r.checkpoint = "runs/p/checkpoints/step_00000010.h5";
  r.stage = "pretrain";
  r.step = 10;
  r.tokenizer_id = "byte";
  r.lengths = {512, 1024};
  r.tasks = {"niah_single_1", "vt"};
  r.task_scores.push_back({"niah_single_1", "string_match_all", 512, 50.0, 4, 0, "", 400, 3});
  r.task_scores.push_back({"vt", "string_match_all", 1024, std::nullopt, 0, 4, "too long", 0, 0});
  r.ruler_by_length = {{512, 50.0, 1}, {1024, std::nullopt, 0}};
  r.ruler_average = 50.0;
  r.helmet_recall_by_length = {{512, 30.0, 4}, {1024, std::nullopt, 3}};
  r.helmet_recall = 30.0;
  r.loss.push_back({512, 3, 2.5, {{0, 256, 2.7, 100}, {256, 512, 2.3, 100}}});
  r.mc = eval::McSummary{"mc.jsonl", 20, 40, 45};
  r.config_id = "c0ffee";
  r.prompt_template = "chat";
  r.prompt_template_text = "<user>{prompt}</user>{answer_prefix}";
  r.code_version = "0.1+abc";
  r.created_utc = "2026-12-02T07:00:00Z";
  r.ranks = 2;
  r.seconds = 12.5;
  r.seed = 7;
  r.samples = 4;
  r.addressable_length = 1024;
  r.allow_beyond_training = true;
  const eval::Results p = eval::parse_results_json(eval::results_json(r), "test");
  // Every field the writer writes comes back: writing what was read gives the same text.
  EXPECT_EQ(eval::results_json(p), eval::results_json(r));
  EXPECT_EQ(p.checkpoint, r.checkpoint);
  EXPECT_EQ(p.lengths, r.lengths);
  EXPECT_EQ(p.tasks, r.tasks);
  ASSERT_EQ(p.task_scores.size(), 2u);
  EXPECT_EQ(*p.task_scores[0].score, 50.0);
  EXPECT_FALSE(p.task_scores[1].score);
  EXPECT_FALSE(p.ruler_by_length[1].score);
  EXPECT_EQ(*p.ruler_average, 50.0);
  ASSERT_EQ(p.loss.size(), 1u);
  EXPECT_EQ(p.loss[0].buckets[1].mean_loss, 2.3);
  EXPECT_EQ(p.mc->acc_norm, 45);
  RunData run;
  run.has_results = true;
  run.results = p;
  EXPECT_EQ(*score_of(run, parse_score_name("ruler@512", "k")), 50.0);
  EXPECT_EQ(*score_of(run, parse_score_name("helmet_recall", "k")), 30.0);
  EXPECT_EQ(p.helmet_recall_by_length[1].n_tasks, 3);
  EXPECT_FALSE(score_of(run, parse_score_name("ruler@1024", "k")));
  EXPECT_NEAR(*perplexity_of(run, 0), std::exp(2.5), 1e-12);
  // A score outside [0, 100] (a damaged or hand-edited file) is refused, naming where it is.
  eval::Results bad = r;
  bad.task_scores[0].score = -500;
  try {
    eval::parse_results_json(eval::results_json(bad), "bad.json");
    ADD_FAILURE() << "a score of -500 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("task niah_single_1 at length 512: 'score' is -500"), std::string::npos)
        << e.what();
  }
  bad = r;
  bad.helmet_recall = 100.5;
  EXPECT_THROW(eval::parse_results_json(eval::results_json(bad), "x"), Error);
  EXPECT_THROW(eval::parse_results_json("{\"format\": \"other\"}", "x"), Error);
  EXPECT_THROW(eval::parse_results_json("{\"format\": \"headroom-eval-results\", \"format_version\": 2}", "x"), Error);
}

TEST(Readers, SampleLinesRoundTripEvaluatesWriter) {
  eval::SampleRecord scored;
  scored.task = "niah_single_1";
  scored.length = 512;
  scored.index = 3;
  scored.score = 0.5;
  scored.tokens = 498;
  scored.units = 12;
  scored.prediction = "1234567";
  scored.references = {"1234567", "7654321"};
  scored.input = "the whole prompt";
  eval::SampleRecord skipped;
  skipped.task = "vt";
  skipped.length = 256;
  skipped.index = 0;
  skipped.skipped = "the prompt takes 300 tokens";
  const auto back = eval::parse_sample_log(eval::sample_line(scored) + "\n\n" + eval::sample_line(skipped) + "\n", "s");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(eval::sample_line(back[0]), eval::sample_line(scored));
  EXPECT_EQ(eval::sample_line(back[1]), eval::sample_line(skipped));
  EXPECT_FALSE(back[1].score);
  try {
    eval::parse_sample_log("{\"task\":\"vt\",\"length\":1,\"index\":0,\"score\":1}\n", "samples.jsonl");
    ADD_FAILURE() << "a scored line without its fields was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("samples.jsonl line 1"), std::string::npos) << e.what();
  }
}

TEST(Readers, SamplesAndMetrics) {
  const std::string fields = ",\"tokens\":500,\"units\":9,\"prediction\":\"a\",\"references\":[\"a\"]}\n";
  const auto s = parse_samples("{\"task\":\"vt\",\"length\":512,\"index\":0,\"score\":1.0" + fields +
                                   "{\"task\":\"vt\",\"length\":512,\"index\":1,\"score\":null,\"skipped\":\"x\"}\n\n"
                                   "{\"task\":\"vt\",\"length\":512,\"index\":2,\"score\":0.5" +
                                   fields,
                               "s");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.at({"vt", 512, 2}), 0.5);
  // A resumed run repeats step 3: the later line wins; the final loss averages the last 2 steps.
  StageRun st;
  parse_metrics(
      "{\"step\":1,\"loss\":5,\"grad_norm\":1}\n{\"step\":2,\"loss\":4,\"grad_norm\":1}\n"
      "{\"step\":3,\"loss\":9,\"grad_norm\":1}\n{\"step\":3,\"loss\":3,\"grad_norm\":1}\n"
      "{\"step\":4,\"loss\":2,\"grad_norm\":1,\"spike\":{\"paper\":{\"loss\":0,\"grad_norm\":0.25,\"combined\":0.25}}}"
      "\n",
      st, 2);
  ASSERT_EQ(st.metrics.size(), 4u);
  EXPECT_EQ(st.metrics[2].loss, 3);
  EXPECT_NEAR(*st.final_loss, 2.5, 1e-12);
  ASSERT_EQ(st.spikes.size(), 1u);
  EXPECT_EQ(st.spikes[0].rule, "paper");
  EXPECT_EQ(st.spikes[0].combined, 0.25);
  StageRun bad;
  EXPECT_THROW(parse_metrics("not json\n", bad, 2), Error);
}

TEST(Readers, TrainingLogsReadWhatTheirWritersWrite) {
  // The writers' lines (train/run_logs.h), a spike field added as the monitor callback adds it.
  nlohmann::json spike;
  spike["spike"]["paper"] = {{"loss", 0.01}, {"grad_norm", 0.02}, {"combined", 0.03}};
  const std::string metrics = train::metrics_line(10, 640, 3.5, 0.9, 1e-3, 1234, spike).dump() + "\n" +
                              train::metrics_line(20, 1280, std::nan(""), 0.8, 1e-3, 1200, spike).dump() + "\n";
  const train::MetricsLog log = train::parse_metrics_log(metrics);
  ASSERT_EQ(log.points.size(), 2u);
  EXPECT_EQ(log.points[0].step, 10);
  EXPECT_EQ(log.points[0].loss, 3.5);
  EXPECT_TRUE(std::isnan(log.points[1].loss));  // a non-finite loss is written as null
  ASSERT_EQ(log.last_spikes.size(), 1u);
  EXPECT_EQ(log.last_spikes[0].rule, "paper");
  EXPECT_EQ(log.last_spikes[0].combined, 0.03);
  train::ProbeScores ps;
  ps.loss = 1.5, ps.token_acc = 0.75, ps.exact = 0.5, ps.examples = 32, ps.answer_tokens = 256;
  const auto probe = train::parse_probe_log(train::probe_line(100, 6400, ps, "niah").dump() + "\n");
  ASSERT_EQ(probe.size(), 1u);
  EXPECT_EQ(probe[0].step, 100);
  EXPECT_EQ(probe[0].tokens, 6400);
  EXPECT_EQ(probe[0].token_acc, 0.75);
  EXPECT_EQ(probe[0].exact, 0.5);
}

TEST(Readers, ProbeCurveScores) {
  // Step 20 repeated by a resume: the later line wins. Curve 0 -> 0.2 -> 0.6 over steps 0, 10, 20:
  // trapezoids (0.1·10 + 0.4·10) / 20 = 0.25.
  const auto p = train::parse_probe_log(
      "{\"step\":0,\"token_acc\":0,\"exact\":0,\"loss\":5}\n"
      "{\"step\":10,\"token_acc\":0.2,\"exact\":0,\"loss\":4}\n"
      "{\"step\":20,\"token_acc\":0.9,\"exact\":0.5,\"loss\":1}\n\n"
      "{\"step\":20,\"token_acc\":0.6,\"exact\":0.25,\"loss\":2}\n");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2].token_acc, 0.6);
  EXPECT_NEAR(*probe_auc(p), 0.25, 1e-12);
  EXPECT_EQ(*probe_auc({p[1]}), 0.2);
  EXPECT_FALSE(probe_auc({}));
  EXPECT_THROW(train::parse_probe_log("{\"step\":1}\n"), Error);
  RunData run;  // no results.json needed: the probe comes from the lineage's stages
  StageRun pre, ext;
  pre.stage = "pretrain";
  pre.probe = p;
  ext.stage = "extend";
  run.stages = {pre, ext};
  EXPECT_EQ(probe_stage(run)->stage, "pretrain");  // the last stage that has a probe
  EXPECT_EQ(*score_of(run, parse_score_name("probe_acc", "k")), 0.6);
  EXPECT_EQ(*score_of(run, parse_score_name("probe_exact", "k")), 0.25);
  EXPECT_NEAR(*score_of(run, parse_score_name("probe_auc", "k")), 0.25, 1e-12);
  EXPECT_FALSE(score_of(run, parse_score_name("ruler", "k")));
  run.stages[1].probe = {p[0]};
  EXPECT_EQ(*score_of(run, parse_score_name("probe_acc", "k")), 0.0);  // now the extension's
}

TEST(Findings, ParseAndSelect) {
  const Finding f = parse_finding("wider: model.head_dim_qk == 32 & model.n_kv_heads >= 4 over model.n_heads == 16");
  EXPECT_EQ(f.name, "wider");
  ASSERT_EQ(f.a.size(), 2u);
  ASSERT_EQ(f.b.size(), 1u);
  EXPECT_EQ(f.a[1].op, ">=");
  EXPECT_EQ(f.b_text, "model.n_heads == 16");
  RunConfig cfg;
  cfg.stages.push_back({"pretrain", config::ini_map("[model]\nhead_dim_qk = 32\nn_kv_heads = 4\nn_heads = 4\n")});
  std::string why;
  EXPECT_TRUE(*side_holds(f.a, cfg, why));
  EXPECT_FALSE(*side_holds(f.b, cfg, why));
  cfg.stages[0].keys["model.n_kv_heads"] = "1";
  EXPECT_FALSE(*side_holds(f.a, cfg, why));  // every predicate must hold
  EXPECT_FALSE(side_holds(parse_finding("x: model.missing == 1 over model.n_heads == 4").a, cfg, why));
  EXPECT_NE(why.find("model.missing"), std::string::npos);
  EXPECT_THROW(parse_finding("no colon model.n_heads == 4 over model.n_heads == 8"), Error);
  EXPECT_THROW(parse_finding("x: model.n_heads == 4"), Error);                                  // no 'over'
  EXPECT_THROW(parse_finding("x: model.n_heads == 4 over a over b"), Error);                    // two
  EXPECT_THROW(parse_finding("x: model.n_heads = 4 over model.n_heads == 8"), Error);           // bad op
  EXPECT_THROW(parse_finding("two words: model.n_heads == 4 over model.n_heads == 8"), Error);  // name
}

TEST(Findings, AConjunctionAloneSelectsAndNamesItsKeyWhenMalformed) {
  RunConfig cfg;
  cfg.stages.push_back({"pretrain", config::ini_map("[model]\nrope_base_full = 10000\n")});
  cfg.stages.push_back({"extend", config::ini_map("[model]\nrope_base_full = 80000\nfreeze = layers.*.attn.w?\n")});
  std::string why;
  EXPECT_TRUE(*side_holds(parse_conjunction("extend.model.freeze contains attn", "k"), cfg, why));
  EXPECT_FALSE(*side_holds(parse_conjunction("model.rope_base_full == 80000 & extend.model.freeze !contains attn", "k"),
                           cfg, why));
  try {
    parse_conjunction("model.rope_base_full = 80000", "analyze.regression_configs");
    ADD_FAILURE() << "a malformed predicate was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("analyze.regression_configs"), std::string::npos) << e.what();
  }
}

// ------------------------------------------------------------------ probes

TEST(Probes, NeedleSpanDepthAndLengthInTheByteTokenizer) {
  const eval::Resources res = eval::load_resources(std::string(HEADROOM_TEST_SOURCE_DIR) + "/inputs/eval", "");
  const data::Tokenizer tok;  // byte level
  eval::PromptBuilder prompts(tok, data::PromptTemplate::kBase);
  const Probe shallow = make_probe(tok, prompts, res, 1, 1024, 0.0, 0, 16);
  const Probe deep = make_probe(tok, prompts, res, 1, 1024, 1.0, 0, 16);
  for (const Probe* p : {&shallow, &deep}) {
    EXPECT_LE(static_cast<int64_t>(p->ids.size()) + p->max_new, 1024);
    EXPECT_GT(static_cast<int64_t>(p->ids.size()) + p->max_new, 1024 - 100);  // filled close to the length
    // The value span decodes to exactly the value (byte tokens); the sentence contains it.
    const std::vector<int32_t> v(p->ids.begin() + p->value_begin, p->ids.begin() + p->value_end);
    EXPECT_EQ(data::decode(tok, v), p->value);
    const std::vector<int32_t> sent(p->ids.begin() + p->sentence_begin, p->ids.begin() + p->sentence_end);
    EXPECT_TRUE(std::regex_match(data::decode(tok, sent),
                                 std::regex("One of the special magic numbers for [a-z]+-[a-z]+ is: [0-9]{7}\\.")));
    EXPECT_LE(p->sentence_begin, p->value_begin);
    EXPECT_GE(p->sentence_end, p->value_end);
  }
  EXPECT_LT(shallow.sentence_begin, 200);
  EXPECT_GT(deep.sentence_begin, 700);  // the question and answer prefix follow the haystack
  // The same sample key → the same probe; another index → another needle.
  EXPECT_EQ(make_probe(tok, prompts, res, 1, 1024, 0.0, 0, 16).ids, shallow.ids);
  EXPECT_NE(make_probe(tok, prompts, res, 1, 1024, 0.0, 1, 16).value, shallow.value);
  EXPECT_THROW(make_probe(tok, prompts, res, 1, 64, 0.5, 0, 16), eval::TooLong);
}

TEST(Probes, FollowEvaluatesNiahSingle1Format) {
  const eval::Resources res = eval::load_resources(std::string(HEADROOM_TEST_SOURCE_DIR) + "/inputs/eval", "");
  const data::Tokenizer tok;
  eval::PromptBuilder prompts(tok, data::PromptTemplate::kBase);
  eval::TaskContext ctx = eval::make_task_context(res, prompts);
  const eval::Sample s = eval::generate_sample(eval::find_task("niah_single_1"), ctx, {1, 1024, 0, 16});
  const Probe p = make_probe(tok, prompts, res, 1, 1024, 0.5, 0, 16);
  const std::string ours = data::decode(tok, p.ids);
  const std::string theirs = prompts.text(s.prompt, s.answer_prefix);
  // Same first line (the instruction), same noise line, and the same question/answer-prefix shape.
  EXPECT_EQ(ours.substr(0, ours.find('\n')), theirs.substr(0, theirs.find('\n')));
  EXPECT_NE(ours.find(std::string("\n") + data::kNoiseLine + "\n"), std::string::npos);
  const std::regex tail(
      "\nWhat is the special magic number for [a-z]+-[a-z]+ mentioned in the provided text\\? The special "
      "magic number for [a-z]+-[a-z]+ mentioned in the provided text is$");
  EXPECT_TRUE(std::regex_search(theirs, tail)) << theirs.substr(theirs.size() - 200);
  EXPECT_TRUE(std::regex_search(ours, tail)) << ours.substr(ours.size() - 200);
}

// ------------------------------------------------------------------ findings against seed noise

TEST(Findings, ZeroEffectAgainstZeroSwingIsNoSignal) {
  EXPECT_EQ(finding_verdict(0.0, true, 0.0), "no signal (effect and swing both 0)");
  EXPECT_EQ(finding_verdict(0.5, true, 0.0), "reproduces") << "a real effect over exactly repeatable seeds";
  EXPECT_EQ(finding_verdict(-0.5, true, 0.1), "reversed");
  EXPECT_EQ(finding_verdict(0.1, true, 0.1), "not resolved (|effect| <= 2 x swing)");
  EXPECT_EQ(finding_verdict(0.0, false, 0.0), "unknown (no seed pairs)");
}

TEST(Findings, SeedsToResolveFollowTheStandardErrorOfADifferenceOfMeans) {
  // Mean swing 2σ/√π; n = 8σ²/effect², so an effect of σ needs 8 seeds, of 2σ the minimum 2.
  const double sigma = 0.3, swing = 2 * sigma / std::sqrt(std::acos(-1.0));
  EXPECT_NEAR(sigma_from_mean_swing(swing), sigma, 1e-15);
  EXPECT_EQ(seeds_to_resolve(sigma, swing), 8);
  EXPECT_EQ(seeds_to_resolve(-sigma, swing), 8) << "the sign does not matter";
  EXPECT_EQ(seeds_to_resolve(0.5 * sigma, swing), 32);
  EXPECT_EQ(seeds_to_resolve(2 * sigma, swing), 2);
  EXPECT_EQ(seeds_to_resolve(0.0, swing), 0);
  // The check the table's verdict makes at those seeds: effect > 2 standard errors.
  const int64_t n = seeds_to_resolve(0.37 * sigma, swing);
  EXPECT_GT(0.37 * sigma, 2 * sigma * std::sqrt(2.0 / static_cast<double>(n)) - 1e-12);
  EXPECT_LT(0.37 * sigma, 2 * sigma * std::sqrt(2.0 / static_cast<double>(n - 1)));
  EXPECT_EQ(seeds_needed(0.0, true, swing, "not resolved (|effect| <= 2 x swing)"), "none: no effect measured");
  EXPECT_EQ(seeds_needed(sigma, true, swing, "not resolved (|effect| <= 2 x swing)"), "8");
  EXPECT_EQ(seeds_needed(sigma, true, swing, "reproduces"), "");
}

// ------------------------------------------------------------------ the sections' statistics

TEST(SectionStats, SpreadAndPercentOfRange) {
  const Spread sp = spread_of({3, 1, 2});
  EXPECT_EQ(sp.mean, 2);
  EXPECT_EQ(sp.lo, 1);
  EXPECT_EQ(sp.hi, 3);
  EXPECT_EQ(*percent_of(1, 4), 25);
  EXPECT_FALSE(percent_of(1, 0));  // no range: no share of it
}

TEST(SectionStats, PredictorsFitsAndFeatureColumns) {
  // y = 10, 20, 30, 40, 50; the first predictor x = y / 10 exactly; the second has no value for C5.
  // Feature a: 1 1 0 0 and unknown for C5 (no model.a); feature b: 1 everywhere (constant).
  const Study s = study_of({{10}, {20}, {30}, {40}, {50}},
                           {"[model]\na = 1\nb = 1\n", "[model]\na = 1\nb = 1\n", "[model]\na = 0\nb = 1\n",
                            "[model]\na = 0\nb = 1\n", "[model]\nb = 1\n"});
  const std::vector<Predictor> preds{{"x", "x", [](const RunData& r) -> Opt { return *r.results.ruler_average / 10; }},
                                     {"gappy", "gappy", [](const RunData& r) -> Opt {
                                        return *r.results.ruler_average < 45 ? Opt(*r.results.ruler_average / 5 + 1)
                                                                             : std::nullopt;
                                      }}};
  const std::vector<Feature> features{parse_feature("a=model.a == 1"), parse_feature("b=model.b == 1")};
  const PredictorStats st = predictor_stats(s, parse_score_name("ruler", "k"), preds, features);
  ASSERT_EQ(st.rows.size(), 5u);
  EXPECT_EQ(*st.rows[2].score.mean, 30);
  EXPECT_EQ(*st.rows[2].predictors[0], 3);
  EXPECT_EQ(st.rows[0].features, (std::vector<int>{1, 1}));
  EXPECT_EQ(*st.rows[3].feature_count, 1);
  EXPECT_EQ(st.rows[4].features[0], -1);
  EXPECT_NE(st.rows[4].feature_why[0].find("model.a"), std::string::npos);
  EXPECT_FALSE(st.rows[4].feature_count);
  // A predictor that is y / 10: a perfect line y = 0 + 10 x.
  ASSERT_TRUE(st.single[0].fit.ok);
  EXPECT_NEAR(st.single[0].fit.coef[1], 10, 1e-9);
  EXPECT_NEAR(st.single[0].fit.r2, 1, 1e-12);
  EXPECT_EQ(st.single[1].configs, (std::vector<size_t>{0, 1, 2, 3}));  // C5 has no value
  // Feature count 2 2 1 1 against y 10 20 30 40 (C5 left out): slope −20, intercept 55, fitted
  // 15 15 35 35, so SS_res = 100 of SS_tot = 500: R² = 0.8.
  ASSERT_TRUE(st.feature_count.fit.ok);
  EXPECT_EQ(st.feature_count.x, (std::vector<double>{2, 2, 1, 1}));
  EXPECT_NEAR(st.feature_count.fit.coef[0], 55, 1e-9);
  EXPECT_NEAR(st.feature_count.fit.coef[1], -20, 1e-9);
  EXPECT_NEAR(st.feature_count.fit.r2, 0.8, 1e-12);
  // Separately: b is constant over those points and left out; y on a: intercept 35, slope −20.
  EXPECT_EQ(st.varying, (std::vector<size_t>{0}));
  EXPECT_EQ(st.constant, (std::vector<size_t>{1}));
  ASSERT_TRUE(st.features.fit.ok);
  EXPECT_NEAR(st.features.fit.coef[0], 35, 1e-9);
  EXPECT_NEAR(st.features.fit.coef[1], -20, 1e-9);
  // The regression pool: a conjunction selects configurations; one it cannot evaluate is left out.
  const Study sub = regression_pool(s, "model.b == 1 & model.a == 0");
  ASSERT_EQ(sub.configs.size(), 2u);
  EXPECT_EQ(sub.configs[0].id, "C3");
  EXPECT_EQ(sub.configs[1].id, "C4");
  EXPECT_EQ(regression_pool(s, "").configs.size(), 5u);
}

TEST(SectionStats, SeedNoiseAndConfigDifferences) {
  // C1: 10, 12 (swing 2); C2: 20, 20 (swing 0); C3: one seed. Mean swing 1, max 2, range 10.
  Study s = study_of({{10, 12}, {20, 20}, {11}});
  const ScoreName ruler = parse_score_name("ruler", "k");
  const NoiseSummary n = seed_noise(s, ruler);
  ASSERT_TRUE(n.ok);
  EXPECT_EQ(n.pairs, 2u);
  EXPECT_EQ(n.mean, 1);
  EXPECT_EQ(n.max, 2);
  EXPECT_EQ(n.range, 10);
  EXPECT_EQ(n.swings[0].swing, 2);
  EXPECT_EQ(runs_with_score(s, ruler), 5);
  // Differences 11 − 20 = −9 (beyond a swing of 1.5), 11 − 11 = 0 (within), 20 − 11 = 9 (beyond).
  NoiseSummary noise;
  noise.ok = true, noise.mean = 1.5;
  const DifferenceStats d = config_differences(s, ruler, noise, 100, 1, 0.9);
  ASSERT_EQ(d.pairs.size(), 3u);
  EXPECT_EQ(*d.pairs[0].difference, -9);
  EXPECT_EQ(d.pairs[0].score_a.n, 2);
  EXPECT_EQ(d.pairs[0].mark, NoiseMark::kBeyond);
  EXPECT_EQ(d.pairs[1].mark, NoiseMark::kWithin);
  EXPECT_EQ(d.within, 1);
  EXPECT_EQ(d.beyond, 2);
  // No RULER task cells: no interval, and the pool lacks samples.jsonl.
  EXPECT_FALSE(d.pairs[0].ci.ok);
  EXPECT_FALSE(d.no_interval.empty());
  EXPECT_TRUE(d.pool_lacks_samples);
  noise.mean = 0;  // a zero difference against a zero swing is no difference, not an effect
  EXPECT_EQ(config_differences(s, ruler, noise, 100, 1, 0.9).pairs[1].mark, NoiseMark::kNoDifference);
  noise.ok = false;
  const DifferenceStats unknown = config_differences(s, ruler, noise, 100, 1, 0.9);
  EXPECT_EQ(unknown.pairs[0].mark, NoiseMark::kUnknown);
  EXPECT_EQ(unknown.within + unknown.beyond, 0);
  // A repeated evaluation of C2's first seeds is no seed pair.
  s.runs[s.configs[1].runs[1]].seed_text = s.runs[s.configs[1].runs[0]].seed_text;
  const auto repeated = repeated_seed_runs(s);
  ASSERT_EQ(repeated.size(), 1u);
  EXPECT_EQ(repeated[0], std::make_pair(size_t{1}, s.configs[1].runs[1]));
  EXPECT_EQ(seed_noise(s, ruler).pairs, 1u);
}

TEST(SectionStats, FindingEffectVerdictAndSeedInterval) {
  // A (model.w == 32): runs 30, 34; B (model.w == 8): runs 20, 24. Effect 32 − 22 = 10 against a
  // swing of 2: reproduces, 5 swings. No RULER cells: the interval resamples each side's seeds, so it
  // lies within [30 − 24, 34 − 20].
  const Study s = study_of({{30, 34}, {20, 24}}, {"[model]\nw = 32\n", "[model]\nw = 8\n"});
  NoiseSummary noise;
  noise.ok = true, noise.mean = 2;
  const FindingResult r = evaluate_finding(s, parse_finding("wide: model.w == 32 over model.w == 8"),
                                           parse_score_name("ruler", "k"), noise, 200, 0.9, 7);
  ASSERT_TRUE(r.computed);
  EXPECT_EQ(r.a.configs, (std::vector<size_t>{0}));
  EXPECT_EQ(r.a.mean, 32);
  EXPECT_EQ(r.b.runs.lo, 20);
  EXPECT_EQ(r.b.runs.hi, 24);
  EXPECT_EQ(r.effect, 10);
  EXPECT_EQ(*r.effect_over_swing, 5);
  EXPECT_EQ(r.verdict, "reproduces");
  EXPECT_EQ(r.method, "seeds (runs) of each side");
  ASSERT_TRUE(r.ci.ok);
  EXPECT_GE(r.ci.lo, 6);
  EXPECT_LE(r.ci.hi, 14);
  EXPECT_FALSE(evaluate_finding(s, parse_finding("none: model.w == 64 over model.w == 8"),
                                parse_score_name("ruler", "k"), noise, 200, 0.9, 7)
                   .computed);
}

TEST(SectionStats, ProbeTrainingAndLossMeans) {
  Study s = study_of({{10, 20}, {30}});
  // Probe: C1's runs end at token accuracy 0.5 and 0.7; C2 has no probe and is left out.
  for (size_t k = 0; k < 2; ++k) {
    StageRun st;
    st.stage = "pretrain";
    st.probe = {{0, 0, 3.0, 0.1, 0.0}, {10, 640, 1.0, 0.5 + 0.2 * static_cast<double>(k), 0.25}};
    st.metrics = {{10, 2.0 + static_cast<double>(k), 1.0}};
    st.final_loss = 2.0 + static_cast<double>(k);
    st.spikes = {{k ? "paper" : "olmo", 0, 0, 0.5}};
    s.runs[k].stages.push_back(st);
  }
  const auto probes = probe_summaries(s);
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].runs.size(), 2u);
  EXPECT_NEAR(probes[0].acc.mean, 0.6, 1e-12);
  EXPECT_EQ(probes[0].acc.hi, 0.7);
  EXPECT_EQ(probes[0].exact.mean, 0.25);
  // Training: final losses 2 and 3; each run logged one rule, so each rule's mean has one seed.
  EXPECT_EQ(spike_rules(s), (std::vector<std::string>{"olmo", "paper"}));
  const auto tm = training_means(s, spike_rules(s));
  ASSERT_EQ(tm.size(), 2u);
  EXPECT_EQ(*tm[0].stages[0].final_loss.mean, 2.5);
  EXPECT_EQ(tm[0].stages[0].spikes[1].n, 1);
  EXPECT_FALSE(tm[0].stages[1].final_loss.mean);  // no extension stage
  EXPECT_FALSE(tm[1].stages[0].final_loss.mean);
  // Loss by position: C1's runs lose 1 and 2 nats at length 64 (perplexity e^1.5).
  for (size_t k = 0; k < 2; ++k) {
    eval::LossCurve c;
    c.length = 64;
    c.mean_loss = 1.0 + static_cast<double>(k);
    c.buckets = {{0, 32, 3.0 * static_cast<double>(k), 32}};
    s.runs[k].results.loss.push_back(c);
  }
  const auto loss = loss_means(s);
  ASSERT_EQ(loss.size(), 1u);  // C2's run has no loss curve
  EXPECT_EQ(*loss[0].loss.mean, 1.5);
  EXPECT_NEAR(*loss[0].perplexity, std::exp(1.5), 1e-12);
  EXPECT_EQ(*loss[0].buckets[0].loss.mean, 1.5);
  const auto ruler = ruler_means(s, {});
  EXPECT_EQ(*ruler[0].overall.mean, 15);
  EXPECT_EQ(ruler[0].overall.lo, 10);
}

TEST(SectionStats, DiagnosticsSummaries) {
  // Two heads: one with entropy 1.5 over two rows, one with no rows (left out of the head mean).
  Diagnostics d;
  d.heads.resize(2);
  d.heads[0].entropy_sum = 3, d.heads[0].rows = 2;
  d.probes.resize(3);
  d.probes[0].correct = d.probes[2].correct = true;
  const DiagSummary sum = summarize_diagnostics(d);
  EXPECT_EQ(sum.entropy, 1.5);
  EXPECT_EQ(sum.answered, 2);
  EXPECT_TRUE(std::isnan(sum.retrieval_fraction));  // no test counted
  // Per configuration: a second seed with one retrieval head of two over counted tests.
  Study s = study_of({{10, 20}});
  s.runs[0].diag = d;
  d.retrieval.tests = 2, d.retrieval_heads = 1;
  s.runs[1].diag = d;
  const auto byc = config_diagnostics(s);
  ASSERT_EQ(byc.size(), 1u);
  EXPECT_EQ(byc[0].runs, 2);
  EXPECT_EQ(*byc[0].entropy.mean, 1.5);
  EXPECT_EQ(byc[0].retrieval_fraction.n, 1);
  EXPECT_EQ(*byc[0].retrieval_fraction.mean, 0.5);
}
