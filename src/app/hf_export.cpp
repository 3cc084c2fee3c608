#include "app/hf_export.h"

#include "app/cli.h"
#include "app/hf_config.h"
#include "config/ini_text.h"
#include "config/keys.h"
#include "config/load.h"
#include "data/hf_tokenizer_files.h"
#include "data/tokenizer.h"
#include "eval/checkpoint_facts.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <mpi.h>

#include <iostream>
#include <optional>

namespace headroom::app {
namespace fs = std::filesystem;
namespace po = config::po;

namespace {

constexpr const char* kExportUsage =
    "usage: export_hf --init CHECKPOINT_OR_RUN_DIR --out HF_DIR [--dtype f32|bf16] [--force]\n\n"
    "Writes a Hugging Face model directory from a Headroom checkpoint: config.json for the family the "
    "model can be expressed as (qk_norm none + norm_order pre: LlamaForCausalLM; head + pre: "
    "Qwen3ForCausalLM; layer + post: Olmo2ForCausalLM, or Olmo3ForCausalLM when layer_pattern has "
    "sliding layers), model.safetensors (F32 by default: import_hf of the result gives back every tensor "
    "and every [model] key bit for bit; bf16 rounds to nearest even), and the checkpoint's tokenizer. "
    "max_position_embeddings is the longest train.seq_len of the checkpoint and its lineage. Refused, "
    "naming the keys and values: head_dim_qk != head_dim_v, partial RoPE or NoPE, sliding layers "
    "outside OLMo 3, rope_base_swa != rope_base_full with both layer kinds, YaRN on sliding layers, "
    "qk_norm/norm_order combinations no family has. One process.";

}  // namespace

int run_export_hf(int argc, char** argv) {
  CommonFlags flags;
  std::string init, out, dtype;
  po::options_description opts = common_options(flags);
  opts.add_options()("init", po::value(&init),
                     "checkpoint to export: a .h5 file, or a run directory meaning its latest")(
      "out", po::value(&out),
      "Hugging Face directory to write (created; existing files are replaced only with --force)")(
      "dtype", po::value(&dtype)->default_value("f32"), "safetensors dtype: f32 (exact) or bf16");
  config::Config none;
  const config::Schema empty = config::make_schema(none, 0);
  config::parse_config(argc, argv, opts, empty);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (wants_info(flags)) {
    if (rank == 0) std::cout << info_text(flags, kExportUsage, opts, empty);
    return 0;
  }
  if (init.empty() || out.empty()) fail("export_hf needs --init CHECKPOINT_OR_RUN_DIR and --out HF_DIR (see --help)");
  if (dtype != "f32" && dtype != "bf16") fail("--dtype ", dtype, ": choose f32 or bf16");
  if (size != 1) fail("export_hf runs as one process (", size, " were started)");

  const fs::path ckpt = io::resolve_checkpoint(init);
  const io::CheckpointInfo info = io::read_checkpoint_info(ckpt);
  const config::Config cfg =
      config::make_config(config::kModel | config::kTrain | config::kData | config::kParallel, {},
                          {{"checkpoint " + ckpt.string(), config::ini_without(info.config_ini, {"train.device"})}});
  const HfFamily family = hf_family_for(cfg.model);
  const int64_t max_pos = eval::trained_length(info);
  // The tokenizer is checked before any work; a checkpoint without one exports without one.
  std::optional<data::Tokenizer> tok;
  if (!info.tokenizer_id.empty()) tok = eval::checkpoint_tokenizer(info, cfg.model.vocab_size);
  const fs::path out_dir(out);
  if (fs::exists(out_dir / "config.json") && !flags.force)
    fail(out_dir.string(), " already holds a config.json; choose another --out or pass --force");

  model::Model<float> model =
      model::make_model(cfg.model, kernels::cpu_ops(), {}, {.random_weights = false, .gradients = false});
  io::load_checkpoint_tensors(ckpt, model, nullptr);
  // The CPU model's arena is host memory holding every tensor whole (tp 1): the writer reads it
  // in place, so the export holds one copy of the model.
  std::vector<io::StWriteTensor> tensors;
  for (size_t i = 0; i < model.specs.size(); ++i)
    tensors.push_back({hf_tensor_name(family, cfg.model.norm_order, model.specs[i].name), model.specs[i].shape,
                       model.params.get() + model.offsets[i]});
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) fail(out_dir.string(), ": cannot create (", ec.message(), ")");
  const bool bf16 = dtype == "bf16";
  io::write_safetensors(out_dir / "model.safetensors", tensors, bf16 ? io::StDtype::kBF16 : io::StDtype::kF32,
                        {{"format", "pt"}, {"headroom_checkpoint", ckpt.string()}});
  auto config_json = hf_config_json(cfg.model, family, max_pos, bf16 ? "bfloat16" : "float32");
  if (tok) {
    data::save_hf_tokenizer_dir(*tok, out_dir);
    if (const auto bos = data::bos_id(*tok)) config_json["bos_token_id"] = *bos;
    config_json["eos_token_id"] = data::eos_id(*tok);
  } else {
    std::cout << "export_hf: checkpoint " << ckpt.string() << " holds no tokenizer; none written" << std::endl;
  }
  io::write_file_atomic(out_dir / "config.json", config_json.dump(2) + "\n");
  std::cout << "export_hf: wrote " << out_dir.string() << " (" << hf_architecture(family) << ", " << tensors.size()
            << " tensors, " << (bf16 ? "BF16" : "F32") << ", max_position_embeddings " << max_pos
            << (tok ? ", tokenizer " + data::tokenizer_id(*tok) : std::string()) << ") from " << ckpt.string()
            << std::endl;
  return 0;
}

}  // namespace headroom::app
