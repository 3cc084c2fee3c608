// One error type for the whole library: a message that says what failed, where (file, dataset, key)
// and why. Apps catch it at the top, print it, and stop every rank together. It lives in the lowest
// layer, kernels/, which throws it too; src/ includes it as util/error.h.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace headroom {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// cat("dataset ", name, " has ", n, " rows") — GCC 12 has no <format>.
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(cat(args...));
}

}  // namespace headroom
