if(HEADROOM_HAVE_CUDA)
  headroom_test(test_gpu_device SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_device.cpp
    LABELS gpu LIBS headroom_kernels_cuda)
endif()
