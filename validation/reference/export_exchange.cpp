// export_exchange: runs the C++ model (fp32, CPU kernels) on a small random batch and writes the
// HDF5 exchange file of MODEL_SPEC.md ("Exchange file") for validation/reference/compare.py:
// the initial weights, the batch, the AdamW settings, and our logits, mean loss, every gradient and
// the loss before each of --steps AdamW steps on the same batch.
//
// usage: export_exchange --out FILE [--model.KEY VALUE ...] [--batch B] [--seq T] [--steps N]
//                        [--lr X] [--beta1 X] [--beta2 X] [--eps X] [--weight-decay X]
//                        [--freeze PATTERNS] [--mask-every K] [--data-seed S] [--norm-jitter X]
#include "app/cli.h"
#include "config/keys.h"
#include "io/atomic_file.h"
#include "io/h5.h"
#include "model/forward.h"
#include "model_fixtures.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/random.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <string>
#include <vector>

using namespace headroom;

namespace {

struct Options {
  std::string out;
  long batch = 2, seq = 16, steps = 10, mask_every = 5;
  double lr = 3e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1, norm_jitter = 0.0;
  std::string freeze;
  unsigned long data_seed = 1;
  bool help = false;
};

config::po::options_description app_options(Options& o) {
  namespace po = config::po;
  po::options_description d("export_exchange options", 100, 50);
  d.add_options()("help", po::bool_switch(&o.help), "print this help, listing every key, and exit")(
      "config", po::value<std::vector<std::string>>()->composing(),
      "INI config file with a [model] section; repeatable")(
      "out", po::value(&o.out), "exchange file to write (HDF5; written to FILE.tmp, then renamed)")(
      "batch", po::value(&o.batch)->default_value(o.batch), "sequences B")(
      "seq", po::value(&o.seq)->default_value(o.seq), "tokens per sequence T")(
      "steps", po::value(&o.steps)->default_value(o.steps), "AdamW steps on the same batch (0: no /ours/train_losses)")(
      "lr", po::value(&o.lr)->default_value(o.lr), "constant learning rate")(
      "beta1", po::value(&o.beta1)->default_value(o.beta1), "AdamW beta1")(
      "beta2", po::value(&o.beta2)->default_value(o.beta2), "AdamW beta2")(
      "eps", po::value(&o.eps)->default_value(o.eps), "AdamW epsilon")(
      "weight-decay", po::value(&o.weight_decay)->default_value(o.weight_decay),
      "decoupled weight decay (2-D weights except the embeddings)")(
      "freeze", po::value(&o.freeze)->default_value(o.freeze),
      "comma-separated glob patterns of parameters AdamW leaves untouched (or model.freeze)")(
      "mask-every", po::value(&o.mask_every)->default_value(o.mask_every), "mask every K-th target (-1); 0 = none")(
      "data-seed", po::value(&o.data_seed)->default_value(o.data_seed), "seed of the random batch")(
      "norm-jitter", po::value(&o.norm_jitter)->default_value(o.norm_jitter),
      "replace the all-ones norm weights by 1 + X·N(0,1) before anything runs, so the norm "
      "weights enter the comparison non-trivially (0 = the spec's init)");
  return d;
}

void check_options(const Options& o) {
  if (o.out.empty()) fail("no output given: pass --out FILE");
  if (o.batch < 1) fail("--batch ", o.batch, ": must be >= 1");
  if (o.seq < 1) fail("--seq ", o.seq, ": must be >= 1");
  if (o.steps < 0) fail("--steps ", o.steps, ": must be >= 0");
  if (o.mask_every < 0) fail("--mask-every ", o.mask_every, ": must be >= 0");
  if (!(o.lr >= 0)) fail("--lr ", o.lr, ": must be >= 0");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) fail("--beta1 ", o.beta1, ": must be in [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) fail("--beta2 ", o.beta2, ": must be in [0, 1)");
  if (!(o.eps > 0)) fail("--eps ", o.eps, ": must be > 0");
  if (!(o.weight_decay >= 0)) fail("--weight-decay ", o.weight_decay, ": must be >= 0");
  if (!(o.norm_jitter >= 0)) fail("--norm-jitter ", o.norm_jitter, ": must be >= 0");
}

hsize_t h(int64_t v) { return static_cast<hsize_t>(v); }

void make_group(const io::H5File& file, const std::string& name) {
  io::H5Handle g(io::h5_check_id(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                 file.name + ": " + name, "H5Gcreate"),
                 H5Gclose);
}

// Every [model] key as an attribute of /config, typed as MODEL_SPEC.md asks, and `freeze` (the
// effective patterns); fails if the schema has a model key this list does not write (so a new key
// cannot silently go missing here).
void write_config(const io::H5File& file, const config::ModelConfig& m, const config::Schema& schema,
                  const std::string& freeze) {
  make_group(file, "/config");
  std::set<std::string> written;
  auto s = [&](const char* k, const std::string& v) { io::h5_attr(file, "/config", k, v), written.insert(k); };
  auto i = [&](const char* k, int64_t v) { io::h5_attr(file, "/config", k, v), written.insert(k); };
  auto d = [&](const char* k, double v) { io::h5_attr(file, "/config", k, v), written.insert(k); };
  i("vocab_size", m.vocab_size);
  i("d_model", m.d_model);
  i("n_layers", m.n_layers);
  i("d_ff", m.d_ff);
  i("n_heads", m.n_heads);
  i("n_kv_heads", m.n_kv_heads);
  i("head_dim_qk", m.head_dim_qk);
  i("head_dim_v", m.head_dim_v);
  s("qk_norm", config::name_of(m.qk_norm));
  s("norm_order", config::name_of(m.norm_order));
  s("layer_pattern", m.layer_pattern);
  i("window", m.window);
  d("rope_base_full", m.rope_base_full);
  d("rope_base_swa", m.rope_base_swa);
  i("rope_dims_full", m.rope_dims_full);
  i("rope_dims_swa", m.rope_dims_swa);
  s("rope_scaling", config::name_of(m.rope_scaling));
  d("yarn_factor", m.yarn_factor);
  i("yarn_original_len", m.yarn_original_len);
  d("yarn_beta_fast", m.yarn_beta_fast);
  d("yarn_beta_slow", m.yarn_beta_slow);
  s("yarn_layers", config::name_of(m.yarn_layers));
  d("llama3_factor", m.llama3_factor);
  d("llama3_low_freq_factor", m.llama3_low_freq_factor);
  d("llama3_high_freq_factor", m.llama3_high_freq_factor);
  i("llama3_original_len", m.llama3_original_len);
  i("tie_embeddings", m.tie_embeddings ? 1 : 0);
  d("norm_eps", m.norm_eps);
  d("init_std", m.init_std);
  i("seed", static_cast<int64_t>(m.seed));
  for (const auto& k : schema.keys)
    if (k.section == "model" && k.name != "model.freeze" && !written.count(k.name.substr(6)))
      fail("internal: export_exchange does not write [model] key '", k.name.substr(6),
           "' to /config; add it to write_config");
  s("freeze", freeze);
}

// All parameters (or gradients) of the arena, host copies, written under `group`.
void write_tensors(const io::H5File& file, const std::string& group, const model::Model<float>& m, const float* arena) {
  std::vector<float> host;
  for (size_t p = 0; p < m.specs.size(); ++p) {
    const auto& spec = m.specs[p];
    host.resize(static_cast<size_t>(spec.numel()));
    m.ops->copy_to_host(host.data(), arena + m.offsets[p], host.size() * sizeof(float));
    std::vector<hsize_t> dims;
    for (int64_t e : spec.shape) dims.push_back(h(e));
    io::h5_write(file, group + "/" + spec.name, host.data(), dims);
  }
}

void jitter_norm_weights(model::Model<float>& m, double jitter, unsigned long seed) {
  if (jitter == 0) return;
  std::vector<float> host;
  for (size_t p = 0; p < m.specs.size(); ++p) {
    const auto& spec = m.specs[p];
    if (spec.init != model::Init::kOnes) continue;
    const CounterRng rng{mix64(seed) ^ fnv1a64(spec.name), 11};
    host.resize(static_cast<size_t>(spec.numel()));
    for (size_t e = 0; e < host.size(); ++e) host[e] = static_cast<float>(1.0 + jitter * rng.normal(e));
    m.ops->copy_from_host(m.params.get() + m.offsets[p], host.data(), host.size() * sizeof(float));
  }
  model::weights_changed(m);
}

int run(int argc, char** argv) {
  Options o;
  config::Config cfg;
  const auto app = app_options(o);
  const config::Schema schema = config::make_schema(cfg, config::kModel);
  const auto parsed = config::parse_config(argc, argv, app, schema);
  if (o.help) {
    std::cout << config::help_text(
        "usage: export_exchange --out FILE [--model.KEY VALUE ...] [options]\n\n"
        "Runs the fp32 C++ model on CPU on a random batch and writes the HDF5 exchange file of\n"
        "validation/reference/MODEL_SPEC.md for validation/reference/compare.py.",
        app, schema);
    return 0;
  }
  config::validate(cfg, config::kModel, schema, parsed);
  check_options(o);
  // Freeze patterns: --freeze, or the [model] freeze key where the schema has one (not both).
  for (const auto& k : schema.keys) {
    if (k.name != "model.freeze") continue;
    const std::string model_freeze = k.print();
    if (!model_freeze.empty() && !o.freeze.empty() && model_freeze != o.freeze)
      fail("--freeze '", o.freeze, "' and model.freeze '", model_freeze, "' (", config::origin_of(parsed, k.name),
           ") disagree; give one of them");
    if (o.freeze.empty()) o.freeze = model_freeze;
  }
  const config::ModelConfig& mc = cfg.model;
  const std::string& fname = o.out;
  const int64_t B = o.batch, T = o.seq, V = mc.vocab_size;

  model::Model<float> m = model::make_model(mc, kernels::cpu_ops());
  jitter_norm_weights(m, o.norm_jitter, o.data_seed);
  model::Activations<float> a = model::make_activations(m, B, T);
  const auto batch = fixtures::random_batch(V, B, T, o.data_seed, static_cast<int>(o.mask_every));
  int64_t unmasked = 0;
  for (int32_t t : batch.targets) unmasked += t >= 0;
  if (unmasked == 0) fail("every target of the batch is masked; lower --mask-every or raise --seq");

  io::H5File file = io::h5_create_memory_file(fname);
  write_config(file, mc, schema, o.freeze);
  write_tensors(file, "/model", m, m.params.get());
  io::h5_write(file, "/batch/inputs", batch.ids.data(), {h(B), h(T)});
  io::h5_write(file, "/batch/targets", batch.targets.data(), {h(B), h(T)});
  make_group(file, "/optim");
  io::h5_attr(file, "/optim", "lr", o.lr);
  io::h5_attr(file, "/optim", "beta1", o.beta1);
  io::h5_attr(file, "/optim", "beta2", o.beta2);
  io::h5_attr(file, "/optim", "eps", o.eps);
  io::h5_attr(file, "/optim", "weight_decay", o.weight_decay);
  io::h5_attr(file, "/optim", "steps", static_cast<int64_t>(o.steps));

  // Logits and the mean loss (forward only).
  std::vector<float> logits(static_cast<size_t>(B * T * V));
  const model::LossSum fwd = model::forward_loss<float>(m, a, batch.ids.data(), batch.targets.data(), logits.data());
  const double loss = fwd.sum / static_cast<double>(fwd.count);
  io::h5_write(file, "/ours/logits", logits.data(), {h(B), h(T), h(V)});
  io::h5_write(file, "/ours/loss", &loss, {1});

  // Gradients of the mean loss.
  const float scale = static_cast<float>(1.0 / static_cast<double>(unmasked));
  model::zero_grads(m);
  model::forward_backward<float>(m, a, batch.ids.data(), batch.targets.data(), scale);
  write_tensors(file, "/ours/grad", m, m.grads.get());

  // AdamW on the same batch: constant lr, no clipping; the loss is recorded before each step.
  train::AdamWConfig oc;
  oc.beta1 = o.beta1, oc.beta2 = o.beta2, oc.eps = o.eps, oc.weight_decay = o.weight_decay;
  oc.freeze = o.freeze;
  train::AdamW<float> opt = train::make_adamw(m, oc);
  std::vector<float> before(static_cast<size_t>(m.n_params));
  m.ops->copy_to_host(before.data(), m.params.get(), before.size() * sizeof(float));
  std::vector<double> train_losses;
  for (long step = 0; step < o.steps; ++step) {
    model::zero_grads(m);
    const model::LossSum l = model::forward_backward<float>(m, a, batch.ids.data(), batch.targets.data(), scale);
    train_losses.push_back(l.sum / static_cast<double>(l.count));
    train::adamw_step(m, opt, o.lr, 1.0);
  }
  if (o.steps > 0) io::h5_write(file, "/ours/train_losses", train_losses.data(), {h(o.steps)});

  // Frozen parameters must come out of training bit for bit as they went in (the reference
  // leaves them out of its optimizer; compare.py sees only the losses).
  std::vector<float> after(before.size());
  m.ops->copy_to_host(after.data(), m.params.get(), after.size() * sizeof(float));
  size_t n_frozen = 0;
  for (size_t p = 0; p < m.specs.size(); ++p) {
    if (!opt.frozen[p]) continue;
    ++n_frozen;
    const auto first = before.begin() + m.offsets[p];
    if (!std::equal(first, first + m.specs[p].numel(), after.begin() + m.offsets[p]))
      fail("frozen parameter ", m.specs[p].name, " changed during ", o.steps, " AdamW steps");
  }

  io::write_file_atomic(fname, io::h5_file_image(file));
  file.close();
  std::cout << "export_exchange: wrote " << fname << ": " << m.specs.size() << " parameters (" << m.n_params
            << " values, " << n_frozen << " frozen), B=" << B << " T=" << T << ", " << unmasked
            << " unmasked targets, loss " << loss;
  if (o.steps > 0) std::cout << " -> " << train_losses.back() << " after " << o.steps - 1 << " steps";
  std::cout << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return app::guarded_main("export_exchange", [&] { return run(argc, argv); });
}
