// bench_attention: the CPU attention kernels' rate against the sgemm rate of the same run (figures,
// not a test).
//
//   bench_attention [--shapes T:H:D,...] [--reps N] [--window W]
//   bench_attention --decode 4096,16384,65536 [--heads 8] [--width 64] [--reps N]
//
// A shape is sequence length T (queries = keys), H heads (MHA) of width D (= dqk = dv); batch 1 when
// T >= 1024, else enough rows that the call holds 256K tokens·heads. Default shapes: the toy models
// (128:4:8, 128:4:32), then 4096 and 65536 tokens at widths 64, 128 and 512.
//
// FLOPs are model FLOPs of causal attention (what the model needs, not what a kernel computes), as
// the trainer counts them: forward 2·(dqk + dv)·P per head (QKᵀ and P·V), backward twice that
// (its recomputation of P not counted), with P the visible (query, key) pairs: T·(T+1)/2 under the
// causal mask, fewer under a window.
//
// Two reference rates, each the best of --reps runs in the same process and threads:
//   sgemm   a large product, [4096×512]·[512×4096]: what the machine's sgemm can do, measured
//           before the first shape and after each, a row taking the better of the two around it;
//   shaped  the attention's own products as one sgemm per head, [T×D]·[D×T] (QKᵀ of the whole
//           head, no mask), for shapes whose score matrix fits 256 MiB: the rate a plain GEMM
//           reaches at that width ("no slower than a GEMM of the same FLOPs" for the toy widths).
//
// --decode: one decoding step's attention (one new query per head against N cached keys, batch 1),
// the part of a generated token's time that grows with the context. Its figure is the time to read
// that layer's KV cache once (K and V, N·H·2·width floats; a vectorised sum over the same buffers,
// best of --reps, so from wherever they sit: L3 at 4K, memory beyond) over the step's time: 100%
// would be a step limited by reading the cache and nothing else.
// Threads: OMP_NUM_THREADS (OpenMP and OpenBLAS).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cblas.h>

#include "ops.h"
#include "util/error.h"

extern "C" char* openblas_get_corename(void);

namespace {

using namespace headroom;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::vector<float> filled(int64_t n, uint32_t seed, float amplitude) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = amplitude * (static_cast<float>(s >> 8) / 16777216.f - 0.5f);
  }
  return v;
}

struct Shape {
  int64_t T, H, D;
};

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < list.size()) {
    const size_t end = std::min(list.find(',', pos), list.size());
    out.push_back(list.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::vector<Shape> parse_shapes(const std::string& list) {
  std::vector<Shape> out;
  for (const std::string& item : split_commas(list)) {
    Shape s{};
    if (std::sscanf(item.c_str(), "%ld:%ld:%ld", &s.T, &s.H, &s.D) != 3 || s.T <= 0 || s.H <= 0 || s.D <= 0)
      fail("bench_attention: shape '", item, "' is not T:H:D with positive sizes");
    out.push_back(s);
  }
  return out;
}

// Best GFLOP/s of `reps` runs of `body`, which does `flop` FLOPs.
template <class F>
double best_rate(int reps, double flop, F&& body) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    body();
    best = std::max(best, flop / (now() - t0) / 1e9);
  }
  return best;
}

double sgemm_rate(int64_t M, int64_t N, int64_t K, int64_t batch, int reps) {
  const auto A = filled(batch * M * K, 1, 1.f), B = filled(batch * K * N, 2, 1.f);
  std::vector<float> C(static_cast<size_t>(M * N));
  return best_rate(reps, 2.0 * static_cast<double>(batch * M * N * K), [&] {
    for (int64_t b = 0; b < batch; ++b)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(M), static_cast<blasint>(N),
                  static_cast<blasint>(K), 1.f, A.data() + b * M * K, static_cast<blasint>(K), B.data() + b * K * N,
                  static_cast<blasint>(K), 0.f, C.data(), static_cast<blasint>(N));
  });
}

