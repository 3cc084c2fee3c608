// A dataset of many shards: the directory prepare writes holds the shards of each split and
// `dataset.json`, the index that names them (in the order the stream concatenates them) and the
// tokenizer. A split held in one shard keeps the name `<split>.h5` (train.h5, val.h5), so a dataset
// of one shard per split is also what earlier versions wrote.
//
//   {"format": "headroom-dataset", "format_version": 1, "tokenizer_id": "...", "vocab_size": N,
//    "tokenizer": "tokenizer.txt", "splits": {"train": [{"file": "train-00000-00000.h5",
//    "n_tokens": T, "n_docs": D, "n_bytes": B}, ...], "val": [...]}}
#pragma once

#include "data/shard.h"

#include <filesystem>
#include <string>
#include <vector>

namespace headroom::data {

inline constexpr const char* kDatasetFormat = "headroom-dataset";
inline constexpr const char* kDatasetIndex = "dataset.json";

struct ShardEntry {
  std::string file;  // relative to the dataset directory
  int64_t n_tokens = 0, n_docs = 0, n_bytes = 0;
};

struct DatasetIndex {
  std::string tokenizer_id, tokenizer_file;
  int64_t vocab_size = 0;
  std::vector<ShardEntry> train, val;
};

// Written atomically; read back refusing a malformed index, naming the file and the key.
void write_dataset_index(const std::filesystem::path& dir, const DatasetIndex& index);
DatasetIndex read_dataset_index(const std::filesystem::path& file);

// The token stream of `split` ("train" or "val") of `path`: a shard file (.h5), a dataset
// directory (its dataset.json, or <split>.h5 when it has none), or a dataset.json file.
ShardReader open_dataset(const std::filesystem::path& path, const std::string& split,
                         const std::string& expected_tokenizer_id = "");

}  // namespace headroom::data
