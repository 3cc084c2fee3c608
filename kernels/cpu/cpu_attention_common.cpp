// Shape checks and masking shared by the attention kernels.
#include <limits>

#include "cpu/cpu_attention.h"
#include "headroom_error.h"

namespace headroom::kernels::cpu::attention {

namespace {

// The block bounds of cpu_attention.h rely on each row's document starts being ordered.
void validate_documents(const Shape& s, const char* op) {
  if (!s.doc_start) return;
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.Tq; ++t) {
      const int64_t d = s.doc_begin(b, t), before = t > 0 ? s.doc_begin(b, t - 1) : 0;
      if (d < before)
        fail("cpu ", op, ": doc_start[", b, ", ", t, "] = ", d, " is below the previous query's ", before,
             " (documents must be contiguous runs of positions)");
    }
}

}  // namespace

void validate(const Shape& s, const char* op) {
  if (s.B < 0 || s.Tq < 0 || s.Tk < 0 || s.q_pos0 < 0)
    fail("cpu ", op, ": negative size or offset (B = ", s.B, ", Tq = ", s.Tq, ", Tk = ", s.Tk, ", q_pos0 = ", s.q_pos0,
         ")");
  if (s.Hq <= 0 || s.Hkv <= 0 || s.Hq % s.Hkv != 0)
    fail("cpu ", op, ": Hq = ", s.Hq, " must be a positive multiple of Hkv = ", s.Hkv);
  if (s.dqk <= 0 || s.dv <= 0) fail("cpu ", op, ": head dims must be positive (dqk = ", s.dqk, ", dv = ", s.dv, ")");
  if (s.window < 0) fail("cpu ", op, ": window = ", s.window, " is negative");
  // Leading dimensions handed to sgemm are row strides of whole tokens.
  const int64_t widest = s.Hq * std::max(s.dqk, s.dv);
  if (widest > std::numeric_limits<blasint>::max())
    fail("cpu ", op, ": a token row of ", widest, " floats exceeds OpenBLAS's integer range");
  validate_documents(s, op);
}

void mask_block(const Shape& s, float* S, int64_t ld, int64_t b, int64_t t0, int64_t nq, int64_t j0, int64_t nk) {
  constexpr float hidden = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t begin = std::clamp<int64_t>(s.key_begin(b, t0 + i) - j0, 0, nk);
    const int64_t end = std::clamp<int64_t>(s.key_end(t0 + i) - j0, begin, nk);
    float* row = S + i * ld;
    std::fill(row, row + begin, hidden);
    std::fill(row + end, row + ld, hidden);
  }
}

}  // namespace headroom::kernels::cpu::attention
