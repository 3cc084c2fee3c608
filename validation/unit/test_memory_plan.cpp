// The memory plan (app/memory_plan.h) against the allocations it predicts: parameters, activations
// and the KV cache of real models; saturation instead of wrap-around; the refusal's figures and
// keys; and the readers of /proc/meminfo and /proc/self/cgroup.
#include "app/available_memory.h"
#include "app/device_choice.h"
#include "app/memory_plan.h"
#include "config/keys.h"
#include "cuda/attention_blocks.h"
#include "model/activations.h"
#include "model/decode.h"
#include "model/model.h"
#include "ops.h"
#include "util/error.h"
#include "util/peak_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

using namespace headroom;
using app::kOverflow;

namespace {

// Defaults of every section with a tiny model, then `overrides` ({"model.d_ff", "64"}).
config::Config tiny_config(const std::map<std::string, std::string>& overrides = {}) {
  std::map<std::string, std::string> keys{
      {"model.vocab_size", "37"}, {"model.d_model", "16"},   {"model.n_layers", "3"},    {"model.d_ff", "24"},
      {"model.n_heads", "4"},     {"model.n_kv_heads", "2"}, {"model.head_dim_qk", "6"}, {"model.head_dim_v", "10"},
      {"model.window", "4"},      {"train.seq_len", "16"},   {"train.global_batch", "4"}};
  for (const auto& [k, v] : overrides) keys[k] = v;
  return config::make_config(config::kModel | config::kTrain | config::kData | config::kParallel,
                             {keys.begin(), keys.end()});
}

int64_t part(const app::MemoryPlan& p, const std::string& name) {
  for (const auto& x : p.parts)
    if (x.name == name) return x.bytes;
  ADD_FAILURE() << "no part " << name;
  return -1;
}

const std::vector<std::map<std::string, std::string>> kVariants = {
    {},
    {{"model.qk_norm", "layer"}},
    {{"model.qk_norm", "head"}, {"model.norm_order", "post"}},
    {{"model.tie_embeddings", "true"}, {"model.n_kv_heads", "1"}},
    {{"model.n_kv_heads", "4"}, {"model.rope_dims_swa", "0"}, {"model.layer_pattern", "SF"}},
};

}  // namespace

TEST(MemoryPlan, ParametersAreTheModelsParameterCountTimesFour) {
  for (const auto& v : kVariants)
    for (const int tp : {1, 2}) {
      const config::Config cfg = tiny_config(v);
      for (int rank = 0; rank < tp; ++rank) {
        const auto m = model::make_model(cfg.model, kernels::cpu_ops(), {nullptr, rank, tp});
        EXPECT_EQ(app::params_per_rank(cfg.model, tp), m.n_params) << "tp " << tp << " rank " << rank;
      }
      const auto m = model::make_model(cfg.model, kernels::cpu_ops(), {nullptr, 0, tp});
      const app::MemoryPlan p = app::training_plan("pretrain", cfg, {tp, 1, 1});
      EXPECT_EQ(part(p, "parameters"), 4 * m.n_params);
      EXPECT_EQ(part(p, "gradients"), 4 * m.n_params);
      EXPECT_EQ(part(p, "optimizer moments"), 8 * m.n_params);
    }
}

