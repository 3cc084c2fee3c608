// The one CUDA stream the backend runs on, for code outside kernels/cuda that must order its own GPU
// work with the ops (the NCCL communicator enqueues its collectives on it). Includable from plain C++.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace headroom::kernels::cuda {

// Created on first use for the current device (cudaSetDevice first, e.g. parallel::select_local_gpu).
cudaStream_t stream();

// bf16 copies of device arrays (round to nearest even) and back, enqueued on stream(); `what` names
// the launch in errors. runtime.h declares them for the kernels; here for plain C++ (the NCCL
// communicator's bf16 gradient reduction).
void round_to_bf16(const float* x, uint16_t* y, int64_t n, const char* what);
void widen_from_bf16(const uint16_t* x, float* y, int64_t n, const char* what);

}  // namespace headroom::kernels::cuda
