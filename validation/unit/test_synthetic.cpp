// The synthetic retrieval mixer: deterministic from (seed, sample index), the configured share of
// windows carries an example, each example sits at the window's end with its answer recoverable
// from the window's own context, and the loss is on the answer and EOS only.
#include "config/task_names.h"
#include "data/synthetic.h"
#include "eval/prompt.h"
#include "stage_data_fixtures.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

using namespace headroom;
using namespace headroom::data;

namespace {

// Text windows of T + 1 tokens cut from the English sample, with targets = window shifted by one.
struct Windows {
  std::vector<int32_t> stream;
  int64_t T;
  void fill(int64_t index, std::vector<int32_t>& window, std::vector<int32_t>& targets) const {
    const int64_t n = static_cast<int64_t>(stream.size()) - T - 1;
    const int64_t start = (index * 7919) % n;
    window.assign(stream.begin() + start, stream.begin() + start + T + 1);
    targets.assign(window.begin() + 1, window.end());
  }
};

Windows english_windows(const Tokenizer& tok, int64_t T) {
  Windows w{{}, T};
  Encoder enc(tok);
  enc.encode(fixtures::english_text(), w.stream);
  return w;
}

// The fixture's English text as every example's haystack: its first n tokens.
HaystackFn english_prefix(const Tokenizer& tok) {
  auto hay = std::make_shared<std::vector<int32_t>>();
  Encoder(tok).encode(fixtures::english_text(), *hay);
  return [hay](uint64_t, int64_t n, std::vector<int32_t>& out) {
    out.insert(out.end(), hay->begin(), hay->begin() + std::min<int64_t>(n, static_cast<int64_t>(hay->size())));
  };
}

MixerSpec spec(double ratio, uint64_t seed = 7,
               std::vector<SyntheticTask> tasks = {SyntheticTask::kKv, SyntheticTask::kNeedle, SyntheticTask::kVt,
                                                   SyntheticTask::kDocqa}) {
  return MixerSpec{ratio, std::move(tasks), seed, 64, false};
}

// Checks that the answer follows from the prompt by the task's own rule.
void expect_answer_in_context(const std::string& task, const std::string& prompt, const std::string& answer) {
  std::smatch m;
  if (task == "kv") {
    ASSERT_TRUE(std::regex_search(prompt, m, std::regex("What is the value of ([0-9a-f]{8})\\?\nAnswer:$"))) << prompt;
    EXPECT_NE(prompt.find(cat("\n", m[1].str(), ": ", answer, "\n")), std::string::npos) << prompt;
  } else if (task == "needle") {
    ASSERT_TRUE(
        std::regex_search(prompt, m, std::regex("What is the special magic number for ([a-z]+-[a-z]+)\\?\nAnswer:$")))
        << prompt;
    EXPECT_NE(prompt.find(cat("The special magic number for ", m[1].str(), " is ", answer, ".")), std::string::npos);
    EXPECT_TRUE(std::regex_match(answer, std::regex("[1-9][0-9]{6}")));
  } else if (task == "vt") {
    ASSERT_TRUE(
        std::regex_search(prompt, m, std::regex("Which variables are assigned the value ([0-9]{5})\\?\nAnswer:$")))
        << prompt;
    // Follow the assignments in order of appearance.
    std::set<std::string> holds{m[1].str()};
    std::string expected;
    const std::regex stmt("VAR ([A-Z]{5}) = ([A-Z]{5}|[0-9]{5})\\.");
    for (auto it = std::sregex_iterator(prompt.begin(), prompt.end(), stmt); it != std::sregex_iterator(); ++it)
      if (holds.count((*it)[2].str())) {
        holds.insert((*it)[1].str());
        expected = expected.empty() ? (*it)[1].str() : cat(expected, " ", (*it)[1].str());
      }
    EXPECT_EQ(answer, expected) << prompt;
    EXPECT_GE(std::count(answer.begin(), answer.end(), ' '), 1);  // at least two names
  } else if (task == "docqa") {
    ASSERT_TRUE(
        std::regex_search(prompt, m, std::regex("which word comes right after \"([^\"]*(?:\"[^\"]*)*)\"\\?\nAnswer:$")))
        << prompt;
    const std::string text = prompt.substr(0, prompt.rfind("\nIn the text above"));
    // Normalise whitespace, then the phrase occurs once and is followed by the answer.
    std::string flat;
    for (size_t i = 0; i < text.size(); ++i) {
      const bool space = std::isspace(static_cast<unsigned char>(text[i]));
      if (space && (!flat.empty() && flat.back() == ' ')) continue;
      flat += space ? ' ' : text[i];
    }
    const std::string needle = " " + m[1].str() + " " + answer + " ";
    const std::string padded = " " + flat + " ";
    EXPECT_NE(padded.find(needle), std::string::npos) << "phrase '" << m[1].str() << "' answer '" << answer << "'";
  } else {
    ADD_FAILURE() << "unknown task " << task;
  }
}

}  // namespace

