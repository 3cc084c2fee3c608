// Attention forward for one new query per head against a long KV cache (a decoding step), split over
// the keys (flash-decoding): each task takes one chunk of cached tokens for every head, so a task
// reads its rows of K and V once, front to back (a token's K for all KV heads is one contiguous row),
// and the work divides among threads however few heads there are. Each chunk leaves a partial
// softmax (max, sum, unnormalised output) per head; a short merge rescales them to the common max.
//
// The per-head path (cpu_attention_fwd.cpp) puts one 1 × 256 × width sgemm per key block through
// OpenBLAS's packing and reads each head's K/V as 256-byte pieces strided by the token row: 23% of
// the time to stream the cache once at 64K keys (bench_attention --decode).
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/cpu_attention.h"
#include "cpu/cpu_math.h"

namespace headroom::kernels::cpu::attention {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Keys per task: large enough that the merge and the per-task setup are noise, small enough that a
// 4K-token context still makes 8 tasks for the threads to share. Fixed (not derived from the thread
// count), so the result does not depend on the number of threads.
constexpr int64_t kChunk = 512;

struct Partial {
  float* max;  // [Hq]
  float* sum;  // [Hq]
  float* out;  // [Hq · dv], Σ exp(s − max) v over the chunk
};

// One chunk [j0, j1) of batch row b for all heads; `scores` holds Hq · kChunk floats.
HEADROOM_SIMD_CLONES
void chunk_partial(const Shape& s, const float* q, const float* k, const float* v, int64_t b, int64_t j0, int64_t j1,
                   float* scores, Partial p) {
  const int64_t n = j1 - j0, G = s.group();
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t g = 0; g < s.Hkv; ++g) {
      const float* kr = k + s.k_at(b, j, g);
      for (int64_t h = g * G; h < (g + 1) * G; ++h) {
        const float* qh = q + s.q_at(b, 0, h);
        float acc = 0.f;
#pragma omp simd reduction(+ : acc)
        for (int64_t i = 0; i < s.dqk; ++i) acc += qh[i] * kr[i];
        scores[h * kChunk + (j - j0)] = acc * s.scale;
      }
    }
  for (int64_t h = 0; h < s.Hq; ++h) {
    float* row = scores + h * kChunk;
    float mx = kNegInf;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      row[j] = fast_exp(row[j] - mx);
      sum += row[j];
    }
    p.max[h] = mx;
    p.sum[h] = sum;
    std::fill(p.out + h * s.dv, p.out + (h + 1) * s.dv, 0.f);
  }
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t g = 0; g < s.Hkv; ++g) {
      const float* vr = v + s.v_at(b, j, g);
      for (int64_t h = g * G; h < (g + 1) * G; ++h) {
        const float w = scores[h * kChunk + (j - j0)];
        float* o = p.out + h * s.dv;
#pragma omp simd
        for (int64_t c = 0; c < s.dv; ++c) o[c] += w * vr[c];
      }
    }
}

}  // namespace

// Decoding passes no document mask; a masked single query keeps the per-head path, whose key range
// is per batch row.
bool decode_splits_keys(const Shape& s) {
  return s.Tq == 1 && !s.doc_start && s.key_end(0) - s.key_begin(0, 0) >= kDecodeMinKeys;
}

void decode_forward(const Shape& s, const float* q, const float* k, const float* v, float* out, float* lse) {
  const int64_t j_begin = s.key_begin(0, 0), j_end = s.key_end(0);
  const int64_t chunks = (j_end - j_begin + kChunk - 1) / kChunk, tasks = s.B * chunks;
  // Partials: per (b, chunk), Hq maxima, Hq sums and Hq · dv outputs.
  const int64_t stride = s.Hq * (2 + s.dv);
  std::vector<float> partials(static_cast<size_t>(tasks * stride));
  std::vector<float> scores(static_cast<size_t>(omp_get_max_threads() * s.Hq * kChunk));
  auto partial = [&](int64_t task) {
    float* base = partials.data() + task * stride;
    return Partial{base, base + s.Hq, base + 2 * s.Hq};
  };
#pragma omp parallel for schedule(dynamic)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t b = task / chunks, j0 = j_begin + (task % chunks) * kChunk;
    chunk_partial(s, q, k, v, b, j0, std::min(j_end, j0 + kChunk), scores.data() + omp_get_thread_num() * s.Hq * kChunk,
                  partial(task));
  }
  // Every chunk holds at least one visible key, so every partial max is finite.
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      float mx = kNegInf;
      for (int64_t c = 0; c < chunks; ++c) mx = std::max(mx, partial(b * chunks + c).max[h]);
      double total = 0;  // over up to 10^6 keys: float would drift
      float* o = out + s.o_at(b, 0, h);
      std::fill(o, o + s.dv, 0.f);
      for (int64_t c = 0; c < chunks; ++c) {
        const Partial p = partial(b * chunks + c);
        const float w = fast_exp(p.max[h] - mx);
        total += static_cast<double>(w) * p.sum[h];
        for (int64_t i = 0; i < s.dv; ++i) o[i] += w * p.out[h * s.dv + i];
      }
      const float inv = static_cast<float>(1.0 / total);
      for (int64_t i = 0; i < s.dv; ++i) o[i] *= inv;
      lse[s.stat_at(b, h, 0)] = static_cast<float>(mx + std::log(total));
    }
}

}  // namespace headroom::kernels::cpu::attention
