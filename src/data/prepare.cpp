#include "data/prepare.h"

#include "data/bpe_train.h"
#include "data/hf_tokenizer_files.h"
#include "data/tokenizer_file.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/random.h"

#include <omp.h>

#include <algorithm>
#include <filesystem>

namespace headroom::data {
namespace fs = std::filesystem;
namespace {

// Training stops early when no pair occurs twice: a train split that small (its only long
// document drawn into val, say) would otherwise pass as BPE while encoding byte by byte.
void check_learned_merges(const Tokenizer& tok, const PrepareOptions& opt, const std::vector<std::string_view>& train,
                          const std::function<void(const std::string&)>& log) {
  const auto asked = static_cast<size_t>(opt.vocab_size) - static_cast<size_t>(kFirstMerge);
  int64_t bytes = 0;
  for (const auto d : train) bytes += static_cast<int64_t>(d.size());
  const std::string what = cat(" of the ", asked, " --vocab-size ", opt.vocab_size, " asks for, from the train split (",
                               train.size(), " documents, ", bytes, " bytes)");
  if (tok.merges.empty() && asked > 0)
    fail("--tokenizer bpe learned no merge", what,
         ": no byte pair occurs twice in it; give more text, or --tokenizer byte; no shard was written");
  if (tok.merges.size() < asked)
    log(cat("warning: --tokenizer bpe learned ", tok.merges.size(), " merges", what, ": the vocabulary stops there"));
}

Tokenizer make_tokenizer(const PrepareOptions& opt, const std::vector<std::string>& texts,
                         const std::vector<bool>& is_val, const std::function<void(const std::string&)>& log) {
  if (opt.tokenizer == "byte") return Tokenizer{};
  if (opt.tokenizer != "bpe") {
    log(cat("loading tokenizer ", opt.tokenizer));
    return load_any_tokenizer(opt.tokenizer);  // a Headroom file, an HF directory or tokenizer.json
  }
  std::vector<std::string_view> train;
  for (size_t i = 0; i < texts.size(); ++i)
    if (!is_val[i]) train.emplace_back(texts[i]);
  log(cat("training byte-level BPE to vocab ", opt.vocab_size, " on ", train.size(), " documents"));
  const auto t0 = std::chrono::steady_clock::now();
  int last_reported = -1;
  Tokenizer tok = train_bpe(
      train, static_cast<int32_t>(opt.vocab_size),
      [&](int32_t done, int32_t total) {
        const int pct = total > 0 ? static_cast<int>(100.0 * done / total) : 100;
        if (pct / 10 == last_reported / 10 && done != total) return;
        last_reported = pct;
        const double el = seconds_since(t0);
        const double eta = done > 0 ? el * (total - done) / done : 0;
        log(cat("  bpe merges ", done, "/", total, " (", pct, "%), elapsed ", format_duration(el), ", eta ",
                format_duration(eta)));
      },
      opt.split_digits);
  check_learned_merges(tok, opt, train, log);
  return tok;
}

// Both shards need a whole document; refused before a tokenizer is trained or a file written.
void check_splits(const PrepareOptions& opt, const Documents& docs, const std::vector<bool>& is_val) {
  const auto n_val = std::count(is_val.begin(), is_val.end(), true);
  const auto n_train = static_cast<std::ptrdiff_t>(is_val.size()) - n_val;
  if (n_val > 0 && n_train > 0) return;
  std::string inputs;
  for (const auto& i : opt.inputs) inputs += (inputs.empty() ? "" : ", ") + i;
  if (docs.texts.size() < 2)
    fail("the inputs (", inputs, ") hold ", docs.texts.size(), " document (", docs.bytes, " bytes), so the ",
         n_train == 0 ? "train" : "val",
         " split would hold no tokens: prepare splits whole documents into "
         "train and val and needs at least 2 documents (a .jsonl file holds one per line, any other file is "
         "one); nothing was written");
  fail("--val-fraction = ", opt.val_fraction, " puts ", n_val, " of the ", docs.texts.size(), " documents of (", inputs,
       ") in the val split, so the ", n_train == 0 ? "train" : "val",
       " split would hold no tokens; use a fraction above 0 (and below 1); nothing was written");
}

}  // namespace

std::vector<bool> split_validation(const std::vector<std::string>& texts, double val_fraction, unsigned long seed) {
  std::vector<bool> is_val(texts.size(), false);
  std::vector<double> u(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    u[i] = static_cast<double>(mix64(mix64(seed) ^ fnv1a64(texts[i])) >> 11) * 0x1.0p-53;
    is_val[i] = u[i] < val_fraction;
  }
  if (texts.size() >= 2 && val_fraction > 0) {
    const auto lowest = std::min_element(u.begin(), u.end()) - u.begin();
    const auto highest = std::max_element(u.begin(), u.end()) - u.begin();
    is_val[static_cast<size_t>(lowest)] = true;
    is_val[static_cast<size_t>(highest)] = false;
  }
  return is_val;
}

ShardContents encode_documents(const Tokenizer& tok, const std::vector<const std::string*>& docs,
                               const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t n = static_cast<int64_t>(docs.size());
  std::vector<std::vector<int32_t>> encoded(docs.size());
  int64_t total = 0;
  for (const auto* d : docs) total += static_cast<int64_t>(d->size());
  int64_t done = 0;
#pragma omp parallel
  {
    Encoder enc(tok);
    const std::vector<int32_t> start = bos_prefix(tok);
#pragma omp for schedule(dynamic, 4)
    for (int64_t i = 0; i < n; ++i) {
      auto& out = encoded[static_cast<size_t>(i)];
      out = start;
      enc.encode(*docs[static_cast<size_t>(i)], out);
#pragma omp critical(headroom_encode_progress)
      {
        done += static_cast<int64_t>(docs[static_cast<size_t>(i)]->size());
        if (progress && omp_get_thread_num() == 0) progress(done, total);
      }
    }
  }
  ShardContents c;
  c.n_bytes = total;
  c.doc_offsets.reserve(docs.size() + 1);
  c.doc_offsets.push_back(0);
  for (auto& e : encoded) {
    c.tokens.insert(c.tokens.end(), e.begin(), e.end());
    c.doc_offsets.push_back(c.tokens.size());
    std::vector<int32_t>().swap(e);
  }
  if (progress) progress(total, total);
  return c;
}

PrepareInput read_prepare_input(const PrepareOptions& opt) {
  PrepareInput in{read_documents(opt.inputs), {}};
  in.is_val = split_validation(in.docs.texts, opt.val_fraction, opt.seed);
  check_splits(opt, in.docs, in.is_val);
  return in;
}

PrepareSummary run_prepare(const PrepareOptions& opt, const std::string& config_ini,
                           const std::function<void(const std::string&)>& log) {
  return run_prepare(opt, read_prepare_input(opt), config_ini, log);
}

PrepareSummary run_prepare(const PrepareOptions& opt, const PrepareInput& in, const std::string& config_ini,
                           const std::function<void(const std::string&)>& log) {
  PrepareSummary sum;
  const Documents& docs = in.docs;
  const std::vector<bool>& is_val = in.is_val;
  sum.bytes = docs.bytes;
  log(cat("read ", docs.texts.size(), " documents, ", docs.bytes, " bytes, from ", docs.files.size(), " files"));

  auto t0 = std::chrono::steady_clock::now();
  const Tokenizer tok = make_tokenizer(opt, docs.texts, is_val, log);
  sum.tokenizer_seconds = seconds_since(t0);
  sum.tokenizer_id = tokenizer_id(tok);
  log(cat("tokenizer ", sum.tokenizer_id, " (vocab ", vocab_size(tok), ")"));

  const fs::path out(opt.output);
  if (tok.hf)
    save_hf_tokenizer_dir(tok, out);  // the model directory's two files, so out is reusable as one
  else
    save_tokenizer(tok, out / "tokenizer.txt");
  t0 = std::chrono::steady_clock::now();
  for (const bool val : {false, true}) {
    std::vector<const std::string*> split;
    for (size_t i = 0; i < docs.texts.size(); ++i)
      if (is_val[i] == val) split.push_back(&docs.texts[i]);
    const std::string name = val ? "val" : "train";
    auto last = std::chrono::steady_clock::now();
    const auto start = last;
    const ShardContents c = encode_documents(tok, split, [&](int64_t done, int64_t total) {
      if (seconds_since(last) < 5.0) return;
      last = std::chrono::steady_clock::now();
      const double el = seconds_since(start);
      log(cat("  encoding ", name, ": ", done >> 20, "/", total >> 20, " MiB, ", format_duration(el), " elapsed, eta ",
              format_duration(done > 0 ? el * static_cast<double>(total - done) / done : 0)));
    });
    if (c.tokens.size() < 2)
      fail("the ", name,
           " split of the inputs holds no tokens; add input text or change "
           "--val-fraction");
    write_shard(out / (name + ".h5"), c, tok, ShardMeta{name, config_ini});
    (val ? sum.val_docs : sum.train_docs) = static_cast<int64_t>(split.size());
    (val ? sum.val_tokens : sum.train_tokens) = static_cast<int64_t>(c.tokens.size());
    log(cat("wrote ", (out / (name + ".h5")).string(), ": ", split.size(), " documents, ", c.tokens.size(), " tokens"));
  }
  sum.encode_seconds = seconds_since(t0);
  return sum;
}

}  // namespace headroom::data
