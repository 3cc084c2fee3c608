#include "eval/draws.h"

#include <unordered_set>

namespace headroom::eval {

std::vector<int64_t> Draws::distinct(int64_t k, int64_t n) {
  std::vector<int64_t> out;
  std::unordered_set<int64_t> seen;
  // Rejection is cheap while k is small against n; a partial shuffle otherwise.
  if (k * 4 <= n) {
    while (static_cast<int64_t>(out.size()) < k) {
      const int64_t i = below(n);
      if (seen.insert(i).second) out.push_back(i);
    }
    return out;
  }
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  for (int64_t i = 0; i < k; ++i) std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(i + below(n - i))]);
  return {all.begin(), all.begin() + k};
}

std::string Draws::letters(int64_t len, std::string_view alphabet) {
  std::string s;
  for (int64_t i = 0; i < len; ++i) s += alphabet[static_cast<size_t>(below(static_cast<int64_t>(alphabet.size())))];
  return s;
}

std::string Draws::number(int digits) {
  std::string s(1, static_cast<char>('1' + below(9)));
  for (int i = 1; i < digits; ++i) s += static_cast<char>('0' + below(10));
  return s;
}

std::string Draws::uuid() {
  uint64_t hi = bits(), lo = bits();
  hi = (hi & ~0xF000ull) | 0x4000ull;                  // version 4
  lo = (lo & ~(0xC000ull << 48)) | (0x8000ull << 48);  // RFC 4122 variant
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 32; ++i) {
    const uint64_t word = i < 16 ? hi : lo;
    const int shift = 60 - 4 * (i % 16);
    if (i == 8 || i == 12 || i == 16 || i == 20) s += '-';
    s += hex[(word >> shift) & 0xF];
  }
  return s;
}

Draws sample_draws(uint64_t seed, std::string_view task, int64_t length, int64_t index) {
  const uint64_t key = mix64(seed) ^ fnv1a64(task) ^ mix64(static_cast<uint64_t>(length) * 0x9E3779B97F4A7C15ull);
  return Draws{CounterRng{key, static_cast<uint64_t>(index)}, 0};
}

double sweep_offset(uint64_t seed, std::string_view task, int64_t length) {
  return sample_draws(seed, task, length, -1).uniform();  // stream 2^64 - 1: no sample's
}

}  // namespace headroom::eval
