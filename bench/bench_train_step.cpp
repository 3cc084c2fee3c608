// Training-step benchmark on the fp32 CPU backend (not a test): tokens/s and model FLOP utilisation
// (MFU) of one full step — zero_grads, forward_backward, grad_norm, adamw_step (with clipping at
// 1.0) — against the OpenBLAS sgemm rate measured at the start of the same run.
//
//   bench_train_step [--torch] [--steps N] [--warmup N] [--shapes 8x64,4x128,1x512] [--breakdown]
//   bench_train_step --shape 8x64 [--sgemm GFLOPS] ...     (one shape, in this process)
//   bench_train_step --prefill 65536 [--chunk 256]         (KV-cache prefill time and memory)
//
// Model: vocab 8192, d_model 512, 4 layers, d_ff 1408 (SwiGLU), MHA (n_kv_heads = n_heads), pre-norm,
// full causal attention, RoPE on the whole head, untied embeddings; batch 8 × sequence 512 = 4096
// tokens per step. Shapes are heads × head width with heads · width = d_attn = 512.
//
// FLOP formula (model FLOPs: what the model needs, not what the kernels happen to do):
//
//   FLOPs per token = 6·N + 6·n_layers·n_heads·(dqk + dv)·(seq + 1)/2   (train/throughput.h, the
//                     trainer's own formula: ≈ 6·N + 6·n_layers·seq·d_attn for dqk = dv)
//
//   N       = parameters without the input embedding (every layer matrix, the norms and the
//             untied LM head; count_non_embedding), here 17,043,968.
//   6·N     = 2 (multiply-add) × 3 (forward, and two products in the backward) per weight.
//   6·L·T·d = causal attention: per layer and token, Q·Kᵀ and P·V cost 2·2·seq·d_attn FLOPs
//             without a mask, half of that under the causal mask, × 3 for forward + backward.
//             (The backward's recomputation of P is not counted.)
//   Here: 102.26 + 6.30 = 108.56 MFLOP per token, 444.7 GFLOP per 4096-token step, identical for
//   the three shapes (d_attn = 512 throughout).
//
// MFU = achieved FLOP/s (formula above / median step time) / sgemm rate. The sgemm rate is the best
// of several runs of the step's most common product, [4096×512]·[1408×512]ᵀ (x · W_gateᵀ), with the
// same threads, both through cblas_sgemm directly (OpenBLAS threading itself) and through the
// backend's matmul (the same sgemm, threaded by OpenMP); the better of the two, and the best over
// the parent's measurement and each child's (taken again after its steps), is the denominator: the
// machine's sgemm capacity, not whatever a noisy moment on a shared machine left. "MFU/cpu-s" is
// the same ratio per CPU-second of the process (FLOPs / CPU time of the step against sgemm's best
// FLOPs per CPU-second): insensitive to other processes taking the cores, for comparing runs.
//
// Each shape runs in a fresh child process (this program with --shape), so the peak RSS it reports
// (getrusage ru_maxrss) is that shape's alone. With --torch the PyTorch reference
// (bench/torch_train_step.py, run by /usr/bin/python3 with 2 threads) runs the same step for each
// shape right after ours and the ratio ours/torch of tokens/s is printed.
//
// --breakdown times every op of the backend (the model is given a copy of the CPU op table whose
// entries time the real ones): time per op kind and, for matmul, the achieved rate per product shape.
//
// Threads: OMP_NUM_THREADS (read by both OpenMP and OpenBLAS) — run with OMP_NUM_THREADS=2.
#include <omp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cblas.h>

#include "cpu/blas_kernels.h"
#include "config/keys.h"
#include "model/decode.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/params.h"
#include "ops.h"
#include "train/optimizer.h"
#include "train/throughput.h"
#include "util/error.h"

#ifndef HEADROOM_BENCH_DIR
#define HEADROOM_BENCH_DIR "bench"
#endif
#ifndef HEADROOM_BENCH_PYTHON
#define HEADROOM_BENCH_PYTHON "/usr/bin/python3"
#endif

extern "C" char* openblas_get_corename(void);
extern "C" char* openblas_get_config(void);

