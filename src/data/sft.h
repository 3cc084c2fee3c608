// Supervised fine-tuning data: prompt/response pairs from a JSONL file and instruction-style
// examples from the built-in generator (synthetic.h), in the instruction template of
// prompt_template.h, packed into training windows with the loss on the response only.
//
// One example is
//   BOS "### Instruction:\n"<prompt>"\n\n### Response:\n"<response> EOS
// with targets on the response tokens and EOS; everything else (the prompt, the template, BOS and
// the padding) has target −1. Examples are packed whole into a window of seq_len + 1 tokens
// (examples longer than a window are dropped when the file is read, with a count); the rest of a
// window that no example fits into is PAD with no loss. Attention is not masked between examples
// of one window: like the pretraining windows, examples are BOS-separated and a later example can
// attend to an earlier one (it has no reason to: nothing in it refers to the other).
//
// Window i is a pure function of (data.seed, i): slot j of window i draws its source, example and
// size from sample_key(seed, i, j). A slot takes an example from the file with probability
// data.sft_file_share (when a file is given), else a generated one: a synthetic task (from
// data.synthetic_tasks) with probability data.synthetic_ratio, else a retrieval question over a
// corpus document (docqa). A generated example's size is uniform in [data.synthetic_min_len,
// seq_len + 1] and clipped to the room left in the window.
#pragma once

#include "data/shard.h"
#include "data/synthetic.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace headroom::data {

struct SftPair {
  std::string prompt, response;
};

// One JSON object per line with string fields "prompt" and "response" (other fields ignored, blank
// lines skipped). Errors name the file and the line.
std::vector<SftPair> read_sft_jsonl(const std::filesystem::path& path);

struct SftSpec {
  int64_t seq_len = 0;
  uint64_t seed = 0;                 // data.seed
  double file_share = 0.5;           // data.sft_file_share (used only with a file)
  double synthetic_ratio = 0.5;      // data.synthetic_ratio
  std::vector<SyntheticTask> tasks;  // data.synthetic_tasks
  int64_t min_len = 96;              // data.synthetic_min_len
};

// An example's place in a window: window[begin, end), its response and EOS in
// window[response_begin, end).
struct PackedExample {
  std::string source;  // "file" or the generated task's name
  int64_t begin = 0, response_begin = 0, end = 0;
};

class SftPacker {
 public:
  // `docs` supplies corpus text for generated examples (shard_haystack).
  SftPacker(SftSpec spec, const Tokenizer& tok, const std::vector<SftPair>& pairs, HaystackFn docs);

  // window[0, seq_len + 1) and loss[0, seq_len + 1) (1 where the token is a response token or EOS).
  std::vector<PackedExample> pack(int64_t index, int32_t* window, uint8_t* loss);

  // ids[0, seq_len), targets[0, seq_len): the trainer's sample function.
  void sample(int64_t index, int32_t* ids, int32_t* targets);

  int64_t file_examples() const { return static_cast<int64_t>(file_.size()); }
  int64_t dropped_too_long() const { return dropped_; }
  int64_t min_generated() const { return min_generated_; }

 private:
  SftSpec spec_;
  TaskGenerator gen_;
  HaystackFn docs_;
  std::vector<EncodedExample> file_;
  int64_t dropped_ = 0, min_generated_ = 0;
  std::vector<int32_t> window_;
  std::vector<uint8_t> loss_;
};

// Corpus text from a shard: the document chosen by the key, from its beginning, continuing into
// the following documents when it is shorter than n; BOS becomes a newline so documents stay apart
// when decoded. The shard must outlive the function.
HaystackFn shard_haystack(const ShardReader& shard, std::vector<uint64_t> doc_offsets);

}  // namespace headroom::data
