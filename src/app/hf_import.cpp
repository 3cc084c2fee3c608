#include "app/hf_import.h"

#include "app/cli.h"
#include "app/hf_config.h"
#include "config/keys.h"
#include "config/load.h"
#include "data/hf_tokenizer_files.h"
#include "data/tokenizer.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/run_dir.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "parallel/grid.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>

namespace headroom::app {
namespace fs = std::filesystem;
namespace po = config::po;
using nlohmann::json;

namespace {

constexpr const char* kImportUsage =
    "usage: [mpirun -np N] import_hf --hf HF_DIR --out RUN_DIR [--parallel.tp N] [--force]\n\n"
    "Converts a Hugging Face model directory (config.json; model.safetensors, or the shards named by "
    "model.safetensors.index.json, in F32, F16 or BF16; tokenizer.json) into a Headroom run directory "
    "with one checkpoint, RUN_DIR/checkpoints/step_00000000.h5 + latest (stage \"import\"), which "
    "extend --init, sft --init, evaluate --init and analyze accept like any other. Conversion, not a "
    "Hugging Face reader in every stage: every stage then reads one format, with its parallel-HDF5 "
    "writes, tensor-parallel slicing, checksums and lineage. Families: LlamaForCausalLM, "
    "Qwen3ForCausalLM, Olmo2ForCausalLM, Olmo3ForCausalLM (src/app/hf_config.h gives the mapping). "
    "Refused before any work, naming the key or tensor: other architectures, biases, hidden_act other "
    "than silu, RoPE types other than default, yarn and llama3, YaRN's attention_factor/mscale, partial RoPE, "
    "missing or unexpected tensors, shapes that disagree with config.json. train.seq_len is "
    "max_position_embeddings. Under mpirun with --parallel.tp N each rank reads and holds only its "
    "tensor-parallel slice (the safetensors are mapped, not read whole), so a model larger than one "
    "node's memory converts; the checkpoint is the same at any N.";

// Tensors that carry no weights of the model: old checkpoints' RoPE caches.
bool ignorable(const std::string& hf_name) { return hf_name.ends_with(".rotary_emb.inv_freq"); }

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i]);
  }
  return out + "]";
}

// A tied model's directory that stores lm_head.weight anyway (some exports write the shared matrix
// under both names): "" when it equals the embedding value for value, else what differs first.
// Compared in blocks of rows, so memory stays small for a large vocabulary.
std::string tied_head_difference(const io::SafetensorsSet& st, const std::string& embed) {
  const io::StTensor* e = st.find(embed);
  const io::StTensor* h = st.find("lm_head.weight");
  if (!e) return cat(embed, " is missing");
  if (e->shape != h->shape || e->shape.size() != 2)
    return cat("its shape ", shape_text(h->shape), " is not ", embed, "'s ", shape_text(e->shape));
  const int64_t R = e->shape[0], C = e->shape[1], block = std::max<int64_t>(1, (int64_t{1} << 20) / C);
  std::vector<float> a, b;
  for (int64_t r0 = 0; r0 < R; r0 += block) {
    const int64_t n = std::min(block, R - r0);
    a.resize(static_cast<size_t>(n * C));
    b.resize(a.size());
    st.read_block(embed, r0, n, 0, C, a.data());
    st.read_block("lm_head.weight", r0, n, 0, C, b.data());
    for (size_t i = 0; i < a.size(); ++i)
      if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
        return cat("it differs from ", embed, " at [", r0 + static_cast<int64_t>(i) / C, ", ",
                   static_cast<int64_t>(i) % C, "] (", b[i], " against ", a[i], ")");
  }
  return "";
}

