// Straight-line math the CPU kernels share, written so GCC vectorises the loops that use it.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

// The project baseline (x86-64-v2) has neither FMA nor 256-bit vectors; the hot elementwise loops are
// compiled three times and the best one for the running CPU is picked at load time (an ifunc), so one
// binary serves every node at full width.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define HEADROOM_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HEADROOM_SIMD_CLONES
#endif

namespace headroom::kernels::cpu {

// exp(v) in float. glibc's expf is a scalar call (no vector variant without -ffast-math), which would
// cost more than the matrix products in attention at small head dims. Cephes-style: v = n ln2 + r with
// |r| <= ln2/2 (ln2 split in two for an exact product), e^r by a degree-6 polynomial, 2^n built in the
// exponent bits. Max relative error ~1e-7 (measured against double exp); below -87.3 the result would
// be subnormal and is flushed to 0 (exp(-inf) = 0, so masked scores need no special case); above 88.7
// it is +inf; NaN propagates, so a diverging run still shows NaN in its loss.
inline float fast_exp(float v) {
  constexpr float lo = -87.3f, hi = 88.7f;
  const float c = std::min(std::max(v, lo), hi);  // max(v, lo) keeps a NaN v
  constexpr float round_magic = 12582912.f;       // 1.5 * 2^23: adding it rounds to an integer
  const float nf = (c * 1.44269504088896341f + round_magic) - round_magic;
  float r = c - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<int32_t>(nf) + 127) << 23);
  float y = p * two_n;
  y = v < lo ? 0.f : y;
  y = v > hi ? std::numeric_limits<float>::infinity() : y;
  return y;
}

// 1 / (1 + e^-g): e^-g overflows to +inf for very negative g and the quotient correctly becomes 0.
inline float sigmoid(float g) { return 1.f / (1.f + fast_exp(-g)); }

}  // namespace headroom::kernels::cpu
