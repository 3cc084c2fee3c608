// The task generators: deterministic for a key, different across keys, filled to the target length
// to within one haystack unit (in the byte tokenizer and in a BPE tokenizer), RULER's templates
// with their singular/plural forms, and answers that the context actually supports.
#include "eval/common_words.h"
#include "eval/frequent_words.h"
#include "eval/niah.h"
#include "eval/tasks.h"
#include "eval/variable_tracking.h"
#include "test_eval_support.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

using namespace headroom;
using namespace headroom::eval;
using headroom::eval::testing::test_bpe;
using headroom::eval::testing::test_resources;

namespace {

const data::Tokenizer kByte{};

struct Gen {
  PromptBuilder prompts;
  TaskContext ctx;
  explicit Gen(const data::Tokenizer& tok, data::PromptTemplate t = data::PromptTemplate::kBase)
      : prompts(tok, t), ctx(make_task_context(test_resources(), prompts)) {}
  Sample sample(const std::string& task, int64_t length, int64_t index, uint64_t seed = 7) {
    const TaskSpec& spec = find_task(task);
    return generate_sample(spec, ctx, {seed, length, index, spec.max_new});
  }
};

std::vector<std::string> task_names() {
  std::vector<std::string> n;
  for (const auto& t : all_tasks()) n.push_back(t.name);
  return n;
}

int64_t count_of(const std::string& hay, const std::string& needle) {
  int64_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(EvalGenerators, DeterministicForAKeyAndDifferentAcrossKeys) {
  for (const auto& task : task_names()) {
    Gen a(kByte), b(kByte);
    const Sample s1 = a.sample(task, 2048, 3), s2 = b.sample(task, 2048, 3);
    EXPECT_EQ(s1.prompt, s2.prompt) << task;
    EXPECT_EQ(s1.answer_prefix, s2.answer_prefix) << task;
    EXPECT_EQ(s1.references, s2.references) << task;
    EXPECT_NE(s1.prompt, a.sample(task, 2048, 4).prompt) << task << ": index must matter";
    EXPECT_NE(s1.prompt, a.sample(task, 2048, 3, 8).prompt) << task << ": seed must matter";
  }
}

// The sample fits (prompt + tokens to generate ≤ length) and one more haystack unit would not.
void expect_tight_fit(const data::Tokenizer& tok, const std::string& task, int64_t length, int64_t index) {
  Gen g(tok);
  const TaskSpec& spec = find_task(task);
  const SampleKey key{7, length, index, spec.max_new};
  const Sample s = generate_sample(spec, g.ctx, key);
  const Builder primary = spec.builder(g.ctx, key);
  const Builder& b = s.fallback ? *primary.fallback : primary;
  EXPECT_EQ(s.tokens, g.prompts.count(s.prompt, s.answer_prefix)) << task;
  EXPECT_LE(s.tokens + spec.max_new, length) << task << " @" << length;
  if (s.units < b.max_units) {
    const Sample more = b.build(s.units + 1);
    EXPECT_GT(g.prompts.count(more.prompt, more.answer_prefix) + spec.max_new, length)
        << task << " @" << length << ": " << s.units + 1 << " units would still fit";
  }
  EXPECT_GT(s.tokens, length / 2) << task << " @" << length << ": the context is far from full";
}

TEST(EvalGenerators, FillTheTargetLengthToWithinOneUnitByteTokenizer) {
  for (const auto& task : task_names())
    for (int64_t length : {2048, 4096}) expect_tight_fit(kByte, task, length, 1);
}

TEST(EvalGenerators, FillTheTargetLengthToWithinOneUnitBpeTokenizer) {
  for (const auto& task : task_names()) expect_tight_fit(test_bpe(), task, 4096, 2);
}

TEST(EvalGenerators, TooShortALengthIsReportedNotTruncated) {
  Gen g(kByte);
  EXPECT_THROW(g.sample("cwe", 1024, 0), TooLong);
  EXPECT_THROW(g.sample("niah_single_1", 200, 0), TooLong);
}

// A prompt of template and needles without haystack is no long-context sample: at the shortest
// length a task fits at all it already holds at least one haystack unit; below it, TooLong (the
// sample is skipped and reported apart, never averaged into RULER).
TEST(EvalGenerators, NoSampleWithoutHaystack) {
  for (const auto& task : task_names()) {
    Gen g(kByte);
    int64_t length = 64;
    for (; length <= 8192; length += 16) {
      try {
        const Sample s = g.sample(task, length, 0);
        EXPECT_GE(s.units, 1) << task << " @" << length << ": scored with no haystack";
        break;
      } catch (const TooLong& e) {
        EXPECT_NE(std::string(e.what()).find("no long-context sample"), std::string::npos) << e.what();
      }
    }
    EXPECT_LE(length, 8192) << task << " never fits";
  }
}

TEST(EvalGenerators, NiahSingularTemplateAndNeedle) {
  Gen g(kByte);
  const Sample s = g.sample("niah_single_1", 2048, 0);
  ASSERT_EQ(s.references.size(), 1u);
  const std::string& v = s.references[0];
  EXPECT_TRUE(std::regex_match(v, std::regex("[1-9][0-9]{6}"))) << v;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(s.prompt, m,
                                std::regex("One of the special magic numbers for ([a-z]+-[a-z]+) is: " + v + "\\.")));
  const std::string key = m[1];
  EXPECT_EQ(s.prompt.rfind("A special magic number is hidden within the following text. Make sure to memorize it. "
                           "I will quiz you about the number afterwards.\n",
                           0),
            0u);
  EXPECT_NE(s.prompt.find("\nWhat is the special magic number for " + key + " mentioned in the provided text?"),
            std::string::npos);
  EXPECT_EQ(s.prompt.substr(s.prompt.size() - 1), "?");
  EXPECT_EQ(s.answer_prefix, " The special magic number for " + key + " mentioned in the provided text is");
  // The haystack is the noise line, one per line.
  EXPECT_GE(count_of(s.prompt, std::string(data::kNoiseLine) + "\n"), 10);
}

TEST(EvalGenerators, NiahPluralTemplatesAndQueries) {
  Gen g(kByte);
  const Sample mv = g.sample("niah_multivalue", 4096, 0);
  EXPECT_EQ(mv.references.size(), 4u);
  EXPECT_EQ(mv.prompt.rfind("Some special magic numbers are hidden within the following text.", 0), 0u);
  EXPECT_NE(mv.prompt.find("What are all the special magic numbers for "), std::string::npos);
  EXPECT_NE(mv.answer_prefix.find("mentioned in the provided text are"), std::string::npos);
  for (const auto& v : mv.references) EXPECT_NE(mv.prompt.find(" is: " + v + "."), std::string::npos) << v;

  const Sample mq = g.sample("niah_multiquery", 4096, 0);
  EXPECT_EQ(mq.references.size(), 4u);
  EXPECT_TRUE(std::regex_search(
      mq.answer_prefix, std::regex("for [a-z]+-[a-z]+, [a-z]+-[a-z]+, [a-z]+-[a-z]+, and [a-z]+-[a-z]+ mentioned")))
      << mq.answer_prefix;

  const Sample mk = g.sample("niah_multikey_1", 4096, 0);
  EXPECT_EQ(count_of(mk.prompt, "One of the special magic numbers for "), 4) << "1 queried + 3 distractor keys";
  const Sample s3 = g.sample("niah_single_3", 4096, 0);
  EXPECT_TRUE(std::regex_match(s3.references[0],
                               std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  EXPECT_NE(s3.answer_prefix.find("special magic uuid for"), std::string::npos);
  const Sample k3 = g.sample("niah_multikey_3", 4096, 0);
  EXPECT_GT(count_of(k3.prompt, "One of the special magic uuids for "), 10) << "a haystack of distractor needles";
  EXPECT_EQ(count_of(k3.prompt, " is: " + k3.references[0] + "."), 1);
}

TEST(EvalGenerators, NiahDepthsSweepTheContext) {
  // The single needle's depth runs over the whole context as the sample index grows.
  // (Ten uniform random depths leave a largest gap of ~0.29 on average; the golden-ratio sweep's
  // is below 0.15, plus one line of rounding.)
  Gen g(kByte);
  std::vector<double> depth;
  for (int64_t i = 0; i < 10; ++i) {
    const Sample s = g.sample("niah_single_1", 4096, i);
    const size_t begin = s.prompt.find('\n') + 1, end = s.prompt.rfind("\nWhat is");
    const size_t at = s.prompt.find("One of the special magic");
    depth.push_back(static_cast<double>(at - begin) / static_cast<double>(end - begin));
  }
  std::sort(depth.begin(), depth.end());
  EXPECT_LT(depth.front(), 0.2);
  EXPECT_GT(depth.back(), 0.8);
  for (size_t i = 1; i < depth.size(); ++i) EXPECT_LT(depth[i] - depth[i - 1], 0.2) << "evenly spread";
}

TEST(EvalGenerators, VariableTrackingChainInOrder) {
  Gen g(kByte);
  const Sample s = g.sample("vt", 4096, 0);
  ASSERT_EQ(s.references.size(), 5u);
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(s.answer_prefix, m, std::regex("5 variables are assgined the value ([0-9]{5}), they are:$")));
  const std::string value = m[1];
  // The question's chain comes after the demonstration: search from the second template.
  const size_t q = s.prompt.rfind("Memorize and track the chain(s)");
  ASSERT_NE(q, std::string::npos);
  ASSERT_GT(q, 0u) << "one demonstration first";
  size_t at = s.prompt.find("VAR " + s.references[0] + " = " + value, q);
  ASSERT_NE(at, std::string::npos);
  for (size_t j = 1; j < 5; ++j) {
    const size_t next = s.prompt.find("VAR " + s.references[j] + " = VAR " + s.references[j - 1] + " ", q);
    ASSERT_NE(next, std::string::npos) << j;
    EXPECT_GT(next, at) << "statements in chain order";
    at = next;
  }
  for (const auto& v : s.references) EXPECT_TRUE(std::regex_match(v, std::regex("[A-Z]{5}")));
}

TEST(EvalGenerators, CommonWordsAreTheMostFrequent) {
  Gen g(kByte);
  for (int64_t length : {2048, 4096, 8192}) {
    const Sample s = g.sample("cwe", length, 0);
    // The byte tokenizer cannot fit RULER's 4K setting at 4K tokens: the small one is used.
    EXPECT_EQ(s.fallback, length == 4096);
    const CweFrequencies f = s.fallback ? kCweSmall : cwe_frequencies(length);
    ASSERT_EQ(s.references.size(), 10u);
    // Count the words of the question's list (after the demonstration's answer).
    const size_t q = s.prompt.rfind("Below is a numbered list of words.");
    std::istringstream list(
        s.prompt.substr(s.prompt.find('\n', q) + 1, s.prompt.rfind("\nQuestion:") - s.prompt.find('\n', q) - 1));
    std::map<std::string, int> counts;
    std::string tok;
    int64_t entries = 0;
    while (list >> tok) {
      if (tok.back() == '.') {
        EXPECT_EQ(tok, std::to_string(++entries) + ".");
      } else {
        ++counts[tok];
      }
    }
    for (const auto& w : s.references) EXPECT_EQ(counts[w], f.common) << w << " @" << length;
    for (const auto& [w, c] : counts) {
      if (std::find(s.references.begin(), s.references.end(), w) == s.references.end()) {
        EXPECT_EQ(c, f.uncommon) << w;
      }
    }
  }
}

TEST(EvalGenerators, FrequentWordsFollowZipf) {
  EXPECT_EQ(zipf_counts(1000, 5), (std::vector<int64_t>{607, 151, 67, 37, 24}));
  Gen g(kByte);
  const Sample s = g.sample("fwe", 4096, 0);
  ASSERT_EQ(s.references.size(), 3u);
  const size_t a = s.prompt.find("coded words. ") + 13, b = s.prompt.find("\nQuestion:");
  std::istringstream text(s.prompt.substr(a, b - a));
  std::map<std::string, int> counts;
  std::string w;
  while (text >> w) ++counts[w];
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [word, c] : counts) ranked.emplace_back(-c, word);
  std::sort(ranked.begin(), ranked.end());
  EXPECT_EQ(ranked[0].second, "...") << "rank 1 is the noise word";
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(ranked[static_cast<size_t>(i + 1)].second, s.references[static_cast<size_t>(i)]);
}

TEST(EvalGenerators, QaAnswersAreStatedInTheDocuments) {
  Gen g(kByte);
  for (int64_t i = 0; i < 4; ++i) {
    const Sample one = g.sample("qa_1", 2048, i);
    ASSERT_EQ(one.references.size(), 1u);
    EXPECT_EQ(count_of(one.prompt, one.references[0]), 1) << one.references[0];
    EXPECT_NE(one.prompt.find("Document 1:\n"), std::string::npos);
    EXPECT_EQ(one.answer_prefix, " Answer:");
    const Sample two = g.sample("qa_2", 2048, i);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(two.prompt, m, std::regex("the company founded by ([A-Za-z ]+) headquartered\\?$")));
    const std::string person = m[1];
    ASSERT_TRUE(std::regex_search(two.prompt, m, std::regex(person + " founded ([A-Za-z ]+) in [0-9]{4}\\.")));
    const std::string org = m[1];
    EXPECT_NE(two.prompt.find(org + " is headquartered in " + two.references[0] + "."), std::string::npos)
        << "the second hop links the founder's company to the answer";
    EXPECT_GT(count_of(two.prompt, " is headquartered in "), 1) << "distractors for the second hop";
  }
}

