# bench_attention: the CPU attention kernels' GFLOP/s against the sgemm rate of the same run (not a test).
if(TARGET headroom)
  add_executable(bench_attention ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cpp)
  target_link_libraries(bench_attention PRIVATE headroom)
endif()
