// Tokenizer benchmark (one thread): byte-level encode MB/s, BPE training seconds, BPE encode MB/s.
//
//   bench_tokenizer [TEXT_FILE] [--vocab N] [--tokenizer FILE|HF_DIR|tokenizer.json] [--save FILE]
//
// TEXT_FILE defaults to validation/data/sample_english.txt (found through HEADROOM_SOURCE_DIR or
// next to this source). Without --tokenizer a BPE tokenizer of --vocab ids (default 8192) is trained
// on the file, split into documents at blank lines; --save writes it. BPE encode is reported twice:
// "cold" is the first pass of a fresh Encoder over the file (cache empty; the realistic figure for a
// large corpus), "warm" a second pass with the cache filled. Targets: byte >= 20 MB/s, BPE >= 2 MB/s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "data/bpe_train.h"
#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_files.h"
#include "data/tokenizer.h"
#include "data/tokenizer_file.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace headroom::data;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Encodes text repeatedly with enc until at least min_seconds have passed; returns MB/s.
double throughput(Encoder& enc, std::string_view text, double min_seconds, size_t* tokens) {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  size_t bytes = 0;
  const double t0 = now();
  double t = t0;
  do {
    ids.clear();
    enc.encode(text, ids);
    bytes += text.size();
    t = now();
  } while (t - t0 < min_seconds);
  if (tokens) *tokens = ids.size();
  return double(bytes) / 1e6 / (t - t0);
}

int usage() {
  std::fprintf(stderr, "usage: bench_tokenizer [TEXT_FILE] [--vocab N] [--tokenizer FILE] [--save FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  fs::path text_path;
  fs::path tok_path, save_path;
  int32_t vocab = 8192;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--vocab" || a == "--tokenizer" || a == "--save") && i + 1 < argc) {
      const char* v = argv[++i];
      if (a == "--vocab") vocab = int32_t(std::atoi(v));
      if (a == "--tokenizer") tok_path = v;
      if (a == "--save") save_path = v;
    } else if (!a.empty() && a[0] != '-' && text_path.empty()) {
      text_path = a;
    } else {
      return usage();
    }
  }
  if (text_path.empty()) {
    const char* dir = std::getenv("HEADROOM_SOURCE_DIR");
    text_path =
        (dir ? fs::path(dir) : fs::path(__FILE__).parent_path().parent_path()) / "validation/data/sample_english.txt";
  }
  std::ifstream in(text_path, std::ios::binary);
  if (!in) headroom::fail("cannot open ", text_path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::printf("input: %s (%.2f MB)\n", text_path.c_str(), double(text.size()) / 1e6);

  {
    Encoder enc{Tokenizer{}};
    std::printf("byte-level encode: %.1f MB/s\n", throughput(enc, text, 1.0, nullptr));
  }

  Tokenizer tok;
  if (!tok_path.empty()) {
    tok = load_any_tokenizer(tok_path);  // a Headroom file or a Hugging Face tokenizer
    std::printf("loaded %s: %s\n", tok_path.c_str(), tokenizer_id(tok).c_str());
  } else {
    std::vector<std::string_view> docs;
    const std::string_view s = text;
    for (size_t pos = 0; pos < s.size();) {
      size_t end = s.find("\n\n", pos);
      end = end == std::string_view::npos ? s.size() : end + 2;
      docs.push_back(s.substr(pos, end - pos));
      pos = end;
    }
    const double t0 = now();
    tok = train_bpe(docs, vocab, [&](int32_t done, int32_t total) {
      if (done % 1024 == 0 || done == total) std::fprintf(stderr, "  merges %d/%d  %.1f s\n", done, total, now() - t0);
    });
    const double secs = now() - t0;
    std::printf("BPE training: vocab %d (asked %d), %zu docs, %.2f MB: %.2f s\n", vocab_size(tok), vocab, docs.size(),
                double(text.size()) / 1e6, secs);
  }
  if (!save_path.empty()) {
    if (tok.hf) headroom::fail("--save writes Headroom tokenizer files; ", tok_path, " is a Hugging Face tokenizer");
    save_tokenizer(tok, save_path);
  }

  Encoder enc(tok);
  size_t tokens = 0;
  const double cold = throughput(enc, text, 0.0, &tokens);
  const size_t misses = enc.cache_misses(), hits = enc.cache_hits();
  const double warm = throughput(enc, text, 1.0, nullptr);
  std::printf(
      "BPE encode (%s): cold %.1f MB/s, warm %.1f MB/s; %.3f tokens/byte; cache %zu entries, "
      "first pass %zu hits / %zu misses\n",
      tokenizer_id(tok).c_str(), cold, warm, double(tokens) / double(text.size()), enc.cache_entries(), hits, misses);
  std::vector<int32_t> ids;
  enc.encode(text, ids);
  // A Hugging Face tokenizer with NFC gives back the normalized text.
  if (decode(tok, ids) != (tok.hf && tok.hf->nfc ? hf_nfc(text) : text)) headroom::fail("BPE round trip failed");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
  return 1;
}
