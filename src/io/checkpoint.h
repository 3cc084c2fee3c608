// Checkpoints: one HDF5 file each, written collectively with parallel HDF5 and readable by h5py.
//
//   /                    attrs: format="headroom-checkpoint", format_version, stage, step,
//                        tokens_seen, created_utc, code_version, seed, lineage (JSON array)
//   /config              attrs: every [model] key (numbers as numbers), config_ini (the whole
//                        resolved configuration that produced this file), tokenizer_id
//   /model/<name>        float32, full logical shape; each TP rank writes its slice, one DP
//                        replica writes; attr checksum (sum of the float32 bit patterns, uint64)
//   /optimizer/m/<name>, /optimizer/v/<name>   AdamW moments, same shapes
//   /state               attrs: samples_consumed, data_seed, optimizer_step
//   /tokenizer/merges    int32 [n, 2]
//   /tokenizer/hf        uint8 [n]: a Hugging Face tokenizer's record (data/hf_tokenizer_files.h),
//                        present only for one; absent (every older file) means Headroom's own
//   /<part>/<array>      float64, written by the root rank: the named parts that the training
//                        loop's callbacks hand over (train/callback.h), listed in the root
//                        attribute `parts`; e.g. /metrics/{step,loss,grad_norm,lr,tokens_per_s}
//                        (the logged history) and /spike_monitor/{steps,rule_window,...,flags}
//                        (the stability monitor; train/spike_monitor.h; files written before
//                        these arrays hold its state as the flat vector /spike_monitor/state)
//
// Format version 2 (this build writes it) made the callbacks' state named parts; version 1 files,
// which held /metrics/{step,...} and the monitor's state as /metrics/spike_monitor, still load:
// they read as the parts "metrics" and "spike_monitor" (array "state").
//
// Tensors are stored whole and unfused, so a checkpoint written at one tp × dp layout loads at any
// other. The file is written as <name>.tmp, closed, fsynced and renamed; checkpoints/latest (a
// file naming the newest complete checkpoint) is updated after that.
#pragma once

#include "model/model.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace headroom::parallel {
struct Comm;
struct Grid;
}  // namespace headroom::parallel

namespace headroom::io {

inline constexpr const char* kCheckpointFormat = "headroom-checkpoint";
inline constexpr int64_t kCheckpointVersion = 2;

// State that an owner other than the model and the optimizer keeps in a checkpoint under its own
// name: float64 arrays, written by the root rank as /<name>/<array>. Names are [a-z0-9_]+ and may
// not be one of the checkpoint's own groups (model, optimizer, config, state, tokenizer).
struct CheckpointPart {
  std::string name;
  std::vector<std::pair<std::string, std::vector<double>>> arrays;
  // The array called `array`; throws headroom::Error naming the part when it has none.
  const std::vector<double>& at(const std::string& array) const;
};

// The optimizer state a checkpoint holds, as the optimizer hands it over (train/optimizer.h's
// AdamW makes one): two moment arenas covering elements [lo, hi) of the model's parameter arena on
// this rank (all of it without ZeRO-1), and the step count. `zero` is the data-parallel group the
// moments are sharded over (ZeRO-1), null when every DP replica holds them all.
struct OptimizerMoments {
  float* m = nullptr;
  float* v = nullptr;
  int64_t lo = 0, hi = 0;
  parallel::Comm* zero = nullptr;
  int64_t step = 0;  // written by save; set by load
};

// Everything but the tensors.
struct CheckpointInfo {
  std::string path;
  std::string stage;
  int64_t step = 0;
  int64_t tokens_seen = 0;
  int64_t samples_consumed = 0;
  int64_t optimizer_step = 0;
  uint64_t seed = 0, data_seed = 0;
  std::string config_ini;
  std::string lineage;  // JSON array
  std::string tokenizer_id;
  std::vector<std::pair<int32_t, int32_t>> merges;
  std::string tokenizer_hf;  // a Hugging Face tokenizer's record; "" for Headroom's tokenizers
  std::vector<CheckpointPart> parts;
  // The part called `name`, or null.
  const CheckpointPart* part(const std::string& name) const;
};

// Collective over grid.world. `opt` may be null (no optimizer state written).
void save_checkpoint(const std::filesystem::path& path, const parallel::Grid& grid, const model::Model<float>& model,
                     const OptimizerMoments* opt, const CheckpointInfo& info);

// Reads attributes and small datasets; checks the format. Any rank, no collectives.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& path);

// Loads this rank's slices of every parameter (and the optimizer moments when `opt` is non-null),
// refusing a checkpoint of another architecture with the dataset and both shapes, and verifying
// each tensor's checksum over the TP group.
void load_checkpoint_tensors(const std::filesystem::path& path, model::Model<float>& model, OptimizerMoments* opt);

}  // namespace headroom::io
