// The resolved configuration of a run: one plain struct per INI section. Every field is a config key
// (`[model] n_heads = 8` in a file, `--model.n_heads 8` on the command line); keys.cpp declares each
// key's default, meaning and checks. Keys that choose behaviour are enums (choices.h).
#pragma once

#include "config/choices.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace headroom::config {

struct ModelConfig {
  long vocab_size;
  long d_model;
  long n_layers;
  long d_ff;
  long n_heads;
  long n_kv_heads;
  long head_dim_qk;
  long head_dim_v;
  QkNorm qk_norm;
  NormOrder norm_order;
  std::string layer_pattern;  // e.g. "SSSF", repeated over depth
  long window;
  double rope_base_full;
  double rope_base_swa;
  long rope_dims_full;  // -1 = whole head_dim_qk
  long rope_dims_swa;
  RopeScaling rope_scaling;
  double yarn_factor;
  long yarn_original_len;
  double yarn_beta_fast;
  double yarn_beta_slow;
  YarnLayers yarn_layers;  // the layers YaRN applies to
  double llama3_factor;    // rope_scaling = llama3 (Llama 3.1's frequency bands), every layer
  double llama3_low_freq_factor;
  double llama3_high_freq_factor;
  long llama3_original_len;
  bool tie_embeddings;
  double norm_eps;
  double init_std;
  unsigned long seed;
  std::string freeze;  // comma-separated glob patterns over parameter names
};

// The attention projections' widths, derived once: queries H·dqk, keys KV·dqk, values KV·dv, the
// attention output H·dv (of the whole model, or of one tensor-parallel rank's local config).
inline int64_t q_width(const ModelConfig& m) { return m.n_heads * m.head_dim_qk; }
inline int64_t k_width(const ModelConfig& m) { return m.n_kv_heads * m.head_dim_qk; }
inline int64_t v_width(const ModelConfig& m) { return m.n_kv_heads * m.head_dim_v; }
inline int64_t attn_out_width(const ModelConfig& m) { return m.n_heads * m.head_dim_v; }
// The attention logit scale 1/√dqk, in double so every backend rounds the same value.
inline double attention_scale(int64_t head_dim_qk) { return 1.0 / std::sqrt(static_cast<double>(head_dim_qk)); }

struct TrainConfig {
  long seq_len;
  long global_batch;
  long micro_batch;  // windows per forward/backward on one rank (gradient accumulation)
  long steps;
  unsigned long seed;  // data order
  double lr;
  double min_lr;
  long warmup_steps;
  Schedule schedule;
  long decay_steps;  // wsd: length of the final decay
  double weight_decay;
  double beta1, beta2, adam_eps;
  bool decay_embeddings;
  double grad_clip;  // max global norm; 0 disables
  Nonfinite nonfinite;
  long log_every;
  long checkpoint_every;  // 0: only at the end
  long keep_last;         // checkpoints kept; 0 keeps all
  long steps_per_run;     // stop (checkpoint, exit 75) after this many steps of one invocation; 0 = no limit
  Device device;
  AttentionKernel attention_kernel;  // on cuda: cuDNN where it supports the shape, or the own kernels
  double peak_tflops;                // MFU denominator per rank; 0 = nominal GPU peak or measured GEMM rate
  long probe_every;                  // steps between retrieval-probe scores (train/probe.h); 0 = off
  long profile_steps;                // steps timed region by region (profile.json); 0 = off
  bool cuda_graphs;                  // a micro-batch's forward and backward passes replayed as CUDA graphs
  long probe_samples;                // probe examples
  std::string probe_tasks;           // synthetic tasks of the probe
  std::string spike_rules;           // the spike monitor's rules (config/spike_rules.h)
  Recompute recompute;               // what the backward pass recomputes (activation memory)
};

struct ParallelConfig {
  long tp;
  long cp;                 // context-parallel ranks: the sequence split in 2·cp zig-zag chunks
  long dp;                 // 0: world size / (tp · cp)
  bool zero1;              // shard AdamW moments across the cp × dp ranks that hold the same weights (ZeRO stage 1)
  bool zero2;              // and reduce-scatter the gradients to those shards (ZeRO stage 2; needs zero1)
  double grad_bucket_mib;  // gradients reduced in buckets overlapping the backward; 0: one reduction after it
  GradReduceDtype grad_reduce_dtype;  // fp32, or bf16 on the wire (half the traffic)
  bool sequence_parallel;             // tp ranks split the tokens outside attention and the MLP
};

struct DataConfig {
  std::string train;  // path to a train.h5 shard
  std::string val;
  std::string mix;  // NAME=PATH:WEIGHT,...: windows drawn from several datasets (data/mixture.h)
  unsigned long seed;
  Sampler sampler;               // documents: whole documents (long-context data)
  double synthetic_ratio;        // share of windows (sft: of generated examples) with a synthetic task
  std::string synthetic_tasks;   // comma-separated: kv, needle, vt, docqa, copy
  long synthetic_min_len;        // smallest synthetic/generated example, tokens
  SyntheticLoss synthetic_loss;  // pretrain/extend windows
  std::string warmup_tasks;      // synthetic tasks of the first warmup_steps steps ("" = none)
  long warmup_steps;             // curriculum: steps that draw from warmup_tasks
  long warmup_max_len;           // largest warm-up example, tokens (0 = the window)
  std::string sft_file;          // JSONL of {"prompt", "response"}; "" = generated examples only
  double sft_file_share;         // share of sft examples drawn from sft_file
  bool document_mask;            // packed training windows attend only within each document
};

struct Config {
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
  ParallelConfig parallel;
};

// Which sections an app exposes.
enum SectionMask : unsigned {
  kModel = 1u << 0,
  kTrain = 1u << 1,
  kData = 1u << 2,
  kParallel = 1u << 3,
};

}  // namespace headroom::config