namespace {

using namespace headroom;

constexpr int64_t kVocab = 8192, kDModel = 512, kLayers = 4, kDff = 1408, kSeq = 512, kBatch = 8;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU seconds used by every thread of this process: next to wall time it shows time lost to
// spinning (cpu > threads × wall would be impossible; cpu ≈ threads × wall with a slow step means
// busy-waiting) or to other processes taking the cores (cpu well below threads × wall).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Busy CPU-seconds of the whole machine so far (all cores, all processes; /proc/stat). Minus this
// process's CPU time over an interval, it is what other processes took: the benchmark reports it,
// because on a shared machine it decides the figures more than anything measured here.
double machine_busy_seconds() {
  unsigned long long v[8] = {};
  if (FILE* f = std::fopen("/proc/stat", "r")) {
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                    &v[7]) != 8)
      v[0] = 0;
    std::fclose(f);
  }
  // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
  const unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return static_cast<double>(busy) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Peak resident set of this process so far, MiB.
// Resident set now, MiB.
double current_rss_mib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

struct HeadShape {
  long heads = 8, width = 64;
  std::string name() const { return std::to_string(heads) + "x" + std::to_string(width); }
};

HeadShape parse_shape(const std::string& s) {
  const auto x = s.find('x');
  if (x == std::string::npos) fail("shape '", s, "' is not HEADSxWIDTH (e.g. 8x64)");
  return {std::stol(s.substr(0, x)), std::stol(s.substr(x + 1))};
}

// The benchmark model through the real config schema (defaults for every key not named here, and
// the same validation an app applies).
config::ModelConfig bench_config(const HeadShape& h) {
  return config::make_config(config::kModel | config::kTrain,
                             {
                                 {"model.vocab_size", std::to_string(kVocab)},
                                 {"model.d_model", std::to_string(kDModel)},
                                 {"model.n_layers", std::to_string(kLayers)},
                                 {"model.d_ff", std::to_string(kDff)},
                                 {"model.n_heads", std::to_string(h.heads)},
                                 {"model.n_kv_heads", std::to_string(h.heads)},
                                 {"model.head_dim_qk", std::to_string(h.width)},
                                 {"model.head_dim_v", std::to_string(h.width)},
                                 {"model.qk_norm", "none"},
                                 {"model.norm_order", "pre"},
                                 {"model.layer_pattern", "F"},
                                 {"model.tie_embeddings", "false"},
                                 {"train.seq_len", std::to_string(kSeq)},
                             })
      .model;
}

// ------------------------------------------------------------------------------------------------
// sgemm rate

std::vector<float> filled(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / 16777216.f - 0.5f;
  }
  return v;
}

// Best rate of `reps` runs of C[M,N] = op(A)·op(B) (row-major), by wall time and per CPU-second of
// the process, either through cblas_sgemm directly (OpenBLAS's own threading) or through the
// backend's matmul (the same sgemm, threaded the way the model's products are).
struct Rate {
  double gflops = 0, gflops_per_cpu_s = 0;
};

Rate gemm_rate(bool backend, int64_t M, int64_t N, int64_t K, bool ta, bool tb, int reps) {
  const auto A = filled(M * K, 1), B = filled(K * N, 2);
  std::vector<float> C(static_cast<size_t>(M * N));
  Rate best;
  const double flop = 2.0 * static_cast<double>(M * N * K);
  for (int r = 0; r < reps; ++r) {
    const double t0 = now(), c0 = cpu_seconds();
    if (backend)
      kernels::cpu_ops().matmul(A.data(), B.data(), C.data(), M, N, K, ta, tb, false);
    else
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                  static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), 1.f, A.data(),
                  static_cast<blasint>(ta ? M : K), B.data(), static_cast<blasint>(tb ? K : N), 0.f, C.data(),
                  static_cast<blasint>(N));
    const double dt = now() - t0, dc = cpu_seconds() - c0;
    best.gflops = std::max(best.gflops, flop / dt / 1e9);
    if (dc > 0) best.gflops_per_cpu_s = std::max(best.gflops_per_cpu_s, flop / dc / 1e9);
  }
  return best;
}

// The reference rate: the step's most common product, [4096×512]·[1408×512]ᵀ (x·W_gateᵀ), the
// better of plain cblas_sgemm and the backend's matmul.
struct SgemmRates {
  Rate plain, backend;
  double best() const { return std::max(plain.gflops, backend.gflops); }
  double best_per_cpu_s() const { return std::max(plain.gflops_per_cpu_s, backend.gflops_per_cpu_s); }
};

