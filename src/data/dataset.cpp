#include "data/dataset.h"

#include "io/atomic_file.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

namespace headroom::data {
namespace fs = std::filesystem;
namespace {

nlohmann::json entries_json(const std::vector<ShardEntry>& entries) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : entries)
    a.push_back({{"file", e.file}, {"n_tokens", e.n_tokens}, {"n_docs", e.n_docs}, {"n_bytes", e.n_bytes}});
  return a;
}

template <class T>
T field(const nlohmann::json& j, const std::string& key, const fs::path& file) {
  if (!j.is_object() || !j.contains(key)) fail(file.string(), ": missing key '", key, "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    fail(file.string(), ": key '", key, "' has the wrong type (value ", j.at(key).dump(), ")");
  }
}

std::vector<ShardEntry> entries_of(const nlohmann::json& splits, const std::string& split, const fs::path& file) {
  std::vector<ShardEntry> out;
  for (const auto& e : field<nlohmann::json>(splits, split, file)) {
    ShardEntry s{field<std::string>(e, "file", file), field<int64_t>(e, "n_tokens", file),
                 field<int64_t>(e, "n_docs", file), field<int64_t>(e, "n_bytes", file)};
    if (s.file.empty() || s.file.find('/') != std::string::npos || s.file[0] == '.')
      fail(file.string(), ": splits.", split, " names '", s.file, "', not a file of the dataset directory");
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

void write_dataset_index(const fs::path& dir, const DatasetIndex& index) {
  const nlohmann::json j = {{"format", kDatasetFormat},
                            {"format_version", 1},
                            {"tokenizer_id", index.tokenizer_id},
                            {"vocab_size", index.vocab_size},
                            {"tokenizer", index.tokenizer_file},
                            {"splits", {{"train", entries_json(index.train)}, {"val", entries_json(index.val)}}}};
  io::write_file_atomic(dir / kDatasetIndex, j.dump(1) + "\n");
}

DatasetIndex read_dataset_index(const fs::path& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(io::read_file(file));
  } catch (const nlohmann::json::exception& e) {
    fail(file.string(), ": not valid JSON (", e.what(), ")");
  }
  const auto format = field<std::string>(j, "format", file);
  if (format != kDatasetFormat) fail(file.string(), ": format = '", format, "', expected '", kDatasetFormat, "'");
  const auto version = field<int64_t>(j, "format_version", file);
  if (version != 1) fail(file.string(), ": format_version = ", version, ", this build reads 1");
  DatasetIndex index;
  index.tokenizer_id = field<std::string>(j, "tokenizer_id", file);
  index.tokenizer_file = field<std::string>(j, "tokenizer", file);
  index.vocab_size = field<int64_t>(j, "vocab_size", file);
  const auto splits = field<nlohmann::json>(j, "splits", file);
  index.train = entries_of(splits, "train", file);
  index.val = entries_of(splits, "val", file);
  return index;
}

ShardReader open_dataset(const fs::path& path, const std::string& split, const std::string& expected_tokenizer_id) {
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  const fs::path index_file = dir ? path / kDatasetIndex : path;
  if (!dir && path.filename() != kDatasetIndex) return open_shard(path, expected_tokenizer_id);
  if (dir && !fs::exists(index_file)) {
    if (fs::exists(path / (split + ".h5"))) return open_shard(path / (split + ".h5"), expected_tokenizer_id);
    fail(path.string(), ": a directory without ", kDatasetIndex, " or ", split, ".h5; is it a dataset prepare wrote?");
  }
  const DatasetIndex index = read_dataset_index(index_file);
  if (!expected_tokenizer_id.empty() && index.tokenizer_id != expected_tokenizer_id)
    fail(index_file.string(), ": dataset was made with tokenizer '", index.tokenizer_id, "' but '",
         expected_tokenizer_id, "' was asked for; re-run prepare with that tokenizer");
  const auto& entries = split == "val" ? index.val : index.train;
  std::vector<fs::path> files;
  for (const auto& e : entries) files.push_back(index_file.parent_path() / e.file);
  ShardReader r = open_shards(path.string(), files);
  for (size_t i = 0; i < entries.size(); ++i)
    if (r.parts[i].n_tokens != entries[i].n_tokens || r.parts[i].n_docs != entries[i].n_docs)
      fail(r.parts[i].path, ": holds ", r.parts[i].n_tokens, " tokens and ", r.parts[i].n_docs, " documents, but ",
           index_file.string(), " says ", entries[i].n_tokens, " and ", entries[i].n_docs, " (a shard was replaced?)");
  return r;
}

}  // namespace headroom::data
