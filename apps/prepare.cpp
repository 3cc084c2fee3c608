// prepare: text files → tokenizer → token shards (train.h5, val.h5) for the training stages.
#include "app/cli.h"
#include "config/load.h"
#include "data/prepare.h"
#include "io/run_dir.h"
#include "util/clock.h"
#include "util/error.h"

#include <iostream>

using namespace headroom;

namespace {

config::Schema prepare_schema(data::PrepareOptions& o) {
  config::Schema s;
  config::section(s, "", "Prepare options (also accepted as top-level keys in a --config file)");
  config::add_list_key(s, "", "input", o.inputs,
                       "text input: a file (.jsonl = one {\"text\": ...} document per line; any "
                       "other file = one document) or a directory read recursively; repeatable");
  config::add_key(s, "", "output", o.output, std::string("data/shards"),
                  "output directory for train.h5, val.h5 and tokenizer.txt (a Hugging Face "
                  "tokenizer: tokenizer.json and tokenizer_config.json)");
  config::add_key(s, "", "tokenizer", o.tokenizer, std::string("byte"),
                  "byte (256 bytes + BOS/EOS/PAD), bpe (train a byte-level BPE on the training "
                  "split), the path of a tokenizer file to reuse, or a Hugging Face model directory "
                  "(tokenizer.json + tokenizer_config.json) or tokenizer.json: byte-level BPE as in "
                  "Llama 3 / Qwen 3 / OLMo 2, encoded exactly as Hugging Face tokenizers does; "
                  "BOS/EOS/PAD are the ones tokenizer_config.json names (no BOS when bos_token is "
                  "null); other kinds (SentencePiece/Metaspace, WordPiece, byte_fallback, ...) are refused");
  config::add_key(s, "", "vocab-size", o.vocab_size, 8192L, "BPE vocabulary size",
                  config::in_range<long>(260, 1L << 20));
  config::add_key(s, "", "bpe-split-digits", o.split_digits, false,
                  "bpe: never merge digits, so every digit is one token (numbers are read and copied "
                  "digit by digit, as RULER's 7-digit needles want; tokenizer files stay the same format)");
  config::add_key(s, "", "val-fraction", o.val_fraction, 0.01, "share of whole documents held out for val.h5",
                  config::in_range(0.0, 0.5));
  config::add_key(s, "", "seed", o.seed, 1UL, "seed of the train/val split");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  return app::guarded_main("prepare", [&] {
    app::CommonFlags flags;
    data::PrepareOptions opt;
    const auto common = app::common_options(flags);
    const config::Schema schema = prepare_schema(opt);
    const auto parsed = config::parse_config(argc, argv, common, schema);
    if (app::wants_info(flags)) {
      std::cout << app::info_text(
          flags,
          "usage: prepare --input PATH... --output DIR [--tokenizer byte|bpe|FILE|HF_DIR|tokenizer.json] "
          "[--vocab-size N]\n\nTurns text into HDF5 token shards DIR/train.h5 and DIR/val.h5 "
          "(h5py-readable; see docs/formats.md) and the tokenizer file DIR/tokenizer.txt.",
          common, schema);
      return 0;
    }
    config::check_keys(schema, parsed);
    const std::string ini = config::to_ini(schema);
    if (flags.print_config) {
      std::cout << ini;
      return 0;
    }
    if (opt.inputs.empty()) fail("no input given: pass --input FILE_OR_DIR (repeatable)");
    const auto t0 = std::chrono::steady_clock::now();
    const data::PrepareInput input = data::read_prepare_input(opt);  // refuses before anything is written
    io::RunDir run =
        io::open_run_dir(opt.output, flags.force, io::claim_run_dir(opt.output, io::RunKind::kData, "prepare"));
    io::write_config(run, ini);
    const auto sum = data::run_prepare(opt, input, ini, [&](const std::string& l) { io::log_line(run, l); });
    io::mark_finished(
        run, cat("prepare ", sum.tokenizer_id, " train_tokens=", sum.train_tokens, " val_tokens=", sum.val_tokens));
    io::log_line(run, cat("done in ", format_duration(seconds_since(t0)), ": ", sum.train_docs, " train docs (",
                          sum.train_tokens, " tokens), ", sum.val_docs, " val docs (", sum.val_tokens, " tokens), ",
                          static_cast<double>(sum.bytes) / std::max<int64_t>(1, sum.train_tokens + sum.val_tokens),
                          " bytes/token"));
    return 0;
  });
}
