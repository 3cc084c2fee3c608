// Sequential random draws for the task generators. Every sample is a pure function of
// (seed, task, length, sample index): the generator opens its own stream from that key and draws
// in a fixed order, so any rank can build any sample and a sample never depends on the ones
// before it or on the rank count.
#pragma once

#include "util/random.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom::eval {

struct Draws {
  CounterRng rng;
  uint64_t next_index = 0;

  uint64_t bits() { return rng.bits64(next_index++); }
  double uniform() { return rng.uniform(next_index++); }
  // Uniform in [0, n) (n > 0); the modulo bias is below 2^-40 for the sizes used here.
  int64_t below(int64_t n) { return static_cast<int64_t>(bits() % static_cast<uint64_t>(n)); }
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }  // inclusive

  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(below(static_cast<int64_t>(v.size())))];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {  // Fisher–Yates
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(below(static_cast<int64_t>(i)))]);
  }
  // k distinct indices of [0, n), in draw order (k ≤ n).
  std::vector<int64_t> distinct(int64_t k, int64_t n);
  // A string of `len` characters drawn from `alphabet`.
  std::string letters(int64_t len, std::string_view alphabet);
  // A decimal number of exactly `digits` digits (no leading zero).
  std::string number(int digits);
  // A version-4 UUID in canonical form (RULER uses uuid.UUID(int=getrandbits(128), version=4)).
  std::string uuid();
};

// The stream of one sample: key from (seed, task, length), stream = sample index.
Draws sample_draws(uint64_t seed, std::string_view task, int64_t length, int64_t index);

// Where the depth sweep of (seed, task, length) starts, in [0, 1): shared by all its samples (the
// sweep itself is text.h's sweep_depth), so consecutive indices spread over the context.
double sweep_offset(uint64_t seed, std::string_view task, int64_t length);

}  // namespace headroom::eval
