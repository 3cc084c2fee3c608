// The bf16 tables' stored operands on the emulated GPU (the CUDA backend's kernels on the CPU
// emulator), each against what it replaces:
//   - The GEMMs read a bf16 copy of the weights, remade when they change: through training steps
//     the losses are those of rounding the weights in every product, bit for bit.
//   - evaluate's model keeps no fp32 copy of the weights the GEMMs read (ModelUse::master_weights
//     = false): its bf16 weights, rounded as they load, are the bytes a master model's copy holds,
//     and its logits the master model's bit for bit.
//   - Decoding keeps the KV cache in bf16, which the attention reads in bf16 anyway: against an
//     fp32 cache on the same table the logits are the same bits and greedy decoding the same
//     tokens, on every attention path a decoding call can take, with sliding layers whose windows
//     move; against the CPU's fp32 logits the distance stays within the bf16 noise floor, how far
//     the CPU's logits move when the weights alone are rounded to bf16 (as test_emulated_device.sh
//     and test_gpu_cases.h derive theirs).
#include "cuda/emu/runtime_emu.h"
#include "cuda/table.h"
#include "model/decode.h"
#include "model/forward.h"
#include "train/optimizer.h"
#include "document_starts.h"
#include "model_fixtures.h"
#include "noise_floor.h"
#include "util/bf16.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

using namespace headroom;
using namespace headroom::model;
using headroom::fixtures::random_batch;
using headroom::fixtures::tiny_model;

namespace {

double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]), r += double(b[i]) * b[i];
  return std::sqrt(d / r);
}

// GQA, a sliding layer before a full one, a window the prefill chunks overrun many times.
config::ModelConfig decoding_model() {
  return tiny_model({{"n_heads", "4"}, {"n_kv_heads", "2"}, {"layer_pattern", "SF"}, {"window", "5"}});
}

// `to`'s weights set to `from`'s (host), each rounded to bf16 when asked.
void copy_weights(const Model<float>& from, Model<float>& to, bool round) {
  std::vector<float> w(static_cast<size_t>(from.n_params));
  from.ops->copy_to_host(w.data(), from.params.get(), w.size() * sizeof(float));
  if (round)
    for (float& x : w) x = util::bf16_to_float(util::float_to_bf16(x));
  to.ops->copy_from_host(to.params.get(), w.data(), w.size() * sizeof(float));
  weights_changed(to);
}

struct Decoded {
  std::vector<float> logits;  // every prompt position's, [T, V]
  std::vector<int32_t> tokens;
  int64_t cache_bytes = 0;
};

Decoded decode(Model<float>& m, const std::vector<int32_t>& prompt, int64_t chunk, KvPrecision precision) {
  const int64_t T = static_cast<int64_t>(prompt.size()), V = m.cfg.vocab_size, max_new = 12;
  KvCache<float> cache = make_kv_cache(m, T + max_new, chunk, KvWindows::kWindowOnly, precision);
  Decoded d;
  for (size_t i = 0; i < cache.k.size(); ++i) d.cache_bytes += cache.k[i].size() + cache.v[i].size();
  d.logits.resize(static_cast<size_t>(T * V));
  prefill(m, cache, prompt.data(), T, d.logits.data());
  EXPECT_GT(cache.first[0], 0) << "the sliding layer's window never moved";
  cache.len = 0;
  d.tokens = greedy_generate(m, cache, prompt, max_new, -1);
  return d;
}

// The norms and the embedding table: what a model without master weights keeps in fp32.
int64_t read_in_fp32(const Model<float>& m) {
  int64_t n = 0;
  for (size_t i = 0; i < m.specs.size(); ++i)
    if (!read_by_gemms(m.specs[i], m.cfg) || m.specs[i].name == "embed.weight") n += m.shards[i].numel();
  return n;
}