// On a GPU the GEMMs read a bf16 copy of the weights (model::Model::stored): 2 bytes for each
// weight they read in the bf16 tables, none in the fp32 one, which reads the weights themselves.
TEST(MemoryPlan, TheGpusBf16WeightCopyIsCounted) {
  kernels::Ops bf16_weights = kernels::cpu_ops();  // for the sizes only: no product runs
  bf16_weights.weight_bytes = 2;
  const auto has_copy = [](const app::MemoryPlan& p) {
    return std::any_of(p.parts.begin(), p.parts.end(), [](const auto& x) { return x.name == "bf16 weight copy"; });
  };
  ASSERT_EQ(unsetenv("HEADROOM_CUDA_PRECISION"), 0);
  for (const auto& v : kVariants) {
    config::Config cfg = tiny_config(v);
    cfg.train.device = config::Device::kCuda;
    const auto m = model::make_model(cfg.model, bf16_weights, {}, {.random_weights = false});
    EXPECT_EQ(part(app::training_plan("pretrain", cfg, {}), "bf16 weight copy"), m.stored.size());
    EXPECT_EQ(2 * app::gemm_params_per_rank(cfg.model, 1), m.stored.size());
  }
  config::Config cfg = tiny_config();
  cfg.train.device = config::Device::kCuda;
  EXPECT_FALSE(has_copy(app::training_plan("pretrain", tiny_config(), {})));  // the CPU reads params
  ASSERT_EQ(setenv("HEADROOM_CUDA_PRECISION", "fp32", 1), 0);
  EXPECT_FALSE(has_copy(app::training_plan("pretrain", cfg, {})));
  EXPECT_EQ(part(app::evaluation_plan(cfg.model, true, {100, 32}), "parameters"),
            4 * app::params_per_rank(cfg.model, 1));
  ASSERT_EQ(unsetenv("HEADROOM_CUDA_PRECISION"), 0);
}

// evaluate and analyze on a GPU keep no fp32 copy of the weights the GEMMs read
// (ModelUse::master_weights = false): fp32 norms and embedding table, bf16 weights, and the
// buffer that rounds them as they load, for every rank of eval.tp.
TEST(MemoryPlan, EvaluateOnAGpuHoldsTheBf16WeightsAlone) {
  kernels::Ops bf16_weights = kernels::cpu_ops();  // for the sizes only: no weight is written
  bf16_weights.weight_bytes = 2;
  ASSERT_EQ(unsetenv("HEADROOM_CUDA_PRECISION"), 0);
  for (const auto& v : kVariants)
    for (const int tp : {1, 2}) {
      const config::Config cfg = tiny_config(v);
      const auto m = model::make_model(cfg.model, bf16_weights, {nullptr, 0, tp},
                                       {.random_weights = false, .gradients = false, .master_weights = false});
      int64_t largest = 0;
      for (size_t i = 0; i < m.specs.size(); ++i)
        if (m.stored_offsets[i] >= 0) largest = std::max(largest, m.shards[i].numel());
      const app::MemoryPlan p =
          app::evaluation_plan(cfg.model, true, {.max_length = 100, .prefill_chunk = 32, .tp = tp});
      EXPECT_EQ(part(p, "parameters (fp32: norms, embedding table)"), 4 * m.params.size()) << "tp " << tp;
      EXPECT_EQ(part(p, "bf16 weights"), m.stored.size()) << "tp " << tp;
      EXPECT_EQ(part(p, "weight loading buffer"), 4 * std::min(largest, model::kWeightStageElems)) << "tp " << tp;
      EXPECT_EQ(m.params.size() + m.stored.size() / 2,
                m.n_params + (cfg.model.tie_embeddings ? m.cfg.vocab_size * m.cfg.d_model : 0));
    }
}

TEST(MemoryPlan, ZeroOneSplitsTheMomentsOverDataAndContextParallelRanks) {
  const config::Config plain = tiny_config(), zero = tiny_config({{"parallel.zero1", "true"}});
  const int64_t P = app::params_per_rank(plain.model, 1);
  EXPECT_EQ(part(app::training_plan("pretrain", plain, {1, 1, 2}), "optimizer moments"), 8 * P);
  EXPECT_EQ(part(app::training_plan("pretrain", zero, {1, 1, 2}), "optimizer moments"), 8 * ((P + 1) / 2));
  EXPECT_EQ(part(app::training_plan("pretrain", zero, {1, 1, 3}), "optimizer moments"), 8 * ((P + 2) / 3));
  // The replicas of a tp rank's weights are its cp × dp ranks (parallel/grid.h).
  EXPECT_EQ(part(app::training_plan("pretrain", zero, {1, 2, 3}), "optimizer moments"), 8 * ((P + 5) / 6));
  EXPECT_EQ(part(app::training_plan("pretrain", plain, {1, 2, 3}), "optimizer moments"), 8 * P);
}

