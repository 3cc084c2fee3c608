// Synthetic retrieval tasks, so that small models learn to retrieve at all, and the mixer that
// interleaves them into training windows.
//
// Tasks (names as in data.synthetic_tasks):
//   kv      key-value recall: "Key-value pairs:\n" then lines "<8 hex>: <8 hex>", then
//           "What is the value of <key>?" -> the value
//   needle  needle in a haystack: 1-3 sentences "The special magic number for <adjective-noun> is
//           <7 digits>." inserted at word boundaries of a haystack that is either natural text (the
//           window's own text or a corpus span) or RULER's noise ("The grass is green. ..."), then
//           "What is the special magic number for <key>?" -> the number
//   niah    the same needles in RULER's own words (data/ruler_niah.h): "One of the special magic
//           numbers for <key> is: <7 digits>." in the haystack, RULER's singular niah template as
//           the question and its answer prefix "The special magic number for <key> mentioned in the
//           provided text is" -> the number: evaluate's niah prompts, word for word
//   niah_keys  2-3 of niah's needles with distinct keys and RULER's question and answer prefix,
//           without the template's header (so several needles fit a 128-token window): the
//           queried needle is often not the nearest one, so copying the nearest needle is not enough
//   niah_mix  RULER's eight niah tasks (data/ruler_niah.h: single 1-3, multikey 1-3, multivalue,
//           multiquery), one drawn per example: UUID keys and values, distractor keys, a haystack
//           of distractor needles, several values or queries (answer: every value, comma-separated);
//           a shape too big for the budget becomes one needle in the same kind of haystack
//   vt      variable tracking: a chain "VAR A = 12345." "VAR B = A." ... (2-4 names, plus an
//           optional distractor chain with another value) inserted in order into a haystack, then
//           "Which variables are assigned the value 12345?" -> the chain's names in order
//   docqa   retrieval question over a corpus text: the text, then "In the text above, which word
//           comes right after \"w1 w2 w3 w4\"?" -> w5 (the 4-word phrase occurs once)
//   copy    the induction warm-up: "Digits: 7 3 0 ...\nRepeat the digits." -> the same digits
//   words   the same with distinct words (at most 80): "Words: lantern amber ...\nRepeat the
//           words." -> the same words; no word twice, so induction is unambiguous
//   uuids   the same with RULER's UUIDs: "UUIDs: <uuid> <uuid> ...\nRepeat the UUIDs." -> the same
//           UUIDs (hex letters, digits and dashes: what a UUID needle's answer is made of)
//
// Every example is a pure function of (key, budget, haystack tokens): the key comes from
// (data.seed, global sample index, slot), so the stream does not depend on the process layout or
// on where a run was resumed.
//
// Two encodings (see prompt_template.h):
//   raw          BOS <prompt>"\nAnswer:" " "<answer> EOS        (pretrain, extend: the mixer)
//   instruction  BOS "### Instruction:\n"<prompt>"\n\n### Response:\n"<answer> EOS   (sft)
// A task with its own answer prefix (niah, niah_mix) has it in place of "\nAnswer:" (raw) and after the
// response header, leading whitespace stripped (instruction), then " "<answer>: as evaluate asks.
// The prompt is encoded as one string and the answer as another, as evaluate encodes a prompt and
// then generates the answer. Loss masks put the loss on the answer tokens and EOS.
#pragma once

#include "config/choices.h"
#include "data/tokenizer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace headroom::data {

inline constexpr const char* kRawAnswerPrefix = "\nAnswer:";

using config::SyntheticTask;  // its names: those of data.synthetic_tasks (config::name_of)

struct TaskExample {
  std::string task;
  std::string prompt;  // context then question
  std::string answer;  // no leading space
  std::string answer_prefix =
      {};  // what precedes the answer; "" = the format's own ("\nAnswer:" raw, none in instruction)
};

enum class ExampleFormat { kRaw, kInstruction };

struct EncodedExample {
  TaskExample text;
  std::vector<int32_t> tokens;  // BOS ... EOS
  int64_t answer_begin = 0;     // tokens[answer_begin, size) = answer tokens then EOS
};

