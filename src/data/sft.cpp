#include "data/sft.h"

#include "data/prompt_template.h"
#include "util/error.h"
#include "util/random.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <memory>

namespace headroom::data {
namespace fs = std::filesystem;

std::vector<SftPair> read_sft_jsonl(const fs::path& path) {
  std::ifstream in(path);
  if (!in) fail("sft data ", path.string(), ": cannot open for reading");
  std::vector<SftPair> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      fail("sft data ", path.string(), ":", n, ": not a JSON object (", e.what(), ")");
    }
    for (const char* field : {"prompt", "response"})
      if (!j.is_object() || !j.contains(field) || !j[field].is_string())
        fail("sft data ", path.string(), ":", n, ": needs a string field \"", field,
             "\" ({\"prompt\": ..., \"response\": ...} per line)");
    out.push_back({j["prompt"].get<std::string>(), j["response"].get<std::string>()});
  }
  if (out.empty()) fail("sft data ", path.string(), ": holds no prompt/response pair");
  return out;
}

HaystackFn shard_haystack(const ShardReader& shard, std::vector<uint64_t> doc_offsets) {
  if (doc_offsets.size() < 2) fail(shard.path, ": holds no document");
  auto offsets = std::make_shared<std::vector<uint64_t>>(std::move(doc_offsets));
  const ShardReader* s = &shard;
  auto tok = std::make_shared<const Tokenizer>(read_shard_tokenizer(shard));  // for its specials
  return [s, offsets, tok](uint64_t key, int64_t n, std::vector<int32_t>& out) {
    const int64_t n_docs = static_cast<int64_t>(offsets->size()) - 1;
    const int64_t d = static_cast<int64_t>(key % static_cast<uint64_t>(n_docs));
    const int64_t start = static_cast<int64_t>((*offsets)[static_cast<size_t>(d)]);
    const int64_t count = std::min(n, s->n_tokens - start);
    if (count <= 0) return;
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(count));
    read_tokens(*s, start, count, out.data() + at);
    const bool had_bos = count > 0 && bos_id(*tok) && out[at] == *bos_id(*tok);
    specials_to_newlines(*tok, out, at);
    // Drop the newline that stood for the document's own BOS.
    if (had_bos) out.erase(out.begin() + static_cast<std::ptrdiff_t>(at));
  };
}

SftPacker::SftPacker(SftSpec spec, const Tokenizer& tok, const std::vector<SftPair>& pairs, HaystackFn docs)
    : spec_(std::move(spec)), gen_(tok), docs_(std::move(docs)) {
  const int64_t W = spec_.seq_len + 1;
  for (const auto& p : pairs) {
    EncodedExample e = encode_example(gen_.tokenizer(), gen_.encoder(), TaskExample{"file", p.prompt, p.response},
                                      ExampleFormat::kInstruction);
    if (static_cast<int64_t>(e.tokens.size()) > W) {
      ++dropped_;
      continue;
    }
    file_.push_back(std::move(e));
  }
  if (!pairs.empty() && file_.empty())
    fail("every one of the ", pairs.size(),
         " prompt/response pairs of data.sft_file is longer than "
         "a window of train.seq_len + 1 = ",
         W, " tokens");
  const bool generates = file_.empty() || spec_.file_share < 1.0;
  if (generates) {
    if (spec_.tasks.empty()) fail("data.synthetic_tasks names no task");
    min_generated_ = std::max(spec_.min_len, gen_.min_tokens(SyntheticTask::kDocqa, ExampleFormat::kInstruction));
    for (const auto& t : spec_.tasks)
      min_generated_ = std::max(min_generated_, gen_.min_tokens(t, ExampleFormat::kInstruction));
    if (min_generated_ > W)
      fail("generated sft examples need at least ", min_generated_,
           " tokens (data.synthetic_min_len "
           "and the smallest example of data.synthetic_tasks with this tokenizer) but a window is "
           "train.seq_len + 1 = ",
           W, "; raise train.seq_len");
  }
  window_.resize(static_cast<size_t>(W));
  loss_.resize(static_cast<size_t>(W));
}

std::vector<PackedExample> SftPacker::pack(int64_t index, int32_t* window, uint8_t* loss) {
  const int64_t W = spec_.seq_len + 1;
  std::vector<PackedExample> placed;
  int64_t pos = 0;
  const bool generates = file_.empty() || spec_.file_share < 1.0;
  for (int64_t slot = 0; pos < W && slot < 4096; ++slot) {
    const int64_t room = W - pos;
    const uint64_t key = sample_key(spec_.seed, index, slot, 0x5f7ull);
    SplitMix64 r{key};
    const EncodedExample* e = nullptr;
    EncodedExample generated;
    const bool from_file = !file_.empty() && r.unit() < spec_.file_share;
    if (from_file) {
      e = &file_[r.next() % file_.size()];
      if (static_cast<int64_t>(e->tokens.size()) > room) e = nullptr;  // fill the room otherwise
    }
    if (!e) {
      if (!generates || room < min_generated_) break;
      const int64_t span = W - spec_.min_len + 1;
      const int64_t size = std::min(
          room, spec_.min_len + static_cast<int64_t>(r.next() % static_cast<uint64_t>(std::max<int64_t>(1, span))));
      const bool synthetic = r.unit() < spec_.synthetic_ratio;
      const SyntheticTask task = synthetic ? spec_.tasks[r.next() % spec_.tasks.size()] : SyntheticTask::kDocqa;
      generated = gen_.make(task, r.next(), std::max(size, min_generated_), docs_, ExampleFormat::kInstruction);
      if (static_cast<int64_t>(generated.tokens.size()) > room) break;
      e = &generated;
    }
    const int64_t n = static_cast<int64_t>(e->tokens.size());
    std::copy(e->tokens.begin(), e->tokens.end(), window + pos);
    std::fill(loss + pos, loss + pos + e->answer_begin, 0);
    std::fill(loss + pos + e->answer_begin, loss + pos + n, 1);
    placed.push_back({e->text.task, pos, pos + e->answer_begin, pos + n});
    pos += n;
  }
  std::fill(window + pos, window + W, pad_id(gen_.tokenizer()));
  std::fill(loss + pos, loss + W, 0);
  return placed;
}

void SftPacker::sample(int64_t index, int32_t* ids, int32_t* targets) {
  pack(index, window_.data(), loss_.data());
  const int64_t T = spec_.seq_len;
  for (int64_t t = 0; t < T; ++t) {
    ids[t] = window_[static_cast<size_t>(t)];
    targets[t] = loss_[static_cast<size_t>(t + 1)] ? window_[static_cast<size_t>(t + 1)] : -1;
  }
}

}  // namespace headroom::data