// The weights the GEMMs read: what the bf16 copy holds.
int64_t read_by_the_gemms(const Model<float>& m) {
  int64_t n = 0;
  for (size_t i = 0; i < m.specs.size(); ++i)
    if (read_by_gemms(m.specs[i], m.cfg)) n += m.shards[i].numel();
  return n;
}

std::vector<std::byte> stored_bytes(const Model<float>& m) {
  std::vector<std::byte> b(static_cast<size_t>(m.stored.size()));
  m.ops->copy_to_host(b.data(), m.stored.get(), b.size());
  return b;
}

struct Path {
  const char* name;
  kernels::AttentionKernel kernel;
};

}  // namespace

TEST(DecodeEmulated, Bf16CacheGivesTheFp32CachesLogitsBitForBit) {
  const auto cfg = decoding_model();
  Model<float> cpu = make_model(cfg, kernels::cpu_ops());
  const int64_t T = 40;
  const auto prompt = random_batch(cfg.vocab_size, 1, T, 21).ids;
  for (const Path& p :
       {Path{"flash", kernels::AttentionKernel::kFlash}, Path{"blocked", kernels::AttentionKernel::kBlocked},
        Path{"auto", kernels::AttentionKernel::kAuto}}) {
    const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, p.kernel);
    ASSERT_EQ(table.kv_bytes, 2) << p.name;
    Model<float> m = make_model(cfg, table, {}, {.random_weights = false, .gradients = false});
    copy_weights(cpu, m, false);
    for (int64_t chunk : {int64_t{1}, int64_t{7}}) {
      const std::string what = std::string(p.name) + ", chunks of " + std::to_string(chunk);
      const Decoded fp32 = decode(m, prompt, chunk, KvPrecision::kCompute);
      const Decoded bf16 = decode(m, prompt, chunk, KvPrecision::kTable);
      EXPECT_EQ(bf16.cache_bytes * 2, fp32.cache_bytes) << what;
      EXPECT_EQ(bf16.logits, fp32.logits) << what;
      EXPECT_EQ(bf16.tokens, fp32.tokens) << what;
    }
  }
}

// With a QK norm the bf16 cache's queries and keys are normed on RoPE's way (rms_rope_operand), the
// fp32 cache's through scratch by rms_apply then rope: the same logits, layerwise and headwise.
TEST(DecodeEmulated, QkNormOnRopesWayGivesTheFp32CachesLogitsBitForBit) {
  const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kFlash);
  for (const config::QkNorm qk : {config::QkNorm::kLayer, config::QkNorm::kHead}) {
    auto cfg = decoding_model();
    cfg.qk_norm = qk;
    Model<float> m = make_model(cfg, table, {}, {.gradients = false});
    const auto prompt = random_batch(cfg.vocab_size, 1, 24, 23).ids;
    const Decoded fp32 = decode(m, prompt, 5, KvPrecision::kCompute);
    const Decoded bf16 = decode(m, prompt, 5, KvPrecision::kTable);
    EXPECT_EQ(bf16.logits, fp32.logits) << (qk == config::QkNorm::kLayer ? "layerwise" : "headwise");
    EXPECT_EQ(bf16.tokens, fp32.tokens);
  }
}

TEST(DecodeEmulated, Bf16CacheLogitsWithinTheBf16FloorOfTheCpu) {
  const auto cfg = decoding_model();
  Model<float> cpu = make_model(cfg, kernels::cpu_ops());
  Model<float> cpu_bf16_weights =
      make_model(cfg, kernels::cpu_ops(), {}, {.random_weights = false, .gradients = false});
  copy_weights(cpu, cpu_bf16_weights, true);
  const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
  Model<float> m = make_model(cfg, table, {}, {.random_weights = false, .gradients = false});
  copy_weights(cpu, m, false);
  const auto prompt = random_batch(cfg.vocab_size, 1, 40, 22).ids;
  const Decoded reference = decode(cpu, prompt, 7, KvPrecision::kTable);
  const double floor = rel_error(decode(cpu_bf16_weights, prompt, 7, KvPrecision::kTable).logits, reference.logits);
  const Decoded device = decode(m, prompt, 7, KvPrecision::kTable);
  EXPECT_TRUE(validation::within_noise_floor("emulated bf16 KV cache logits",
                                             rel_error(device.logits, reference.logits), floor));
}

