// Shared by the stage-data tests (mixer, long-context sampler, sft packing): English text from
// validation/data, tokenizers, and small shards.
#pragma once

#include "data/bpe_train.h"
#include "data/shard.h"
#include "data/tokenizer.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace headroom::fixtures {

inline std::string english_text() {
  const char* src = std::getenv("HEADROOM_SOURCE_DIR");
  const std::filesystem::path path =
      std::filesystem::path(src ? src : HEADROOM_TEST_SOURCE_DIR) / "validation/data/sample_english.txt";
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text cut into paragraphs (blank-line separated), each one document.
inline std::vector<std::string> english_documents() {
  std::vector<std::string> docs;
  const std::string t = english_text();
  size_t start = 0;
  while (start < t.size()) {
    size_t end = t.find("\n\n", start);
    if (end == std::string::npos) end = t.size();
    if (end > start + 20) docs.push_back(t.substr(start, end - start));
    start = end + 2;
  }
  return docs;
}

inline data::Tokenizer small_bpe() {
  const auto docs = english_documents();
  std::vector<std::string_view> views(docs.begin(), docs.end());
  return data::train_bpe(views, 600);
}

inline std::filesystem::path test_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("headroom_test_" + name);
  std::filesystem::create_directories(dir);
  return dir;
}

// A shard of the given documents (each stored as BOS + tokens).
inline std::filesystem::path write_doc_shard(const std::filesystem::path& path, const std::vector<std::string>& docs,
                                             const data::Tokenizer& tok) {
  data::ShardContents c;
  data::Encoder enc(tok);
  c.doc_offsets.push_back(0);
  for (const auto& d : docs) {
    std::vector<int32_t> ids{data::kBos};
    enc.encode(d, ids);
    c.tokens.insert(c.tokens.end(), ids.begin(), ids.end());
    c.doc_offsets.push_back(c.tokens.size());
    c.n_bytes += static_cast<int64_t>(d.size());
  }
  data::write_shard(path, c, tok, data::ShardMeta{"train", ""});
  return path;
}

}  // namespace headroom::fixtures
