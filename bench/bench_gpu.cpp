// GPU throughput of the CUDA backend, as figures (not a test): GEMM TFLOP/s through the op tables,
// and attention forward/backward TFLOP/s (bf16 tables: cuDNN's fused attention up to width 256,
// the blocked attention on cuBLASLt and the own flash attention side by side at every width, the
// flash kernels also streamed where they pipeline K and V) at
// head widths 128–1024 and sequence lengths 4K–32K, causal; and the blocked attention at each
// --blocks size (queries per block) at width 512, to choose attention_blocks.h's default from; and
// at widths 128 and 512 a context-parallel rank's last chunk (T/8 queries after 7/8 of the window),
// blocked against flash, the call a cp extension makes, and one decoding step (a query per head
// after T − 1 keys; forward FLOPs 4·T·heads·width) split over its keys as decoding splits it and in
// one part. Prints one table at the end. Exits 77 without a GPU.
//
//   bench_gpu [--widths 128,256,512,1024] [--seqs 4096,8192,16384,32768] [--tokens 32768]
//             [--blocks 128,256,512]
//
// FLOPs are counted honestly: only visible (causal) query-key pairs, T(T+1)/2 per head and sequence.
// Forward 2·pairs·(dqk + dv); backward 2·pairs·(3·dqk + 2·dv) (Sᵀ recomputed, dPᵀ, dV, dK, dQ), the
// FlashAttention convention (2.5× the forward at dqk = dv). Work the kernels repeat (the output
// slices of dv > 256 recompute S, the blocked path's diagonal blocks compute masked scores) is not
// counted. Times include the fp32 → bf16 operand packing the
// ops do, since the model pays for it too. Each point: one warm-up, then the median of 3 runs
// (1 run when a call takes over 2 s). Heads × width = 2048 and batch × sequence = --tokens.
#include "cuda/attention_blocks.h"
#include "cuda/cuda_tables.h"
#include "cuda/device.h"
#include "cuda/entries.h"
#include "ops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace headroom::kernels;

namespace {

std::vector<long> parse_list(const char* s) {
  std::vector<long> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::stol(item));
  return v;
}

double seconds(const Ops& ops, const std::function<void()>& f) {
  ops.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  ops.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median_time(const Ops& ops, const std::function<void()>& f) {
  const double warm = seconds(ops, f);
  if (warm > 2.0) return warm;
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) t.push_back(seconds(ops, f));
  std::sort(t.begin(), t.end());
  return t[1];
}

struct Row {
  std::string what, shape;
  double ms, tflops;
};

