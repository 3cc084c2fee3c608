// Counter-based randomness: every random number is a pure function of (key, counter), so any rank
// can compute any element of a stream without generating the ones before it. That is what makes
// initialization and data order independent of the process layout.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace headroom {

// Philox4x32-10 (Salmon et al., SC'11): 4 × 32 random bits per (key, counter).
inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kM0} * ctr[0];
    const uint64_t p1 = uint64_t{kM1} * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

// SplitMix64's output function alone: a bijective avalanche of 64 bits (the hash of the
// tokenizer's tables: std::hash<uint64_t> is the identity).
inline uint64_t splitmix64_finalize(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// SplitMix64: one step of the golden-ratio sequence, then the finaliser; a cheap bijective mix.
inline uint64_t mix64(uint64_t x) { return splitmix64_finalize(x + 0x9E3779B97F4A7C15ull); }

// A sequential SplitMix64 stream from a key: the n-th draw is mix64(key + n · golden ratio), so a
// stream is as reproducible as its key (the data mixers' per-example draws).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() { return mix64(state += 0x9E3779B97F4A7C15ull); }
  // Uniform in [0, n) (modulo: the bias is below 2^-40 for the sizes drawn here).
  int64_t below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// FNV-1a 64 of a string: turns a parameter name into part of a key.
inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// A stream of random numbers addressed by element index.
struct CounterRng {
  uint64_t key;     // e.g. mix64(seed) ^ fnv1a64(parameter name)
  uint64_t stream;  // distinguishes uses of the same key

  std::array<uint32_t, 4> block(uint64_t index) const {
    return philox4x32({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(stream),
                       static_cast<uint32_t>(stream >> 32)},
                      {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform(uint64_t index) const {
    const auto b = block(index);
    const uint64_t bits = (uint64_t{b[0]} << 21) ^ (uint64_t{b[1]} >> 11);
    return static_cast<double>(bits & ((1ull << 53) - 1)) * 0x1.0p-53;
  }
  // Standard normal (Box–Muller over the block's four words).
  double normal(uint64_t index) const {
    const auto b = block(index);
    const double u1 = (static_cast<double>((uint64_t{b[0]} << 20) ^ b[1]) + 0.5) * 0x1.0p-52;
    const double u2 = static_cast<double>(b[2]) * 0x1.0p-32;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  uint64_t bits64(uint64_t index) const {
    const auto b = block(index);
    return (uint64_t{b[0]} << 32) | b[1];
  }
};

}  // namespace headroom
