// Rotary position embedding, "rotate half" convention (Hugging Face): within the first rot_dims of a
// head, dims i and i + rot_dims/2 form one rotating pair.
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_parallel.h"
#include "headroom_error.h"

#include <cstring>

namespace headroom::kernels::cpu {

namespace {

// One head's pairs at one position, from x into y (which may be x). c, s already include YaRN's
// attention factor, so the matrix [[c, -s], [s, c]] is a scaled rotation; the backward needs its
// transpose, which is what `sign = -1` gives (not its inverse: the two differ when c² + s² != 1).
void rotate_pairs(const float* x, float* y, const float* c, const float* s, int64_t half, float sign) {
#pragma omp simd
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    y[i] = a * c[i] - sign * b * s[i];
    y[i + half] = b * c[i] + sign * a * s[i];
  }
}

}  // namespace

void rope(const float* x, int64_t ldx, float* y, const float* cos, const float* sin, int64_t B, int64_t T, int64_t pos0,
          int64_t n_heads, int64_t head_dim, int64_t rot_dims, bool inverse) {
  if (rot_dims < 0 || rot_dims % 2 != 0 || rot_dims > head_dim)
    fail("cpu rope: rot_dims = ", rot_dims, " must be even and within [0, head_dim = ", head_dim, "]");
  if (pos0 < 0) fail("cpu rope: pos0 = ", pos0, " is negative");
  const int64_t width = n_heads * head_dim;
  if (ldx < width) fail("cpu rope: ldx = ", ldx, " is less than a row's width ", width);
  const bool in_place = x == y;
  if (in_place && ldx != width) fail("cpu rope: in place with ldx = ", ldx, " != the row's width ", width);
  if (B * T == 0 || (in_place && rot_dims == 0)) return;
  const int64_t half = rot_dims / 2, rows = B * T;
  const float sign = inverse ? -1.f : 1.f;
#pragma omp parallel for if (rows * width >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pos = pos0 + r % T;
    const float* c = cos + pos * half;
    const float* s = sin + pos * half;
    for (int64_t h = 0; h < n_heads; ++h) {
      const float* xh = x + r * ldx + h * head_dim;
      float* yh = y + r * width + h * head_dim;
      rotate_pairs(xh, yh, c, s, half, sign);
      if (!in_place)
        std::memcpy(yh + rot_dims, xh + rot_dims, static_cast<size_t>(head_dim - rot_dims) * sizeof(float));
    }
  }
}

}  // namespace headroom::kernels::cpu