EncodedExample encode_example(const Tokenizer& tok, Encoder& enc, const TaskExample& ex, ExampleFormat fmt);

// Appends up to n tokens of haystack text to out; `key` chooses which text.
using HaystackFn = std::function<void(uint64_t key, int64_t n, std::vector<int32_t>& out)>;

class TaskGenerator {
 public:
  explicit TaskGenerator(const Tokenizer& tok);

  // An example of `task` whose encoding is at most `budget` tokens, as large as the task allows
  // within it (more pairs, a longer haystack); never smaller than min_tokens(task, fmt). When even
  // the smallest example exceeds the budget, the smallest is returned (callers check).
  EncodedExample make(SyntheticTask task, uint64_t key, int64_t budget, const HaystackFn& haystack, ExampleFormat fmt);

  // Tokens of the smallest example of `task` (an upper bound over keys).
  int64_t min_tokens(SyntheticTask task, ExampleFormat fmt);

  Encoder& encoder() { return enc_; }
  const Tokenizer& tokenizer() const { return tok_; }

 private:
  Tokenizer tok_;
  Encoder enc_;
};

// data.synthetic_* as the mixer needs them.
struct MixerSpec {
  double ratio = 0;                              // fraction of windows that carry an example
  std::vector<SyntheticTask> tasks;              // drawn uniformly
  uint64_t seed = 0;                             // data.seed
  int64_t min_len = 96;                          // smallest example, in tokens
  bool loss_on_prompt = false;                   // data.synthetic_loss = all
  std::vector<SyntheticTask> warmup_tasks = {};  // drawn instead of `tasks` by windows < warmup_samples
  int64_t warmup_samples = 0;                    // data.warmup_steps x train.global_batch
  int64_t warmup_max_len = 0;                    // largest first warm-up example, growing to the window; 0 = the window
};

// Where the example sits in a window of seq_len + 1 tokens.
struct MixInfo {
  bool synthetic = false;
  std::string task, answer;
  int64_t begin = 0;         // window[begin] = BOS of the example
  int64_t answer_begin = 0;  // window[answer_begin, end) = answer tokens and EOS
  int64_t end = 0;           // = seq_len + 1: the example ends the window
};

// Interleaves synthetic examples into text windows. Window i is chosen with probability `ratio`
// (a hash of (seed, i) compared with ratio); a chosen window keeps its first seq_len + 1 − L text
// tokens and ends with one raw-format example of L tokens, L uniform in [min_len, seq_len + 1],
// built from the window's own remaining text as haystack (needle, vt, docqa); windows below
// warmup_samples draw their task from warmup_tasks, with L at most a cap that grows linearly from
// warmup_max_len to the window over the warm-up (a curriculum by sample index, so it does not
// depend on the process layout or on resumption). Targets on the
// example are masked except on the answer and EOS (unless loss_on_prompt).
class SyntheticMixer {
 public:
  // Throws when a task's smallest example does not fit min_len / the window, naming the keys.
  SyntheticMixer(MixerSpec spec, const Tokenizer& tok, int64_t seq_len);

  bool selects(int64_t index) const;

  // window[0, seq_len + 1) holds a text window; targets[0, seq_len) its targets (window shifted by
  // one, −1 where masked). Rewrites both when window `index` is selected.
  MixInfo apply(int64_t index, int32_t* window, int32_t* targets);

  const MixerSpec& spec() const { return spec_; }

 private:
  MixerSpec spec_;
  int64_t seq_len_;
  TaskGenerator gen_;
  std::vector<int32_t> text_;
};

// Replaces BOS, EOS and PAD in tokens[from, end) by newlines (haystack text keeps documents apart
// when decoded).
void specials_to_newlines(const Tokenizer& tok, std::vector<int32_t>& tokens, size_t from = 0);

// Keys: a well-mixed 64-bit value of (seed, index, slot, purpose).
uint64_t sample_key(uint64_t seed, int64_t index, int64_t slot, uint64_t purpose);

}  // namespace headroom::data
