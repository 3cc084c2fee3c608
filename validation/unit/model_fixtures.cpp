#include "model_fixtures.h"

#include "config/keys.h"
#include "util/random.h"

#include <map>

namespace headroom::fixtures {

config::ModelConfig tiny_model(std::initializer_list<std::pair<std::string, std::string>> overrides) {
  std::map<std::string, std::string> keys{
      {"vocab_size", "13"}, {"d_model", "8"},     {"n_layers", "2"},   {"d_ff", "12"},  {"n_heads", "2"},
      {"n_kv_heads", "2"},  {"head_dim_qk", "4"}, {"head_dim_v", "4"}, {"window", "3"}, {"init_std", "0.3"}};
  for (const auto& [k, v] : overrides) keys[k] = v;
  std::vector<std::pair<std::string, std::string>> args{{"train.seq_len", "16"}};
  for (const auto& [k, v] : keys) args.emplace_back("model." + k, v);
  return config::make_config(config::kModel | config::kTrain, args).model;
}

Batch random_batch(int64_t vocab, int64_t B, int64_t T, uint64_t seed, int mask_every) {
  Batch b{B, T, {}, {}};
  const CounterRng rng{seed, 7};
  std::vector<int32_t> stream(static_cast<size_t>(B * (T + 1)));
  for (size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<int32_t>(rng.bits64(i) % static_cast<uint64_t>(vocab));
  for (int64_t s = 0; s < B; ++s)
    for (int64_t t = 0; t < T; ++t) {
      b.ids.push_back(stream[static_cast<size_t>(s * (T + 1) + t)]);
      const bool masked = mask_every > 0 && (s * T + t) % mask_every == 1;
      b.targets.push_back(masked ? -1 : stream[static_cast<size_t>(s * (T + 1) + t + 1)]);
    }
  return b;
}

}  // namespace headroom::fixtures