TEST(DecodeEmulated, WithoutMasterWeightsTheLogitsAreTheMasterModelsBits) {
  const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
  const auto prompt = random_batch(13, 1, 40, 23).ids;
  for (const char* tied : {"false", "true"}) {
    const auto cfg = tiny_model(
        {{"n_heads", "4"}, {"n_kv_heads", "2"}, {"layer_pattern", "SF"}, {"window", "5"}, {"tie_embeddings", tied}});
    Model<float> master = make_model(cfg, table);
    Model<float> lean = make_model(cfg, table, {}, {.gradients = false, .master_weights = false});
    ASSERT_FALSE(lean.master) << tied;
    EXPECT_EQ(lean.params.size(), read_in_fp32(master)) << tied;
    EXPECT_EQ(lean.stored.size(), 2 * read_by_the_gemms(master)) << tied;
    EXPECT_EQ(master.stored.size(), lean.stored.size()) << tied;
    EXPECT_EQ(lean.w[0].wq, nullptr) << tied;
    const Decoded want = decode(master, prompt, 7, KvPrecision::kTable);
    const Decoded got = decode(lean, prompt, 7, KvPrecision::kTable);
    EXPECT_EQ(got.logits, want.logits) << "tie_embeddings " << tied;
    EXPECT_EQ(got.tokens, want.tokens) << "tie_embeddings " << tied;
  }
  // Gradients need master weights to apply them to.
  EXPECT_THROW(make_model(decoding_model(), table, {}, {.master_weights = false}), Error);
}

// An output embedding larger than the staging buffer is rounded in pieces, which land where the
// master model's copy puts them.
TEST(WeightCopyEmulated, WeightsWrittenWithoutMasterAreTheMasterCopysBytes) {
  const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
  for (const char* tied : {"false", "true"}) {
    const auto cfg =
        tiny_model({{"vocab_size", "70001"}, {"d_model", "64"}, {"n_layers", "1"}, {"tie_embeddings", tied}});
    ASSERT_GT(cfg.vocab_size * cfg.d_model, kWeightStageElems);
    Model<float> master = make_model(cfg, table, {}, {.gradients = false});
    refresh_stored_weights(master);
    const Model<float> lean = make_model(cfg, table, {}, {.gradients = false, .master_weights = false});
    EXPECT_EQ(stored_bytes(lean), stored_bytes(master)) << "tie_embeddings " << tied;
  }
}

