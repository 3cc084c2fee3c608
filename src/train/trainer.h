// The training loop shared by pretrain, extend and sft: data-parallel micro-batches with gradient
// accumulation, tensor-parallel model, AdamW with clipping and a schedule, the stability monitor,
// progress lines, metrics.jsonl, checkpoints at an interval, on a stop signal and at the end.
#pragma once

#include "config/config.h"
#include "data/mixture.h"
#include "io/checkpoint.h"
#include "io/run_dir.h"
#include "parallel/grid.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace headroom::train {

// Fills ids[0, T) and targets[0, T) (−1 = no loss) of global sample `index`.
using SampleFn = std::function<void(int64_t index, int32_t* ids, int32_t* targets)>;

struct TrainJob {
  std::string stage;  // pretrain | extend | sft: recorded in checkpoints and lineage
  config::Config cfg;
  std::string config_ini;  // the resolved configuration, stored in every checkpoint
  std::filesystem::path run_dir;
  SampleFn sample;
  // data.mix: the mixture that picks each window's source (the metrics log records tokens per source).
  std::shared_ptr<data::Mixture> mixture;
  SampleFn probe;  // examples of the retrieval probe (train/probe.h); used when train.probe_every > 0
  std::string tokenizer_id;
  std::vector<std::pair<int32_t, int32_t>> merges;
  std::string tokenizer_hf;  // a Hugging Face tokenizer's record (io::CheckpointInfo::tokenizer_hf)
  int32_t bos = -1;          // the token that begins each document (data.document_mask needs one)
  // Where the weights come from when not resuming: a checkpoint of an earlier stage (extend, sft),
  // or nothing (fresh initialisation from model.seed).
  std::optional<std::filesystem::path> init;
  std::string lineage;  // JSON array of earlier stages ("[]" for pretrain)
  bool resume = false;  // continue from the newest good checkpoint in run_dir
};

struct TrainResult {
  int exit_code = 0;  // 0, or kExitRequeue after a stop signal
  int64_t steps_done = 0;
  double final_loss = 0;
};

// Collective over grid.world. `run` is the run directory handle on the root rank (null elsewhere).
TrainResult run_training(const TrainJob& job, parallel::Grid& grid, io::RunDir* run);

}  // namespace headroom::train
