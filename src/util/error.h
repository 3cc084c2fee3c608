// The library's error type and message helpers (headroom::Error, cat, fail), defined by the lowest
// layer, kernels/, which throws them too.
#pragma once

#include "headroom_error.h"