float* dev_random(const Ops& ops, int64_t n, float scale, unsigned seed) {
  std::vector<float> h(static_cast<size_t>(n));
  unsigned s = seed * 2654435761u + 1;
  for (auto& x : h) {
    s = s * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(s >> 8) / 8388608.f - 1.f);
  }
  auto* p = static_cast<float*>(ops.alloc(sizeof(float) * n));
  ops.copy_from_host(p, h.data(), sizeof(float) * n);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> widths{128, 256, 512, 1024}, seqs{4096, 8192, 16384, 32768}, blocks{128, 256, 512};
  long tokens = 32768;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--widths"))
      widths = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seqs"))
      seqs = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--blocks"))
      blocks = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--tokens"))
      tokens = std::stol(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_gpu: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (cuda::device_count() == 0) {
    std::printf("bench_gpu: no GPU: skipped (GEMM and flash-attention TFLOP/s need a GPU)\n");
    return 77;
  }
  try {
    std::printf("bench_gpu on %s\n", cuda::describe_device(0).c_str());
    const Ops& bf = cuda_ops_bf16();  // attention: cuDNN where it supports the shape
    const Ops& own = cuda_ops_bf16(AttentionKernel::kFlash);
    const Ops& blocked = cuda_ops_bf16(AttentionKernel::kBlocked);
    const Ops& fp = cuda_ops_fp32();
    std::vector<Row> rows;

    // GEMMs: square, and the shapes of a 0.3B model's MLP at 32K tokens.
    struct G {
      int64_t M, N, K;
    };
    for (const G g : {G{4096, 4096, 4096}, G{8192, 8192, 8192}, G{32768, 2816, 1024}, G{32768, 1024, 2816}}) {
      float* A = dev_random(bf, g.M * g.K, 1.f, 1);
      float* B = dev_random(bf, g.K * g.N, 1.f, 2);
      float* C = static_cast<float*>(bf.alloc(sizeof(float) * g.M * g.N));
      const double flops = 2.0 * g.M * g.N * g.K;
      const std::string shape = std::to_string(g.M) + "x" + std::to_string(g.N) + "x" + std::to_string(g.K);
      for (const Ops* o : {&bf, &fp}) {
        const double t = median_time(*o, [&] { o->matmul(A, B, C, g.M, g.N, g.K, false, true, false); });
        rows.push_back(
            {std::string("matmul ") + (o == &bf ? "bf16 (incl. casts)" : "fp32"), shape, t * 1e3, flops / t / 1e12});
        std::printf("  %-26s %-22s %9.3f ms %8.1f TFLOP/s\n", rows.back().what.c_str(), shape.c_str(), rows.back().ms,
                    rows.back().tflops);
      }
      bf.free(A), bf.free(B), bf.free(C);
    }

    // Attention, causal, bf16 tables.
    for (const long d : widths) {
      const int64_t H = std::max<long>(1, 2048 / d);
      for (const long T : seqs) {
        const int64_t B = std::max<long>(1, tokens / T);
        const int64_t nq = B * T * H * d;
        float* q = dev_random(bf, nq, 1.f, 3);
        float* k = dev_random(bf, nq, 1.f, 4);
        float* v = dev_random(bf, nq, 1.f, 5);
        float* dout = dev_random(bf, nq, 1.f, 6);
        float* out = static_cast<float*>(bf.alloc(sizeof(float) * nq));
        float* lse = static_cast<float*>(bf.alloc(sizeof(float) * B * H * T));
        float* dq = static_cast<float*>(bf.alloc(sizeof(float) * nq));
        float* dk = static_cast<float*>(bf.alloc(sizeof(float) * nq));
        float* dv = static_cast<float*>(bf.alloc(sizeof(float) * nq));
        const double pairs = static_cast<double>(B) * H * T * (T + 1) / 2.0;
        const float scale = 1.f / std::sqrt(static_cast<float>(d));
        char shape_buf[64];
        std::snprintf(shape_buf, sizeof shape_buf, "d%ld H%ld B%ld T%ld", d, static_cast<long>(H), static_cast<long>(B),
                      T);
        const std::string shape = shape_buf;
        const AttentionShape call{B, T, T, 0, H, H, d, d, 0};
        // One row each for the forward and the backward pass of `fwd` / `bwd` under the name `who`.
        // (`at`: the shape's label; `n`: its visible query-key pairs.)
        const auto time_pair = [&](const Ops& sync, const std::string& who, const std::function<void()>& fwd,
                                   const std::function<void()>& bwd, const std::string& at = "", double n = 0) {
          const std::string& label = at.empty() ? shape : at;
          const double visible = n > 0 ? n : pairs;
          const double tf = median_time(sync, fwd);
          rows.push_back({"attention fwd " + who, label, tf * 1e3, 2.0 * visible * (2.0 * d) / tf / 1e12});
          std::printf("  %-26s %-22s %9.3f ms %8.1f TFLOP/s\n", rows.back().what.c_str(), label.c_str(), rows.back().ms,
                      rows.back().tflops);
          const double tb = median_time(sync, bwd);
          rows.push_back({"attention bwd " + who, label, tb * 1e3, 2.0 * visible * (5.0 * d) / tb / 1e12});
          std::printf("  %-26s %-22s %9.3f ms %8.1f TFLOP/s\n", rows.back().what.c_str(), label.c_str(), rows.back().ms,
                      rows.back().tflops);
        };
        // Every path: the default table (cuDNN up to width 256; its choice is logged on stderr, and
        // above 256 it is the blocked path, timed below), the blocked attention, the flash kernels.
        struct Path {
          const Ops* ops;
          const char* who;
        };
        for (const Path p : {Path{&bf, "cuDNN"}, Path{&blocked, "blocked"}, Path{&own, "flash"}}) {
          if (p.ops == &bf && d > 256) continue;
          const Ops& o = *p.ops;
          time_pair(
              o, p.who, [&] { o.attention_fwd(q, k, v, out, lse, call, scale); },
              [&] { o.attention_bwd(q, k, v, out, lse, dout, dq, dk, dv, call, scale); });
        }
        // The flash kernels as they ran before K/V pipelining (attention_mma.cuh's streamed forward
        // and backward) beside the `flash` rows above, where those pipeline (up to width 256: the
        // forward's K/V blocks by cp.async, the backward's K/V resident in shared memory).
        if (cuda::attention_bwd_resident_stages(d, d, 2) > 0)
          time_pair(
              own, "flash, streamed", [&] { cuda::attention_fwd_bf16_with(q, k, v, out, lse, call, scale, 0); },
              [&] { cuda::attention_bwd_bf16_with(q, k, v, out, lse, dout, dq, dk, dv, call, scale, 0); });
        // The blocked path's block size (attention_blocks.h), at width 512.
        if (d == 512)
          for (const long block : blocks)
            time_pair(
                bf, "blocked/" + std::to_string(block),
                [&] { cuda::attention_fwd_blocked_with(q, k, v, out, lse, call, scale, block); },
                [&] { cuda::attention_bwd_blocked_with(q, k, v, out, lse, dout, dq, dk, dv, call, scale, block); });
        // A context-parallel rank's last chunk at cp 4 (8 chunks): T/8 queries after the window's
        // first 7/8, every key. auto sends it to the blocked path above width 256 and to flash at or
        // below it; both are timed at 128 and 512.
        if (d == 128 || d == 512) {
          const int64_t Tq = T / 8, pos0 = T - Tq;
          const AttentionShape seg{B, Tq, T, pos0, H, H, d, d, 0};
          const double seg_pairs = static_cast<double>(B) * H * (static_cast<double>(Tq) * pos0 + Tq * (Tq + 1) / 2.0);
          const std::string at = shape + " q" + std::to_string(Tq) + "+" + std::to_string(pos0);
          for (const Ops* o : {&blocked, &own})
            time_pair(
                *o, o == &blocked ? "blocked@cp" : "flash@cp", [&] { o->attention_fwd(q, k, v, out, lse, seg, scale); },
                [&] { o->attention_bwd(q, k, v, out, lse, dout, dq, dk, dv, seg, scale); }, at, seg_pairs);
        }
        // One decoding step: a query per head after T − 1 keys, the forward split over its keys as
        // the decoding-cache entries split it (attention.cuh: decode_splits) and in one part.
        if (d == 128 || d == 512) {
          const AttentionShape step{1, 1, T, T - 1, H, H, d, d, 0};
          for (const int splits : {cuda::attention_decode_splits(step), 1}) {
            const double t =
                median_time(own, [&] { cuda::attention_fwd_bf16_with(q, k, v, out, lse, step, scale, 2, splits); });
            const std::string who = "attention fwd flash decode, " + std::to_string(splits) + " part(s)";
            rows.push_back({who, shape + " q1", t * 1e3, 4.0 * T * H * d / t / 1e12});
            std::printf("  %-26s %-22s %9.3f ms %8.1f TFLOP/s\n", who.c_str(), rows.back().shape.c_str(),
                        rows.back().ms, rows.back().tflops);
          }
        }
        for (float* p : {q, k, v, dout, out, lse, dq, dk, dv}) bf.free(p);
      }
    }

    std::printf("\n%-26s %-22s %10s %9s\n", "kernel", "shape", "ms", "TFLOP/s");
    for (const Row& r : rows)
      std::printf("%-26s %-22s %10.3f %9.1f\n", r.what.c_str(), r.shape.c_str(), r.ms, r.tflops);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
}