// Every expected tensor present, in a readable dtype, with the configuration's shape; nothing else.
void check_tensors(const io::SafetensorsSet& st, const std::vector<model::ParamSpec>& specs, config::NormOrder order,
                   HfFamily f, std::vector<std::string>& hf_names, std::vector<std::string>& notes) {
  std::set<std::string> expected;
  std::string problems;
  auto add = [&](const std::string& s) { problems += "\n  " + s; };
  for (const auto& spec : specs) {
    const std::string name = hf_tensor_name(f, order, spec.name);
    hf_names.push_back(name);
    expected.insert(name);
    const io::SafetensorsFile* file = nullptr;
    const io::StTensor* t = st.find(name, &file);
    if (!t) {
      add(cat("tensor ", name, " (Headroom ", spec.name, ") is missing"));
      continue;
    }
    if (t->shape != spec.shape)
      add(cat("tensor ", name, " in ", file->path().string(), " has shape ", shape_text(t->shape),
              " but config.json makes it ", shape_text(spec.shape)));
    if (t->dtype == io::StDtype::kOther)
      add(cat("tensor ", name, " in ", file->path().string(), " has dtype ", t->dtype_text,
              ", which is not supported (F32, F16 and BF16 are)"));
  }
  int ignored = 0;
  for (const auto& name : st.names()) {
    if (expected.count(name)) continue;
    if (ignorable(name)) {
      ++ignored;
      continue;
    }
    if (name == "lm_head.weight") {  // expected only when the configuration does not tie it
      const std::string embed = hf_tensor_name(f, order, "embed.weight");
      const std::string diff = tied_head_difference(st, embed);
      if (diff.empty()) {
        notes.push_back(cat("lm_head.weight ignored: config.json ties the embeddings and it equals ", embed));
        continue;
      }
      add(
          cat("tensor lm_head.weight is stored although config.json ties the embeddings (tie_word_embeddings = "
              "true), and ",
              diff, ": a tied model cannot hold both"));
      continue;
    }
    const io::SafetensorsFile* file = nullptr;
    st.find(name, &file);
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    add(cat("tensor ", name, " in ", file->path().string(), " is unexpected",
            bias ? " (a bias: the Headroom model has none)" : " (no Headroom parameter maps to it)"));
  }
  if (ignored)
    notes.push_back(cat(ignored, " rotary_emb.inv_freq buffers ignored (recomputed from the configuration)"));
  if (!problems.empty()) fail(st.description(), " does not fit its config.json:", problems);
}

// This rank's slice of every parameter, copied from the mapped files.
void fill_model(const io::SafetensorsSet& st, model::Model<float>& m, const std::vector<std::string>& hf_names) {
  std::vector<float> host;
  for (size_t i = 0; i < m.specs.size(); ++i) {
    const auto& spec = m.specs[i];
    const model::Shard& sh = m.shards[i];
    host.resize(static_cast<size_t>(sh.numel()));
    const int64_t R = spec.shape[0], C = spec.shape.size() == 2 ? spec.shape[1] : 1;
    if (sh.axis == 1)
      st.read_block(hf_names[i], 0, R, sh.offset, sh.count, host.data());
    else if (sh.axis == 0)
      st.read_block(hf_names[i], sh.offset, sh.count, 0, C, host.data());
    else
      st.read_block(hf_names[i], 0, R, 0, C, host.data());
    model::write_weights(m, i, host.data(), 0, sh.numel());
  }
  model::weights_changed(m);
}

json read_json(const fs::path& p) {
  if (!fs::exists(p)) fail("Hugging Face directory ", p.parent_path().string(), " has no ", p.filename().string());
  try {
    return json::parse(io::read_file(p));
  } catch (const nlohmann::json::exception& e) {
    fail(p.string(), ": not JSON (", e.what(), ")");
  }
}

}  // namespace

