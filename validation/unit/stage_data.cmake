# Data of the training stages: the synthetic retrieval mixer, the long-context sampler (extend) and
# the sft packing.
headroom_test(test_stage_data SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_synthetic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_long_context.cpp ${CMAKE_CURRENT_LIST_DIR}/test_sft.cpp
  LABELS unit LIBS headroom)
target_compile_definitions(test_stage_data PRIVATE HEADROOM_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
