// What evaluate reads off a checkpoint: the prompt template from the stage and lineage, the
// addressable length (longest training length, YaRN), the tokenizer and its refusals, and the
// [eval] option parsing.
#include "config/ini_text.h"
#include "config/keys.h"
#include "eval/checkpoint_facts.h"
#include "eval/eval_config.h"
#include "util/error.h"

#include <gtest/gtest.h>

using namespace headroom;
using namespace headroom::eval;

namespace {

io::CheckpointInfo info(const std::string& stage, const std::string& lineage, long seq_len) {
  io::CheckpointInfo c;
  c.path = "runs/x/checkpoints/step_00000010.h5";
  c.stage = stage;
  c.lineage = lineage;
  c.config_ini = "[model]\nd_model = 32\n\n[train]\n# tokens per window\nseq_len = " + std::to_string(seq_len) + "\n";
  c.tokenizer_id = "byte";
  return c;
}

std::string stage(const std::string& name, long seq_len) {
  return "{\"stage\":\"" + name + "\",\"steps\":10,\"config\":\"[train]\\nseq_len = " + std::to_string(seq_len) +
         "\\n\"}";
}

}  // namespace

TEST(EvalCheckpoint, TemplateFollowsTheStageAndLineage) {
  EXPECT_EQ(checkpoint_template(info("pretrain", "[" + stage("pretrain", 512) + "]", 512)),
            data::PromptTemplate::kBase);
  EXPECT_EQ(checkpoint_template(info("extend", "[" + stage("pretrain", 512) + "," + stage("extend", 4096) + "]", 4096)),
            data::PromptTemplate::kBase);
  EXPECT_EQ(checkpoint_template(info("sft", "[" + stage("pretrain", 512) + "," + stage("sft", 512) + "]", 512)),
            data::PromptTemplate::kInstruction);
  // An extension after sft still answers in the instruction template.
  EXPECT_EQ(checkpoint_template(info("extend", "[" + stage("sft", 512) + "," + stage("extend", 4096) + "]", 4096)),
            data::PromptTemplate::kInstruction);
}

TEST(EvalCheckpoint, AddressableLengthIsTheLongestTrainingLengthOrYarns) {
  // sft at 512 after extension at 4096: the model was trained at 4096.
  const auto c =
      info("sft", "[" + stage("pretrain", 512) + "," + stage("extend", 4096) + "," + stage("sft", 512) + "]", 512);
  EXPECT_EQ(trained_length(c), 4096);
  config::ModelConfig m{};
  m.rope_scaling = config::RopeScaling::kNone;
  EXPECT_EQ(addressable_length(c, m), 4096);
  m.rope_scaling = config::RopeScaling::kYarn;
  m.yarn_original_len = 4096;
  m.yarn_factor = 4;
  EXPECT_EQ(addressable_length(c, m), 16384);
  EXPECT_EQ(config::ini_value(c.config_ini, "train", "seq_len"), std::optional<std::string>("512"));
  EXPECT_EQ(config::ini_value(c.config_ini, "model", "seq_len"), std::nullopt);
}

TEST(EvalCheckpoint, TokenizerIsRequiredAndChecked) {
  auto c = info("pretrain", "[]", 512);
  EXPECT_EQ(data::vocab_size(checkpoint_tokenizer(c, 259)), 259);
  c.tokenizer_id = "";
  try {
    checkpoint_tokenizer(c, 259);
    FAIL() << "a checkpoint without a tokenizer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs/x/checkpoints/step_00000010.h5 has no tokenizer"), std::string::npos)
        << e.what();
  }
  c.tokenizer_id = "bpe300-0123456789abcdef";  // merges missing
  EXPECT_THROW(checkpoint_tokenizer(c, 300), Error);
  c.tokenizer_id = "byte";
  EXPECT_THROW(checkpoint_tokenizer(c, 200), Error) << "vocabulary larger than the model's";
}

TEST(EvalCheckpoint, ConfigIdIsStable) {
  EXPECT_EQ(config_id("[model]\nd_model = 32\n"), config_id("[model]\nd_model = 32\n"));
  EXPECT_NE(config_id("[model]\nd_model = 32\n"), config_id("[model]\nd_model = 64\n"));
  EXPECT_EQ(config_id("").size(), 20u);
}

TEST(EvalConfigKeys, LengthsParse) {
  EXPECT_EQ(parse_lengths("1024, 2K,4k,1024"), (std::vector<int64_t>{1024, 2048, 4096}));
  EXPECT_THROW(parse_lengths("1024,abc"), Error);
  EXPECT_THROW(parse_lengths("8"), Error);
  EXPECT_TRUE(parse_lengths("").empty());
}

TEST(EvalConfigKeys, EvalSectionDeclaresEveryKey) {
  config::Schema s;
  EvalConfig e;
  add_eval_keys(s, e);
  std::vector<std::string> names;
  for (const auto& k : s.keys) names.push_back(k.name);
  for (const char* k :
       {"eval.tasks", "eval.lengths", "eval.samples", "eval.seed", "eval.allow_beyond_training", "eval.max_new_tokens",
        "eval.essay", "eval.word_dir", "eval.mc_file", "eval.loss_windows", "eval.prefill_chunk", "eval.write_samples"})
    EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
  EXPECT_EQ(e.samples, 20);
  EXPECT_EQ(e.tasks, "all");
}