TEST(SyntheticMixer, DeterministicFromSeedAndIndex) {
  const Tokenizer tok;
  const int64_t T = 256;
  const Windows text = english_windows(tok, T);
  SyntheticMixer a(spec(0.5), tok, T), b(spec(0.5), tok, T), other(spec(0.5, 8), tok, T);
  int differ = 0;
  std::vector<int32_t> w1, t1, w2, t2, w3, t3;
  for (int64_t i : {0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 1000003}) {
    text.fill(i, w1, t1);
    text.fill(i, w2, t2);
    text.fill(i, w3, t3);
    a.apply(i, w1.data(), t1.data());
    b.apply(i, w2.data(), t2.data());
    other.apply(i, w3.data(), t3.data());
    EXPECT_EQ(w1, w2) << i;
    EXPECT_EQ(t1, t2) << i;
    differ += w1 != w3;
  }
  // Applying again in another order gives the same window (no hidden state).
  text.fill(21, w1, t1);
  a.apply(21, w1.data(), t1.data());
  text.fill(21, w2, t2);
  b.apply(21, w2.data(), t2.data());
  EXPECT_EQ(w1, w2);
  EXPECT_GT(differ, 3) << "another data.seed should give another stream";
}

TEST(SyntheticMixer, RatioIsRespected) {
  const Tokenizer tok;
  for (double ratio : {0.0, 0.1, 0.25, 0.5, 1.0}) {
    SyntheticMixer m(spec(ratio), tok, 512);
    int chosen = 0;
    const int n = 8000;
    for (int64_t i = 0; i < n; ++i) chosen += m.selects(i);
    const double share = static_cast<double>(chosen) / n;
    const double sigma = std::sqrt(ratio * (1 - ratio) / n);
    EXPECT_NEAR(share, ratio, 4 * sigma + 1e-12) << "ratio " << ratio;
  }
}

TEST(SyntheticMixer, AnswersAreRecoverableAndOnlyTheAnswerHasLoss) {
  for (const bool bpe : {false, true}) {
    const Tokenizer tok = bpe ? fixtures::small_bpe() : Tokenizer{};
    const int64_t T = 384;
    const Windows text = english_windows(tok, T);
    SyntheticMixer mixer(spec(1.0), tok, T);
    std::map<std::string, int> seen;
    std::vector<int32_t> window, targets, original, original_targets;
    for (int64_t i = 0; i < 160; ++i) {
      text.fill(i, window, targets);
      original = window;
      original_targets = targets;
      const MixInfo info = mixer.apply(i, window.data(), targets.data());
      ASSERT_TRUE(info.synthetic);
      ++seen[info.task];
      SCOPED_TRACE(info.task + " sample " + std::to_string(i));
      ASSERT_EQ(info.end, T + 1);
      ASSERT_GE(info.begin, 0);
      ASSERT_LT(info.begin, info.answer_begin);
      EXPECT_EQ(window[static_cast<size_t>(info.begin)], kBos);
      EXPECT_EQ(window[static_cast<size_t>(T)], kEos);
      // The text before the example is untouched, with its loss.
      for (int64_t k = 0; k < info.begin; ++k) ASSERT_EQ(window[k], original[k]);
      for (int64_t t = 0; t + 1 < info.begin; ++t) ASSERT_EQ(targets[t], original_targets[t]);
      // Answer tokens decode to " <answer>"; the prompt ends with the question.
      const std::span<const int32_t> all(window);
      EXPECT_EQ(decode(tok, all.subspan(info.answer_begin, T - info.answer_begin)), " " + info.answer);
      const std::string prompt = decode(tok, all.subspan(info.begin, info.answer_begin - info.begin));
      expect_answer_in_context(info.task, prompt, info.answer);
      // Loss exactly on the answer and EOS.
      for (int64_t t = std::max<int64_t>(0, info.begin - 1); t < T; ++t) {
        if (t + 1 >= info.answer_begin)
          ASSERT_EQ(targets[t], window[t + 1]) << "t=" << t;
        else
          ASSERT_EQ(targets[t], -1) << "t=" << t;
      }
    }
    for (const char* task : {"kv", "needle", "vt", "docqa"}) EXPECT_GT(seen[task], 10) << task;
  }
}

