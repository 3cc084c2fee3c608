// prepare: text files → tokenizer → a dataset of token shards for the training stages, streaming
// in bounded memory; `mpirun -np N prepare ...` splits the input files over N ranks.
#include "app/cli.h"
#include "app/mpi_main.h"
#include "config/load.h"
#include "data/documents.h"
#include "data/prepare.h"
#include "io/run_dir.h"
#include "parallel/agree.h"
#include "parallel/mpi_comm.h"
#include "util/clock.h"
#include "util/error.h"

#include <cstdlib>
#include <iostream>
#include <memory>

using namespace headroom;

namespace {

config::Schema prepare_schema(data::PrepareOptions& o) {
  config::Schema s;
  config::section(s, "", "Prepare options (also accepted as top-level keys in a --config file)");
  config::add_list_key(s, "", "input", o.inputs,
                       "text input: a file (.jsonl = one {\"text\": ...} document per line; any other "
                       "file = one document; a .gz or .zst suffix is decompressed on the fly) or a "
                       "directory read recursively; repeatable");
  config::add_key(s, "", "output", o.output, std::string("data/shards"),
                  "output directory: the dataset (dataset.json, the train and val shards it names, "
                  "tokenizer.txt, or a Hugging Face tokenizer's tokenizer.json and tokenizer_config.json)");
  config::add_key(s, "", "tokenizer", o.tokenizer, std::string("byte"),
                  "byte (256 bytes + BOS/EOS/PAD), bpe (train a byte-level BPE on a sample of the training "
                  "split, --bpe-sample-mib), the path of a tokenizer file to reuse, or a Hugging Face model directory "
                  "(tokenizer.json + tokenizer_config.json) or tokenizer.json: byte-level BPE as in "
                  "Llama 3 / Qwen 3 / OLMo 2, encoded exactly as Hugging Face tokenizers does; "
                  "BOS/EOS/PAD are the ones tokenizer_config.json names (no BOS when bos_token is "
                  "null); other kinds (SentencePiece/Metaspace, WordPiece, byte_fallback, ...) are refused");
  config::add_key(s, "", "vocab-size", o.vocab_size, 8192L, "BPE vocabulary size",
                  config::in_range<long>(260, 1L << 20));
  config::add_key(s, "", "bpe-split-digits", o.split_digits, false,
                  "bpe: never merge digits, so every digit is one token (numbers are read and copied "
                  "digit by digit, as RULER's 7-digit needles want; tokenizer files stay the same format)");
  config::add_key(s, "", "bpe-sample-mib", o.bpe_sample_mib, 256L,
                  "bpe: MiB of training-split text the BPE is trained on: the documents of lowest seeded "
                  "hash (the whole split when it is smaller); read by rank 0 in a first pass over the inputs",
                  config::in_range<long>(1, 1L << 20));
  config::add_key(s, "", "val-fraction", o.val_fraction, 0.01, "share of whole documents held out for the val split",
                  config::in_range(0.0, 0.5));
  config::add_key(s, "", "seed", o.seed, 1UL, "seed of the train/val split (and of the BPE sample)");
  config::add_key(s, "", "shard-mib", o.shard_mib, 2048L,
                  "largest shard in MiB of stored tokens: a rank closes a shard and opens the next when it "
                  "reaches this size (a split held in one shard is named train.h5 / val.h5)",
                  config::in_range<long>(1, 1L << 30));
  config::add_key(s, "", "batch-mib", o.batch_mib, 64L,
                  "MiB of text each rank reads, then encodes in parallel, at a time; with "
                  "--max-document-mib it bounds the memory (see the memory budget above)",
                  config::in_range<long>(1, 1L << 20));
  config::add_key(s, "", "max-document-mib", o.max_document_mib, 64L,
                  "longest document (and JSON line) in MiB; a longer one is refused, naming the file",
                  config::in_range<long>(1, 1L << 20));
  return s;
}

constexpr const char* kUsage =
    "usage: prepare --input PATH... --output DIR [--tokenizer byte|bpe|FILE|HF_DIR|tokenizer.json] "
    "[--vocab-size N]\n"
    "       mpirun -np N prepare ...   (the input files are split over the ranks by size; a large\n"
    "                                   uncompressed .jsonl file is shared in pieces)\n\n"
    "Turns text into a dataset of HDF5 token shards in DIR: dataset.json names the shards of the\n"
    "train and val splits (a split of one shard: DIR/train.h5, DIR/val.h5) and the tokenizer\n"
    "(h5py-readable; see docs/formats.md). Input is streamed: documents are read, encoded and\n"
    "written a batch at a time, each rank writing its own shards of at most --shard-mib.\n\n"
    "Memory budget per rank, whatever the corpus size, above the program itself (its code and libraries,\n"
    "resident before any input is read: about 60 MiB in a CPU build, 170 MiB with the CUDA libraries; the\n"
    "log gives both): 32 MiB + 3 x --batch-mib (the batch's text and its token ids) + 2 x --max-document-mib\n"
    "+ 20 MiB per thread (encoder cache) + the tokenizer (Llama 3's: about 100 MiB): 392 MiB at the defaults\n"
    "with 2 threads and a small tokenizer (checked on 96 MB of text by the mpi test prepare_mpi).\n"
    "--tokenizer bpe adds, on rank 0 while it trains, a few times --bpe-sample-mib. A run that stops leaves\n"
    "its shards in DIR/partial/; a rerun starts over.";

// MPI only under a launcher: a lone prepare runs without it, so it works where MPI cannot start (a
// login node, a process under a small file-size limit: Open MPI's singleton start needs files).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

int run_stage(int argc, char** argv, bool mpi) {
  app::CommonFlags flags;
  data::PrepareOptions opt;
  const auto common = app::common_options(flags);
  const config::Schema schema = prepare_schema(opt);
  const auto parsed = config::parse_config(argc, argv, common, schema);
  std::unique_ptr<parallel::MpiComm> world_comm;
  if (mpi) world_comm = std::make_unique<parallel::MpiComm>(MPI_COMM_WORLD);
  const int rank = mpi ? world_comm->rank() : 0, size = mpi ? world_comm->size() : 1;
  if (app::wants_info(flags)) {
    if (rank == 0) std::cout << app::info_text(flags, kUsage, common, schema);
    return 0;
  }
  config::check_keys(schema, parsed);
  const std::string ini = config::to_ini(schema);
  if (flags.print_config) {
    if (rank == 0) std::cout << ini;
    return 0;
  }
  data::list_input_files(opt.inputs);  // a missing input is refused before anything is written
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<io::RunDir> run;
  const auto claim = [&] {
    if (rank != 0) return;
    run = std::make_unique<io::RunDir>(
        io::open_run_dir(opt.output, flags.force, io::claim_run_dir(opt.output, io::RunKind::kData, "prepare")));
    io::write_config(*run, ini);
  };
  if (mpi)
    parallel::agree(*world_comm, claim);  // root's claim, agreed: a refusal stops every rank with exit 2
  else
    claim();
  const auto log = [&](const std::string& l) {
    if (run) io::log_line(*run, l);
  };
  // The root's own failure also goes to the dataset's log.txt (another rank's, to stderr only: the
  // root's log has one writer).
  const auto sum = [&] {
    try {
      return data::run_prepare(opt, ini, log, world_comm.get());
    } catch (const std::exception& e) {
      if (run) io::log_fatal(*run, e.what());
      throw;
    }
  }();
  if (!run) return 0;
  io::mark_finished(*run, cat("prepare ", sum.tokenizer_id, " train_tokens=", sum.train_tokens,
                              " val_tokens=", sum.val_tokens, " shards=", sum.train_shards + sum.val_shards));
  io::log_line(
      *run,
      cat("done in ", format_duration(seconds_since(t0)), " on ", size, " rank(s): ", sum.train_docs, " train docs (",
          sum.train_tokens, " tokens), ", sum.val_docs, " val docs (", sum.val_tokens, " tokens), ",
          static_cast<double>(sum.bytes) / std::max<int64_t>(1, sum.train_tokens + sum.val_tokens), " bytes/token"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!launched_by_mpi()) return app::guarded_main("prepare", [&] { return run_stage(argc, argv, false); });
  return app::mpi_main("prepare", argc, argv, [&] { return run_stage(argc, argv, true); });
}
