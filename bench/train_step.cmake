# bench_train_step: tokens/s and MFU of a full CPU training step at three head shapes, the PyTorch
# reference (bench/torch_train_step.py) on the same step, and a 64K-token prefill (not a test).
if(TARGET headroom)
  add_executable(bench_train_step ${CMAKE_CURRENT_LIST_DIR}/bench_train_step.cpp)
  target_link_libraries(bench_train_step PRIVATE headroom)
  set(_bench_python /usr/bin/python3)
  if(HEADROOM_PYTHON)
    set(_bench_python ${HEADROOM_PYTHON})
  endif()
  target_compile_definitions(bench_train_step PRIVATE
    HEADROOM_BENCH_DIR="${CMAKE_CURRENT_LIST_DIR}" HEADROOM_BENCH_PYTHON="${_bench_python}")
endif()
