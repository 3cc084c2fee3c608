#include "eval/eval_config.h"

#include "util/error.h"
#include "util/text.h"

#include <algorithm>
#include <sstream>

namespace headroom::eval {

void add_eval_keys(config::Schema& s, EvalConfig& e) {
  using config::add_key;
  config::section(s, "eval", "Evaluation [eval]");
  add_key(s, "eval", "tasks", e.tasks, std::string("all"),
          "comma-separated tasks: niah_single_1..3, niah_multikey_1..3, niah_multivalue, "
          "niah_multiquery, vt, cwe, fwe, qa_1, qa_2 (group: ruler), json_kv, loss_by_position, mc; "
          "groups: ruler, helmet_recall (json_kv, niah_multikey_2, niah_multikey_3, niah_multivalue: scored "
          "together as HELMET's recall category too), all = every one");
  add_key(s, "eval", "lengths", e.lengths, std::string(""),
          "comma-separated context lengths in tokens of the model's tokenizer (1024 or 1K); empty = "
          "the longest length the checkpoint was trained at");
  config::add_choice_key(s, "eval", "template", e.prompt_template, config::PromptChoice::kAuto,
                         "how prompts are framed: auto (instruction when the checkpoint's lineage has an sft stage, "
                         "else base), base (the raw prompt), instruction (sft's template), chat (an imported Hugging "
                         "Face chat model's own role markers: ChatML as Qwen 3 with thinking off, or Llama 3's "
                         "headers; refused for a tokenizer without them)");
  add_key(s, "eval", "samples", e.samples, 20L, "samples per task and length (RULER uses 500)",
          config::at_least<long>(1));
  add_key(s, "eval", "seed", e.seed, 1UL,
          "seed of the generated samples: sample i of a task at a length depends only on (seed, "
          "task, length, i)");
  add_key(s, "eval", "allow_beyond_training", e.allow_beyond_training, false,
          "allow lengths beyond what the model can address (the longest training length in the "
          "checkpoint's lineage, or original_len · factor with YaRN or llama3 RoPE scaling)");
  add_key(s, "eval", "max_new_tokens", e.max_new_tokens, 0L,
          "tokens to generate per sample; 0 = each task's RULER setting (niah 128, vt 30, cwe 120, "
          "fwe 50, qa 32, json_kv 100)",
          config::at_least<long>(0));
  add_key(s, "eval", "essay", e.essay, std::string("data/corpus/essay"),
          "essay haystack: a JSONL file of {\"text\": ...} or a directory of them (natural text "
          "held out from training; jobs/fetch_corpus.sh writes data/corpus/essay)");
  add_key(s, "eval", "word_dir", e.word_dir, std::string("inputs/eval"),
          "directory of adjectives.txt, nouns.txt, verbs.txt (inputs/eval/make_words.py)");
  add_key(s, "eval", "mc_file", e.mc_file, std::string("inputs/eval/mc_quiz.jsonl"),
          "multiple-choice items, JSONL of {\"query\", \"choices\", \"gold\"}");
  add_key(s, "eval", "loss_windows", e.loss_windows, 8L,
          "held-out windows per length for loss_by_position (from data.val)", config::at_least<long>(1));
  add_key(s, "eval", "prefill_chunk", e.prefill_chunk, 512L,
          "tokens per prefill block; memory is the KV cache plus one block's activations", config::at_least<long>(1));
  add_key(s, "eval", "tp", e.tp, 1L,
          "tensor-parallel degree: each group of tp ranks holds one copy of the model split by heads and MLP "
          "columns (as parallel.tp in training) and its KV cache split by KV heads, for a model or a length that "
          "does not fit one GPU; the groups split the samples. Independent of the training run's parallel.tp",
          config::at_least<long>(1));
  add_key(s, "eval", "write_samples", e.write_samples, true,
          "write samples.jsonl: every generated sample's prediction, references and score");
  add_key(s, "eval", "ruler_pred", e.ruler_pred, false,
          "also write ruler_pred/<length>/<task>.jsonl: every scored sample with its whole prompt text in "
          "RULER's prediction-file fields (index, pred, input, outputs, others, truncation, length), so "
          "RULER's scorer can re-score the run without Headroom; the prompt text also goes into "
          "samples.jsonl (\"input\"); large at long lengths (about 4 bytes per token)");
}

std::vector<int64_t> parse_lengths(const std::string& list) {
  std::vector<int64_t> out;
  for (const std::string& item : split_list(list)) {
    int64_t scale = 1;
    std::string digits = item;
    if (digits.back() == 'k' || digits.back() == 'K') scale = 1024, digits.pop_back();
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 12)
      fail("eval.lengths: '", item, "' is not a length (write e.g. 1024 or 4K)");
    const int64_t v = std::stoll(digits) * scale;
    if (v < 16) fail("eval.lengths: ", item, " is too short (at least 16 tokens)");
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

}  // namespace headroom::eval