TEST(EvalGenerators, JsonKvHasTheQueriedPairAndTwoDemonstrations) {
  Gen g(kByte);
  const Sample s = g.sample("json_kv", 2048, 0);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(s.prompt, m, std::regex("Key: \"([0-9a-f-]{36})\"$")));
  EXPECT_NE(s.prompt.find("\"" + std::string(m[1]) + "\": \"" + s.references[0] + "\""), std::string::npos);
  EXPECT_EQ(count_of(s.prompt, "Corresponding value: \""), 2);
  EXPECT_EQ(s.answer_prefix, "\nCorresponding value:");
  EXPECT_EQ(s.prompt.rfind("JSON data:\n{", 0), 0u);
}

TEST(EvalGenerators, InstructionTemplateWrapsThePromptAndCountsIt) {
  Gen base(kByte), sft(kByte, data::PromptTemplate::kInstruction);
  const Sample b = base.sample("niah_single_1", 2048, 0), s = sft.sample("niah_single_1", 2048, 0);
  EXPECT_EQ(sft.prompts.text("Q?", " The answer is"), "### Instruction:\nQ?\n\n### Response:\nThe answer is");
  EXPECT_EQ(base.prompts.text("Q?", " The answer is"), "Q? The answer is");
  EXPECT_LE(s.units, b.units) << "the template's tokens come out of the haystack";
  EXPECT_LE(s.tokens + 128, 2048);
}

TEST(EvalTasks, ListsExpandAndUnknownNamesAreRefused) {
  EXPECT_EQ(expand_task_list("ruler").size(), 13u);
  EXPECT_EQ(expand_task_list("all").size(), 16u);
  EXPECT_EQ(expand_task_list("vt, cwe,vt"), (std::vector<std::string>{"vt", "cwe"}));
  EXPECT_EQ(expand_task_list("helmet_recall,vt,json_kv"),
            (std::vector<std::string>{"json_kv", "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "vt"}));
  try {
    expand_task_list("vt,niah_single_9,bogus");
    FAIL() << "unknown names accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'niah_single_9'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'bogus'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("known: ruler, helmet_recall, all, niah_single_1"), std::string::npos) << msg;
  }
  EXPECT_THROW(expand_task_list(" , "), Error);
}
