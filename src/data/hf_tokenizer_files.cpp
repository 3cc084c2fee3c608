#include "data/hf_tokenizer_files.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <unordered_map>

#include "data/hf_tokenizer.h"
#include "data/tokenizer_file.h"
#include "io/atomic_file.h"
#include "util/error.h"

namespace headroom::data {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path.string(), ": read failed");
  return text;
}

// tokenizer_config.json's way of naming a token: a string, {"content": ...}, or null/absent.
std::optional<std::string> token_name(const json& config, const char* key, const std::string& what) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail(what, ": ", key, " ", it->dump(), " is not a token (a string, an object with \"content\", or null)");
}

json name_json(const std::optional<std::string>& name) { return name ? json(*name) : json(nullptr); }

Tokenizer make(std::string tokenizer_json, const std::string& json_what, const json& names,
               const std::string& names_what) {
  auto bpe = parse_hf_tokenizer_json(std::move(tokenizer_json), json_what);
  set_hf_specials(*bpe, token_name(names, "bos_token", names_what), token_name(names, "eos_token", names_what),
                  token_name(names, "pad_token", names_what), names_what);
  Tokenizer tok;
  tok.hf = bpe;
  bpe->id = tokenizer_id(tok);  // hf->id is still empty, so this hashes the record
  std::vector<int32_t> nl;
  HfEncoder(bpe).encode("\n", nl);
  if (nl.size() == 1) bpe->newline = nl[0];
  return tok;
}