TEST(SyntheticMixer, LossAllKeepsEveryTarget) {
  const Tokenizer tok;
  const int64_t T = 256;
  const Windows text = english_windows(tok, T);
  MixerSpec s = spec(1.0);
  s.loss_on_prompt = true;
  SyntheticMixer mixer(s, tok, T);
  std::vector<int32_t> window, targets;
  text.fill(3, window, targets);
  mixer.apply(3, window.data(), targets.data());
  for (int64_t t = 0; t < T; ++t) ASSERT_EQ(targets[t], window[t + 1]);
}

// The curriculum switches by sample index: windows before warmup_samples draw from the warm-up
// tasks only, no longer than a cap growing from warmup_max_len to the window, the rest from the
// main tasks only at any size.
TEST(SyntheticMixer, WarmupTasksComeFirst) {
  const Tokenizer tok;
  const int64_t T = 256;
  const Windows text = english_windows(tok, T);
  MixerSpec s = spec(1.0, 7, {SyntheticTask::kKv, SyntheticTask::kNeedle});
  s.warmup_tasks = {SyntheticTask::kWords};
  s.warmup_samples = 40;
  s.warmup_max_len = 100;
  SyntheticMixer mixer(s, tok, T);
  std::map<std::string, int> before, after;
  std::vector<int32_t> window, targets;
  int64_t longest_after = 0;
  for (int64_t i = 0; i < 80; ++i) {
    text.fill(i, window, targets);
    const MixInfo info = mixer.apply(i, window.data(), targets.data());
    ASSERT_TRUE(info.synthetic) << i;
    ++(i < 40 ? before : after)[info.task];
    if (i < 40) {
      EXPECT_LE(info.end - info.begin, 100 + (T + 1 - 100) * i / 40) << i;
    }
    if (i < 10) {
      EXPECT_LE(info.end - info.begin, 140) << i;  // the cap starts near 100
    }
    longest_after = std::max(longest_after, i < 40 ? 0 : info.end - info.begin);
  }
  EXPECT_EQ(before["words"], 40);
  EXPECT_EQ(after["words"], 0);
  EXPECT_GT(after["kv"], 5);
  EXPECT_GT(after["needle"], 5);
  EXPECT_GT(longest_after, 150);  // the limit is the warm-up's only
}

TEST(SyntheticMixer, WarmupStepsWithoutTasksIsRefused) {
  const Tokenizer tok;
  MixerSpec s = spec(1.0);
  s.warmup_samples = 8;
  EXPECT_THROW(SyntheticMixer(s, tok, 256), Error);
  MixerSpec none = spec(0.0);  // a warm-up of synthetic examples where there are none
  none.warmup_tasks = {SyntheticTask::kWords};
  none.warmup_samples = 8;
  EXPECT_THROW(SyntheticMixer(none, tok, 256), Error);
  none.warmup_samples = 0;
  EXPECT_NO_THROW(SyntheticMixer(none, tok, 256));
}

TEST(TaskGenerator, ExamplesFitTheBudgetAndUseIt) {
  for (const bool bpe : {false, true}) {
    const Tokenizer tok = bpe ? fixtures::small_bpe() : Tokenizer{};
    TaskGenerator gen(tok);
    std::vector<int32_t> hay;
    Encoder(tok).encode(fixtures::english_text(), hay);
    const HaystackFn fn = [&](uint64_t key, int64_t n, std::vector<int32_t>& out) {
      const int64_t start = static_cast<int64_t>(key % 1000);
      out.insert(out.end(), hay.begin() + start, hay.begin() + start + std::min<int64_t>(n, 20000));
    };
    for (const ExampleFormat fmt : {ExampleFormat::kRaw, ExampleFormat::kInstruction})
      for (const auto& [task, name] : config::ChoiceNames<SyntheticTask>::list) {
        const int64_t least = gen.min_tokens(task, fmt);
        for (int64_t budget : {least, least + 17, int64_t{300}, int64_t{1000}, int64_t{4000}}) {
          if (budget < least) continue;
          const EncodedExample e = gen.make(task, 99 + static_cast<uint64_t>(budget), budget, fn, fmt);
          const int64_t n = static_cast<int64_t>(e.tokens.size());
          EXPECT_LE(n, budget) << name << " budget " << budget;
          // words stops at its 80 distinct words; every other task fills a large budget
          const bool all_words =
              task == SyntheticTask::kWords && std::count(e.text.answer.begin(), e.text.answer.end(), ' ') == 79;
          if (budget >= 1000 && !all_words) {
            EXPECT_GE(n, budget * 8 / 10) << name << " should fill its budget";
          }
          EXPECT_EQ(e.tokens.front(), kBos);
          EXPECT_EQ(e.tokens.back(), kEos);
        }
      }
  }
}