// parallel.grad_reduce_dtype = bf16: a bf16 copy of every parameter's gradient while the buckets are
// in flight (MpiComm / NcclComm stage_bf16), only where there are replicas to reduce over.
TEST(MemoryPlan, Bf16GradientReductionCountsItsBf16Copies) {
  const config::Config bf16 = tiny_config({{"parallel.grad_reduce_dtype", "bf16"}});
  const int64_t P = app::params_per_rank(bf16.model, 1), P2 = app::params_per_rank(bf16.model, 2);
  EXPECT_EQ(part(app::training_plan("pretrain", bf16, {1, 1, 2}), "bf16 gradient reduction buffers"), 2 * P);
  EXPECT_EQ(part(app::training_plan("pretrain", bf16, {2, 2, 1}), "bf16 gradient reduction buffers"), 2 * P2);
  for (const auto& [cfg, layout] :
       {std::pair{bf16, app::TrainingLayout{1, 1, 1}}, std::pair{tiny_config(), app::TrainingLayout{1, 1, 2}}})
    for (const auto& x : app::training_plan("pretrain", cfg, layout).parts)
      EXPECT_EQ(x.name.find("bf16"), std::string::npos) << x.name;
}

// Every int32 buffer make_activations allocates beside the arena.
template <class A>
int64_t index_ints(const A& acts) {
  return acts.ids.size() + acts.targets.size() + acts.doc_start.size() + acts.doc_start_window.size() +
         acts.head_rows.size() + acts.head_targets.size();
}