// The string GPT-2's byte-level alphabet spells for a byte string.
std::string byte_level_string(const std::string& bytes) {
  std::string out;
  for (const char b : bytes) {
    const char32_t c = hf_byte_char(static_cast<uint8_t>(b));
    if (c < 0x80) {
      out += char(c);
    } else {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// Headroom's pre-split (tokenizer.h) as an Oniguruma pattern; see the header comment.
std::string native_split_pattern() {
  const std::string hi = "\u0080-\U0010FFFF";  // every non-ASCII character, written literally
  const std::string S = "[ \\t\\n\\x0B\\f\\r]", NS = "[^ \\t\\n\\x0B\\f\\r]";
  const std::string L = "[A-Za-z" + hi + "]", D = "[0-9]", O = "[^ \\t\\n\\x0B\\f\\rA-Za-z0-9" + hi + "]";
  return " " + L + "{1,255}| " + D + "{1,255}| " + O + "{1,255}|" + S + "{1,256}(?= " + NS + ")|" + S + "{1,256}|" + L +
         "{1,256}|" + D + "{1,256}|" + O + "{1,256}";
}

std::string native_tokenizer_json(const Tokenizer& tok) {
  validate(tok);
  std::vector<std::string> bytes_of(size_t(vocab_size(tok)));
  json vocab = json::object();
  std::unordered_map<std::string, int32_t> seen;
  auto add = [&](const std::string& token, int32_t id) {
    if (!seen.emplace(token, id).second)
      fail("tokenizer ", tokenizer_id(tok), " cannot be written as tokenizer.json: ids ", seen[token], " and ", id,
           " are the same string '", token, "' (a tokenizer.json vocab maps each string to one id)");
    vocab[token] = id;
  };
  for (int b = 0; b < 256; ++b) {
    bytes_of[size_t(b)] = std::string(1, char(b));
    add(byte_level_string(bytes_of[size_t(b)]), b);
  }
  const std::pair<const char*, int32_t> specials[3] = {
      {"<|bos|>", *bos_id(tok)}, {"<|eos|>", eos_id(tok)}, {"<|pad|>", pad_id(tok)}};
  json added = json::array();
  for (const auto& [name, id] : specials) {
    add(name, id);
    added.push_back({{"id", id},
                     {"content", name},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  json merges = json::array();
  for (size_t i = 0; i < tok.merges.size(); ++i) {
    const auto [l, r] = tok.merges[i];
    const int32_t id = kFirstMerge + int32_t(i);
    bytes_of[size_t(id)] = bytes_of[size_t(l)] + bytes_of[size_t(r)];
    add(byte_level_string(bytes_of[size_t(id)]), id);
    merges.push_back(json::array({byte_level_string(bytes_of[size_t(l)]), byte_level_string(bytes_of[size_t(r)])}));
  }
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  json root = {{"version", "1.0"},
               {"truncation", nullptr},
               {"padding", nullptr},
               {"added_tokens", added},
               {"normalizer", nullptr},
               {"pre_tokenizer",
                {{"type", "Sequence"},
                 {"pretokenizers", json::array({{{"type", "Split"},
                                                 {"pattern", {{"Regex", native_split_pattern()}}},
                                                 {"behavior", "Isolated"},
                                                 {"invert", false}},
                                                byte_level})}}},
               {"post_processor", nullptr},
               {"decoder", byte_level},
               {"model",
                {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", nullptr},
                 {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr},
                 {"fuse_unk", false},
                 {"byte_fallback", false},
                 {"ignore_merges", false},
                 {"vocab", vocab},
                 {"merges", merges}}}};
  return root.dump(1) + "\n";
}

}  // namespace

Tokenizer load_hf_tokenizer_dir(const fs::path& path) {
  const bool is_dir = fs::is_directory(path);
  const fs::path json_path = is_dir ? path / "tokenizer.json" : path;
  const fs::path config_path = (is_dir ? path : path.parent_path()) / "tokenizer_config.json";
  if (!fs::exists(json_path))
    fail(json_path.string(), ": no such file (a Hugging Face model directory holds tokenizer.json)");
  if (!fs::exists(config_path))
    fail(config_path.string(),
         ": no such file; it names the model's special tokens (eos_token, bos_token, "
         "pad_token) that Headroom needs beside ",
         json_path.string());
  json config;
  try {
    config = json::parse(read_text(config_path));
  } catch (const json::exception& e) {
    fail(config_path.string(), ": not valid JSON: ", e.what());
  }
  if (!config.is_object()) fail(config_path.string(), ": not a JSON object");
  return make(read_text(json_path), json_path.string(), config, config_path.string());
}

Tokenizer load_any_tokenizer(const std::string& spec) {
  if (spec == "byte") return Tokenizer{};
  const fs::path path(spec);
  if (fs::is_directory(path)) return load_hf_tokenizer_dir(path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("tokenizer ", spec,
         ": cannot open (expected 'byte', a tokenizer file, a Hugging Face model "
         "directory or a tokenizer.json)");
  std::string head(18, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  if (head == "headroom-tokenizer") return load_tokenizer(path);
  return load_hf_tokenizer_dir(path);
}

std::string tokenizer_record(const Tokenizer& tok) {
  if (!tok.hf) return "";
  const json record = {{"bos_token", name_json(tok.hf->bos_token)},
                       {"eos_token", name_json(tok.hf->eos_token)},
                       {"pad_token", name_json(tok.hf->pad_token)},
                       {"tokenizer_json", tok.hf->tokenizer_json}};
  return record.dump();
}

Tokenizer tokenizer_from_record(const std::string& record, const std::string& what) {
  json r;
  try {
    r = json::parse(record);
  } catch (const json::exception& e) {
    fail(what, ": the Hugging Face tokenizer record is not valid JSON: ", e.what());
  }
  if (!r.is_object() || !r.contains("tokenizer_json") || !r["tokenizer_json"].is_string())
    fail(what, ": the Hugging Face tokenizer record has no tokenizer_json string");
  return make(r["tokenizer_json"].get<std::string>(), what + " (tokenizer.json)", r, what);
}

std::string to_tokenizer_json(const Tokenizer& tok) {
  return tok.hf ? tok.hf->tokenizer_json : native_tokenizer_json(tok);
}

std::string to_tokenizer_config_json(const Tokenizer& tok) {
  json config;
  if (tok.hf) {
    config = {{"bos_token", name_json(tok.hf->bos_token)},
              {"eos_token", name_json(tok.hf->eos_token)},
              {"pad_token", name_json(tok.hf->pad_token)}};
  } else {
    config = {{"bos_token", "<|bos|>"}, {"eos_token", "<|eos|>"}, {"pad_token", "<|pad|>"}};
  }
  return config.dump(2) + "\n";
}

void save_hf_tokenizer_dir(const Tokenizer& tok, const fs::path& dir) {
  io::write_file_atomic(dir / "tokenizer.json", to_tokenizer_json(tok));
  io::write_file_atomic(dir / "tokenizer_config.json", to_tokenizer_config_json(tok));
}

}  // namespace headroom::data
