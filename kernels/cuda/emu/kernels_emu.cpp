// The CUDA backend's kernel sources (kernels/cuda/*.cuh), compiled once more by the host compiler
// against the CPU emulator: namespace cuda_emu (ns.h), launches through runtime_emu.h.
#include "cuda/attention.cuh"
#include "cuda/attention_blocked.cuh"
#include "cuda/pointwise.cuh"
#include "cuda/reduce.cuh"
