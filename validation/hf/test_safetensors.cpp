// safetensors (io/safetensors.h): written and read back exactly, F16/BF16 converted exactly, blocks
// sliced, shards found through the index, and every kind of damage refused naming file and tensor;
// the Hugging Face mapping (app/hf_config.h) both ways.
#include "app/hf_config.h"
#include "config/keys.h"
#include "io/safetensors.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace headroom;
using namespace headroom::io;
namespace fs = std::filesystem;

namespace {

fs::path tmp(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "headroom_test_safetensors";
  fs::create_directories(dir);
  return dir / name;
}

// A file from a header text and raw data bytes.
fs::path raw_file(const std::string& name, const std::string& header, const std::string& data,
                  int64_t claimed_len = -1) {
  const fs::path p = tmp(name);
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  const uint64_t n = claimed_len >= 0 ? static_cast<uint64_t>(claimed_len) : header.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
  f << header << data;
  return p;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, F32RoundTripAndBlocks) {
  std::vector<float> a(12), b{1.5f, -0.0f, 3e-40f};
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.25f - 1.f;
  const fs::path p = tmp("rt.safetensors");
  write_safetensors(p, {{"a", {3, 4}, a.data()}, {"b", {3}, b.data()}}, StDtype::kF32, {{"format", "pt"}});
  const auto f = SafetensorsFile::open(p);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_NE(f.find("a"), nullptr);
  EXPECT_EQ(f.find("a")->shape, (std::vector<int64_t>{3, 4}));
  std::vector<float> out(12);
  f.read_block("a", 0, 3, 0, 4, out.data());
  EXPECT_EQ(0, std::memcmp(out.data(), a.data(), 48));
  f.read_block("a", 1, 2, 1, 2, out.data());  // rows 1..2, cols 1..2
  EXPECT_EQ(out[0], a[5]);
  EXPECT_EQ(out[1], a[6]);
  EXPECT_EQ(out[2], a[9]);
  EXPECT_EQ(out[3], a[10]);
  f.read_block("b", 0, 3, 0, 1, out.data());
  EXPECT_EQ(0, std::memcmp(out.data(), b.data(), 12));
  EXPECT_NE(error_of([&] { f.read_block("a", 2, 2, 0, 4, out.data()); }).find("outside its shape"), std::string::npos);
  EXPECT_FALSE(fs::exists(p.string() + ".tmp"));
}

TEST(Safetensors, Bf16AndF16Exact) {
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xc040), -3.0f);
  EXPECT_EQ(f16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_float(0xc000), -2.0f);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_float(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_float(0x7e00)));
  // Round to nearest even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 and goes to 1 (even).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  std::vector<float> v{1.0f, -3.0f, 0.1f};
  const fs::path p = tmp("bf16.safetensors");
  write_safetensors(p, {{"v", {3}, v.data()}}, StDtype::kBF16);
  const auto f = SafetensorsFile::open(p);
  EXPECT_EQ(f.find("v")->dtype_text, "BF16");
  std::vector<float> out(3);
  f.read_block("v", 0, 3, 0, 1, out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.0f);
  EXPECT_EQ(out[2], bf16_to_float(float_to_bf16(0.1f)));
  // F16 data read through a hand-written header.
  const std::string d("\x00\x3c\x00\xc0", 4);
  const auto h = SafetensorsFile::open(
      raw_file("f16.safetensors", R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", d));
  h.read_block("h", 0, 2, 0, 1, out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
}

TEST(Safetensors, DamageRefusedNamingFileAndTensor) {
  const std::string eight(8, '\0');
  auto err = [&](const std::string& name, const std::string& header, const std::string& data, int64_t len = -1) {
    return error_of([&] { SafetensorsFile::open(raw_file(name, header, data, len)); });
  };
  std::string e = err("len.safetensors", "{}", "", 1000);
  EXPECT_NE(e.find("len.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  e = err("json.safetensors", "{not json", "");
  EXPECT_NE(e.find("bad header"), std::string::npos) << e;
  e = err("nooff.safetensors", R"({"w":{"dtype":"F32","shape":[2]}})", eight);
  EXPECT_NE(e.find("'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("data_offsets"), std::string::npos) << e;
  e = err("range.safetensors", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight);
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("'w'"), std::string::npos) << e;
  e = err(
      "overlap.safetensors",
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      eight);
  EXPECT_NE(e.find("overlap"), std::string::npos) << e;
  e = err("count.safetensors", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight);
  EXPECT_NE(e.find("needs 12"), std::string::npos) << e;
  const auto f = SafetensorsFile::open(
      raw_file("i64.safetensors", R"({"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", eight));
  float out[1];
  e = error_of([&] { f.read_block("ids", 0, 1, 0, 1, out); });
  EXPECT_NE(e.find("i64.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("'ids'"), std::string::npos) << e;
  EXPECT_NE(e.find("I64"), std::string::npos) << e;
}

TEST(Safetensors, ShardedThroughIndex) {
  const fs::path dir = tmp("sharded");
  fs::create_directories(dir);
  std::vector<float> a{1, 2}, b{3};
  write_safetensors(dir / "model-00001-of-00002.safetensors", {{"a", {2}, a.data()}}, StDtype::kF32);
  write_safetensors(dir / "model-00002-of-00002.safetensors", {{"b", {1}, b.data()}}, StDtype::kF32);
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
  const auto s = SafetensorsSet::open_dir(dir);
  EXPECT_EQ(s.names(), (std::vector<std::string>{"a", "b"}));
  float out[2];
  s.read_block("b", 0, 1, 0, 1, out);
  EXPECT_EQ(out[0], 3.0f);
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map":{"a":"model-00002-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
  const std::string e = error_of([&] { SafetensorsSet::open_dir(dir); });
  EXPECT_NE(e.find("'a'"), std::string::npos) << e;
}

nlohmann::json llama_config() {
  return nlohmann::json::parse(R"({"architectures":["LlamaForCausalLM"],"vocab_size":300,"hidden_size":64,
    "intermediate_size":96,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
    "max_position_embeddings":128,"rms_norm_eps":1e-5,"rope_theta":500000.0,"hidden_act":"silu"})");
}

std::string value_of(const app::HfImportMapping& m, const std::string& key) {
  for (const auto& [k, v] : m.keys)
    if (k == key) return v;
  return "<absent>";
}

TEST(HfConfig, MapsAndRefusesNamingKeyAndValue) {
  const auto m = app::map_hf_config(llama_config(), "config.json");
  EXPECT_EQ(value_of(m, "model.head_dim_qk"), "16");
  EXPECT_EQ(value_of(m, "model.rope_base_full"), "500000");
  EXPECT_EQ(value_of(m, "model.norm_order"), "pre");
  EXPECT_EQ(value_of(m, "train.seq_len"), "128");
  auto refused = [](nlohmann::json j) { return error_of([&] { app::map_hf_config(j, "config.json"); }); };
  auto j = llama_config();
  j["hidden_act"] = "gelu";
  EXPECT_NE(refused(j).find("hidden_act = \"gelu\""), std::string::npos) << refused(j);
  j = llama_config();
  j["attention_bias"] = true;
  EXPECT_NE(refused(j).find("attention_bias = true"), std::string::npos);
  j = llama_config();
  j["architectures"] = {"GPT2LMHeadModel"};
  EXPECT_NE(refused(j).find("GPT2LMHeadModel"), std::string::npos);
  j = llama_config();
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_NE(refused(j).find("\"dynamic\""), std::string::npos);
  j = llama_config();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}, {"mscale", 0.7}};
  EXPECT_NE(refused(j).find("mscale = 0.7"), std::string::npos) << refused(j);
  j = llama_config();
  j["partial_rotary_factor"] = 0.5;
  EXPECT_NE(refused(j).find("partial_rotary_factor = 0.5"), std::string::npos) << refused(j);
  j = llama_config();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}, {"truncate", false}};
  EXPECT_NE(refused(j).find("truncate = false"), std::string::npos) << refused(j);
  j = llama_config();
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["use_sliding_window"] = true;
  EXPECT_NE(refused(j).find("use_sliding_window = true"), std::string::npos) << refused(j);
  j = llama_config();
  j["architectures"] = {"Olmo3ForCausalLM"};
  j["layer_types"] = {"sliding_attention", "chunked_attention"};
  EXPECT_NE(refused(j).find("chunked_attention"), std::string::npos) << refused(j);
  j["layer_types"] = {"sliding_attention", "full_attention"};
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 64}};
  EXPECT_NE(refused(j).find("\"llama3\" in an OLMo 3 model"), std::string::npos) << refused(j);
  j = llama_config();
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 64}};
  const auto l3 = app::map_hf_config(j, "config.json");
  EXPECT_EQ(value_of(l3, "model.rope_scaling"), "llama3");
  EXPECT_EQ(value_of(l3, "model.llama3_original_len"), "64");
  j = llama_config();
  j["architectures"] = {"Olmo3ForCausalLM"};
  j["layer_types"] = {"sliding_attention", "full_attention"};
  j["sliding_window"] = 8;
  const auto o = app::map_hf_config(j, "config.json");
  EXPECT_EQ(value_of(o, "model.layer_pattern"), "SF");
  EXPECT_EQ(value_of(o, "model.qk_norm"), "layer");
  EXPECT_EQ(value_of(o, "model.norm_order"), "post");
}

TEST(HfConfig, ExportRefusesWhatNoFamilyExpresses) {
  config::Config c;
  const config::Schema s = config::make_schema(c, config::kModel);
  c.model.head_dim_v = 32;                   // head_dim_qk 64
  c.model.qk_norm = config::QkNorm::kLayer;  // with pre-norm
  const std::string e = error_of([&] { app::hf_family_for(c.model); });
  EXPECT_NE(e.find("model.head_dim_qk = 64"), std::string::npos) << e;
  EXPECT_NE(e.find("model.qk_norm = layer"), std::string::npos) << e;
  c.model.head_dim_v = 64;
  c.model.norm_order = config::NormOrder::kPost;
  c.model.layer_pattern = "SF";
  EXPECT_EQ(app::hf_family_for(c.model), app::HfFamily::kOlmo3);
  EXPECT_EQ(app::hf_tensor_name(app::HfFamily::kOlmo3, config::NormOrder::kPost, "layers.3.mlp_norm.weight"),
            "model.layers.3.post_feedforward_layernorm.weight");
}

}  // namespace
