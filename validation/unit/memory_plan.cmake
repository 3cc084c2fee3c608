# The memory plan against the allocations it predicts (unit), and the stages from the outside:
# refusals before any work — a memory plan that does not fit, a truncated shard or checkpoint —
# with exit status 2, the figures and the keys, on 1 and 2 ranks.
headroom_test(test_memory_plan SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_memory_plan.cpp
  LABELS unit LIBS headroom)
add_test(NAME test_refusals_cli
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_refusals_cli.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR})
set_tests_properties(test_refusals_cli PROPERTIES LABELS unit TIMEOUT 300 PROCESSORS 2)
add_test(NAME test_memory_plan_cli
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_memory_plan_cli.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR})
set_tests_properties(test_memory_plan_cli PROPERTIES LABELS unit TIMEOUT 120)