SgemmRates measure_sgemm(int reps) {
  SgemmRates r;
  // Interleaved, so that a noisy moment on a shared machine does not hit only one of them.
  for (int i = 0; i < reps; ++i) {
    const Rate p = gemm_rate(false, kBatch * kSeq, kDff, kDModel, false, true, 1);
    const Rate b = gemm_rate(true, kBatch * kSeq, kDff, kDModel, false, true, 1);
    r.plain.gflops = std::max(r.plain.gflops, p.gflops);
    r.plain.gflops_per_cpu_s = std::max(r.plain.gflops_per_cpu_s, p.gflops_per_cpu_s);
    r.backend.gflops = std::max(r.backend.gflops, b.gflops);
    r.backend.gflops_per_cpu_s = std::max(r.backend.gflops_per_cpu_s, b.gflops_per_cpu_s);
  }
  return r;
}

// ------------------------------------------------------------------------------------------------
// --breakdown: a copy of the CPU op table whose entries time the real ones. Every entry the model
// calls is wrapped (a variant — the stored GEMMs, the norm and SwiGLU writing a stored copy, RoPE
// into the attention's operand precision, the attention on those operands — counts under its op's
// name), so the ops' sum is the step less the model's own host code.

enum OpId : int {
  kFill,
  kCopy,
  kWeightStore,
  kMatmul,
  kAxpy,
  kAdd,
  kScale,
  kSumSquares,
  kCountNonfinite,
  kEmbFwd,
  kEmbBwd,
  kRowSumsq,
  kRmsApply,
  kAddRmsNorm,
  kRmsBwdDot,
  kRmsBwdApply,
  kRmsBwd,
  kRope,
  kAttnFwd,
  kAttnBwd,
  kSwigluFwd,
  kSwigluBwd,
  kCrossEntropy,
  kAdamw,
  kNumOps
};
const char* const kOpNames[kNumOps] = {
    "fill",          "copy",          "weight_store",    "matmul",        "axpy",          "add",
    "scale",         "sum_squares",   "count_nonfinite", "embedding_fwd", "embedding_bwd", "row_sumsq",
    "rms_apply",     "add_rms_norm",  "rms_bwd_dot",     "rms_bwd_apply", "rms_bwd",       "rope",
    "attention_fwd", "attention_bwd", "swiglu_fwd",      "swiglu_bwd",    "cross_entropy", "adamw"};

