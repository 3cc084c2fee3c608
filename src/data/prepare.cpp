#include "data/prepare.h"

#include "data/bpe_sample.h"
#include "data/bpe_train.h"
#include "data/dataset.h"
#include "data/documents.h"
#include "data/hf_tokenizer_files.h"
#include "data/prepare_pass.h"
#include "data/tokenizer_file.h"
#include "io/h5.h"
#include "parallel/agree.h"
#include "parallel/mpi_comm.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/peak_memory.h"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

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
  const std::string what =
      cat(" of the ", asked, " --vocab-size ", opt.vocab_size, " asks for, from the BPE sample of the train split (",
          train.size(), " documents, ", bytes, " bytes)");
  if (tok.merges.empty() && asked > 0)
    fail("--tokenizer bpe learned no merge", what,
         ": no byte pair occurs twice in it; give more text, or --tokenizer byte; no shard was written");
  if (tok.merges.size() < asked)
    log(cat("warning: --tokenizer bpe learned ", tok.merges.size(), " merges", what, ": the vocabulary stops there"));
}

constexpr int64_t kMiB = int64_t{1} << 20;

struct Ranks {
  parallel::Comm* comm;
  int rank() const { return comm ? comm->rank() : 0; }
  int size() const { return comm ? comm->size() : 1; }
  void barrier() const {
    if (comm) comm->barrier();
  }
  // A barrier that sleeps: a rank that finishes its files early (or waits for rank 0's BPE) would
  // otherwise spin in MPI and take a core from a rank still encoding wherever ranks share cores
  // (measured on a loaded 2-core VM: 2 ranks 0.7x one rank spinning, 1.5-2.1x sleeping).
  void idle_barrier() const {
    if (!comm) return;
    MPI_Request request;
    parallel::mpi_check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
    for (int done = 0; !done; std::this_thread::sleep_for(std::chrono::milliseconds(20)))
      parallel::mpi_check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
  }
  void sum(int64_t* x, int64_t n) const {
    if (comm) comm->allreduce_sum(x, n);
  }
  void max(int64_t* x, int64_t n) const {
    if (comm) comm->allreduce_max(x, n);
  }
};

// Several ranks share a large JSON-lines file in pieces: about four per rank of the whole input, at
// least 16 MiB, so that a few large files (or a single one) still keep every rank busy.
std::vector<InputFile> pieces_for(const std::vector<InputFile>& files, int ranks) {
  if (ranks == 1) return files;
  int64_t total = 0;
  for (const auto& f : files) total += f.bytes;
  return split_into_pieces(files, std::max<int64_t>(int64_t{16} << 20, total / (4 * int64_t{ranks}) + 1));
}

// Greedy by size, largest first (each file to the rank with the fewest bytes so far, ties to the
// lowest rank): a pure function of the file list, so every rank computes the same assignment.
std::vector<std::pair<int64_t, InputFile>> files_of_rank(const std::vector<InputFile>& files, int size, int rank) {
  std::vector<int64_t> order(files.size());
  for (size_t i = 0; i < files.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return files[static_cast<size_t>(a)].bytes > files[static_cast<size_t>(b)].bytes;
  });
  std::vector<int64_t> load(static_cast<size_t>(size), 0);
  std::vector<int64_t> mine;
  for (const int64_t i : order) {
    const auto r = std::min_element(load.begin(), load.end()) - load.begin();
    load[static_cast<size_t>(r)] += files[static_cast<size_t>(i)].bytes + 1;
    if (r == rank) mine.push_back(i);
  }
  std::sort(mine.begin(), mine.end());
  std::vector<std::pair<int64_t, InputFile>> out;
  for (const int64_t i : mine) out.emplace_back(i, files[static_cast<size_t>(i)]);
  return out;
}

Tokenizer trained_bpe(const PrepareOptions& opt, const std::vector<InputFile>& files,
                      const std::function<void(const std::string&)>& log) {
  const BpeSample sample = sample_training_documents(
      files, {opt.val_fraction, opt.seed, opt.bpe_sample_mib * kMiB, opt.max_document_mib * kMiB});
  log(cat("training byte-level BPE to vocab ", opt.vocab_size, " on a sample of ", sample.texts.size(), " of ",
          sample.docs_seen, " documents (", sample.bytes_kept >> 20, " of ", sample.bytes_seen >> 20,
          " MiB; --bpe-sample-mib ", opt.bpe_sample_mib, ")"));
  std::vector<std::string_view> views(sample.texts.begin(), sample.texts.end());
  const auto t0 = std::chrono::steady_clock::now();
  int last_reported = -1;
  Tokenizer tok = train_bpe(
      views, static_cast<int32_t>(opt.vocab_size),
      [&](int32_t done, int32_t total) {
        const int pct = total > 0 ? static_cast<int>(100.0 * done / total) : 100;
        if (pct / 10 == last_reported / 10 && done != total) return;
        last_reported = pct;
        const double el = seconds_since(t0);
        log(cat("  bpe merges ", done, "/", total, " (", pct, "%), elapsed ", format_duration(el), ", eta ",
                format_duration(done > 0 ? el * (total - done) / done : 0)));
      },
      opt.split_digits);
  check_learned_merges(tok, opt, views, log);
  return tok;
}

