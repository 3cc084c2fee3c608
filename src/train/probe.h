// The retrieval probe: a fixed set of held-out synthetic examples scored at intervals during
// training (train.probe_every), so a study sees how fast a configuration learns to retrieve, not
// only where it ends. Small models may never reach exact answers on RULER within a CPU budget; the
// probe's teacher-forced answer accuracy moves long before that.
//
// Every example fills a whole window (seq_len + 1 tokens: a val-shard text window whose end is
// replaced by one raw-format example of train.probe_tasks, data/synthetic.h) and is keyed by
// kProbeSeed and its index only, so every configuration and every seed of a study is scored on the
// same examples, which no training run draws (their keys come from data.seed).
//
// Memory: the logits of one micro-batch on the host (micro_batch · seq_len · vocab_size floats;
// the trainer refuses more than 4 GiB).
//
// Scores, over the answer tokens and the EOS after them (the positions the mixer trains on):
//   loss       mean cross-entropy, nats per token
//   token_acc  share of those tokens that are the argmax of the model's prediction
//   exact      share of examples with every one of those tokens the argmax: exactly the examples
//              greedy decoding would answer correctly, since each token is predicted from the
//              correct prefix
#pragma once

#include "model/activations.h"
#include "parallel/grid.h"
#include "train/trainer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::train {

inline constexpr uint64_t kProbeSeed = 0x9e0be5eedull;

struct ProbeScores {
  double loss = 0, token_acc = 0, exact = 0;
  int64_t examples = 0, answer_tokens = 0;
};

// Collective over grid.world: probe examples are split round-robin by micro-batch over the
// data-parallel ranks and the sums all-reduced, so every rank returns the same scores. `logits` is
// the host buffer of one micro-batch's logits, kept by the caller from one probe to the next: a
// fresh 32 MiB buffer per probe (the toy RULER study's) cost ~0.9 s of page faults and zero-filling,
// a tenth of its pretraining.
ProbeScores run_probe(model::Model<float>& m, model::Activations<float>& acts, const SampleFn& sample, int64_t count,
                      const parallel::Grid& grid, std::vector<float>& logits);

}  // namespace headroom::train
