// Token shards: HDF5 files that h5py can read; a dataset (dataset.h) holds one or more per split.
//
//   /tokens        uint16 (vocab ≤ 65536) or uint32, all documents concatenated; each document is
//                  stored as BOS followed by its tokens
//   /doc_offsets   uint64 [n_docs + 1], document d is tokens[doc_offsets[d] : doc_offsets[d+1]]
//   /tokenizer/merges  int32 [n_merges, 2] (absent rows for the byte tokenizer)
//   /tokenizer/hf      uint8 [n]: a Hugging Face tokenizer's record (hf_tokenizer_files.h); only
//                      for one (then no merges rows); absent means Headroom's own tokenizer
//   root attributes: format = "headroom-shard", format_version, tokenizer_id, vocab_size, n_tokens,
//                    n_docs, n_bytes (UTF-8 bytes of text), split, created_utc, code_version,
//                    prepare_config (the INI text of the prepare options used)
#pragma once

#include "data/tokenizer.h"
#include "io/h5.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace headroom::data {

inline constexpr const char* kShardFormat = "headroom-shard";
inline constexpr int64_t kShardVersion = 1;

struct ShardContents {
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> doc_offsets;  // n_docs + 1 entries, starting at 0
  int64_t n_bytes = 0;
};

struct ShardMeta {
  std::string split;           // "train" or "val"
  std::string prepare_config;  // INI text
};

// A shard's tokenizer (its merges, a Hugging Face record) and its attributes, written into an open
// file: what every shard writer shares besides /tokens and /doc_offsets.
void write_shard_header(const io::H5File& file, const Tokenizer& tokenizer, const ShardMeta& meta, int64_t n_tokens,
                        int64_t n_docs, int64_t n_bytes);

// Writes `path` atomically (temporary + rename); throws naming the file on failure.
void write_shard(const std::filesystem::path& path, const ShardContents& contents, const Tokenizer& tokenizer,
                 const ShardMeta& meta);

// One open shard file: the header in memory, tokens read on demand by hyperslab so shards larger
// than memory work.
struct ShardPart {
  std::string path;
  io::H5File file;
  io::H5Handle tokens;  // the /tokens dataset
  int64_t n_tokens = 0, n_docs = 0;
  int64_t first_token = 0;  // of the stream of all parts
};

// A token stream: one shard, or the shards of a dataset (dataset.h) concatenated in the order its
// index lists them. Documents never span parts; windows may.
struct ShardReader {
  std::string path;  // what was opened: a shard file, or a dataset directory or index
  std::vector<ShardPart> parts;
  std::string tokenizer_id;
  int64_t vocab_size = 0;
  int64_t n_tokens = 0;
  int64_t n_docs = 0;
};

// Opens and checks the format attributes; when expected_tokenizer_id is non-empty, refuses a shard
// made by another tokenizer, naming both.
ShardReader open_shard(const std::filesystem::path& path, const std::string& expected_tokenizer_id = "");
// The shard files `paths` as one stream; all must share one tokenizer (refused naming both).
ShardReader open_shards(const std::string& name, const std::vector<std::filesystem::path>& paths);

// The tokenizer stored in the shard (the first part's).
Tokenizer read_shard_tokenizer(const ShardReader& shard);
// n_docs + 1 offsets into the whole stream (the parts' offsets, shifted and joined).
std::vector<uint64_t> read_doc_offsets(const ShardReader& shard);

// tokens[offset, offset + count) of the stream as int32 ids (across parts when the range spans them).
void read_tokens(const ShardReader& shard, int64_t offset, int64_t count, int32_t* out);

}  // namespace headroom::data
