#include "cpu/blas_kernels.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>

extern "C" char* openblas_get_corename(void);
extern "C" char* openblas_get_config(void);

namespace headroom::kernels::cpu {

namespace {

// Marks a process that this code re-executed, for the log line (and so it can never loop).
constexpr const char* kChosenHere = "HEADROOM_OPENBLAS_CORETYPE_CHOSEN";

// OpenBLAS's names for kernels without AVX2/FMA: on a CPU that has them, these are a fallback.
bool is_pre_avx2_core(std::string_view core) {
  for (std::string_view old : {"Prescott", "Katmai", "Coppermine", "Northwood", "Banias", "Atom", "Core2", "Penryn",
                               "Dunnington", "Nehalem", "Sandybridge"})
    if (core == old) return true;
  return false;
}

// The widest OpenBLAS kernel set the CPU can run; nullptr when it has no AVX2. (Cooperlake's sgemm is
// SkylakeX's, and 0.3.21 does not accept "Cooperlake" as a name.)
const char* widest_core_for_this_cpu() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

}  // namespace

void use_native_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || std::getenv(kChosenHere) != nullptr) return;
  const char* chosen = openblas_get_corename();
  const char* wanted = widest_core_for_this_cpu();
  if (chosen == nullptr || wanted == nullptr || !is_pre_avx2_core(chosen)) return;
  if (setenv("OPENBLAS_CORETYPE", wanted, 1) != 0 || setenv(kChosenHere, chosen, 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Only reached when the exec failed: the run is still correct, just slow.
  std::cerr << "warning: OpenBLAS chose its " << chosen << " kernels on a CPU that runs " << wanted
            << ", and re-executing with OPENBLAS_CORETYPE=" << wanted << " failed: " << std::strerror(errno)
            << "; set OPENBLAS_CORETYPE=" << wanted << " yourself for up to 5x faster sgemm\n";
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kChosenHere);
}

std::string blas_kernels_description() {
  std::string line = std::string("BLAS: ") + openblas_get_config() + ", kernels " + openblas_get_corename();
  if (const char* before = std::getenv(kChosenHere))
    line += std::string(" (OPENBLAS_CORETYPE set by headroom: OpenBLAS had picked ") + before + " for this CPU)";
  else if (const char* user = std::getenv("OPENBLAS_CORETYPE"))
    line += std::string(" (OPENBLAS_CORETYPE=") + user + ")";
  return line;
}

}  // namespace headroom::kernels::cpu