struct OpStats {
  double seconds[kNumOps] = {};
  double cpu[kNumOps] = {};
  long calls[kNumOps] = {};
  // matmul by (M, N, K, trans_a, trans_b): seconds, calls
  struct Gemm {
    double seconds = 0, cpu = 0;
    long calls = 0;
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool>, Gemm> gemm;
  bool on = false;
};
OpStats g_stats;

template <int Id, class F>
struct Timed;
template <int Id, class R, class... A>
struct Timed<Id, R (*)(A...)> {
  static inline R (*real)(A...) = nullptr;
  static R call(A... a) {
    const double t0 = now(), c0 = cpu_seconds();
    if constexpr (std::is_void_v<R>) {
      real(a...);
      record(now() - t0, cpu_seconds() - c0, a...);
    } else {
      R r = real(a...);
      record(now() - t0, cpu_seconds() - c0, a...);
      return r;
    }
  }
  static void record(double dt, double dc, A... a) {
    if (!g_stats.on) return;
    g_stats.seconds[Id] += dt;
    g_stats.cpu[Id] += dc;
    ++g_stats.calls[Id];
    if constexpr (Id == kMatmul) {  // matmul and its stored variants: (A, B, C, M, N, K, trans_a, trans_b, acc)
      const auto t = std::forward_as_tuple(a...);
      auto& e = g_stats.gemm[{std::get<3>(t), std::get<4>(t), std::get<5>(t), std::get<6>(t), std::get<7>(t)}];
      e.seconds += dt;
      e.cpu += dc;
      ++e.calls;
    }
  }
};

template <int Id, class F>
void wrap(F& slot) {
  Timed<Id, F>::real = slot;
  slot = &Timed<Id, F>::call;
}

const kernels::Ops& timed_cpu_ops() {
  static const kernels::Ops table = [] {
    kernels::Ops t = kernels::cpu_ops();
    wrap<kFill>(t.fill);
    wrap<kCopy>(t.copy);
    wrap<kWeightStore>(t.weight_store);
    wrap<kWeightStore>(t.weight_store_columns);
    wrap<kMatmul>(t.matmul);
    wrap<kMatmul>(t.matmul_stored);
    wrap<kMatmul>(t.matmul_both_stored);
    wrap<kMatmul>(t.matmul_to_stored);
    wrap<kAxpy>(t.axpy);
    wrap<kAdd>(t.add);
    wrap<kScale>(t.scale);
    wrap<kSumSquares>(t.sum_squares);
    wrap<kCountNonfinite>(t.count_nonfinite);
    wrap<kEmbFwd>(t.embedding_fwd);
    wrap<kEmbBwd>(t.embedding_bwd);
    wrap<kRowSumsq>(t.row_sumsq);
    wrap<kRmsApply>(t.rms_apply);
    wrap<kAddRmsNorm>(t.add_rms_norm);
    wrap<kAddRmsNorm>(t.add_rms_norm_stored);
    wrap<kRmsBwdDot>(t.rms_bwd_dot);
    wrap<kRmsBwdApply>(t.rms_bwd_apply);
    wrap<kRmsBwd>(t.rms_bwd);
    wrap<kRope>(t.rope);
    wrap<kRope>(t.rope_grad_stored);
    wrap<kRope>(t.rope_operand);
    wrap<kRope>(t.rms_rope_operand);  // a QK norm's apply on RoPE's way counts as RoPE
    wrap<kAttnFwd>(t.attention_fwd);
    wrap<kAttnFwd>(t.attention_fwd_cached);
    wrap<kAttnBwd>(t.attention_bwd);
    wrap<kAttnBwd>(t.attention_bwd_cached);
    wrap<kSwigluFwd>(t.swiglu_fwd);
    wrap<kSwigluFwd>(t.swiglu_fwd_stored);
    wrap<kSwigluBwd>(t.swiglu_bwd);
    wrap<kSwigluBwd>(t.swiglu_bwd_stored);
    wrap<kCrossEntropy>(t.cross_entropy);
    wrap<kAdamw>(t.adamw);
    return t;
  }();
  return table;
}

void print_breakdown(double step_seconds, int steps) {
  double total = 0;
  for (int i = 0; i < kNumOps; ++i) total += g_stats.seconds[i];
  std::printf("  breakdown per step (ops timed individually; %d steps):\n", steps);
  std::vector<int> order(kNumOps);
  for (int i = 0; i < kNumOps; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [](int a, int b) { return g_stats.seconds[a] > g_stats.seconds[b]; });
  for (int i : order) {
    if (g_stats.calls[i] == 0) continue;
    const double s = g_stats.seconds[i] / steps;
    std::printf("    %-16s %8.3f s  %5.1f%%  cpu %7.3f s  (%ld calls)\n", kOpNames[i], s, 100.0 * s / step_seconds,
                g_stats.cpu[i] / steps, g_stats.calls[i] / steps);
  }
  std::printf("    %-16s %8.3f s  %5.1f%%\n", "(outside ops)", step_seconds - total / steps,
              100.0 * (step_seconds - total / steps) / step_seconds);
  std::printf(
      "  matmul by shape (M N K trans_a trans_b, calls per step: s/step, GFLOP/s, "
      "GFLOP per cpu-s):\n");
  for (const auto& [k, v] : g_stats.gemm) {
    const auto [M, N, K, ta, tb] = k;
    const double flop = 2.0 * static_cast<double>(M * N * K) * static_cast<double>(v.calls);
    std::printf("    %6" PRId64 " %6" PRId64 " %6" PRId64 " %d %d  x%-4ld %7.3f s  %6.1f GFLOP/s  %6.1f\n", M, N, K, ta,
                tb, v.calls / steps, v.seconds / steps, flop / v.seconds / 1e9, flop / v.cpu / 1e9);
  }
}

// ------------------------------------------------------------------------------------------------
// One shape, in this process.

struct Options {
  int steps = 4, warmup = 1, reps = 8, probe_reps = 2;
  bool breakdown = false, torch = false;
  double sgemm = 0;  // GFLOP/s passed in by the parent; measured here when 0
  std::vector<HeadShape> shapes{{8, 64}, {4, 128}, {1, 512}};
  std::string torch_script = std::string(HEADROOM_BENCH_DIR) + "/torch_train_step.py";
  std::string python = HEADROOM_BENCH_PYTHON;
  int64_t prefill = 0, chunk = 256;
};

int run_shape(const HeadShape& hs, const Options& o) {
  const config::ModelConfig cfg = bench_config(hs);
  const kernels::Ops& ops = o.breakdown ? timed_cpu_ops() : kernels::cpu_ops();
  model::Model<float> m = model::make_model(cfg, ops);
  model::Activations<float> a = model::make_activations(m, kBatch, kSeq);
  train::AdamW<float> opt = train::make_adamw(m, train::AdamWConfig{});
  const double fpt = train::flops_per_token(cfg, kSeq);
  const int64_t BT = kBatch * kSeq;

  // Random tokens; targets are the next token of the same stream.
  std::vector<int32_t> ids(static_cast<size_t>(BT)), targets(static_cast<size_t>(BT));
  uint64_t s = 12345;
  std::vector<int32_t> stream(static_cast<size_t>(kBatch * (kSeq + 1)));
  for (auto& t : stream) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t = static_cast<int32_t>((s >> 33) % kVocab);
  }
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t t = 0; t < kSeq; ++t) {
      ids[static_cast<size_t>(b * kSeq + t)] = stream[static_cast<size_t>(b * (kSeq + 1) + t)];
      targets[static_cast<size_t>(b * kSeq + t)] = stream[static_cast<size_t>(b * (kSeq + 1) + t + 1)];
    }

  double loss = 0;
  auto step = [&] {
    model::zero_grads(m);
    const model::LossSum l = model::forward_backward(m, a, ids.data(), targets.data(), 1.0f / static_cast<float>(BT));
    const double norm = train::grad_norm(m, opt);
    train::adamw_step(m, opt, 1e-4, train::clip_scale(norm, 1.0));
    loss = l.sum / static_cast<double>(l.count);
  };
  std::printf("shape %s: n_params %" PRId64 ", N (non-embedding) %" PRId64
              ", %.2f MFLOP/token, activations %.0f MiB, params+grads+AdamW %.0f MiB\n",
              hs.name().c_str(), m.n_params, model::count_non_embedding(m.specs), fpt / 1e6,
              static_cast<double>(a.arena.size()) * 4 / 1048576.0, static_cast<double>(m.n_params) * 16 / 1048576.0);
  std::fflush(stdout);
  for (int i = 0; i < o.warmup; ++i) {
    const double t0 = now();
    step();
    std::printf("  warm-up step %d: %.3f s, loss %.4f\n", i + 1, now() - t0, loss);
    std::fflush(stdout);
  }
  // Each timed step is bracketed by sgemm probes (best of a few runs each): on a shared machine
  // the capacity drifts, and a step is best compared with the sgemm rate of its own moment.
  std::vector<SgemmRates> probes{measure_sgemm(o.probe_reps)};
  std::vector<double> times, cpus, mfus, others;
  const double step_flop = static_cast<double>(BT) * fpt;
  const double cores = static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
  for (int i = 0; i < o.steps; ++i) {
    g_stats.on = true;
    const double t0 = now(), c0 = cpu_seconds(), b0 = machine_busy_seconds();
    step();
    times.push_back(now() - t0);
    cpus.push_back(cpu_seconds() - c0);
    others.push_back(std::max(0.0, machine_busy_seconds() - b0 - cpus.back()) / (cores * times.back()));
    g_stats.on = false;
    probes.push_back(measure_sgemm(o.probe_reps));
    const double around = 0.5 * (probes[static_cast<size_t>(i)].best() + probes.back().best());
    mfus.push_back(step_flop / times.back() / 1e9 / around);
    std::printf(
        "  step %d: %.3f s (cpu %.3f s; other processes %.0f%% of the cores), loss %.4f, "
        "%.1f GFLOP/s, sgemm around it %.1f GFLOP/s, MFU %.1f%%\n",
        i + 1, times.back(), cpus.back(), 100.0 * others.back(), loss, step_flop / times.back() / 1e9, around,
        100.0 * mfus.back());
    std::fflush(stdout);
  }
  const double med = median(times), med_cpu = median(cpus), mfu = median(mfus);
  double best_sgemm = o.sgemm, best_sgemm_cpu = 0;
  for (const auto& p : probes) {
    best_sgemm = std::max(best_sgemm, p.best());
    best_sgemm_cpu = std::max(best_sgemm_cpu, p.best_per_cpu_s());
  }
  const double tok_s = static_cast<double>(BT) / med;
  const double gflops = tok_s * fpt / 1e9;
  const double gflops_cpu = step_flop / med_cpu / 1e9;
  const double rss = peak_rss_mib();
  std::printf(
      "  %s: median step %.3f s (cpu %.3f s), %.0f tokens/s, %.1f GFLOP/s; MFU %.1f%% "
      "(median over steps against the sgemm rate measured around each); %.1f%% of the "
      "best sgemm rate seen, %.1f GFLOP/s; per cpu-second %.1f%% of sgemm's; peak RSS "
      "%.0f MiB\n",
      hs.name().c_str(), med, med_cpu, tok_s, gflops, 100.0 * mfu, 100.0 * gflops / best_sgemm, best_sgemm,
      100.0 * gflops_cpu / best_sgemm_cpu, rss);
  if (o.breakdown) print_breakdown(med, o.steps);
  std::printf(
      "  other processes used %.0f%% of the cores during the median step (%.0f%% .. %.0f%% "
      "over the steps)\n",
      100.0 * median(others), 100.0 * *std::min_element(others.begin(), others.end()),
      100.0 * *std::max_element(others.begin(), others.end()));
  std::printf(
      "RESULT impl=ours shape=%s tok_s=%.3f gflops=%.4f mfu=%.5f sgemm=%.4f step_s=%.5f "
      "cpu_s=%.5f gflops_cpu=%.4f sgemm_cpu=%.4f others=%.4f rss_mib=%.1f\n",
      hs.name().c_str(), tok_s, gflops, mfu, best_sgemm, med, med_cpu, gflops_cpu, best_sgemm_cpu, median(others), rss);
  std::fflush(stdout);
  return 0;
}