// Visible (query, key) pairs of one head.
double visible_pairs(int64_t T, int64_t window) {
  double pairs = 0;
  for (int64_t t = 0; t < T; ++t) pairs += static_cast<double>(window > 0 ? std::min(t + 1, window) : t + 1);
  return pairs;
}

// Seconds to read n floats once (the best of reps), and their sum so the reads cannot be dropped.
double read_seconds(const std::vector<float>& a, const std::vector<float>& b, int reps, double& sink) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    double total = 0;
    for (const std::vector<float>* buf : {&a, &b}) {
      const float* x = buf->data();
      const int64_t n = static_cast<int64_t>(buf->size());
#pragma omp parallel for reduction(+ : total)
      for (int64_t i0 = 0; i0 < n; i0 += 4096) {
        float part = 0.f;
        const int64_t i1 = std::min(n, i0 + 4096);
#pragma omp simd reduction(+ : part)
        for (int64_t i = i0; i < i1; ++i) part += x[i];
        total += part;
      }
    }
    best = std::min(best, now() - t0);
    sink += total;
  }
  return best;
}

void decode(const std::string& lengths, int64_t H, int64_t D, int reps) {
  const kernels::Ops& ops = kernels::cpu_ops();
  std::printf("bench_attention --decode: %d threads, OpenBLAS %s kernels, %ld heads of width %ld, batch 1\n",
              omp_get_max_threads(), openblas_get_corename(), static_cast<long>(H), static_cast<long>(D));
  std::printf("%7s | %9s %10s | %9s %7s | %6s\n", "N", "KV MiB", "step ms", "read ms", "GB/s", "read/step");
  double sink = 0;
  for (const std::string& item : split_commas(lengths)) {
    const int64_t N = std::atol(item.c_str());
    if (N <= 0) fail("bench_attention: --decode length '", item, "' is not a positive integer");
    const auto k = filled(N * H * D, 4, 2.f), v = filled(N * H * D, 5, 1.f), q = filled(H * D, 3, 2.f);
    std::vector<float> out(static_cast<size_t>(H * D)), lse(static_cast<size_t>(H));
    const float scale = 1.f / std::sqrt(static_cast<float>(D));
    double step = 1e30;
    for (int r = 0; r < std::max(reps, 5); ++r) {
      const double t0 = now();
      ops.attention_fwd(q.data(), k.data(), v.data(), out.data(), lse.data(), {1, 1, N, N - 1, H, H, D, D, 0}, scale);
      step = std::min(step, now() - t0);
    }
    const double read = read_seconds(k, v, std::max(reps, 5), sink);
    const double bytes = 2.0 * static_cast<double>(N * H * D) * sizeof(float);
    std::printf("%7ld | %9.1f %10.3f | %9.3f %7.1f | %5.0f%%\n", static_cast<long>(N), bytes / 1048576.0, 1e3 * step,
                1e3 * read, bytes / read / 1e9, 100 * read / step);
    std::fflush(stdout);
  }
  if (sink == 12345.678) std::puts("");  // keeps the reads
}

}  // namespace