// The plan's activations and logits are what make_activations allocates on every rank of the
// layout (rank 0's plan: the ranks differ only in which tokens they keep), for each recompute mode,
// with context parallelism and with sequence parallelism, on the CPU and (a table of bf16 weights,
// whose stored GEMM inputs are bf16 too, and bf16 keys and values) on a GPU.
TEST(MemoryPlan, ActivationsAreTheArenaMakeActivationsAllocates) {
  ASSERT_EQ(unsetenv("HEADROOM_CUDA_PRECISION"), 0);
  kernels::Ops bf16_weights = kernels::cpu_ops();  // for the sizes only: no product runs
  bf16_weights.weight_bytes = 2;
  bf16_weights.kv_bytes = 2;
  struct Layout {
    int tp, cp, dp;
    bool sp;
  };
  const std::vector<Layout> layouts = {{1, 1, 1, false}, {1, 2, 1, false}, {2, 1, 1, true},
                                       {2, 2, 1, true},  {2, 1, 2, false}, {1, 4, 1, false}};
  int checked = 0;
  for (const auto& v : kVariants)
    for (const char* recompute : {"none", "selective", "full"})
      for (const Layout& lay : layouts)
        for (const char* micro : {"1", "2"})
          for (const bool gpu : {false, true}) {
            auto keys = v;
            keys["train.recompute"] = recompute;
            keys["train.micro_batch"] = micro;
            config::Config cfg = tiny_config(keys);
            if (gpu) cfg.train.device = config::Device::kCuda;
            const app::MemoryPlan p = app::training_plan("pretrain", cfg, {lay.tp, lay.cp, lay.dp, lay.sp});
            for (int tp_rank = 0; tp_rank < lay.tp; ++tp_rank)
              for (int cp_rank = 0; cp_rank < lay.cp; ++cp_rank) {
                auto m = model::make_model(cfg.model, gpu ? bf16_weights : kernels::cpu_ops(),
                                           {nullptr, tp_rank, lay.tp, lay.sp}, {.random_weights = false});
                m.cp = {nullptr, cp_rank, lay.cp};
                const auto acts =
                    model::make_activations(m, cfg.train.micro_batch, cfg.train.seq_len, cfg.train.recompute);
                const std::string where = cat("recompute ", recompute, " tp ", lay.tp, " cp ", lay.cp, " sp ", lay.sp,
                                              " micro ", micro, " rank ", tp_rank, "/", cp_rank, gpu ? " gpu" : "");
                EXPECT_EQ(part(p, "activations") + part(p, "logits"), 4 * acts.arena.size() + 4 * index_ints(acts))
                    << where;
                EXPECT_GE(part(p, "logits"), 4 * acts.chunk_rows * cfg.model.vocab_size) << where;
                ++checked;
              }
          }
  EXPECT_GT(checked, 600);
  // Recompute, cp and sequence parallelism each shrink what a rank keeps.
  const auto acts = [](const std::map<std::string, std::string>& keys, app::TrainingLayout lay) {
    return part(app::training_plan("pretrain", tiny_config(keys), lay), "activations");
  };
  const int64_t none = acts({}, {});
  EXPECT_LT(acts({{"train.recompute", "selective"}}, {}), none);
  EXPECT_LT(acts({{"train.recompute", "full"}}, {}), acts({{"train.recompute", "selective"}}, {}));
  EXPECT_LT(acts({}, {1, 2, 1, false}), none);
  EXPECT_LT(acts({}, {2, 1, 1, true}), acts({}, {2, 1, 1, false}));
  // On a GPU a_in, m_in and act are kept in bf16 (one fp32 scratch for all three layers).
  config::Config gpu = tiny_config();
  gpu.train.device = config::Device::kCuda;
  EXPECT_LT(part(app::training_plan("pretrain", gpu, {}), "activations"), none);
  // The plan's micro-batch is the trainer's: global_batch / dp without train.micro_batch.
  const config::Config cfg = tiny_config({{"train.global_batch", "6"}});
  const auto m = model::make_model(cfg.model, kernels::cpu_ops());
  const auto three = model::make_activations(m, 3, cfg.train.seq_len);
  const app::MemoryPlan p = app::training_plan("pretrain", cfg, {1, 1, 2});
  EXPECT_EQ(part(p, "activations") + part(p, "logits"), 4 * three.arena.size() + 4 * index_ints(three));
}

TEST(MemoryPlan, AnUnevenTokenLayoutIsRefusedByName) {
  try {  // 16 tokens cannot be cut into 2·cp = 6 zig-zag chunks
    app::training_plan("pretrain", tiny_config(), {1, 3, 1});
    FAIL() << "cp 3 accepted for seq_len 16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel.cp"), std::string::npos) << e.what();
  }
}

