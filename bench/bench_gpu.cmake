# bench_gpu: GEMM and flash-attention TFLOP/s of the CUDA backend (validation/gpu/run_gpu_checks.sh
# runs it). Built with the CUDA backend only.
if(HEADROOM_HAVE_CUDA)
  add_executable(bench_gpu ${CMAKE_CURRENT_LIST_DIR}/bench_gpu.cpp)
  target_link_libraries(bench_gpu PRIVATE headroom_kernels)
endif()