int main(int argc, char** argv) try {
  std::string shapes_arg = "128:4:8,128:4:32,4096:8:64,4096:4:128,4096:1:512,65536:1:64,65536:1:128,65536:1:512";
  int reps = 3;
  int64_t window = 0, heads = 8, width = 64;
  std::string decode_lengths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") {
      std::puts(
          "usage: bench_attention [--shapes T:H:D,...] [--reps N] [--window W]\n"
          "       bench_attention --decode N,N,... [--heads H] [--width D] [--reps N]\n"
          "(see bench/bench_attention.cpp)");
      return 0;
    }
    if (i + 1 >= argc) fail("bench_attention: ", a, " needs a value");
    if (a == "--shapes")
      shapes_arg = argv[++i];
    else if (a == "--reps")
      reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--window")
      window = std::atol(argv[++i]);
    else if (a == "--decode")
      decode_lengths = argv[++i];
    else if (a == "--heads")
      heads = std::atol(argv[++i]);
    else if (a == "--width")
      width = std::atol(argv[++i]);
    else
      fail("bench_attention: unknown option ", a);
  }
  if (!decode_lengths.empty()) {
    decode(decode_lengths, heads, width, reps);
    return 0;
  }
  const kernels::Ops& ops = kernels::cpu_ops();
  // The sgemm rate is measured before the first shape and after each one; each row is compared with
  // the better of the two around it (on a shared VM one reading alone drifted from 118 to 186).
  double sgemm_before = sgemm_rate(4096, 4096, 512, 1, reps);
  std::printf(
      "bench_attention: %d threads, OpenBLAS %s kernels, window %ld, sgemm [4096x512]x[512x4096] "
      "measured around each shape (sgemm column)\n",
      omp_get_max_threads(), openblas_get_corename(), static_cast<long>(window));
  std::printf("%7s %3s %4s %5s | %9s %9s | %7s %7s | %7s %7s %6s %6s | %6s\n", "T", "H", "D", "B", "fwd s", "bwd s",
              "fwd GF", "bwd GF", "sgemm", "shaped", "fwd/sg", "bwd/sg", "f+b/sh");
  for (const Shape& sh : parse_shapes(shapes_arg)) {
    const int64_t B = sh.T >= 1024 ? 1 : std::max<int64_t>(1, (int64_t{1} << 18) / (sh.T * sh.H));
    const int64_t rows = B * sh.T * sh.H * sh.D;
    const auto q = filled(rows, 3, 2.f), k = filled(rows, 4, 2.f), v = filled(rows, 5, 1.f),
               dout = filled(rows, 6, 1.f);
    std::vector<float> out(static_cast<size_t>(rows)), lse(static_cast<size_t>(B * sh.H * sh.T)),
        dq(static_cast<size_t>(rows)), dk(static_cast<size_t>(rows)), dv(static_cast<size_t>(rows));
    const float scale = 1.f / std::sqrt(static_cast<float>(sh.D));
    const double fwd_flop =
        2.0 * 2.0 * static_cast<double>(sh.D) * visible_pairs(sh.T, window) * static_cast<double>(B * sh.H);
    const int r = sh.T >= 65536 ? 1 : reps;
    double t_fwd = 1e30, t_bwd = 1e30;
    for (int i = 0; i < r; ++i) {
      double t0 = now();
      ops.attention_fwd(q.data(), k.data(), v.data(), out.data(), lse.data(),
                        {B, sh.T, sh.T, 0, sh.H, sh.H, sh.D, sh.D, window}, scale);
      t_fwd = std::min(t_fwd, now() - t0);
      t0 = now();
      ops.attention_bwd(q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq.data(), dk.data(),
                        dv.data(), {B, sh.T, sh.T, 0, sh.H, sh.H, sh.D, sh.D, window}, scale);
      t_bwd = std::min(t_bwd, now() - t0);
    }
    // The same products as plain GEMMs, one [T×D]·[D×T] per head, where the scores fit 256 MiB.
    double shaped = 0;
    if (sh.T * sh.T * 4 <= (int64_t{1} << 28))
      shaped = sgemm_rate(sh.T, sh.T, sh.D, std::min<int64_t>(B * sh.H, 64), reps);
    const double sgemm_after = sgemm_rate(4096, 4096, 512, 1, reps);
    const double big = std::max(sgemm_before, sgemm_after);
    sgemm_before = sgemm_after;
    const double gf_fwd = fwd_flop / t_fwd / 1e9, gf_bwd = 2 * fwd_flop / t_bwd / 1e9;
    const double gf_all = 3 * fwd_flop / (t_fwd + t_bwd) / 1e9;
    std::printf("%7ld %3ld %4ld %5ld | %9.4f %9.4f | %7.1f %7.1f | %7.1f %7.1f %5.0f%% %5.0f%% | %5.0f%%\n", sh.T, sh.H,
                sh.D, B, t_fwd, t_bwd, gf_fwd, gf_bwd, big, shaped, 100 * gf_fwd / big, 100 * gf_bwd / big,
                shaped > 0 ? 100 * gf_all / shaped : 0.0);
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