// Rank 0 makes the tokenizer and saves it into the output; the other ranks read what it saved.
Tokenizer make_tokenizer(const PrepareOptions& opt, const std::vector<InputFile>& files, const Ranks& ranks,
                         const std::function<void(const std::string&)>& log) {
  const fs::path out(opt.output);
  if (opt.tokenizer == "byte") {
    if (ranks.rank() == 0) save_tokenizer(Tokenizer{}, out / "tokenizer.txt");
    return Tokenizer{};
  }
  if (opt.tokenizer != "bpe") {
    if (ranks.rank() == 0) log(cat("loading tokenizer ", opt.tokenizer));
    Tokenizer tok = load_any_tokenizer(opt.tokenizer);  // a Headroom file, an HF directory or tokenizer.json
    if (ranks.rank() == 0) {
      if (tok.hf)
        save_hf_tokenizer_dir(tok, out);  // the model directory's two files, so out is reusable as one
      else
        save_tokenizer(tok, out / "tokenizer.txt");
    }
    return tok;
  }
  if (ranks.rank() == 0) save_tokenizer(trained_bpe(opt, files, log), out / "tokenizer.txt");
  ranks.idle_barrier();
  return load_any_tokenizer((out / "tokenizer.txt").string());
}

// A run that did not finish left shards in partial/ (and a --force run replaces a finished one):
// neither may be mistaken for this run's.
void clear_previous(const fs::path& out) {
  std::error_code ec;
  fs::remove_all(out / "partial", ec);
  fs::remove(out / kDatasetIndex, ec);
  for (const auto& e : fs::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".h5" && (name.rfind("train", 0) == 0 || name.rfind("val", 0) == 0))
      fs::remove(e.path(), ec);
  }
}

struct Totals {
  int64_t docs[2] = {0, 0}, tokens[2] = {0, 0}, bytes[2] = {0, 0};
};
Totals totals(const PassResult& r, const Ranks& ranks) {
  int64_t v[6] = {r.docs[0], r.docs[1], r.tokens[0], r.tokens[1], r.bytes[0], r.bytes[1]};
  ranks.sum(v, 6);
  return {{v[0], v[1]}, {v[2], v[3]}, {v[4], v[5]}};
}

// The document of lowest (highest) draw over all ranks; ties to the first in input order.
DocId global_extreme(const Extreme& e, bool lowest, const Ranks& ranks) {
  const auto key = static_cast<int64_t>(std::ldexp(e.draw, 53));
  int64_t best = lowest ? -key : key;
  ranks.max(&best, 1);
  const bool mine = (lowest ? -key : key) == best && e.id.file >= 0;
  int64_t id = mine ? -((e.id.file << 32) | e.id.doc) : std::numeric_limits<int64_t>::min();
  ranks.max(&id, 1);
  return {(-id) >> 32, (-id) & 0xffffffffll};
}

