#include "data/prepare_pass.h"

#include "data/shard_writer.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/random.h"

#include <omp.h>

#include <cstdio>
#include <memory>
#include <optional>

namespace headroom::data {
namespace fs = std::filesystem;
namespace {

struct Batch {
  std::vector<std::string> texts;
  std::vector<char> is_val;
  int64_t bytes = 0;
  void clear() {
    texts.clear();
    is_val.clear();
    bytes = 0;
  }
};

// The open shard of each split, rolled over when full.
class SplitWriters {
 public:
  SplitWriters(const PassSpec& spec, const Tokenizer& tok, PassResult& result)
      : spec_(spec), tok_(tok), result_(result) {}
  void add(bool val, const std::vector<int32_t>& ids, int64_t text_bytes) {
    auto& w = writers_[val];
    if (!w)
      w = std::make_unique<ShardWriter>(next_path(val), tok_, ShardMeta{val ? "val" : "train", spec_.prepare_config});
    w->add(ids, text_bytes);
    if (w->token_bytes() >= spec_.shard_bytes) close(val);
  }
  void close(bool val) {
    auto& w = writers_[val];
    if (!w) return;
    w->finish();
    (val ? result_.val_shards : result_.train_shards).push_back(w->path());
    w.reset();
  }

 private:
  fs::path next_path(bool val) {
    char index[16];
    std::snprintf(index, sizeof index, "%05lld", static_cast<long long>(count_[val]++));
    return spec_.dir / (std::string(val ? "val-" : "train-") + spec_.name_prefix + index + ".h5");
  }
  const PassSpec& spec_;
  const Tokenizer& tok_;
  PassResult& result_;
  std::unique_ptr<ShardWriter> writers_[2];
  int64_t count_[2] = {0, 0};
};

void note_extremes(PassResult& r, double draw, DocId id) {
  if (draw < r.lowest.draw || (draw == r.lowest.draw && id < r.lowest.id)) r.lowest = {draw, id};
  if (draw > r.highest.draw || (draw == r.highest.draw && id < r.highest.id)) r.highest = {draw, id};
}

// Encodes the batch with one Encoder per thread and appends it in order.
void flush(Batch& batch, std::vector<std::unique_ptr<Encoder>>& encoders, const Tokenizer& tok, SplitWriters& out,
           PassResult& r) {
  const int64_t n = static_cast<int64_t>(batch.texts.size());
  std::vector<std::vector<int32_t>> ids(batch.texts.size());
  const std::vector<int32_t> start = bos_prefix(tok);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) {
    auto& out_ids = ids[static_cast<size_t>(i)];
    out_ids = start;
    encoders[static_cast<size_t>(omp_get_thread_num())]->encode(batch.texts[static_cast<size_t>(i)], out_ids);
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    const int v = batch.is_val[k];
    out.add(v, ids[k], static_cast<int64_t>(batch.texts[k].size()));
    ++r.docs[v];
    r.tokens[v] += static_cast<int64_t>(ids[k].size());
    r.bytes[v] += static_cast<int64_t>(batch.texts[k].size());
    std::vector<int32_t>().swap(ids[k]);
  }
  batch.clear();
}

void pass_over(const PassSpec& spec, const Tokenizer& tok, const std::vector<std::pair<int64_t, InputFile>>& files,
               const std::function<void(int64_t)>& progress, PassResult& r) {
  const auto t0 = std::chrono::steady_clock::now();
  SplitWriters out(spec, tok, r);
  std::vector<std::unique_ptr<Encoder>> encoders;
  for (int t = 0; t < omp_get_max_threads(); ++t) encoders.push_back(std::make_unique<Encoder>(tok));
  Batch batch;
  int64_t read = 0;
  std::string doc;
  for (const auto& [file_index, file] : files) {
    DocumentReader reader(file, spec.max_document_bytes);
    for (int64_t k = 0; reader.next(doc); ++k) {
      const DocId id{file_index, k};
      const double draw = split_draw(doc, spec.seed);
      note_extremes(r, draw, id);
      const auto o = spec.overrides.find(id);
      batch.is_val.push_back(o != spec.overrides.end() ? o->second : draw < spec.val_fraction);
      batch.bytes += static_cast<int64_t>(doc.size());
      read += static_cast<int64_t>(doc.size());
      batch.texts.push_back(std::move(doc));
      if (batch.bytes >= spec.batch_bytes) {
        flush(batch, encoders, tok, out, r);
        if (progress) progress(read);
      }
    }
  }
  flush(batch, encoders, tok, out, r);
  out.close(false);
  out.close(true);
  r.seconds = seconds_since(t0);
}

}  // namespace

double split_draw(const std::string& text, unsigned long seed) {
  return static_cast<double>(mix64(mix64(seed) ^ fnv1a64(text)) >> 11) * 0x1.0p-53;
}

PassResult run_prepare_pass(const PassSpec& spec, const Tokenizer& tok,
                            const std::vector<std::pair<int64_t, InputFile>>& files,
                            const std::function<void(int64_t)>& progress) {
  PassResult r;
  try {
    pass_over(spec, tok, files, progress, r);
  } catch (...) {  // a failed pass keeps no shard, finished or not
    std::error_code ec;
    for (const auto* list : {&r.train_shards, &r.val_shards})
      for (const auto& p : *list) fs::remove(p, ec);
    throw;
  }
  return r;
}

}  // namespace headroom::data
