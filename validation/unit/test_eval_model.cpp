// The model-facing parts of evaluate on a small random model: per-token log-likelihoods from the
// chunked KV-cache prefill equal the training path's per-token losses (Activations::losses), so
// loss_by_position measures the training loss; buckets partition the positions; multiple-choice
// continuations are tokenized and scored as lm-evaluation-harness does; greedy generation is
// deterministic and reuses one cache across samples.
// The log-likelihood bound 2e-4 (absolute, on values ~5: 4e-5 relative, ~700 fp32 roundoffs) covers
// the two paths' different summation orders (chunked prefill vs the whole-window training forward,
// a log-softmax each over a 256-entry vocabulary); derived, not measured.
#include "config/keys.h"
#include "eval/decoder.h"
#include "eval/loss_by_position.h"
#include "eval/multiple_choice.h"
#include "model/forward.h"
#include "util/random.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace headroom;
using namespace headroom::eval;

namespace {

config::ModelConfig small_model() {
  return config::make_config(config::kModel, {{"model.vocab_size", "259"},
                                              {"model.d_model", "16"},
                                              {"model.n_layers", "2"},
                                              {"model.d_ff", "32"},
                                              {"model.n_heads", "2"},
                                              {"model.n_kv_heads", "1"},
                                              {"model.head_dim_qk", "8"},
                                              {"model.head_dim_v", "8"},
                                              {"model.init_std", "0.2"},
                                              {"model.layer_pattern", "SF"},
                                              {"model.window", "9"}})
      .model;
}

std::vector<int32_t> random_ids(int64_t n, uint64_t seed) {
  const CounterRng rng{seed, 3};
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = static_cast<int32_t>(rng.bits64(static_cast<uint64_t>(i)) % 256);
  return ids;
}

}  // namespace

TEST(EvalModel, TokenLogprobsEqualTheTrainingLosses) {
  model::Model<float> m = model::make_model(small_model(), kernels::cpu_ops());
  constexpr int64_t T = 40;
  const auto seq = random_ids(T + 1, 5);
  model::Activations<float> a = model::make_activations(m, 1, T);
  std::vector<int32_t> targets(seq.begin() + 1, seq.end());
  model::forward_loss<float>(m, a, seq.data(), targets.data(), nullptr);
  std::vector<float> losses(T);
  m.ops->copy_to_host(losses.data(), a.losses, T * sizeof(float));
  for (int64_t chunk : {3, 7, 64}) {
    Decoder dec{m, chunk, {}};
    const auto lp = token_logprobs(dec, seq);
    ASSERT_EQ(lp.size(), static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t)
      EXPECT_NEAR(-lp[static_cast<size_t>(t)], losses[static_cast<size_t>(t)], 2e-4)
          << "chunk " << chunk << " position " << t;
    const auto tail = token_logprobs(dec, seq, 30);
    ASSERT_EQ(tail.size(), 10u);
    EXPECT_DOUBLE_EQ(tail[0], lp[30]);
  }
}

TEST(EvalModel, PositionBucketsPartitionTheWindow) {
  const auto b = position_buckets(100);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], (std::pair<int64_t, int64_t>{0, 16}));
  EXPECT_EQ(b[1], (std::pair<int64_t, int64_t>{16, 32}));
  EXPECT_EQ(b[2], (std::pair<int64_t, int64_t>{32, 64}));
  EXPECT_EQ(b[3], (std::pair<int64_t, int64_t>{64, 100}));
  EXPECT_EQ(position_buckets(16).size(), 1u);
}

TEST(EvalModel, MultipleChoiceFollowsLmEvalConventions) {
  PromptBuilder prompts(data::Tokenizer{}, data::PromptTemplate::kBase);
  // Trailing whitespace of the query moves to the continuation (lm-eval's _encode_pair).
  const auto [ctx, cont] = encode_pair(prompts, "Question: 2+2?\nAnswer: ", "4");
  EXPECT_EQ(ctx.size(), 1u + std::string("Question: 2+2?\nAnswer:").size());
  EXPECT_EQ(ctx[0], data::kBos);
  EXPECT_EQ(cont, (std::vector<int32_t>{' ', '4'}));

  model::Model<float> m = model::make_model(small_model(), kernels::cpu_ops());
  Decoder dec{m, 5, {}};
  const McItem item{"Q: pick one.\nA:", {" red", " green", " blue"}, 1};
  const McResult r = score_mc_item(dec, prompts, item);
  ASSERT_EQ(r.loglik.size(), 3u);
  for (size_t c = 0; c < 3; ++c) {
    auto [x, y] = encode_pair(prompts, item.query, item.choices[c]);
    std::vector<int32_t> ids = x;
    ids.insert(ids.end(), y.begin(), y.end());
    const auto lp = token_logprobs(dec, ids);
    double sum = 0;
    for (size_t t = x.size() - 1; t < lp.size(); ++t) sum += lp[t];
    EXPECT_NEAR(r.loglik[c], sum, 1e-9) << "the continuation's tokens only";
  }
  std::vector<double> norm;
  for (size_t c = 0; c < 3; ++c) norm.push_back(r.loglik[c] / static_cast<double>(item.choices[c].size()));
  EXPECT_EQ(r.acc, argmax(r.loglik) == 1 ? 1.0 : 0.0);
  EXPECT_EQ(r.acc_norm, argmax(norm) == 1 ? 1.0 : 0.0);
}

TEST(EvalModel, GreedyGenerationIsDeterministicAcrossCacheReuse) {
  model::Model<float> m = model::make_model(small_model(), kernels::cpu_ops());
  Decoder a{m, 4, {}}, b{m, 16, {}};
  const auto p1 = random_ids(30, 1), p2 = random_ids(20, 2);
  const auto g1 = generate(a, data::kEos, p1, 12, 64);
  generate(a, data::kEos, p2, 12, 64);  // reuse the cache for another prompt
  EXPECT_EQ(generate(a, data::kEos, p1, 12, 64), g1);
  EXPECT_EQ(generate(b, data::kEos, p1, 12, 0), g1) << "independent of chunk size and capacity";
  EXPECT_LE(g1.size(), 12u);
}
