// The code version stamped into every output file (set by CMake from `git describe`).
#pragma once

#ifndef HEADROOM_CODE_VERSION
#define HEADROOM_CODE_VERSION "unknown"
#endif

namespace headroom {
inline constexpr const char* kCodeVersion = HEADROOM_CODE_VERSION;
}
