// bf16 as the GPU's conversions make it: the top half of an fp32 bit pattern, rounded to nearest
// even. Used where host code must agree with the device bit for bit (safetensors, the bf16 gradient
// reduction on MPI).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace headroom::util {

inline float bf16_to_float(uint16_t b) {  // exact
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN, sign kept
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace headroom::util