namespace {

// n fp32 device values rounded to bf16 values (kept in fp32).
void round_to_bf16_values(void* x, int64_t n) {
  std::vector<float> h(static_cast<std::size_t>(n));
  kernels::cuda_emu::copy_to_host(h.data(), x, sizeof(float) * h.size());
  for (float& v : h) v = util::bf16_to_float(util::float_to_bf16(v));
  kernels::cuda_emu::copy_from_host(x, h.data(), sizeof(float) * h.size());
}

// The bf16 attention on fp32 queries, keys and values, its fp32 output rounded to bf16 values: what
// the bf16 table's attention writes (its operand precision) and its backward reads.
void attention_fwd_output_rounded(const void* q, const void* k, const void* v, void* out, float* lse,
                                  const kernels::AttentionShape& s, float scale) {
  kernels::attention_fwd_on_cache<float, kernels::cuda_emu::attention_fwd_auto>(q, k, v, out, lse, s, scale);
  round_to_bf16_values(out, s.B * s.Tq * s.Hq * s.dv);
}

// The bf16 product of fp32 operands, its fp32 output rounded to bf16 values: what the bf16 table's
// matmul_to_stored writes (the attention output's gradient) and the attention's backward reads.
void matmul_output_rounded(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b) {
  kernels::matmul_to_stored_on_host<float, kernels::cuda_emu::matmul_bf16>(A, B, C, M, N, K, trans_a, trans_b);
  round_to_bf16_values(C, M * N);
}

// The bf16 table as it was before the weight copy, the stored GEMM inputs and the attention's
// operands kept in bf16: every product rounds its fp32 weights and activations itself, the
// attention its fp32 queries, keys and values (and its output, and wo's input gradient, only to
// bf16 values, where the rounding itself is the same bits as storing it).
kernels::Ops rounding_in_every_product(const kernels::Ops& table) {
  kernels::Ops t = table;
  t.weight_bytes = 4;
  t.weight_store = kernels::cuda_emu::store_fp32;
  t.weight_store_columns = kernels::cuda_emu::store_columns_fp32;
  t.matmul_stored = kernels::matmul_on_stored<float, kernels::cuda_emu::matmul_bf16>;
  t.matmul_both_stored = kernels::matmul_on_both_stored<float, kernels::cuda_emu::matmul_bf16>;
  t.matmul_to_stored = matmul_output_rounded;
  t.kv_bytes = 4;
  t.rope_operand = kernels::cuda_emu::rope_operand_fp32;
  t.rope_grad_stored = kernels::cuda_emu::rope_grad_stored_fp32;
  t.rms_rope_operand = kernels::cuda_emu::rms_rope_operand_fp32;
  t.attention_fwd_cached = attention_fwd_output_rounded;
  t.attention_bwd_cached = kernels::attention_bwd_on_cache<float, kernels::cuda_emu::attention_bwd_auto>;
  return t;
}

}  // namespace

// The bf16 table against the plain one, its stored inputs and gradients under every recompute mode
// (a recomputed layer stores them again, into the backward pass's scratch), pre-norm and post-norm
// (whose attention input is the residual stream itself), post-norm with headwise QK norm (the
// query and key gradients then come out of the norm's backward).
TEST(WeightCopyEmulated, TrainingStepsGiveTheLossesOfRoundingInEveryProduct) {
  for (const char* order : {"pre", "post"}) {
    SCOPED_TRACE(order);
    auto cfg = decoding_model();
    const bool pre = std::string(order) == "pre";
    cfg.norm_order = pre ? config::NormOrder::kPre : config::NormOrder::kPost;
    cfg.qk_norm = pre ? config::QkNorm::kNone : config::QkNorm::kHead;
    const kernels::Ops copy_table =
        kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
    const kernels::Ops plain_table = rounding_in_every_product(copy_table);
    const int64_t B = 2, T = 16;
    struct Run {
      const kernels::Ops* table;
      config::Recompute recompute;
    };
    std::vector<std::vector<float>> losses;
    // Post-norm differs in the attention block only: the reference and full recomputation.
    std::vector<Run> runs{{&plain_table, config::Recompute::kNone}, {&copy_table, config::Recompute::kFull}};
    if (cfg.norm_order == config::NormOrder::kPre)
      runs.insert(runs.end(), {{&copy_table, config::Recompute::kNone}, {&copy_table, config::Recompute::kSelective}});
    for (const Run r : runs) {
      Model<float> m = make_model(cfg, *r.table);
      EXPECT_EQ(m.stored.size(), r.table == &copy_table ? 2 * read_by_the_gemms(m) : 0);
      Activations<float> a = make_activations(m, B, T, r.recompute);
      // The bf16 table keeps the GEMM inputs several products read in bf16 (stored once, the same bits
      // as each product rounding them); the plain one reads them in fp32.
      EXPECT_EQ(a.layers[0].a_op != nullptr && a.layers[0].m_op != nullptr && a.layers[0].act_op != nullptr,
                r.table == &copy_table);
      EXPECT_EQ(a.dgu_op != nullptr && a.out_grad_op != nullptr, r.table == &copy_table);
      // The attention writes its output in bf16 for wo's gradient already (its operand precision).
      EXPECT_EQ(a.att_op, nullptr);
      auto opt = train::make_adamw(m, train::AdamWConfig{});
      std::vector<float> run;
      for (int step = 0; step < 3; ++step) {
        const auto batch = random_batch(cfg.vocab_size, B, T, 30 + static_cast<uint64_t>(step));
        zero_grads(m);
        const LossSum l = forward_backward<float>(m, a, batch.ids.data(), batch.targets.data(), 1.f / (B * T));
        run.push_back(static_cast<float>(l.sum));
        train::adamw_step(m, opt, 1e-2, 1.0);
      }
      const auto batch = random_batch(cfg.vocab_size, B, T, 40);
      run.push_back(static_cast<float>(forward_loss<float>(m, a, batch.ids.data(), batch.targets.data(), nullptr).sum));
      losses.push_back(run);
    }
    for (std::size_t i = 1; i < losses.size(); ++i) EXPECT_EQ(losses[i], losses[0]) << "run " << i;
    EXPECT_NE(losses[0][0], losses[0][3]);  // the steps moved the weights
  }
}

