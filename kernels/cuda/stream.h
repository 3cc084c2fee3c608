// The one CUDA stream the backend runs on, for code outside kernels/cuda that must order its own GPU
// work with the ops (the NCCL communicator enqueues its collectives on it). Includable from plain C++.
#pragma once

#include <cuda_runtime.h>

namespace headroom::kernels::cuda {

// Created on first use for the current device (cudaSetDevice first, e.g. parallel::select_local_gpu).
cudaStream_t stream();

}  // namespace headroom::kernels::cuda