// ------------------------------------------------------------------------------------------------
// --prefill N

int run_prefill(const Options& o) {
  const HeadShape hs{8, 64};
  const config::ModelConfig cfg = bench_config(hs);
  const kernels::Ops& ops = o.breakdown ? timed_cpu_ops() : kernels::cpu_ops();
  model::Model<float> m = model::make_model(cfg, ops);
  const double after_model = current_rss_mib();
  const int64_t n = o.prefill;
  model::KvCache<float> cache = model::make_kv_cache(m, n, o.chunk);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  uint64_t s = 777;
  for (auto& t : tokens) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t = static_cast<int32_t>((s >> 33) % kVocab);
  }
  const double kv_mib = static_cast<double>(cfg.n_layers) * n *
                        static_cast<double>(config::k_width(cfg) + config::v_width(cfg)) * sizeof(float) / 1048576.0;
  const double chunk_mib = static_cast<double>(cache.chunk.arena.size()) * 4 / 1048576.0;
  // The sgemm rate before and after, the better of the two: the prefill's time against the time
  // its FLOPs would take at that rate (docs/performance.md's "sgemm-limited time").
  const SgemmRates before = measure_sgemm(o.probe_reps);
  g_stats.on = true;
  const double t0 = now(), c0 = cpu_seconds(), b0 = machine_busy_seconds();
  const std::vector<float> last = model::prefill(m, cache, tokens.data(), n);
  const double dt = now() - t0, dc = cpu_seconds() - c0;
  const double others =
      std::max(0.0, machine_busy_seconds() - b0 - dc) / (static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)) * dt);
  g_stats.on = false;
  // Read before the second sgemm probe, whose operands would sit on top of the KV cache.
  const double rss = peak_rss_mib();
  const double sgemm = std::max(before.best(), measure_sgemm(o.probe_reps).best());
  const double attn_flops = train::attention_forward_flops(cfg, n);
  const double dense_flops =
      2.0 * static_cast<double>(model::count_non_embedding(m.specs) - cfg.vocab_size * cfg.d_model) * n;
  std::printf("prefill %" PRId64 " tokens (d_model %ld, %ld layers, %ldx%ld heads, chunk %" PRId64
              "): %.2f s (cpu %.1f s; other processes used %.0f%% of the cores), %.0f tokens/s, "
              "%.1f GFLOP/s (dense %.0f + attention %.0f GFLOP; LM head on the last token of each "
              "chunk only)\n",
              n, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.head_dim_qk, cache.chunk_len, dt, dc, 100.0 * others,
              static_cast<double>(n) / dt, (attn_flops + dense_flops) / dt / 1e9, dense_flops / 1e9, attn_flops / 1e9);
  std::printf(
      "  peak RSS %.0f MiB = resident before the cache (model params + grads, runtime) %.0f "
      "MiB + KV cache %.0f MiB (%ld layers × %" PRId64 " positions × %" PRId64
      " floats of K and V) + %.0f MiB rest "
      "(chunk activations %.1f MiB, RoPE tables, OpenBLAS buffers, attention scratch)\n",
      rss, after_model, kv_mib, cfg.n_layers, n, config::k_width(cfg) + config::v_width(cfg),
      rss - after_model - kv_mib, chunk_mib);
  const double sgemm_limited = (attn_flops + dense_flops) / (sgemm * 1e9);
  std::printf(
      "  sgemm %.1f GFLOP/s (best of before and after): those FLOPs would take %.1f s at its rate; "
      "the prefill took %.2fx that\n",
      sgemm, sgemm_limited, dt / sgemm_limited);
  std::printf("  last-token logit[0] %.5f\n", static_cast<double>(last[0]));
  if (o.breakdown) print_breakdown(dt, 1);
  std::printf("RESULT impl=prefill n=%" PRId64
              " seconds=%.3f cpu_s=%.3f others=%.4f rss_mib=%.1f "
              "kv_mib=%.1f model_mib=%.1f sgemm=%.2f over_sgemm=%.4f\n",
              n, dt, dc, others, rss, kv_mib, after_model, sgemm, dt / sgemm_limited);
  return 0;
}