std::string input_list(const PrepareOptions& opt) {
  std::string s;
  for (const auto& i : opt.inputs) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// The documents whose split the draw does not decide (a split left empty), or a refusal.
std::map<DocId, bool> overrides_for(const PrepareOptions& opt, const Totals& t, const PassResult& r,
                                    const Ranks& ranks) {
  const int64_t n = t.docs[0] + t.docs[1];
  std::map<DocId, bool> o;
  if (t.docs[0] > 0 && t.docs[1] > 0) return o;
  if (n < 2)
    throw parallel::CollectiveError(
        cat("the inputs (", input_list(opt), ") hold ", n, " document (", t.bytes[0] + t.bytes[1], " bytes), so the ",
            t.docs[0] == 0 ? "train" : "val",
            " split would hold no tokens: prepare splits whole documents into train and val and needs at least 2 "
            "documents (a .jsonl file holds one per line, any other file is one); no shard was kept"));
  if (opt.val_fraction <= 0)
    throw parallel::CollectiveError(cat("--val-fraction = ", opt.val_fraction, " puts 0 of the ", n, " documents of (",
                                        input_list(opt),
                                        ") in the val split, so the val split would hold no tokens; use a fraction "
                                        "above 0 (and below 1); no shard was kept"));
  if (t.docs[1] == 0) o[global_extreme(r.lowest, true, ranks)] = true;
  if (t.docs[0] == 0) o[global_extreme(r.highest, false, ranks)] = false;
  return o;
}

void remove_shards(const PassResult& r) {
  for (const auto* list : {&r.train_shards, &r.val_shards})
    for (const auto& p : *list) {
      std::error_code ec;
      fs::remove(p, ec);
    }
}

// Every rank's shard list, in rank order (small: one line per shard).
std::vector<ShardEntry> gather_entries(const std::vector<fs::path>& mine, const Ranks& ranks) {
  std::string text;
  for (const auto& p : mine) {
    const ShardReader s = open_shard(p);
    text += cat(p.filename().string(), " ", s.n_tokens, " ", s.n_docs, " ",
                io::h5_attr_int(s.parts[0].file, "/", "n_bytes"), "\n");
  }
  std::vector<int64_t> lengths(static_cast<size_t>(ranks.size()), 0);
  lengths[static_cast<size_t>(ranks.rank())] = static_cast<int64_t>(text.size());
  ranks.sum(lengths.data(), static_cast<int64_t>(lengths.size()));
  std::string all;
  for (int r = 0; r < ranks.size(); ++r) {
    std::string part =
        r == ranks.rank() ? text : std::string(static_cast<size_t>(lengths[static_cast<size_t>(r)]), ' ');
    if (ranks.comm && !part.empty()) ranks.comm->broadcast(part.data(), part.size(), r);
    all += part;
  }
  std::vector<ShardEntry> out;
  std::istringstream lines(all);
  ShardEntry e;
  while (lines >> e.file >> e.n_tokens >> e.n_docs >> e.n_bytes) out.push_back(e);
  return out;
}

// Rank 0: the shards move from partial/ into the dataset directory (a split of one shard takes the
// name <split>.h5), then the index is written; the dataset is complete when the index exists.
void publish(const fs::path& out, std::vector<ShardEntry>& train, std::vector<ShardEntry>& val, const Tokenizer& tok) {
  for (auto* entries : {&train, &val}) {
    const std::string split = entries == &train ? "train" : "val";
    for (auto& e : *entries) {
      const std::string final_name = entries->size() == 1 ? split + ".h5" : e.file;
      std::error_code ec;
      fs::rename(out / "partial" / e.file, out / final_name, ec);
      if (ec)
        fail("cannot move ", (out / "partial" / e.file).string(), " to ", (out / final_name).string(), " (",
             ec.message(), ")");
      e.file = final_name;
    }
  }
  DatasetIndex index{tokenizer_id(tok), tok.hf ? "tokenizer.json" : "tokenizer.txt", vocab_size(tok), train, val};
  write_dataset_index(out, index);
  std::error_code ec;
  fs::remove_all(out / "partial", ec);
}

// How long the ranks took over their own files, for a log line: a slowest rank well above the
// fastest is an uneven split of the inputs (or a slower core), which a rank count cannot fix.
std::string rank_spread(double seconds, const Ranks& ranks) {
  if (ranks.size() == 1) return "";
  std::vector<int64_t> ms(static_cast<size_t>(ranks.size()), 0);
  ms[static_cast<size_t>(ranks.rank())] = static_cast<int64_t>(seconds * 1000);
  ranks.sum(ms.data(), static_cast<int64_t>(ms.size()));
  const auto [lo, hi] = std::minmax_element(ms.begin(), ms.end());
  return cat("; a rank's own files took ", format_duration(static_cast<double>(*lo) / 1000), " to ",
             format_duration(static_cast<double>(*hi) / 1000), " (slowest: rank ", hi - ms.begin(), ")");
}

// This rank's peak resident set, in MiB.
int64_t peak_rss_mib() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  return static_cast<int64_t>(u.ru_maxrss) / 1024;  // ru_maxrss is in KiB on Linux
}

}  // namespace

std::vector<bool> split_validation(const std::vector<std::string>& texts, double val_fraction, unsigned long seed) {
  std::vector<bool> is_val(texts.size(), false);
  std::vector<double> u(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    u[i] = split_draw(texts[i], seed);
    is_val[i] = u[i] < val_fraction;
  }
  const auto n_val = std::count(is_val.begin(), is_val.end(), true);
  if (texts.size() >= 2 && val_fraction > 0 && n_val == 0)
    is_val[static_cast<size_t>(std::min_element(u.begin(), u.end()) - u.begin())] = true;
  if (texts.size() >= 2 && n_val == static_cast<std::ptrdiff_t>(texts.size()))
    is_val[static_cast<size_t>(std::max_element(u.begin(), u.end()) - u.begin())] = false;
  return is_val;
}

