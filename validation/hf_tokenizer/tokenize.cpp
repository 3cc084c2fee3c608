// hf_tokenize: a command-line tokenizer for tests. Prints, for each line of a text file (without
// its line end; with --jsonl each line is a JSON string and its value is encoded), the ids
// Headroom's encoder gives it, space-separated, one output line per input line; checks
// decode(encode(text)) == text (NFC(text) for an NFC tokenizer) and exits 1 naming the first line where it does not.
//
//   hf_tokenize [--jsonl] TOKENIZER TEXT_FILE  TOKENIZER: byte, a Headroom tokenizer file, a Hugging
//                                              Face model directory or a tokenizer.json
//   hf_tokenize --export TOKENIZER DIR         writes DIR/tokenizer.json and tokenizer_config.json
//   hf_tokenize --info TOKENIZER               prints tokenizer_id, vocab_size, bos, eos, pad
//   hf_tokenize --train-bpe VOCAB TEXT OUT     trains Headroom's BPE on a text file, saves it to OUT
//   hf_tokenize --decode TOKENIZER IDS_FILE    each line's ids (space-separated) decoded, printed as a
//                                              JSON string per line
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/bpe_train.h"
#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_files.h"
#include "data/tokenizer_file.h"
#include "data/tokenizer.h"
#include "util/error.h"

namespace {

using namespace headroom;

std::string read_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, ": cannot open");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int tokenize_lines(const std::string& spec, const std::string& file, bool jsonl) {
  const data::Tokenizer tok = data::load_any_tokenizer(spec);
  data::Encoder enc(tok);
  const std::string text = read_file(file);
  std::string out;
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    if (jsonl) line = nlohmann::json::parse(line).get<std::string>();
    pos = end + 1;
    ++line_no;
    std::vector<int32_t> ids;
    enc.encode(line, ids);
    for (size_t k = 0; k < ids.size(); ++k) {
      if (k) out += ' ';
      out += std::to_string(ids[k]);
    }
    out += '\n';
    // Decoding skips special tokens, so a text that spells one does not come back.
    bool special = false;
    for (const int32_t id : ids) special |= tok.hf && tok.hf->id_special[size_t(id)];
    // An NFC tokenizer gives back the normalized text.
    const std::string want = tok.hf && tok.hf->nfc ? data::hf_nfc(line) : line;
    if (!special && data::decode(tok, ids) != want) {
      std::cout << out;
      std::cerr << file << ":" << line_no << ": decode(encode(line)) differs from the line\n";
      return 1;
    }
  }
  std::cout << out;
  return 0;
}

int decode_lines(const std::string& spec, const std::string& file) {
  const data::Tokenizer tok = data::load_any_tokenizer(spec);
  const std::string text = read_file(file);
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::vector<int32_t> ids;
    size_t k = pos;
    while (k < end) {
      size_t sp = text.find(' ', k);
      if (sp == std::string::npos || sp > end) sp = end;
      if (sp > k) ids.push_back(std::stoi(text.substr(k, sp - k)));
      k = sp + 1;
    }
    pos = end + 1;
    out += nlohmann::json(data::decode(tok, ids)).dump();
    out += '\n';
  }
  std::cout << out;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() == 3 && a[0] == "--export") {
      std::filesystem::create_directories(a[2]);
      data::save_hf_tokenizer_dir(data::load_any_tokenizer(a[1]), a[2]);
      return 0;
    }
    if (a.size() == 2 && a[0] == "--info") {
      const auto tok = data::load_any_tokenizer(a[1]);
      const auto bos = data::bos_id(tok);
      std::cout << data::tokenizer_id(tok) << " " << data::vocab_size(tok) << " "
                << (bos ? std::to_string(*bos) : "none") << " " << data::eos_id(tok) << " " << data::pad_id(tok)
                << "\n";
      return 0;
    }
    if (a.size() == 4 && a[0] == "--train-bpe") {
      const std::string text = read_file(a[2]);
      const std::vector<std::string_view> docs{text};
      data::save_tokenizer(data::train_bpe(docs, std::stoi(a[1]), nullptr), a[3]);
      return 0;
    }
    if (a.size() == 3 && a[0] == "--decode") return decode_lines(a[1], a[2]);
    if (a.size() == 3 && a[0] == "--jsonl") return tokenize_lines(a[1], a[2], true);
    if (a.size() == 2 && a[0][0] != '-') return tokenize_lines(a[0], a[1], false);
    std::cerr << "usage: hf_tokenize [--jsonl] TOKENIZER TEXT_FILE | --train-bpe VOCAB TEXT OUT | --export TOKENIZER "
                 "DIR | --info TOKENIZER\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hf_tokenize: " << e.what() << "\n";
    return 1;
  }
}