int run_import_hf(int argc, char** argv) {
  CommonFlags flags;
  std::string hf, out;
  po::options_description opts = common_options(flags);
  opts.add_options()("hf", po::value(&hf),
                     "Hugging Face model directory: config.json, *.safetensors (+ index), tokenizer.json")(
      "out", po::value(&out), "run directory to create: config.ini, log.txt, checkpoints/, DONE");
  config::Config par;
  const config::Schema schema = config::make_schema(par, config::kParallel);
  const config::Parsed parsed = config::parse_config(argc, argv, opts, schema);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (wants_info(flags)) {
    if (rank == 0) std::cout << info_text(flags, kImportUsage, opts, schema);
    return 0;
  }
  config::check_keys(schema, parsed);
  if (hf.empty() || out.empty()) fail("import_hf needs --hf HF_DIR and --out RUN_DIR (see --help)");

  // Everything that can be wrong with the input is refused here, on every rank, before any work.
  const fs::path hf_dir(hf), config_path = fs::path(hf) / "config.json";
  const json config_json = read_json(config_path);
  const HfImportMapping mapping = map_hf_config(config_json, config_path.string());
  std::string ini;
  config::Config cfg =
      config::make_config(config::kModel | config::kTrain | config::kData | config::kParallel, mapping.keys, {}, &ini);
  if (flags.print_config) {  // the configuration the checkpoint will store
    if (rank == 0) std::cout << ini;
    return 0;
  }
  const data::Tokenizer tok = data::load_hf_tokenizer_dir(hf_dir);
  if (data::vocab_size(tok) > cfg.model.vocab_size)
    fail(hf_dir.string(), ": tokenizer.json has ", data::vocab_size(tok), " ids but config.json's vocab_size is ",
         cfg.model.vocab_size);
  const io::SafetensorsSet st = io::SafetensorsSet::open_dir(hf_dir);
  std::vector<std::string> hf_names, notes = mapping.notes;
  check_tensors(st, model::param_specs(cfg.model), cfg.model.norm_order, mapping.family, hf_names, notes);
  const fs::path ckpt = io::checkpoint_path(out, 0);
  if ((!io::list_checkpoints(out).empty() || io::is_finished(out)) && !flags.force)
    fail("run directory ", out, " already holds a run; choose another --out or pass --force");

  parallel::Grid grid = parallel::make_grid(static_cast<int>(par.parallel.tp), static_cast<int>(par.parallel.dp));
  model::TpContext tp{grid.tp > 1 ? grid.tp_group.get() : nullptr, grid.tp_rank, grid.tp};
  model::Model<float> model =
      model::make_model(cfg.model, kernels::cpu_ops(), tp, {.random_weights = false, .gradients = false});

  std::unique_ptr<io::RunDir> run;
  if (grid.is_root()) {
    run = std::make_unique<io::RunDir>(
        io::open_run_dir(out, flags.force, io::claim_run_dir(out, io::RunKind::kTraining, "import_hf")));
    io::write_config(*run, ini);
    io::log_line(*run, cat("import_hf ", hf_dir.string(), " (", hf_architecture(mapping.family), ", ", st.description(),
                           mapping.torch_dtype.empty() ? "" : ", torch_dtype " + mapping.torch_dtype, ") on ",
                           grid.world->size(), " rank(s), tp ", grid.tp, "; tokenizer ", data::tokenizer_id(tok), " (",
                           data::vocab_size(tok), " ids)"));
    for (const auto& n : notes) io::log_line(*run, "note: " + n);
  }
  fill_model(st, model, hf_names);

  io::CheckpointInfo info;
  info.stage = "import";
  info.seed = cfg.model.seed;
  info.config_ini = ini;
  info.tokenizer_id = data::tokenizer_id(tok);
  info.tokenizer_hf = data::tokenizer_record(tok);
  info.merges = tok.merges;
  json lineage = json::array();
  lineage.push_back({{"stage", "import"},
                     {"hf_dir", fs::absolute(hf_dir).lexically_normal().string()},
                     {"architectures", config_json["architectures"]},
                     {"torch_dtype", mapping.torch_dtype},
                     {"run_dir", out},
                     {"config", ini}});
  info.lineage = lineage.dump();
  io::save_checkpoint(ckpt, grid, model, nullptr, info);
  if (run) {
    io::write_latest(out, ckpt);
    io::mark_finished(*run, cat("import_hf ", hf_dir.string(), " -> ", ckpt.string()));
    io::log_line(*run, cat("done: ", ckpt.string(), " (", model.specs.size(), " tensors, vocab ", cfg.model.vocab_size,
                           ", d_model ", cfg.model.d_model, ", ", cfg.model.n_layers, " layers, train.seq_len ",
                           cfg.train.seq_len, ")"));
  }
  grid.world->barrier();
  return 0;
}

}  // namespace headroom::app