// ------------------------------------------------------------------------------------------------
// Parent: sgemm once, then each shape (and torch) in child processes.

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) fail("cannot read /proc/self/exe");
  buf[n] = 0;
  return buf;
}

// Runs a command, echoing its output indented; returns the key=value pairs of its RESULT line.
std::map<std::string, std::string> run_child(const std::string& cmd) {
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) fail("cannot run ", cmd);
  std::map<std::string, std::string> kv;
  char line[8192];
  while (std::fgets(line, sizeof(line), p)) {
    std::fputs(line, stdout);
    std::fflush(stdout);
    if (std::strncmp(line, "RESULT ", 7) == 0) {
      std::istringstream in(line + 7);
      std::string tok;
      while (in >> tok) {
        const auto eq = tok.find('=');
        if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
      }
    }
  }
  const int rc = pclose(p);
  if (rc != 0) std::printf("  (command exited with status %d: %s)\n", rc, cmd.c_str());
  return kv;
}

double num(const std::map<std::string, std::string>& kv, const char* key) {
  const auto it = kv.find(key);
  return it == kv.end() ? 0.0 : std::atof(it->second.c_str());
}

int run_all(const Options& o) {
  const config::ModelConfig c0 = bench_config(o.shapes.front());
  const auto specs = model::param_specs(c0);
  std::printf(
      "bench_train_step: OpenMP threads %d, OpenBLAS %s(core %s, %d threads), "
      "OPENBLAS_CORETYPE=%s\n",
      omp_get_max_threads(), openblas_get_config(), openblas_get_corename(), openblas_get_num_threads(),
      std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)");
  std::printf("model: vocab %" PRId64 ", d_model %" PRId64 ", %" PRId64 " layers, d_ff %" PRId64
              ", MHA, pre-norm, full causal attention, untied; batch %" PRId64 " x seq %" PRId64 "\n",
              kVocab, kDModel, kLayers, kDff, kBatch, kSeq);
  std::printf("FLOPs/token = 6*N + 6*n_layers*n_heads*(dqk+dv)*(seq+1)/2 = 6*%" PRId64 " + 6*%" PRId64
              "*%ld*%ld*%" PRId64 "/2 = %.2f MFLOP (N = params without the input embedding; train/throughput.h)\n",
              model::count_non_embedding(specs), kLayers, c0.n_heads, c0.head_dim_qk + c0.head_dim_v, kSeq + 1,
              train::flops_per_token(c0, kSeq) / 1e6);
  const SgemmRates rates = measure_sgemm(o.reps);
  double sgemm = std::max(o.sgemm, rates.best());
  std::printf("sgemm rate: %.1f GFLOP/s = best of %d runs of [%" PRId64 "x%" PRId64 "]·[%" PRId64 "x%" PRId64
              "]ᵀ: cblas_sgemm %.1f, backend matmul %.1f GFLOP/s (per cpu-second "
              "%.1f / %.1f)\n",
              sgemm, o.reps, kBatch * kSeq, kDModel, kDff, kDModel, rates.plain.gflops, rates.backend.gflops,
              rates.plain.gflops_per_cpu_s, rates.backend.gflops_per_cpu_s);
  // The other orientations the step uses, for information (weight gradients: long K).
  std::printf(
      "  for information, cblas / backend: NN %.1f / %.1f, TN (weight gradient, K = 4096) "
      "%.1f / %.1f GFLOP/s\n",
      gemm_rate(false, kBatch * kSeq, kDModel, kDff, false, false, 3).gflops,
      gemm_rate(true, kBatch * kSeq, kDModel, kDff, false, false, 3).gflops,
      gemm_rate(false, kDff, kDModel, kBatch * kSeq, true, false, 3).gflops,
      gemm_rate(true, kDff, kDModel, kBatch * kSeq, true, false, 3).gflops);
  std::fflush(stdout);

  const std::string self = quote(self_path());
  struct Row {
    std::string shape;
    std::map<std::string, std::string> ours, torch;
  };
  std::vector<Row> rows;
  char sg[64];
  std::snprintf(sg, sizeof sg, "%.4f", sgemm);
  for (const auto& hs : o.shapes) {
    Row r{hs.name(), {}, {}};
    std::string cmd = self + " --shape " + hs.name() + " --sgemm " + sg + " --steps " + std::to_string(o.steps) +
                      " --warmup " + std::to_string(o.warmup) + (o.breakdown ? " --breakdown" : "");
    r.ours = run_child(cmd);
    if (o.torch) {
      std::string tcmd = quote(o.python) + " " + quote(o.torch_script) + " --shape " + hs.name() + " --sgemm-ours " +
                         sg + " --steps " + std::to_string(o.steps) + " --warmup " +
                         std::to_string(std::min(o.warmup, 1));
      r.torch = run_child(tcmd);
    }
    rows.push_back(r);
  }

  for (const auto& r : rows) sgemm = std::max(sgemm, num(r.ours, "sgemm"));
  std::printf(
      "\nsummary (medians of %d timed steps per shape). MFU: each step against the sgemm "
      "rate measured just before and after it, median over steps; MFU(best): median "
      "tokens/s against the best sgemm rate of the whole run, %.1f GFLOP/s; others: share "
      "of the cores other processes used during the median step\n",
      o.steps, sgemm);
  std::printf("  shape   tokens/s  GFLOP/s    MFU  MFU(best)  peak RSS MiB  others");
  if (o.torch) std::printf(" | torch tok/s  GFLOP/s    MFU  MFU(best)  peak RSS MiB  others | ours/torch");
  std::printf("\n");
  double base_tok = 0;
  for (const auto& r : rows) {
    const double tok = num(r.ours, "tok_s"), gf = num(r.ours, "gflops");
    if (r.shape == "8x64") base_tok = tok;
    std::printf("  %-6s %9.0f %8.1f %5.1f%% %9.1f%% %13.0f %6.0f%%", r.shape.c_str(), tok, gf, 100 * num(r.ours, "mfu"),
                100 * gf / sgemm, num(r.ours, "rss_mib"), 100 * num(r.ours, "others"));
    if (o.torch) {
      const double ttok = num(r.torch, "tok_s"), tgf = num(r.torch, "gflops");
      std::printf(" | %11.0f %8.1f %5.1f%% %9.1f%% %13.0f %6.0f%% | %9.2f", ttok, tgf, 100 * num(r.torch, "mfu"),
                  100 * tgf / sgemm, num(r.torch, "rss_mib"), 100 * num(r.torch, "others"),
                  ttok > 0 ? tok / ttok : 0.0);
    }
    std::printf("\n");
  }
  for (const auto& r : rows)
    if (r.shape == "1x512" && base_tok > 0)
      std::printf("  1x512 vs 8x64: %.1f%% slower per token (target: at most 15%%)\n",
                  100.0 * (base_tok / num(r.ours, "tok_s") - 1.0));
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_train_step [--torch] [--steps N] [--warmup N] [--reps N] "
               "[--shapes 8x64,4x128,1x512] [--breakdown] [--sgemm GFLOPS]\n"
               "       bench_train_step --shape HxW [...]      one shape in this process\n"
               "       bench_train_step --prefill N [--chunk C]\n"
               "       [--torch-script PATH] [--python PATH]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  kernels::cpu::use_native_blas_kernels(argv);
  Options o;
  std::string one_shape;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail("missing value after ", a);
      return argv[++i];
    };
    if (a == "--shape")
      one_shape = value();
    else if (a == "--shapes") {
      o.shapes.clear();
      std::stringstream ss(value());
      std::string s;
      while (std::getline(ss, s, ',')) o.shapes.push_back(parse_shape(s));
    } else if (a == "--steps")
      o.steps = std::stoi(value());
    else if (a == "--warmup")
      o.warmup = std::stoi(value());
    else if (a == "--reps")
      o.reps = std::stoi(value());
    else if (a == "--sgemm")
      o.sgemm = std::stod(value());
    else if (a == "--breakdown")
      o.breakdown = true;
    else if (a == "--torch")
      o.torch = true;
    else if (a == "--torch-script")
      o.torch_script = value();
    else if (a == "--python")
      o.python = value();
    else if (a == "--prefill")
      o.prefill = std::stoll(value());
    else if (a == "--chunk")
      o.chunk = std::stoll(value());
    else
      return usage();
  }
  if (o.steps < 1 || o.warmup < 0) return usage();
  if (o.prefill > 0) return run_prefill(o);
  if (!one_shape.empty()) return run_shape(parse_shape(one_shape), o);
  return run_all(o);
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_train_step: %s\n", e.what());
  return 1;
}