namespace {

std::vector<float> gradients(const Model<float>& m) {
  std::vector<float> g(static_cast<size_t>(m.grads.size()));
  m.ops->copy_to_host(g.data(), m.grads.get(), g.size() * sizeof(float));
  return g;
}

}  // namespace

// A micro-batch's forward and backward passes are enqueued without the host waiting for the device
// once: its inputs are staged before them (stage_micro_batch: ids, targets, the LM head's rows), its
// loss is read after them (staged_loss), and cross_entropy reports a bad target where the host next
// waits instead of waiting after each LM-head chunk (this table's head runs in four). The losses and
// gradients are forward_backward's.
TEST(StepEmulated, TheForwardAndBackwardPassesNeverWaitForTheDevice) {
  const auto cfg = decoding_model();
  kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
  const int64_t B = 2, T = 16;
  table.logits_chunk = B * T / 4 * cfg.vocab_size;
  Model<float> m = make_model(cfg, table), ref = make_model(cfg, table);
  copy_weights(m, ref, false);
  Activations<float> a = make_activations(m, B, T, config::Recompute::kNone);
  Activations<float> ra = make_activations(ref, B, T, config::Recompute::kNone);
  ASSERT_EQ(a.chunk_rows, B * T / 4);
  const auto batch = random_batch(cfg.vocab_size, B, T, 50);
  zero_grads(m);
  zero_grads(ref);
  stage_micro_batch(m, a, batch.ids.data(), batch.targets.data());
  {
    const kernels::cuda_emu::NoHostWaits no_waits;
    train_staged(m, a, 1.f / (B * T));
    EXPECT_THROW(staged_loss(m, a), Error) << "the guard lets the host wait";
  }
  const LossSum got = staged_loss(m, a);
  const LossSum want = forward_backward<float>(ref, ra, batch.ids.data(), batch.targets.data(), 1.f / (B * T));
  EXPECT_EQ(got.sum, want.sum);
  EXPECT_EQ(got.count, want.count);
  EXPECT_GT(got.count, 0);
  EXPECT_EQ(gradients(m), gradients(ref));
}