TEST(TaskGenerator, CopyRepeatsItsDigits) {
  TaskGenerator gen(Tokenizer{});
  const HaystackFn none = [](uint64_t, int64_t, std::vector<int32_t>&) {};
  const EncodedExample e = gen.make(SyntheticTask::kCopy, 5, 200, none, ExampleFormat::kRaw);
  const std::regex shape("Digits: ([0-9]( [0-9])*)\nRepeat the digits\\.");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(e.text.prompt, m, shape)) << e.text.prompt;
  EXPECT_EQ(m[1].str(), e.text.answer) << "the answer is the prompt's digits, in order";
  EXPECT_GT(e.text.answer.size(), 40u) << "a 200-token budget holds more than 20 digits";
  EXPECT_EQ(gen.make(SyntheticTask::kCopy, 5, 200, none, ExampleFormat::kRaw).text.answer, e.text.answer);
  EXPECT_NE(gen.make(SyntheticTask::kCopy, 6, 200, none, ExampleFormat::kRaw).text.answer, e.text.answer);
}

TEST(TaskGenerator, UuidsRepeatsItsUuids) {
  TaskGenerator gen(Tokenizer{});
  const HaystackFn none = [](uint64_t, int64_t, std::vector<int32_t>&) {};
  const EncodedExample e = gen.make(SyntheticTask::kUuids, 5, 300, none, ExampleFormat::kRaw);
  // RULER's UUIDs (version 4, as evaluate draws them), space-separated
  const std::string u = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";
  const std::regex shape("UUIDs: (" + u + "( " + u + ")*)\nRepeat the UUIDs\\.");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(e.text.prompt, m, shape)) << e.text.prompt;
  EXPECT_EQ(m[1].str(), e.text.answer) << "the answer is the prompt's UUIDs, in order";
  EXPECT_GE(std::count(e.text.answer.begin(), e.text.answer.end(), ' '), 1)
      << "a 300-token byte budget holds more than one 36-byte UUID: " << e.text.answer;
  EXPECT_EQ(gen.make(SyntheticTask::kUuids, 5, 300, none, ExampleFormat::kRaw).text.answer, e.text.answer);
  EXPECT_NE(gen.make(SyntheticTask::kUuids, 6, 300, none, ExampleFormat::kRaw).text.answer, e.text.answer);
}

// The trained niah task must be evaluate's niah prompt token for token (base and instruction
// templates), else a model that learned it is asked in other words than it learned.
TEST(TaskGenerator, NiahIsEvaluatesOwnPromptTokenForToken) {
  const Tokenizer tok = fixtures::small_bpe();
  TaskGenerator gen(tok);
  const HaystackFn fn = english_prefix(tok);
  const std::regex prefix(" The special magic number for ([a-z]+-[a-z]+) mentioned in the provided text is");
  for (const ExampleFormat fmt : {ExampleFormat::kRaw, ExampleFormat::kInstruction})
    for (uint64_t key = 1; key <= 8; ++key) {
      const EncodedExample e = gen.make(SyntheticTask::kNiah, key, 400, fn, fmt);
      std::smatch m;
      ASSERT_TRUE(std::regex_match(e.text.answer_prefix, m, prefix)) << e.text.answer_prefix;
      const std::string query = m[1].str();
      EXPECT_EQ(e.text.prompt.rfind("A special magic number is hidden within the following text. Make sure to "
                                    "memorize it. I will quiz you about the number afterwards.\n",
                                    0),
                0u)
          << e.text.prompt;
      EXPECT_NE(e.text.prompt.find("One of the special magic numbers for " + query + " is: " + e.text.answer + "."),
                std::string::npos)
          << "the queried needle, in RULER's sentence: " << e.text.prompt;
      const std::string question =
          "\nWhat is the special magic number for " + query + " mentioned in the provided text?";
      ASSERT_GE(e.text.prompt.size(), question.size());
      EXPECT_EQ(e.text.prompt.substr(e.text.prompt.size() - question.size()), question);
      eval::PromptBuilder asked(tok, fmt == ExampleFormat::kRaw ? PromptTemplate::kBase : PromptTemplate::kInstruction);
      std::vector<int32_t> want = asked.ids(e.text.prompt, e.text.answer_prefix);
      EXPECT_EQ(e.answer_begin, static_cast<int64_t>(want.size()))
          << "the loss starts where evaluate starts generating";
      Encoder(tok).encode(" " + e.text.answer, want);
      want.push_back(kEos);
      EXPECT_EQ(e.tokens, want) << "format " << static_cast<int>(fmt) << ", key " << key;
    }
}