TEST(MemoryPlan, KvCacheAndPrefillAreWhatTheDecoderAllocates) {
  // Sliding-window layers keep their window only (eval::Decoder's KvWindows::kWindowOnly), at a length
  // the window fits in many times and at one it does not.
  for (const int64_t length : {int64_t{100}, int64_t{5}})
    for (const char* pattern : {"F", "SF", "SSSF", "S"}) {
      const config::Config cfg = tiny_config({{"model.layer_pattern", pattern}, {"model.n_layers", "5"}});
      const auto m =
          model::make_model(cfg.model, kernels::cpu_ops(), {}, {.random_weights = false, .gradients = false});
      const auto cache = model::make_kv_cache(m, length + 1, 32, model::KvWindows::kWindowOnly);
      int64_t kv = 0;
      for (size_t i = 0; i < cache.k.size(); ++i) kv += cache.k[i].size() + cache.v[i].size();
      EXPECT_EQ(part(app::evaluation_plan(cfg.model, false, {length, 32}), "KV cache"), kv)
          << pattern << " at " << length;
    }
  // A table whose cache is bf16 (the GPU's): evaluate's cache in the table's precision.
  kernels::Ops bf16_cache = kernels::cpu_ops();
  bf16_cache.kv_bytes = 2;
  bf16_cache.weight_bytes = 2;
  for (const char* pattern : {"F", "SF"}) {
    const config::Config cfg = tiny_config({{"model.layer_pattern", pattern}});
    const auto m = model::make_model(cfg.model, bf16_cache, {}, {.random_weights = false, .gradients = false});
    const auto cache = model::make_kv_cache(m, 101, 32, model::KvWindows::kWindowOnly, model::KvPrecision::kTable);
    int64_t kv = 0;
    for (size_t i = 0; i < cache.k.size(); ++i) kv += cache.k[i].size() + cache.v[i].size();
    const app::MemoryPlan p =
        app::evaluation_plan(cfg.model, true, {.max_length = 100, .prefill_chunk = 32, .kv_bytes = 2});
    EXPECT_EQ(part(p, "KV cache (bf16)"), kv) << pattern;
    EXPECT_EQ(part(app::evaluation_plan(cfg.model, true, {100, 32}), "KV cache"), 2 * kv) << pattern;
  }
  const config::Config cfg = tiny_config();
  // As evaluate and analyze make it: parameters only.
  const auto m = model::make_model(cfg.model, kernels::cpu_ops(), {}, {.random_weights = false, .gradients = false});
  const int64_t length = 100, chunk = 32;
  const auto cache = model::make_kv_cache(m, length + 1, chunk, model::KvWindows::kWindowOnly);
  const app::MemoryPlan p = app::evaluation_plan(cfg.model, false, {length, chunk});
  const auto& c = cache.chunk;
  EXPECT_EQ(part(p, "prefill activations"),
            4 * (c.arena.size() + index_ints(c)) -
                4 * model::activation_floats(m.local, model::TokenLayout{chunk}, 1, config::Recompute::kNone).logits);
  EXPECT_EQ(part(p, "parameters"), 4 * m.n_params);
  EXPECT_EQ(m.grads.size(), 0);
  for (const auto& x : p.parts) EXPECT_EQ(x.name.find("gradients"), std::string::npos) << x.name;
  EXPECT_FALSE(app::overflows(p));
}

TEST(MemoryPlan, EvaluateTensorParallelSplitsTheModelAndItsCache) {
  // eval.tp: each rank of a group holds its heads' weights and its KV heads' cache (replicated KV
  // heads when tp exceeds them), and the prefill activations of its heads and MLP columns.
  for (const char* kv_heads : {"2", "1"}) {
    const config::Config cfg = tiny_config({{"model.n_kv_heads", kv_heads}, {"model.layer_pattern", "SF"}});
    const int64_t length = 100, chunk = 32;
    const app::MemoryPlan p =
        app::evaluation_plan(cfg.model, false, {.max_length = length, .prefill_chunk = chunk, .tp = 2});
    for (int rank = 0; rank < 2; ++rank) {
      const auto m = model::make_model(cfg.model, kernels::cpu_ops(), {nullptr, rank, 2},
                                       {.random_weights = false, .gradients = false});
      const auto cache = model::make_kv_cache(m, length + 1, chunk, model::KvWindows::kWindowOnly);
      int64_t kv = 0;
      for (size_t i = 0; i < cache.k.size(); ++i) kv += cache.k[i].size() + cache.v[i].size();
      EXPECT_EQ(part(p, "KV cache"), kv) << "n_kv_heads " << kv_heads << " rank " << rank;
      EXPECT_EQ(part(p, "parameters"), 4 * m.n_params);
      const auto& c = cache.chunk;
      EXPECT_EQ(
          part(p, "prefill activations"),
          4 * (c.arena.size() + index_ints(c)) -
              4 * model::activation_floats(m.local, model::TokenLayout{chunk}, 1, config::Recompute::kNone).logits);
    }
  }
  EXPECT_THROW(app::evaluation_plan(tiny_config().model, false, {.max_length = 10, .prefill_chunk = 4, .tp = 3}),
               Error);
}

