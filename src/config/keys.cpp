#include "config/keys.h"

#include "config/spike_rules.h"
#include "config/task_names.h"
#include "util/error.h"

namespace headroom::config {
namespace {

constexpr long kMaxHeadDim = 1024;

void add_model_keys(Schema& s, ModelConfig& m) {
  section(s, "model", "Model [model]");
  const auto pos = at_least<long>(1);
  add_key(s, "model", "vocab_size", m.vocab_size, 259L,
          "vocabulary size; must match the tokenizer of the data (byte-level: 259); 0 = take it "
          "from the tokenizer of data.train (training stages; the resolved value is stored)",
          at_least<long>(0));
  add_key(s, "model", "d_model", m.d_model, 256L, "residual stream width", pos);
  add_key(s, "model", "n_layers", m.n_layers, 4L, "number of transformer blocks", pos);
  add_key(s, "model", "d_ff", m.d_ff, 704L, "SwiGLU hidden width (gate and up projections)", pos);
  add_key(s, "model", "n_heads", m.n_heads, 4L, "query heads per layer", pos);
  add_key(s, "model", "n_kv_heads", m.n_kv_heads, 4L,
          "key/value heads per layer: = n_heads is MHA, 1 is MQA, between is GQA", pos);
  add_key(s, "model", "head_dim_qk", m.head_dim_qk, 64L,
          "query/key width per head (attention scale 1/sqrt(head_dim_qk))", in_range<long>(1, kMaxHeadDim));
  add_key(s, "model", "head_dim_v", m.head_dim_v, 64L, "value width per head", in_range<long>(1, kMaxHeadDim));
  add_choice_key(s, "model", "qk_norm", m.qk_norm, QkNorm::kNone,
                 "RMSNorm on queries and keys before RoPE: none; layer (over all heads' concatenated "
                 "vector, OLMo 2/3); head (per head over head_dim_qk, weight shared by heads, Qwen 3)");
  add_choice_key(s, "model", "norm_order", m.norm_order, NormOrder::kPre,
                 "pre: h = x + f(norm(x)); post: h = x + norm(f(x)) (OLMo 2 reordered norm)");
  add_key(s, "model", "layer_pattern", m.layer_pattern, std::string("F"),
          "attention kind per layer, repeated over depth: F = full causal, S = sliding window "
          "(e.g. SSSF = three sliding layers then one full)",
          Check<std::string>([](const std::string& p) {
            if (p.empty()) return std::string("must not be empty");
            for (char c : p)
              if (c != 'S' && c != 'F') return cat("has '", c, "'; only S and F are allowed");
            return std::string();
          }));
  add_key(s, "model", "window", m.window, 512L, "keys a sliding-window layer sees, the query itself included", pos);
  add_key(s, "model", "rope_base_full", m.rope_base_full, 10000.0,
          "RoPE base on full-attention layers (extension raises it)", at_least<double>(1.0));
  add_key(s, "model", "rope_base_swa", m.rope_base_swa, 10000.0, "RoPE base on sliding-window layers",
          at_least<double>(1.0));
  add_key(s, "model", "rope_dims_full", m.rope_dims_full, -1L,
          "rotated dims per head on full layers (partial RoPE); 0 = NoPE, -1 = all of head_dim_qk", at_least<long>(-1));
  add_key(s, "model", "rope_dims_swa", m.rope_dims_swa, -1L,
          "rotated dims per head on sliding layers; 0 = NoPE, -1 = all of head_dim_qk", at_least<long>(-1));
  add_choice_key(s, "model", "rope_scaling", m.rope_scaling, RopeScaling::kNone,
                 "RoPE scaling: none; yarn (Hugging Face's YaRN: ramp between correction dims, "
                 "attention factor 0.1 ln(factor) + 1 on cos and sin; layers: yarn_layers); llama3 "
                 "(Llama 3.1's bands: wavelengths above llama3_original_len / low_freq_factor divided by "
                 "llama3_factor, below llama3_original_len / high_freq_factor kept, a smooth blend "
                 "between; every layer)");
  add_key(s, "model", "yarn_factor", m.yarn_factor, 1.0, "YaRN scale factor s", at_least<double>(1.0));
  add_key(s, "model", "yarn_original_len", m.yarn_original_len, 4096L,
          "YaRN: context length the model was pretrained at", pos);
  add_key(s, "model", "yarn_beta_fast", m.yarn_beta_fast, 32.0, "YaRN beta_fast", at_least<double>(0.0));
  add_key(s, "model", "yarn_beta_slow", m.yarn_beta_slow, 1.0, "YaRN beta_slow", at_least<double>(0.0));
  add_choice_key(s, "model", "yarn_layers", m.yarn_layers, YarnLayers::kAll,
                 "layers YaRN applies to: all, or full (full-attention layers only)");
  add_key(s, "model", "llama3_factor", m.llama3_factor, 8.0,
          "llama3 RoPE scaling: the factor low frequencies are divided by", at_least<double>(1.0));
  add_key(s, "model", "llama3_low_freq_factor", m.llama3_low_freq_factor, 1.0,
          "llama3 RoPE scaling: wavelengths above original_len / this are scaled", at_least<double>(1e-6));
  add_key(s, "model", "llama3_high_freq_factor", m.llama3_high_freq_factor, 4.0,
          "llama3 RoPE scaling: wavelengths below original_len / this are kept", at_least<double>(1e-6));
  add_key(s, "model", "llama3_original_len", m.llama3_original_len, 8192L,
          "llama3 RoPE scaling: context length the model was pretrained at", pos);
  add_key(s, "model", "tie_embeddings", m.tie_embeddings, false,
          "share the input embedding with the output projection");
  add_key(s, "model", "norm_eps", m.norm_eps, 1e-6, "RMSNorm epsilon (QK norms too)", in_range<double>(1e-12, 1.0));
  add_key(s, "model", "init_std", m.init_std, 0.02, "standard deviation of the normal initializer",
          in_range<double>(1e-6, 1.0));
  add_key(s, "model", "seed", m.seed, 1UL,
          "initialization seed; weights depend only on (seed, parameter name, element index)");
  add_key(s, "model", "freeze", m.freeze, std::string(""),
          "comma-separated glob patterns of parameters that get no updates, e.g. "
          "layers.*.attn.w? (attention projections); empty = train everything");
}

void add_train_keys(Schema& s, TrainConfig& t) {
  section(s, "train", "Training [train]");
  add_key(s, "train", "seq_len", t.seq_len, 512L, "tokens per training window", at_least<long>(2));
  add_key(s, "train", "global_batch", t.global_batch, 8L, "windows per optimizer step over all data-parallel ranks",
          at_least<long>(1));
  add_key(s, "train", "micro_batch", t.micro_batch, 0L,
          "windows per forward/backward on one rank; the rank's share of global_batch is run in "
          "micro-batches of this size and gradients accumulated (0 = the whole share at once)",
          at_least<long>(0));
  add_key(s, "train", "steps", t.steps, 100L, "optimizer steps", at_least<long>(1));
  add_key(s, "train", "seed", t.seed, 1UL, "seed of the data order");
  add_key(s, "train", "lr", t.lr, 3e-3, "peak learning rate", in_range(0.0, 10.0));
  add_key(s, "train", "min_lr", t.min_lr, 3e-4, "final learning rate of the decay", in_range(0.0, 10.0));
  add_key(s, "train", "warmup_steps", t.warmup_steps, 10L, "linear warmup: lr · (step + 1) / warmup_steps",
          at_least<long>(0));
  add_choice_key(s, "train", "schedule", t.schedule, Schedule::kCosine,
                 "cosine (warmup, cosine to min_lr), wsd (warmup, stable, linear decay over the last "
                 "decay_steps), linear (warmup, linear to min_lr), constant");
  add_key(s, "train", "decay_steps", t.decay_steps, 0L, "wsd: steps of the final decay", at_least<long>(0));
  add_key(s, "train", "weight_decay", t.weight_decay, 0.1, "AdamW decoupled weight decay on 2-D weights (norms never)",
          in_range(0.0, 10.0));
  add_key(s, "train", "beta1", t.beta1, 0.9, "AdamW beta1", in_range(0.0, 0.999999));
  add_key(s, "train", "beta2", t.beta2, 0.95, "AdamW beta2", in_range(0.0, 0.999999));
  add_key(s, "train", "adam_eps", t.adam_eps, 1e-8, "AdamW epsilon", in_range(0.0, 1.0));
  add_key(s, "train", "decay_embeddings", t.decay_embeddings, false, "also decay embed.weight and lm_head.weight");
  add_key(s, "train", "grad_clip", t.grad_clip, 1.0, "clip the global gradient norm to this value; 0 disables",
          at_least<double>(0.0));
  add_choice_key(s, "train", "nonfinite", t.nonfinite, Nonfinite::kStop,
                 "on NaN/Inf in the loss or gradients: stop (checkpoint-free exit naming the step and "
                 "parameter) or skip (drop the update, log it, continue)");
  add_key(s, "train", "log_every", t.log_every, 10L, "steps between progress lines", at_least<long>(1));
  add_key(s, "train", "checkpoint_every", t.checkpoint_every, 0L,
          "steps between checkpoints (0: only at the end and on a signal)", at_least<long>(0));
  add_key(s, "train", "keep_last", t.keep_last, 3L, "checkpoints kept in the run directory (0 keeps all)",
          at_least<long>(0));
  add_key(s, "train", "steps_per_run", t.steps_per_run, 0L,
          "end this invocation after so many steps as if preempted (checkpoint, exit 75; "
          "--resume auto continues): for time-sliced queues; 0 = no limit",
          at_least<long>(0));
  add_choice_key(s, "train", "device", t.device, Device::kAuto,
                 "auto (cuda when every rank sees a GPU, else cpu; the choice is logged and stored as "
                 "cpu or cuda, and a later stage chooses again on its own machine), cpu (fp32 "
                 "reference), or cuda (one GPU per rank, bf16 GEMMs and flash attention with fp32 "
                 "master weights, NCCL between ranks; checkpoints are the same format)");
  add_choice_key(
      s, "train", "attention_kernel", t.attention_kernel, AttentionKernel::kAuto,
      "attention kernels on cuda (pretrain, extend, sft, evaluate; analyze uses auto): auto (cuDNN's fused attention "
      "where cuDNN supports the shape: head widths up to 256, equal query-key and value "
      "widths, causal or sliding window, GQA; the blocked attention on cuBLASLt for wider heads "
      "and the unequal widths cuDNN refuses, also for 64 or more queries after a cached prefix or a "
      "context-parallel segment's earlier chunks; Headroom's own flash attention for decoding and "
      "elsewhere; each choice logged once per shape), flash (the own bf16 flash "
      "attention always: the second reference for cuDNN), blocked (the blocked attention on "
      "cuBLASLt always, HEADROOM_ATTENTION_BLOCK queries per block, default 256), or simt (the own "
      "exact fp32 attention: tells an attention problem from rounding); ignored on cpu");
  add_key(s, "train", "peak_tflops", t.peak_tflops, 0.0,
          "the peak that MFU is reported against, TFLOP/s per rank; 0 = on cuda the device's nominal "
          "dense bf16 peak when known (H100/H200 989, A100 312, L40S 362, L4 121, ...), else the GEMM "
          "rate measured at start (on CPU: OpenBLAS sgemm with the current threads)",
          at_least<double>(0.0));
  add_key(s, "train", "profile_steps", t.profile_steps, 0L,
          "time this many steps region by region (data loading, embedding, attention projections, attention "
          "kernel, MLP, LM head, gradient reduction, optimizer; forward and backward), starting with the second "
          "step of the invocation (the first pays for warm-up): the mean over ranks per step goes to log.txt and "
          "profile.json. The device is synchronized at every region boundary, so these steps run a little slower "
          "and overlapped work (the bucketed gradient reduction) is counted where it is waited for; 0 = off",
          at_least<long>(0));
  add_key(s, "train", "cuda_graphs", t.cuda_graphs, true,
          "on cuda, capture a micro-batch's forward and backward passes as two CUDA graphs (on the second "
          "micro-batch; the LM head runs between them op by op) and replay them, one launch each instead of "
          "thousands, the tensor- and context-parallel collectives (NCCL) included (the micro-batch whose backward "
          "pass starts the bucketed gradient reduction, with parallel.grad_bucket_mib and dp > 1, as a graph per "
          "layer); not on the steps train.profile_steps times. false: every op enqueued each time; ignored on cpu");
  add_key(s, "train", "probe_every", t.probe_every, 0L,
          "steps between scores of the retrieval probe (probe.jsonl: answer loss, token accuracy and "
          "exact answers on probe_samples held-out synthetic examples that fill a whole window, the "
          "same examples for every configuration and seed; also at step 0 and the last step): "
          "learning curves of retrieval; 0 = off",
          at_least<long>(0));
  add_key(s, "train", "probe_samples", t.probe_samples, 64L, "examples of the retrieval probe", at_least<long>(1));
  add_key(s, "train", "probe_tasks", t.probe_tasks, std::string("kv"),
          "synthetic tasks of the retrieval probe, comma-separated (as data.synthetic_tasks; "
          "each example's task drawn uniformly)",
          Check<std::string>(check_task_list));
  add_key(s, "train", "spike_rules", t.spike_rules, std::string("paper,olmo"),
          "the stability monitor's rules (spike scores in metrics.jsonl and analyze's report), "
          "comma-separated: built-ins paper (7σ two-sided over the previous 1000 steps, window 1000: "
          "the OLMo 2 score) and olmo (mean + 6σ of the previous 128, window 10000: OLMo-core's "
          "monitor), or name:window:sigmas:one|two:lookback for a rule of your own",
          Check<std::string>(check_spike_rules));
  add_choice_key(s, "train", "recompute", t.recompute, Recompute::kNone,
                 "activation recomputation: none (keep every layer's activations for the backward pass), "
                 "selective (keep each layer's MLP input, recompute the gate, up and SwiGLU products of the "
                 "MLP in the backward pass: about 3·d_ff of the ~8·d_model + 3·d_ff floats a layer keeps per "
                 "token, for one more gate/up product per layer), or full (keep only each layer's input and "
                 "run the layer's forward pass again before its backward pass: activation memory of one "
                 "layer plus the residual streams, for one more forward pass). Gradients are the same to "
                 "fp32 rounding; the memory plan (--memory-plan) counts what each keeps");
}

void add_parallel_keys(Schema& s, ParallelConfig& p) {
  section(s, "parallel", "Parallelism [parallel]");
  add_key(s, "parallel", "tp", p.tp, 1L, "tensor-parallel ranks (innermost); must divide n_heads and d_ff",
          at_least<long>(1));
  add_key(s, "parallel", "cp", p.cp, 1L,
          "context-parallel ranks (between tp and dp in the rank order): each sequence is cut into "
          "2·cp chunks and rank r keeps chunks r and 2·cp−1−r (zig-zag: every rank gets the same share "
          "of the causal attention work); keys and values are all-gathered over the cp ranks for "
          "attention and their gradients reduce-scattered back. train.seq_len must be a multiple of 2·cp",
          at_least<long>(1));
  add_key(s, "parallel", "dp", p.dp, 0L, "data-parallel ranks; 0 = world size / (tp · cp)", at_least<long>(0));
  add_key(s, "parallel", "zero1", p.zero1, false,
          "ZeRO-1: each of the cp × dp ranks that hold the same weights keeps the AdamW moments of "
          "1/(cp·dp) of the parameters, updates those and all-gathers the rest (checkpoints stay the "
          "same format)");
  add_key(s, "parallel", "zero2", p.zero2, false,
          "ZeRO-2 (with zero1): the gradients are reduce-scattered instead of all-reduced, each of the cp × dp "
          "ranks receiving the sum of only the range whose moments it keeps, then the updated weights are "
          "all-gathered as with zero1: the traffic of one all-reduce instead of an all-reduce and an all-gather. "
          "The gradient arena stays whole on every rank (the micro-batches accumulate into it)");
  add_key(s, "parallel", "grad_bucket_mib", p.grad_bucket_mib, 0.0,
          "reduce the gradients over the cp × dp ranks in buckets of about this many MiB (whole parameters, "
          "from the last layer down), each started as soon as the last micro-batch's backward pass is done "
          "with it, so the reduction overlaps the rest of the backward (on GPUs on a second stream; on CPUs "
          "nonblocking MPI, which moves data when MPI is called). 0: one reduction after the backward",
          at_least<double>(0.0));
  add_choice_key(s, "parallel", "grad_reduce_dtype", p.grad_reduce_dtype, GradReduceDtype::kFp32,
                 "what the gradients are sent and summed in over the cp × dp ranks: fp32 (the reference: any "
                 "layout gives the losses of one rank to fp32 rounding), or bf16 (half the traffic: each rank's "
                 "gradients rounded to bf16, summed pairwise in bf16 as NCCL does, widened back to fp32 for the "
                 "optimizer; the result then depends on the layout by bf16 roundings, not fp32 ones). The tensor-"
                 "parallel partial sums stay fp32; with one replica nothing is rounded");
  add_key(s, "parallel", "sequence_parallel", p.sequence_parallel, false,
          "Megatron sequence parallelism (with tp > 1): the residual stream, norms and residual "
          "adds are split over the tp ranks by tokens (each keeps 1/tp of a micro-batch's tokens), "
          "the all-reduce after each row-parallel product becomes a reduce-scatter and the input of "
          "each column-parallel product is all-gathered. micro_batch · seq_len / cp must be a "
          "multiple of tp");
}

void add_data_keys(Schema& s, DataConfig& d) {
  section(s, "data", "Data [data]");
  add_key(s, "data", "train", d.train, std::string("data/shards/train.h5"),
          "training data written by prepare: a dataset directory (its dataset.json names the shards, read as one "
          "stream in the order it lists them), its dataset.json, or one shard file (train.h5)");
  add_key(s, "data", "val", d.val, std::string("data/shards/val.h5"),
          "held-out data written by prepare: a dataset directory (its val split), its dataset.json, or one shard file "
          "(val.h5)");
  add_key(s, "data", "mix", d.mix, std::string(""),
          "a mixture of datasets in place of data.train: NAME=PATH:WEIGHT,... (or PATH:WEIGHT, named by the "
          "path's last component), e.g. web=data/web:0.6,code=data/code:0.2,long=data/long:0.2; each window's "
          "source is drawn by weight, deterministically from (train.seed, sample index), and window i is "
          "window i of that source's stream (data.sampler applies to each); metrics.jsonl records "
          "tokens_by_source. Weights are normalised; all sources need one tokenizer. Empty = data.train alone");
  add_key(s, "data", "seed", d.seed, 1UL, "seed of the synthetic task mixer and of the sft example packing");
  add_choice_key(s, "data", "sampler", d.sampler, Sampler::kAuto,
                 "how training windows are cut: windows (fixed grid over the shard, documents may be cut "
                 "anywhere), documents (whole documents concatenated up to seq_len + 1, BOS-separated, "
                 "only the last one cut: long-context data), auto (extend: documents, pretrain: "
                 "windows); sft always packs prompt/response examples");
  add_key(s, "data", "synthetic_ratio", d.synthetic_ratio, 0.0,
          "pretrain/extend: share of windows that end with a synthetic retrieval example; "
          "sft: share of generated examples that are synthetic tasks (the rest are retrieval "
          "questions over corpus documents)",
          in_range(0.0, 1.0));
  add_key(s, "data", "synthetic_tasks", d.synthetic_tasks, std::string("kv,needle,vt"),
          "synthetic tasks, comma-separated: kv (key-value recall), needle (needle in text or "
          "noise), niah (the same needles in RULER's own words: evaluate's niah prompt and answer "
          "prefix, token for token), niah_keys (2-3 of those needles with distinct keys, RULER's question "
          "and answer prefix without the template's header, so that key matching fits short windows), "
          "niah_mix (RULER's eight niah tasks, one drawn per example: UUIDs, "
          "distractor keys, needle haystacks, several values or queries), vt (variable tracking), docqa (which word "
          "follows a phrase of the text), copy "
          "(the induction warm-up: repeat a random digit string), words (the same with distinct words, "
          "so induction is unambiguous), uuids (the same with RULER's UUIDs: hex letters, digits, dashes)",
          Check<std::string>(check_task_list));
  add_key(s, "data", "synthetic_min_len", d.synthetic_min_len, 96L,
          "smallest synthetic (and generated sft) example in tokens; sizes are uniform in "
          "[synthetic_min_len, seq_len + 1]",
          at_least<long>(16));
  add_choice_key(s, "data", "synthetic_loss", d.synthetic_loss, SyntheticLoss::kAnswer,
                 "loss on a synthetic example in pretrain/extend windows: answer (answer tokens and EOS "
                 "only) or all (every token)");
  add_key(s, "data", "warmup_tasks", d.warmup_tasks, std::string(""),
          "pretrain/extend: synthetic tasks of the first data.warmup_steps steps, in place of "
          "data.synthetic_tasks (a curriculum: e.g. words, the induction warm-up, before niah); "
          "empty = none",
          Check<std::string>(check_optional_task_list));
  add_key(s, "data", "warmup_steps", d.warmup_steps, 0L,
          "pretrain/extend: optimizer steps, counted from the start of this stage, whose synthetic "
          "examples come from data.warmup_tasks; extend inherits the checkpoint's value like every "
          "key, so an extension recipe sets 0 unless it wants a warm-up of its own",
          at_least<long>(0));
  add_key(s, "data", "warmup_max_len", d.warmup_max_len, 0L,
          "pretrain/extend: largest warm-up example in tokens at the start of the warm-up, growing "
          "linearly to the window (seq_len + 1) by its end (sizes uniform in [synthetic_min_len, "
          "that cap]), so the warm-up starts on short copies and ends on copies as long as the "
          "window; 0 = the window throughout",
          at_least<long>(0));
  add_key(s, "data", "sft_file", d.sft_file, std::string(""),
          "sft: JSONL file of {\"prompt\": ..., \"response\": ...} pairs; empty = only "
          "generated examples");
  add_key(s, "data", "sft_file_share", d.sft_file_share, 0.5,
          "sft: share of examples drawn from sft_file (the rest are generated); 1 = file only", in_range(0.0, 1.0));
  add_key(s, "data", "document_mask", d.document_mask, false,
          "pretrain/extend/sft: attend only within each document of a packed window (intra-document "
          "masking): a token sees the keys from its document's start, which is the window's first "
          "token or the latest BOS token (every document in a shard begins with one), on top of "
          "the causal mask and any sliding window. RoPE positions stay the global positions in "
          "the window, as in the second study's 64K recipe. Needs a tokenizer with a BOS token; "
          "evaluate and decoding never mask. Works under every layout (cp, tp, sequence "
          "parallelism) and on the GPU, where masked calls run on Headroom's own attention "
          "kernels rather than cuDNN's");
}

// "model.n_heads = 6 (config file x.ini)"
std::string shown(const Parsed& p, const std::string& key, const auto& value) {
  return cat(key, " = ", value, " (", origin_of(p, key), ")");
}

std::string model_problems(const ModelConfig& m, const Parsed& p, const TrainConfig* t) {
  std::string out;
  auto add = [&out](const std::string& s) { out += "\n  " + s; };
  if (m.n_kv_heads > 0 && m.n_heads % m.n_kv_heads != 0)
    add(cat(shown(p, "model.n_heads", m.n_heads), " is not a multiple of ",
            shown(p, "model.n_kv_heads", m.n_kv_heads)));
  const bool has_sliding = m.layer_pattern.find('S') != std::string::npos;
  const bool has_full = m.layer_pattern.find('F') != std::string::npos;
  for (const auto& [key, dims, used] : {std::tuple{"model.rope_dims_full", m.rope_dims_full, has_full},
                                        std::tuple{"model.rope_dims_swa", m.rope_dims_swa, has_sliding}}) {
    if (!used || dims < 0) continue;
    if (dims > m.head_dim_qk)
      add(cat(shown(p, key, dims), " exceeds ", shown(p, "model.head_dim_qk", m.head_dim_qk)));
    else if (dims % 2 != 0)
      add(cat(shown(p, key, dims), " must be even (RoPE rotates pairs of dimensions)"));
  }
  if (m.head_dim_qk % 2 != 0 && ((has_full && m.rope_dims_full < 0) || (has_sliding && m.rope_dims_swa < 0)))
    add(cat(shown(p, "model.head_dim_qk", m.head_dim_qk),
            " is odd, so RoPE over the whole head is impossible; set rope_dims_* to an even width"));
  if (m.rope_scaling == RopeScaling::kYarn && m.yarn_beta_fast <= m.yarn_beta_slow)
    add(cat(shown(p, "model.yarn_beta_fast", m.yarn_beta_fast), " must exceed ",
            shown(p, "model.yarn_beta_slow", m.yarn_beta_slow)));
  if (m.rope_scaling == RopeScaling::kLlama3 && m.llama3_high_freq_factor <= m.llama3_low_freq_factor)
    add(cat(shown(p, "model.llama3_high_freq_factor", m.llama3_high_freq_factor), " must exceed ",
            shown(p, "model.llama3_low_freq_factor", m.llama3_low_freq_factor)));
  if (t && has_sliding && m.window > t->seq_len)
    add(cat(shown(p, "model.window", m.window), " is longer than the sequence ", shown(p, "train.seq_len", t->seq_len),
            ": every sliding layer would be full attention"));
  return out;
}

std::string train_problems(const TrainConfig& t, const Parsed& p) {
  std::string out;
  auto add = [&out](const std::string& s) { out += "\n  " + s; };
  if (t.min_lr > t.lr) add(cat(shown(p, "train.min_lr", t.min_lr), " exceeds ", shown(p, "train.lr", t.lr)));
  if (t.micro_batch > t.global_batch)
    add(cat(shown(p, "train.micro_batch", t.micro_batch), " exceeds ", shown(p, "train.global_batch", t.global_batch)));
  if (t.schedule == Schedule::kWsd && t.decay_steps > t.steps)
    add(cat(shown(p, "train.decay_steps", t.decay_steps), " exceeds ", shown(p, "train.steps", t.steps)));
  return out;
}

}  // namespace

Schema make_schema(Config& cfg, unsigned sections) {
  Schema s;
  if (sections & kModel) add_model_keys(s, cfg.model);
  if (sections & kTrain) add_train_keys(s, cfg.train);
  if (sections & kData) add_data_keys(s, cfg.data);
  if (sections & kParallel) add_parallel_keys(s, cfg.parallel);
  return s;
}

void validate(const Config& cfg, unsigned sections, const Schema& schema, const Parsed& parsed) {
  check_keys(schema, parsed);
  std::string problems;
  if (sections & kModel) problems += model_problems(cfg.model, parsed, (sections & kTrain) ? &cfg.train : nullptr);
  if (sections & kTrain) problems += train_problems(cfg.train, parsed);
  if (!problems.empty()) fail("invalid configuration:", problems);
}

long rope_dims(const ModelConfig& m, bool sliding) {
  const long d = sliding ? m.rope_dims_swa : m.rope_dims_full;
  return d < 0 ? m.head_dim_qk : d;
}

Config make_config(unsigned sections, const std::vector<std::pair<std::string, std::string>>& keys,
                   const std::vector<IniText>& bases, std::string* ini) {
  Config cfg;
  const Schema schema = make_schema(cfg, sections);
  std::vector<std::string> args{"make_config"};
  for (const auto& [k, v] : keys) args.insert(args.end(), {"--" + k, v});
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const po::options_description none;
  const Parsed parsed = parse_config(static_cast<int>(argv.size()), argv.data(), none, schema, bases);
  validate(cfg, sections, schema, parsed);
  if (ini) *ini = to_ini(schema, false);
  return cfg;
}

}  // namespace headroom::config
