// When an elementwise loop is worth waking the OpenMP team for.
#pragma once

#include <cstdint>

namespace headroom::kernels::cpu {

// Below this many elements a parallel region costs more (~microseconds to start) than the loop itself.
inline constexpr int64_t kParallelMinElements = int64_t{1} << 15;

}  // namespace headroom::kernels::cpu