TEST(MemoryPlan, HugeSequenceIsCountedNotWrapped) {
  const app::MemoryPlan p = app::training_plan("pretrain", tiny_config({{"train.seq_len", "99999999999"}}), {});
  EXPECT_FALSE(app::overflows(p));
  EXPECT_GT(app::host_bytes(p), int64_t{1} << 50);  // petabytes of activations
  EXPECT_GT(part(p, "activations"), part(p, "parameters"));
  const std::string why = app::plan_refusal(p, 1, int64_t{8} << 30, "MemAvailable in /proc/meminfo");
  for (const char* s : {"needed", "available 8.0 GiB (8589934592 bytes", "train.seq_len=99999999999",
                        "train.global_batch=4", "model.d_model=16", "activations"})
    EXPECT_NE(why.find(s), std::string::npos) << s << " in: " << why;
  EXPECT_NE(why.find(std::to_string(app::host_bytes(p)) + " bytes"), std::string::npos) << why;
}

TEST(MemoryPlan, ProductsThatOverflowInt64AreRefused) {
  const config::Config cfg = tiny_config({{"train.seq_len", "99999999999"}, {"model.d_ff", "100000000000"}});
  const app::MemoryPlan p = app::training_plan("pretrain", cfg, {});
  EXPECT_TRUE(app::overflows(p));
  EXPECT_EQ(app::host_bytes(p), kOverflow);
  EXPECT_EQ(part(p, "activations"), kOverflow);  // 1e11 tokens × 1e11 wide MLP × 4 layers
  const std::string why = app::plan_refusal(p, 2, int64_t{1} << 40, "cgroup limit");
  for (const char* s : {"overflows 64-bit integers", "needed more than 8 EiB", "for the 2 ranks on this node",
                        "model.d_ff=100000000000", "train.seq_len=99999999999", "available 1.0 TiB"})
    EXPECT_NE(why.find(s), std::string::npos) << s << " in: " << why;
  // Saturation carries through sums and products: every part is either exact or kOverflow.
  for (const auto& x : p.parts) EXPECT_GE(x.bytes, 0) << x.name;
}

TEST(MemoryPlan, SlidingWindowLayersCacheTheSameAtAnyLength) {
  const auto all_sliding = tiny_config({{"model.layer_pattern", "S"}}).model;
  EXPECT_EQ(part(app::evaluation_plan(all_sliding, false, {99999999999, 512}), "KV cache"),
            part(app::evaluation_plan(all_sliding, false, {4096, 512}), "KV cache"));
}

TEST(MemoryPlan, EvaluationLengthDrivesTheCache) {
  const app::MemoryPlan p = app::evaluation_plan(tiny_config().model, false, {99999999999, 512});
  EXPECT_GT(part(p, "KV cache"), int64_t{1} << 40);
  const std::string why = app::plan_refusal(p, 1, int64_t{1} << 30, "MemAvailable in /proc/meminfo");
  EXPECT_NE(why.find("KV cache"), std::string::npos) << why;
  EXPECT_NE(why.find("eval.lengths=99999999999"), std::string::npos) << why;
  // An absurd prefill block is bounded by the context it fills.
  const app::MemoryPlan q = app::evaluation_plan(tiny_config().model, false, {1024, 99999999999});
  EXPECT_EQ(part(q, "prefill activations"),
            part(app::evaluation_plan(tiny_config().model, false, {1024, 1025}), "prefill activations"));
}

TEST(MemoryPlan, CudaLeavesDevicePartsOutOfHostMemory) {
  const config::Config cpu = tiny_config({{"train.seq_len", "99999999999"}});
  config::Config gpu = cpu;
  gpu.train.device = config::Device::kCuda;
  const app::MemoryPlan c = app::training_plan("pretrain", cpu, {}), g = app::training_plan("pretrain", gpu, {});
  EXPECT_LT(app::host_bytes(g), app::host_bytes(c));
  EXPECT_EQ(app::host_bytes(g), part(g, "host buffers"));
}

