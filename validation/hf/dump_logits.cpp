// dump_logits: loads a Headroom checkpoint (file or run directory) on the CPU backend and writes the
// logits of a fixed batch of token ids, for validation/hf/compare_hf.py to set against the PyTorch
// reference run on the Hugging Face directory the checkpoint was imported from.
//
// usage: dump_logits CHECKPOINT_OR_RUN_DIR OUT.h5 [B T SEED]
//   OUT.h5: /inputs int32 [B, T] (ids drawn uniformly from the vocabulary by SplitMix64(SEED)),
//           /logits float32 [B, T, vocab]
#include "config/ini_text.h"
#include "config/keys.h"
#include "config/load.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/h5.h"
#include "model/activations.h"
#include "model/forward.h"
#include "parallel/grid.h"
#include "util/error.h"

#include <iostream>
#include <string>
#include <vector>

using namespace headroom;

int main(int argc, char** argv) {
  try {
    if (argc != 3 && argc != 6) fail("usage: dump_logits CHECKPOINT_OR_RUN_DIR OUT.h5 [B T SEED]");
    parallel::init_mpi(&argc, &argv);
    const int64_t B = argc == 6 ? std::stoll(argv[3]) : 2, T = argc == 6 ? std::stoll(argv[4]) : 24;
    uint64_t state = argc == 6 ? std::stoull(argv[5]) : 1;
    const auto ckpt = io::resolve_checkpoint(argv[1]);
    const io::CheckpointInfo info = io::read_checkpoint_info(ckpt);
    const config::Config cfg =
        config::make_config(config::kModel | config::kTrain | config::kData | config::kParallel, {},
                            {{"checkpoint", config::ini_without(info.config_ini, {"train.device"})}});
    auto m = model::make_model<float>(cfg.model, kernels::cpu_ops(), {}, {.random_weights = false, .gradients = false});
    io::load_checkpoint_tensors(ckpt, m, nullptr);
    const int64_t V = cfg.model.vocab_size;
    std::vector<int32_t> ids(static_cast<size_t>(B * T)), targets(ids.size(), 0);
    for (auto& id : ids) {  // SplitMix64
      uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      id = static_cast<int32_t>((z ^ (z >> 31)) % static_cast<uint64_t>(V));
    }
    model::Activations<float> a = model::make_activations(m, B, T);
    std::vector<float> logits(static_cast<size_t>(B * T * V));
    model::forward_loss<float>(m, a, ids.data(), targets.data(), logits.data());
    io::H5File f = io::h5_create_file(argv[2]);
    const auto h = [](int64_t v) { return static_cast<hsize_t>(v); };
    io::h5_write(f, "/inputs", ids.data(), {h(B), h(T)});
    io::h5_write(f, "/logits", logits.data(), {h(B), h(T), h(V)});
    f.close();
    std::cout << "dump_logits: " << ckpt.string() << " -> " << argv[2] << " [" << B << ", " << T << ", " << V << "]\n";
  } catch (const std::exception& e) {
    std::cerr << "dump_logits: error: " << e.what() << "\n";
    return 2;
  }
  parallel::finalize_mpi();
  return 0;
}
