// End to end on a model: a toy transformer trained here, briefly, on niah_single_1 samples from the
// generator answers held-out niah_single_1 samples (another seed) at its training length far above
// chance, through the same prompt, decoding and scoring path evaluate uses. Chance is ~1e-7: the
// answer is a random 7-digit number stated once in the context.
//
// What makes "briefly" possible (the measurements: docs/studies/toy_ruler.md):
//  * a BPE tokenizer trained on niah_single_1 text, so RULER's ~400-byte template takes a few dozen
//    tokens and the task fits 160 tokens (the byte tokenizer needs ~480 tokens for the template
//    alone); digits are left out of its training text so numbers stay one token per digit;
//  * half of each batch is an induction warm-up (a random digit string and its repetition): the
//    needle task alone learns late or not at all within the test's budget.
#include "config/keys.h"
#include "data/bpe_train.h"
#include "eval/decoder.h"
#include "eval/scoring.h"
#include "eval/tasks.h"
#include "model/forward.h"
#include "test_eval_support.h"
#include "train/optimizer.h"
#include "util/clock.h"
#include "util/random.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

using namespace headroom;
using namespace headroom::eval;

namespace {

constexpr int64_t kLength = 160, kMaxNew = 10, kBatch = 8;
constexpr double kLr = 3e-3;

int64_t train_steps() {
  const char* v = std::getenv("HEADROOM_EVAL_TOY_STEPS");
  return v ? std::atol(v) : 600;
}

config::ModelConfig toy_model(int32_t vocab) {
  return config::make_config(config::kModel, {{"model.vocab_size", std::to_string(vocab)},
                                              {"model.d_model", "64"},
                                              {"model.n_layers", "2"},
                                              {"model.d_ff", "128"},
                                              {"model.n_heads", "4"},
                                              {"model.n_kv_heads", "4"},
                                              {"model.head_dim_qk", "16"},
                                              {"model.head_dim_v", "16"},
                                              {"model.init_std", "0.02"},
                                              {"model.seed", "3"}})
      .model;
}

data::Tokenizer niah_tokenizer() {
  PromptBuilder bytes(data::Tokenizer{}, data::PromptTemplate::kBase);
  TaskContext ctx = make_task_context(eval::testing::test_resources(), bytes);
  std::vector<std::string> texts;
  for (int64_t i = 0; i < 64; ++i) {
    const Sample s = generate_sample(find_task("niah_single_1"), ctx, {99, 1024, i, kMaxNew});
    std::string text;
    for (char c : s.prompt + s.answer_prefix)
      if (c < '0' || c > '9') text += c;
    texts.push_back(text);
  }
  std::vector<std::string_view> docs(texts.begin(), texts.end());
  return data::train_bpe(docs, 2048);
}

// A needle sequence: the prompt as evaluate builds it, then " <value>." and EOS, padded to
// kLength with the padding masked.
void niah_example(TaskContext& ctx, int64_t index, std::vector<int32_t>& ids, std::vector<int32_t>& targets) {
  const Sample s = generate_sample(find_task("niah_single_1"), ctx, {2, kLength, index, kMaxNew});
  std::vector<int32_t> seq = ctx.prompts.ids(s.prompt, s.answer_prefix);
  ctx.prompts.encoder.encode(" " + s.references[0] + ".", seq);
  seq.push_back(data::kEos);
  ids.assign(kLength, data::kPad);
  targets.assign(kLength, -1);
  for (size_t t = 0; t + 1 < seq.size() && t < static_cast<size_t>(kLength); ++t)
    ids[t] = seq[t], targets[t] = seq[t + 1];
}

// An induction warm-up sequence: random digits, then the same digits again (loss on the repeat).
void repeat_example(int64_t index, std::vector<int32_t>& ids, std::vector<int32_t>& targets) {
  const CounterRng rng{0xC0FFEE, static_cast<uint64_t>(index)};
  const int64_t k = (kLength - 2) / 2;
  std::vector<int32_t> seq{data::kBos};
  for (int64_t i = 0; i < k; ++i) seq.push_back('0' + static_cast<int32_t>(rng.bits64(static_cast<uint64_t>(i)) % 10));
  for (int64_t i = 0; i < k; ++i) seq.push_back(seq[static_cast<size_t>(1 + i)]);
  ids.assign(kLength, data::kPad);
  targets.assign(kLength, -1);
  for (size_t t = 0; t + 1 < seq.size(); ++t) {
    ids[t] = seq[t];
    if (static_cast<int64_t>(t) >= k) targets[t] = seq[t + 1];
  }
}

double evaluate_niah(model::Model<float>& m, TaskContext& ctx, const data::Tokenizer& tok, int n) {
  Decoder dec{m, 256, {}};
  const TaskSpec& spec = find_task("niah_single_1");
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const Sample s = generate_sample(spec, ctx, {1, kLength, i, kMaxNew});
    const auto out = generate(dec, data::kEos, ctx.prompts.ids(s.prompt, s.answer_prefix), kMaxNew, kLength);
    sum += score_prediction(spec.metric, data::decode(tok, out), s.references);
  }
  return 100.0 * sum / n;
}

}  // namespace