// The blocked attention's workspace (train.attention_kernel = blocked, or auto above width 256)
// holds one block's scores for every query head against every key. With narrow heads at 32K tokens
// it is the largest scratch user, and the plan's scratch is exactly it, grown as scratch() grows
// (kernels/cuda/attention_blocks.h: the kernels' own arithmetic).
TEST(MemoryPlan, TheGpuScratchCountsTheBlockedAttentionsWorkspace) {
  config::Config narrow = tiny_config({{"train.seq_len", "32768"},
                                       {"train.global_batch", "1"},
                                       {"model.n_layers", "1"},
                                       {"model.n_heads", "4"},
                                       {"model.n_kv_heads", "2"},
                                       {"model.head_dim_qk", "16"},
                                       {"model.head_dim_v", "16"}});
  narrow.train.device = config::Device::kCuda;
  const app::MemoryPlan g = app::training_plan("extend", narrow, {});
  const kernels::AttentionShape call{1, 32768, 32768, 0, 4, 2, 16, 16, 0};
  const int64_t blocked = kernels::cuda::blocked_workspace_bytes(call, kernels::cuda::attention_block(), true);
  // 4 heads × 256 queries × 32768 keys × (4 + 2) bytes of scores and probabilities alone.
  EXPECT_GT(blocked, int64_t{4} * 256 * 32768 * 6);
  EXPECT_EQ(part(g, "kernel scratch (upper bound)"), blocked + blocked / 4 + (int64_t{1} << 20));
}

// train.device = cuda: the GPU parts and the kernel scratch against the GPU's memory less the
// reserve; the refusal names the GPU figures and the keys of the largest GPU parts.
TEST(MemoryPlan, TheGpuPlanIsCheckedAgainstTheGpusMemoryLessTheReserve) {
  config::Config gpu = tiny_config({{"train.seq_len", "4096"}, {"model.n_layers", "64"}});
  gpu.train.device = config::Device::kCuda;
  const app::MemoryPlan g = app::training_plan("extend", gpu, {});
  int64_t on_gpu = 0;
  for (const auto& x : g.parts) on_gpu += x.device ? x.bytes : 0;
  EXPECT_EQ(app::device_bytes(g), on_gpu);
  EXPECT_GT(part(g, "kernel scratch (upper bound)"), int64_t{1} << 20);
  // The CPU plan has no GPU and no scratch.
  const app::MemoryPlan c = app::training_plan("extend", tiny_config(), {});
  EXPECT_EQ(app::device_bytes(c), 0);
  EXPECT_TRUE(app::fits_device(c, 0));
  const int64_t need = on_gpu + app::kDeviceReserve;
  EXPECT_TRUE(app::fits_device(g, need));
  EXPECT_FALSE(app::fits_device(g, need - 1));
  EXPECT_TRUE(app::fits_device(g, -1));  // unknown: not checked
  const std::string why = app::device_refusal(g, need - 1, "cudaMemGetInfo total of GPU 0");
  for (const std::string& s :
       std::vector<std::string>{"does not fit in GPU memory", "needed " + app::format_bytes(need),
                                "(" + std::to_string(need) + " bytes) per GPU", "reserved per GPU",
                                "GPU memory " + app::format_bytes(need - 1), std::to_string(need - 1) + " bytes",
                                std::string("cudaMemGetInfo total of GPU 0"), std::string("train.seq_len=4096"),
                                std::string("host buffers"), std::string("in host memory, not counted here")})
    EXPECT_NE(why.find(s), std::string::npos) << s << " in: " << why;
  const std::string table = app::plan_table(g);
  EXPECT_NE(table.find("GPU total"), std::string::npos) << table;
  EXPECT_NE(table.find("train.recompute=none"), std::string::npos) << table;
}