// A micro-batch's forward and backward passes as CUDA graphs (step_graphs.h): over micro-batches
// whose data, LM-head rows (masked targets) and document masks change, with AdamW steps between
// them (the weights' stored copy is remade outside the graphs), the losses and gradients are those
// of the passes enqueued op by op, bit for bit, with a sliding layer and GQA, and with post-norm and
// headwise QK norm. Each pass is captured on the second micro-batch of a key (documents masked or
// not) and again after a free made its graph stale; every other micro-batch after the first of a
// key replays it. With a grads_final callback (the data-parallel reduction's buckets start between
// the backward pass's pieces), each piece is a graph of its own, and the gradients the callback
// reads after each piece are those of the op-by-op pass.
TEST(StepEmulated, GraphsReplayThePassesBitForBit) {
  for (const int variant : {0, 1, 2}) {
    const bool post = variant == 1, pieces = variant == 2;
    auto cfg = decoding_model();
    if (post) {
      cfg.norm_order = config::NormOrder::kPost;
      cfg.qk_norm = config::QkNorm::kHead;
    }
    const kernels::Ops table = kernels::cuda_emu::make_table("emulated-cuda", true, kernels::AttentionKernel::kAuto);
    const int64_t B = 2, T = 16;
    Model<float> m = make_model(cfg, table), ref = make_model(cfg, table);
    copy_weights(m, ref, false);
    Activations<float> a = make_activations(m, B, T, config::Recompute::kNone);
    Activations<float> ra = make_activations(ref, B, T, config::Recompute::kNone);
    a.graphs.enabled = true;
    auto opt = train::make_adamw(m, train::AdamWConfig{});
    auto ref_opt = train::make_adamw(ref, train::AdamWConfig{});
    for (int mb = 0; mb < 8; ++mb) {
      const bool masked = mb >= 5;
      const auto batch = random_batch(cfg.vocab_size, B, T, 60 + static_cast<uint64_t>(mb), mb % 3 + 2);
      const std::vector<int32_t> docs = kernels::document_starts(B, T, 0, {0, 4 + mb % 3, 11});
      if (mb == 3) table.free(table.alloc(256));  // every graph stale
      zero_grads(m);
      zero_grads(ref);
      // What a reduction would read after each piece: the sum of the finished parameters' gradients.
      std::vector<double> seen, ref_seen;
      const auto reader = [pieces](const Model<float>& model, std::vector<double>& out) {
        return !pieces ? std::function<void(size_t)>() : [&model, &out](size_t k) {
          const auto g = gradients(model);
          out.push_back(std::accumulate(g.begin() + model.offsets[k], g.end(), 0.0));
        };
      };
      const std::function<void(size_t)> read = reader(m, seen), ref_read = reader(ref, ref_seen);
      const LossSum got = forward_backward<float>(m, a, batch.ids.data(), batch.targets.data(), 1.f / (B * T),
                                                  masked ? docs.data() : nullptr, read);
      const LossSum want = forward_backward<float>(ref, ra, batch.ids.data(), batch.targets.data(), 1.f / (B * T),
                                                   masked ? docs.data() : nullptr, ref_read);
      EXPECT_EQ(got.sum, want.sum) << "micro-batch " << mb << " variant " << variant;
      EXPECT_EQ(gradients(m), gradients(ref)) << "micro-batch " << mb << " variant " << variant;
      EXPECT_EQ(seen, ref_seen) << "micro-batch " << mb << " variant " << variant;
      EXPECT_EQ(seen.size(), pieces ? static_cast<size_t>(cfg.n_layers + 2) : 0u);
      train::adamw_step(m, opt, 1e-2, 1.0);
      train::adamw_step(ref, ref_opt, 1e-2, 1.0);
    }
    EXPECT_FALSE(a.graphs.failed);
    // Each graph captured at micro-batches 1, 3 (stale) and 6 (the masked key's second), and
    // launched at 1, 2, 3, 4, 6 and 7: the forward pass's and the backward pass's, or the backward
    // pieces' (the final norm, each layer, the embedding).
    const int64_t graphs = 1 + (pieces ? cfg.n_layers + 2 : 1);
    EXPECT_EQ(a.graphs.captures, graphs * 3);
    EXPECT_EQ(a.graphs.replays, graphs * 6);
    EXPECT_EQ(ra.graphs.captures, 0);
  }
}