TEST(EvalToyModel, LearnsNiahSingle1AtItsTrainingLength) {
  const data::Tokenizer tok = niah_tokenizer();
  model::Model<float> m = model::make_model(toy_model(data::vocab_size(tok)), kernels::cpu_ops());
  train::AdamW<float> opt = train::make_adamw(m, {0.9, 0.98, 1e-8, 0.0, false, ""});
  PromptBuilder prompts(tok, data::PromptTemplate::kBase);
  TaskContext ctx = make_task_context(eval::testing::test_resources(), prompts);
  constexpr int kEvalSamples = 40;
  const double before = evaluate_niah(m, ctx, tok, kEvalSamples);

  model::Activations<float> acts = model::make_activations(m, kBatch, kLength);
  std::vector<int32_t> ids(kBatch * kLength), targets(kBatch * kLength), one_ids, one_targets;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t steps = train_steps();
  double loss = 0;
  for (int64_t step = 0; step < steps; ++step) {
    int64_t count = 0;
    for (int64_t b = 0; b < kBatch; ++b) {
      if (b % 2 == 1)
        repeat_example(step * kBatch + b, one_ids, one_targets);
      else
        niah_example(ctx, step * kBatch + b, one_ids, one_targets);
      std::copy(one_ids.begin(), one_ids.end(), ids.begin() + b * kLength);
      std::copy(one_targets.begin(), one_targets.end(), targets.begin() + b * kLength);
      for (int32_t t : one_targets) count += t >= 0;
    }
    model::zero_grads(m);
    const auto l =
        model::forward_backward<float>(m, acts, ids.data(), targets.data(), 1.0f / static_cast<float>(count));
    loss = l.sum / static_cast<double>(l.count);
    const double lr = kLr * std::min(1.0, static_cast<double>(step + 1) / 20.0);
    train::adamw_step(m, opt, lr, train::clip_scale(train::grad_norm(m, opt), 1.0));
  }
  const double train_s = seconds_since(t0);
  const double after = evaluate_niah(m, ctx, tok, kEvalSamples);
  std::printf(
      "toy model: %lld steps of %lld x %lld tokens in %.0f s, final loss %.3f; niah_single_1 @%lld: "
      "%.1f before, %.1f after\n",
      static_cast<long long>(steps), static_cast<long long>(kBatch), static_cast<long long>(kLength), train_s, loss,
      static_cast<long long>(kLength), before, after);
  EXPECT_EQ(before, 0.0) << "an untrained model cannot know a random 7-digit number";
  EXPECT_GE(after, 10.0) << "well above chance (~1e-7) after " << steps << " steps";
}