TEST(MemoryPlan, AnInvalidTensorParallelSplitIsRefusedByName) {
  try {
    app::training_plan("pretrain", tiny_config(), {3, 1, 1});
    FAIL() << "tp 3 accepted for 4 heads";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel.tp = 3"), std::string::npos) << e.what();
  }
}

TEST(MemoryPlan, PlanLineIsOneLineInHumanUnits) {
  const std::string line = app::plan_line(app::training_plan("pretrain", tiny_config(), {}));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("memory plan per rank: "), std::string::npos) << line;
  EXPECT_NE(line.find("KiB"), std::string::npos) << line;
  EXPECT_EQ(app::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(app::format_bytes(int64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(app::format_bytes(100), "100 B");
}

// The program itself is a host part of its own (VmRSS when planned), never a GPU one.
TEST(MemoryPlan, TheProgramIsAHostPart) {
  config::Config gpu = tiny_config();
  gpu.train.device = config::Device::kCuda;
  app::MemoryPlan p = app::training_plan("pretrain", gpu, {});
  const int64_t host = app::host_bytes(p), device = app::device_bytes(p);
  app::count_program(p, 123456789);
  EXPECT_EQ(app::host_bytes(p), host + 123456789);
  EXPECT_EQ(app::device_bytes(p), device);
  app::count_program(p, -1);  // unknown: nothing added
  EXPECT_EQ(app::host_bytes(p), host + 123456789);
  const std::string status = "Name:\tpretrain\nVmPeak:\t  900 kB\nVmHWM:\t   2048 kB\nVmRSS:\t   1024 kB\n";
  EXPECT_EQ(status_field_bytes(status, "VmHWM"), 2048 * 1024);
  EXPECT_EQ(status_field_bytes(status, "VmRSS"), 1024 * 1024);
  EXPECT_EQ(status_field_bytes(status, "VmSwap"), -1);
  EXPECT_GT(resident_bytes(), 0);
  EXPECT_GE(peak_resident_bytes(), resident_bytes());
}

TEST(AvailableMemory, ReadsMemAvailableAndTheCgroupPath) {
  EXPECT_EQ(app::meminfo_available("MemTotal:       24684084 kB\nMemFree: 1 kB\nMemAvailable:   23515328 kB\n"),
            int64_t{23515328} * 1024);
  EXPECT_EQ(app::meminfo_available("MemTotal: 5 kB\n"), -1);
  const std::string cg = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/user.slice/x\n";
  EXPECT_EQ(app::cgroup_path(cg, false), "/process_api/abc");
  EXPECT_EQ(app::cgroup_path(cg, true), "/user.slice/x");
  EXPECT_EQ(app::cgroup_path("0::/\n", false), "");
  EXPECT_EQ(app::cgroup_path("4:cpu,memory:/a\n", false), "/a");
  // This machine has /proc/meminfo: a positive figure and where it came from.
  const app::AvailableMemory a = app::available_memory();
  EXPECT_GT(a.bytes, 0);
  EXPECT_FALSE(a.source.empty());
}

// train.device = auto: the GPU only when every rank sees one (the fewest GPUs any rank sees decides).
TEST(DeviceChoice, AutoTakesTheGpuOnlyWhenEveryRankSeesOne) {
  EXPECT_EQ(headroom::app::auto_device(0), headroom::config::Device::kCpu);
  EXPECT_EQ(headroom::app::auto_device(1), headroom::config::Device::kCuda);
  EXPECT_EQ(headroom::app::auto_device(8), headroom::config::Device::kCuda);
  // CTest hides the GPUs from the CPU tests (validation/CMakeLists.txt): none may be counted then.
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v != nullptr && *v == '\0') {
    EXPECT_EQ(headroom::kernels::cuda_device_count(), 0);
  }
}
