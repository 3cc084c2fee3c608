# Unit tests of the CPU kernels: every op of ops.h against naive fp64 references and finite
# differences. Included by validation/CMakeLists.txt.
headroom_test(test_kernels
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_kernels_attention.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_kernels_dense.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_kernels_norm_rope.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_kernels_pointwise.cpp
  LABELS unit
  LIBS headroom_kernels)
# Mirrors kernels/CMakeLists.txt: without the CUDA backend cuda_ops() must throw a clear error.
if(NOT HEADROOM_HAVE_CUDA OR NOT EXISTS ${CMAKE_SOURCE_DIR}/kernels/cuda/CMakeLists.txt)
  target_compile_definitions(test_kernels PRIVATE HEADROOM_TEST_EXPECT_NO_CUDA)
endif()