// niah_keys is RULER's needle sentence, question and answer prefix without the template's header,
// with 2-3 needles of distinct keys: the queried one's value is the answer, and it is not always the
// needle nearest the question (so copying the nearest needle is not enough), even at the smallest budget.
TEST(TaskGenerator, NiahKeysAsksOneOfSeveralNeedlesInRulersWords) {
  const Tokenizer tok = fixtures::small_bpe();
  TaskGenerator gen(tok);
  const HaystackFn fn = english_prefix(tok);
  const std::regex needle("One of the special magic numbers for ([a-z]+-[a-z]+) is: ([0-9]{7})\\.");
  const std::regex prefix(" The special magic number for ([a-z]+-[a-z]+) mentioned in the provided text is");
  int not_last = 0, three = 0;
  const int64_t least = gen.min_tokens(SyntheticTask::kNiahKeys, ExampleFormat::kRaw);
  for (uint64_t key = 1; key <= 40; ++key) {
    const EncodedExample e = gen.make(SyntheticTask::kNiahKeys, key, key % 2 ? least : 400, fn, ExampleFormat::kRaw);
    std::vector<std::pair<std::string, std::string>> found;
    for (std::sregex_iterator it(e.text.prompt.begin(), e.text.prompt.end(), needle), end; it != end; ++it)
      found.emplace_back((*it)[1].str(), (*it)[2].str());
    ASSERT_GE(found.size(), 2u) << e.text.prompt;
    ASSERT_LE(found.size(), 3u) << e.text.prompt;
    three += found.size() == 3;
    std::set<std::string> keys;
    for (const auto& f : found) keys.insert(f.first);
    EXPECT_EQ(keys.size(), found.size()) << "distinct keys: " << e.text.prompt;
    EXPECT_EQ(e.text.prompt.find("Some special magic"), std::string::npos) << "no header: " << e.text.prompt;
    EXPECT_EQ(e.text.prompt.find("hidden within"), std::string::npos) << "no header: " << e.text.prompt;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(e.text.answer_prefix, m, prefix)) << e.text.answer_prefix;
    const std::string query = m[1].str();
    const auto q = std::find_if(found.begin(), found.end(), [&](const auto& f) { return f.first == query; });
    ASSERT_NE(q, found.end()) << "the queried key " << query << " has a needle: " << e.text.prompt;
    EXPECT_EQ(q->second, e.text.answer);
    not_last += q + 1 != found.end();
    const std::string question = "\nWhat is the special magic number for " + query + " mentioned in the provided text?";
    EXPECT_EQ(e.text.prompt.substr(e.text.prompt.size() - question.size()), question);
  }
  EXPECT_GE(not_last, 10) << "the answer should often be an earlier needle than the last";
  EXPECT_GE(three, 5) << "a large budget should often hold three needles";
}

