// make_retrieval_checkpoint: writes the hand-built retrieval model of retrieval_circuit.h as a
// Headroom checkpoint (stage "constructed", no optimizer state) in the tokenizer of a shard, so
// evaluate and analyze can be checked on a model that retrieves by construction.
//
// usage: make_retrieval_checkpoint --shard TRAIN.h5 --run-dir DIR [--seq-len N] [--seed N]
//   DIR/checkpoints/step_00000000.h5 and DIR/checkpoints/latest; `evaluate --init DIR`.
//   --seq-len is the length recorded as trained (evaluate's addressable length; default 16384):
//   the circuit itself has no length limit (its full-attention layer is NoPE).
#include "config/keys.h"
#include "constructed/retrieval_circuit.h"
#include "data/shard.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/run_dir.h"
#include "model/model.h"
#include "parallel/grid.h"
#include "util/error.h"

#include <iostream>
#include <string>
#include <vector>

using namespace headroom;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string shard, run_dir;
  long seq_len = 16384;
  unsigned long seed = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail("make_retrieval_checkpoint: ", a, " needs a value");
      return argv[++i];
    };
    if (a == "--shard")
      o.shard = value();
    else if (a == "--run-dir")
      o.run_dir = value();
    else if (a == "--seq-len")
      o.seq_len = std::stol(value());
    else if (a == "--seed")
      o.seed = std::stoul(value());
    else if (a == "--help") {
      std::cout << "usage: make_retrieval_checkpoint --shard TRAIN.h5 --run-dir DIR [--seq-len N] [--seed N]\n"
                   "  --shard    a token shard; its tokenizer becomes the checkpoint's\n"
                   "  --run-dir  output run directory (must not hold a checkpoint yet)\n"
                   "  --seq-len  length recorded as trained, i.e. evaluate's addressable length (16384)\n"
                   "  --seed     seed of the random token vectors (1)\n";
      std::exit(0);
    } else
      fail("make_retrieval_checkpoint: unknown argument '", a, "' (see --help)");
  }
  if (o.shard.empty() || o.run_dir.empty()) fail("make_retrieval_checkpoint: --shard and --run-dir are required");
  return o;
}

void run(const Options& o) {
  const data::ShardReader shard = data::open_shard(o.shard);
  const data::Tokenizer tok = data::read_shard_tokenizer(shard);
  auto keys = constructed::circuit_model_keys(data::vocab_size(tok));
  keys.push_back({"train.seq_len", std::to_string(o.seq_len)});
  std::string ini;  // stored as a trained checkpoint stores its configuration
  const config::Config cfg =
      config::make_config(config::kModel | config::kTrain | config::kData | config::kParallel, keys, {}, &ini);
  const fs::path ckpt = io::checkpoint_path(o.run_dir, 0);
  if (fs::exists(ckpt)) fail(ckpt.string(), " exists: a checkpoint is never overwritten");

  parallel::Grid grid = parallel::make_grid(1, 1);
  auto model = model::make_model<float>(cfg.model, kernels::cpu_ops());
  const auto weights = constructed::circuit_weights(cfg.model, tok, o.seed);
  for (size_t i = 0; i < model.specs.size(); ++i) {
    const auto it = weights.find(model.specs[i].name);
    if (it == weights.end() || static_cast<int64_t>(it->second.size()) != model.specs[i].numel())
      fail("constructed circuit: no weights of the right size for ", model.specs[i].name);
    model.ops->copy_from_host(model.params.get() + model.offsets[i], it->second.data(),
                              it->second.size() * sizeof(float));
  }
  model::weights_changed(model);
  io::CheckpointInfo info;
  info.stage = "constructed";
  info.seed = o.seed;
  info.config_ini = ini;
  info.lineage = "[]";
  info.tokenizer_id = data::tokenizer_id(tok);
  info.merges = tok.merges;
  io::save_checkpoint(ckpt, grid, model, nullptr, info);
  io::write_latest(o.run_dir, ckpt);
  std::cout << "make_retrieval_checkpoint: wrote " << ckpt.string() << " (tokenizer " << info.tokenizer_id << ", vocab "
            << cfg.model.vocab_size << ", d_model " << cfg.model.d_model << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    parallel::init_mpi(&argc, &argv);
    run(parse(argc, argv));
    parallel::finalize_mpi();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
