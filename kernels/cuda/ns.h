// The namespace of the CUDA backend's internals: headroom::kernels::cuda on the GPU build,
// headroom::kernels::cuda_emu when a test compiles the same sources against the CPU emulator.
#pragma once
#if defined(HEADROOM_CUDA_EMULATE)
#define HR_CUDA_NS cuda_emu
#else
#define HR_CUDA_NS cuda
#endif