// niah_mix asks RULER's eight niah shapes in RULER's words: every queried value is in a needle
// sentence for its key, the answer lists them all, and the shapes (UUIDs, distractor keys, needle
// haystacks, several values or queries) all occur; too small a budget gives one needle.
TEST(TaskGenerator, NiahMixDrawsRulersShapes) {
  const Tokenizer tok = fixtures::small_bpe();
  TaskGenerator gen(tok);
  const HaystackFn fn = english_prefix(tok);
  const std::regex prefix(" The special magic (numbers?|uuids?) for (.+) mentioned in the provided text (is|are)");
  const std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::map<std::string, int> seen;
  for (uint64_t key = 1; key <= 96; ++key) {
    const EncodedExample e = gen.make(SyntheticTask::kNiahMix, key, 800, fn, ExampleFormat::kRaw);
    ASSERT_LE(static_cast<int64_t>(e.tokens.size()), 800);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(e.text.answer_prefix, m, prefix)) << e.text.answer_prefix;
    const std::string type = m[1].str(), query = m[2].str();
    const std::string plural = type.back() == 's' ? type : type + "s";
    std::vector<std::string> values;
    std::istringstream in(e.text.answer);
    for (std::string v; std::getline(in, v, ',');) values.push_back(v.substr(v[0] == ' '));
    EXPECT_EQ((values.size() > 1), (m[3].str() == "are")) << "RULER's plural template for several answers";
    int needles = 0;
    for (size_t p = 0; (p = e.text.prompt.find("One of the special magic", p)) != std::string::npos; ++p) ++needles;
    for (const auto& v : values) {
      EXPECT_TRUE(plural == "uuids" ? std::regex_match(v, uuid) : v.size() == 7) << v;
      // the value's needle names one of the queried keys
      const size_t at = e.text.prompt.find(" is: " + v + ".");
      ASSERT_NE(at, std::string::npos) << v << " in " << e.text.prompt;
      const size_t from = e.text.prompt.rfind("One of the special magic " + plural + " for ", at);
      ASSERT_NE(from, std::string::npos);
      const size_t kb = from + std::string("One of the special magic  for ").size() + plural.size();
      const std::string k = e.text.prompt.substr(kb, at - kb);
      EXPECT_TRUE(query == k || query.rfind(k + ",", 0) == 0 || query.find(" " + k + ",") != std::string::npos ||
                  query.find("and " + k) != std::string::npos)
          << k << " not among the queried " << query;
    }
    const bool lines = needles > 4;  // a haystack of distractor needles (the others hold at most 4)
    const bool uuid_key = std::regex_search(query, uuid);
    const bool several_keys = needles > static_cast<int>(values.size()) && !lines;
    ++seen[uuid_key                                                         ? "multikey_3"
           : lines                                                          ? "needles"
           : values.size() > 1 && query.find(", and ") != std::string::npos ? "multiquery"
           : values.size() > 1                                              ? "multivalue"
           : plural == "uuids"                                              ? "single_3"
           : several_keys                                                   ? "multikey_1"
                                                                            : "single"];
  }
  for (const char* shape : {"single", "single_3", "multikey_1", "needles", "multikey_3", "multivalue", "multiquery"})
    EXPECT_GE(seen[shape], 3) << shape << " (of 96 examples)";
  // Too small for four needles: one needle, one number.
  const int64_t least = gen.min_tokens(SyntheticTask::kNiahMix, ExampleFormat::kRaw);
  for (uint64_t key = 1; key <= 16; ++key) {
    const EncodedExample e = gen.make(SyntheticTask::kNiahMix, key, least, fn, ExampleFormat::kRaw);
    EXPECT_LE(static_cast<int64_t>(e.tokens.size()), least);
    EXPECT_EQ(e.text.answer.find(','), std::string::npos) << e.text.answer;
  }
}

TEST(TaskGenerator, WordsRepeatsDistinctWords) {
  TaskGenerator gen(Tokenizer{});
  const HaystackFn none = [](uint64_t, int64_t, std::vector<int32_t>&) {};
  const EncodedExample e = gen.make(SyntheticTask::kWords, 5, 200, none, ExampleFormat::kRaw);
  const std::regex shape("Words: ([a-z]+( [a-z]+)*)\nRepeat the words\\.");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(e.text.prompt, m, shape)) << e.text.prompt;
  EXPECT_EQ(m[1].str(), e.text.answer);
  std::istringstream in(e.text.answer);
  std::set<std::string> seen;
  int n = 0;
  for (std::string w; in >> w; ++n) EXPECT_TRUE(seen.insert(w).second) << "'" << w << "' twice";
  EXPECT_GE(n, 8) << "a 200-token byte budget holds several words";
}

TEST(TaskGenerator, TaskListsAreChecked) {
  EXPECT_EQ(config::check_task_list("kv,needle,niah,vt,docqa,copy,words,uuids"), "");
  EXPECT_NE(config::check_task_list("kv,nedle").find("unknown task 'nedle'"), std::string::npos);
  EXPECT_NE(config::check_task_list("kv, vt"), "");
  EXPECT_NE(config::check_task_list(""), "");
  EXPECT_EQ(config::parse_task_list("vt,kv"), (std::vector<SyntheticTask>{SyntheticTask::kVt, SyntheticTask::kKv}));
}

TEST(SyntheticMixer, RefusesWindowsTooSmallForATask) {
  const Tokenizer tok;
  try {
    SyntheticMixer m(spec(0.5, 1, {SyntheticTask::kNeedle}), tok, 64);
    FAIL() << "a 65-token window cannot hold a byte-level needle example";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.seq_len"), std::string::npos) << e.what();
  }
}
