// SFT data: JSONL pairs and generated examples in the instruction template, packed whole into
// windows, with the loss exactly on the response tokens and EOS; deterministic; refusals name the
// file and line.
#include "data/prompt_template.h"
#include "data/sft.h"
#include "stage_data_fixtures.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

using namespace headroom;
using namespace headroom::data;

namespace {

std::filesystem::path write_jsonl(const std::string& name, const std::string& text) {
  const auto path = fixtures::test_dir("sft") / name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::vector<SftPair> kPairs{
    {"What is the capital of France?", "Paris."},
    {"Name three primary colours.", "Red, yellow and blue."},
    {"Translate 'gato' to English.", "cat"},
    {"Write the number after 41.", "42"},
};

}  // namespace

TEST(Sft, ReadsJsonlAndNamesBadLines) {
  const auto good = write_jsonl(
      "good.jsonl",
      "{\"prompt\": \"a\", \"response\": \"b\", \"extra\": 1}\n\n{\"prompt\": \"c\\nd\", \"response\": \"e\"}\n");
  const auto pairs = read_sft_jsonl(good);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1].prompt, "c\nd");
  EXPECT_EQ(pairs[1].response, "e");
  const auto bad = write_jsonl("bad.jsonl", "{\"prompt\": \"a\", \"response\": \"b\"}\n{\"prompt\": \"a\"}\n");
  EXPECT_NE(error_of([&] { read_sft_jsonl(bad); }).find("bad.jsonl:2: needs a string field \"response\""),
            std::string::npos);
  const auto broken = write_jsonl("broken.jsonl", "{\"prompt\": \n");
  EXPECT_NE(error_of([&] { read_sft_jsonl(broken); }).find("broken.jsonl:1: not a JSON object"), std::string::npos);
}

TEST(Sft, LossMaskIsExactlyOnResponsesAndEos) {
  const Tokenizer tok;
  const auto shard_path =
      fixtures::write_doc_shard(fixtures::test_dir("sft") / "docs.h5", fixtures::english_documents(), tok);
  const ShardReader shard = open_shard(shard_path);
  const int64_t T = 511;
  SftSpec spec{T, 5, 0.5, 0.5, {SyntheticTask::kKv, SyntheticTask::kNeedle, SyntheticTask::kVt}, 64};
  SftPacker packer(spec, tok, kPairs, shard_haystack(shard, read_doc_offsets(shard)));
  std::vector<int32_t> window(T + 1), ids(T), targets(T);
  std::vector<uint8_t> loss(T + 1);
  std::map<std::string, int> sources;
  for (int64_t i = 0; i < 60; ++i) {
    const auto placed = packer.pack(i, window.data(), loss.data());
    ASSERT_FALSE(placed.empty());
    std::vector<uint8_t> expected(T + 1, 0);
    int64_t at = 0;
    const std::span<const int32_t> w(window);
    for (const auto& e : placed) {
      ++sources[e.source];
      SCOPED_TRACE(e.source + " in window " + std::to_string(i));
      ASSERT_EQ(e.begin, at) << "examples are packed back to back";
      ASSERT_LT(e.begin, e.response_begin);
      ASSERT_LT(e.response_begin, e.end);
      EXPECT_EQ(window[e.begin], kBos);
      EXPECT_EQ(window[e.end - 1], kEos);
      const std::string prompt = decode(tok, w.subspan(e.begin, e.response_begin - e.begin));
      const std::string response = decode(tok, w.subspan(e.response_begin, e.end - 1 - e.response_begin));
      EXPECT_EQ(prompt.rfind(kInstructionHeader, 0), 0u) << prompt;
      EXPECT_TRUE(prompt.ends_with(kResponseHeader)) << prompt;
      if (e.source == "file") {
        bool matched = false;
        for (const auto& p : kPairs)
          matched |= prompt == format_prompt(PromptTemplate::kInstruction, p.prompt) && response == p.response;
        EXPECT_TRUE(matched) << prompt << response;
      }
      for (int64_t k = e.response_begin; k < e.end; ++k) expected[k] = 1;
      at = e.end;
    }
    for (int64_t k = at; k <= T; ++k) EXPECT_EQ(window[k], kPad) << "padding after the last example";
    ASSERT_EQ(loss, expected) << "window " << i;
    // The trainer's view: targets are the next token where it has loss, else -1.
    packer.sample(i, ids.data(), targets.data());
    for (int64_t t = 0; t < T; ++t) {
      ASSERT_EQ(ids[t], window[t]);
      ASSERT_EQ(targets[t], expected[t + 1] ? window[t + 1] : -1) << "t=" << t;
    }
  }
  for (const char* s : {"file", "docqa", "kv", "needle", "vt"}) EXPECT_GT(sources[s], 3) << s;
}

TEST(Sft, DeterministicAndFileOnlyOrGeneratedOnly) {
  const Tokenizer tok;
  const auto shard_path =
      fixtures::write_doc_shard(fixtures::test_dir("sft") / "docs2.h5", fixtures::english_documents(), tok);
  const ShardReader shard = open_shard(shard_path);
  const int64_t T = 255;
  const auto docs = shard_haystack(shard, read_doc_offsets(shard));
  SftPacker a({T, 5, 0.5, 0.5, {SyntheticTask::kKv, SyntheticTask::kNeedle, SyntheticTask::kVt}, 64}, tok, kPairs,
              docs);
  SftPacker b({T, 5, 0.5, 0.5, {SyntheticTask::kKv, SyntheticTask::kNeedle, SyntheticTask::kVt}, 64}, tok, kPairs,
              docs);
  std::vector<int32_t> i1(T), t1(T), i2(T), t2(T);
  for (int64_t i : {0, 9, 4, 1000}) {
    a.sample(i, i1.data(), t1.data());
    b.sample(i, i2.data(), t2.data());
    EXPECT_EQ(i1, i2);
    EXPECT_EQ(t1, t2);
  }
  SftPacker file_only({T, 5, 1.0, 0.5, {SyntheticTask::kKv}, 64}, tok, kPairs, docs);
  SftPacker generated({T, 5, 0.0, 1.0, {SyntheticTask::kVt}, 64}, tok, {}, docs);
  std::vector<int32_t> w(T + 1);
  std::vector<uint8_t> l(T + 1);
  for (int64_t i = 0; i < 20; ++i) {
    for (const auto& e : file_only.pack(i, w.data(), l.data())) EXPECT_EQ(e.source, "file");
    for (const auto& e : generated.pack(i, w.data(), l.data())) EXPECT_EQ(e.source, "vt");
  }
}

TEST(Sft, TooLongPairsAreDroppedAndCounted) {
  const Tokenizer tok;
  const auto shard_path =
      fixtures::write_doc_shard(fixtures::test_dir("sft") / "docs3.h5", fixtures::english_documents(), tok);
  const ShardReader shard = open_shard(shard_path);
  std::vector<SftPair> pairs = kPairs;
  pairs.push_back({std::string(400, 'x'), "y"});
  SftPacker p({255, 5, 1.0, 0.0, {SyntheticTask::kKv}, 64}, tok, pairs, shard_haystack(shard, read_doc_offsets(shard)));
  EXPECT_EQ(p.file_examples(), 4);
  EXPECT_EQ(p.dropped_too_long(), 1);
  const std::vector<SftPair> only_long{{std::string(400, 'x'), "y"}};
  EXPECT_NE(error_of([&] {
              SftPacker q({255, 5, 1.0, 0.0, {SyntheticTask::kKv}, 64}, tok, only_long,
                          shard_haystack(shard, read_doc_offsets(shard)));
            }).find("longer than a window"),
            std::string::npos);
}