PrepareSummary run_prepare(const PrepareOptions& opt, const std::string& config_ini,
                           const std::function<void(const std::string&)>& log, parallel::Comm* comm) {
  const Ranks ranks{comm};
  const bool root = ranks.rank() == 0;
  const int64_t program_mib = resident_bytes() >> 20;  // before any input: what the budget sits on
  const auto say = [&](const std::string& line) {
    if (root) log(line);
  };
  const std::vector<InputFile> files = list_input_files(opt.inputs);
  const fs::path out(opt.output);
  if (root) {
    fs::create_directories(out);
    clear_previous(out);
    fs::create_directories(out / "partial");
  }
  ranks.barrier();
  PrepareSummary sum;
  auto t0 = std::chrono::steady_clock::now();
  const Tokenizer tok = make_tokenizer(opt, files, ranks, say);
  sum.tokenizer_seconds = seconds_since(t0);
  sum.tokenizer_id = tokenizer_id(tok);
  say(cat("tokenizer ", sum.tokenizer_id, " (vocab ", vocab_size(tok), ")"));

  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%05d-", ranks.rank());
  PassSpec spec{out / "partial",
                prefix,
                opt.val_fraction,
                opt.seed,
                opt.batch_mib * kMiB,
                opt.shard_mib * kMiB,
                opt.max_document_mib * kMiB,
                {},
                config_ini};
  const std::vector<InputFile> pieces = pieces_for(files, ranks.size());
  const auto mine = files_of_rank(pieces, ranks.size(), ranks.rank());
  int64_t my_bytes = 0;
  for (const auto& f : mine) my_bytes += f.second.bytes;
  say(cat("reading ", files.size(), " input files",
          pieces.size() > files.size() ? cat(" (", pieces.size(), " with large JSON-lines files in pieces)") : "",
          " on ", ranks.size(), " rank(s) × ", omp_get_max_threads(), " thread(s); rank 0 has ", mine.size(),
          " of them, ", my_bytes >> 20, " MiB"));
  t0 = std::chrono::steady_clock::now();
  auto last = t0;
  const auto progress = [&](int64_t read) {
    if (seconds_since(last) < 5.0) return;
    last = std::chrono::steady_clock::now();
    const double el = seconds_since(t0);
    say(cat("  rank 0: ", read >> 20, " MiB of text encoded in ", format_duration(el), " (",
            static_cast<double>(read) / 1e6 / el, " MB/s)"));
  };
  PassResult r = run_prepare_pass(spec, tok, mine, progress);
  const double own_seconds = seconds_since(t0);
  ranks.idle_barrier();  // before any blocking collective: a rank done early must not spin
  const std::string spread = rank_spread(own_seconds, ranks);
  Totals t = totals(r, ranks);
  try {
    spec.overrides = overrides_for(opt, t, r, ranks);
  } catch (...) {
    remove_shards(r);
    std::error_code ec;
    if (root) fs::remove_all(out / "partial", ec);
    throw;
  }
  if (!spec.overrides.empty()) {
    say("a split came out empty: the document of lowest (highest) draw moves to val (train); encoding again");
    remove_shards(r);
    r = run_prepare_pass(spec, tok, mine, {});
    ranks.idle_barrier();
    t = totals(r, ranks);
  }
  sum.encode_seconds = seconds_since(t0);
  std::vector<ShardEntry> train = gather_entries(r.train_shards, ranks);
  std::vector<ShardEntry> val = gather_entries(r.val_shards, ranks);
  if (root) publish(out, train, val, tok);
  ranks.barrier();
  sum.train_docs = t.docs[0], sum.val_docs = t.docs[1];
  sum.train_tokens = t.tokens[0], sum.val_tokens = t.tokens[1];
  sum.bytes = t.bytes[0] + t.bytes[1];
  sum.train_shards = static_cast<int64_t>(train.size()), sum.val_shards = static_cast<int64_t>(val.size());
  int64_t rss[2] = {peak_rss_mib(), peak_rss_mib() - program_mib};
  ranks.max(rss, 2);
  sum.peak_rss_mib = rss[0], sum.work_rss_mib = rss[1];
  say(cat("wrote ", sum.train_shards, " train shard(s) (", sum.train_docs, " documents, ", sum.train_tokens,
          " tokens) and ", sum.val_shards, " val shard(s) (", sum.val_docs, " documents, ", sum.val_tokens,
          " tokens) in ", format_duration(sum.encode_seconds), ": ",
          static_cast<double>(sum.bytes) / 1e6 / std::max(1e-9, sum.encode_seconds), " MB/s of text on ", ranks.size(),
          " rank(s) x ", omp_get_max_threads(), " thread(s); peak RSS of a rank ", sum.peak_rss_mib, " MiB, ",
          sum.work_rss_mib, " MiB above the program's own at start (the budget's share)", spread));
  return sum;
}

}  // namespace headroom::data
