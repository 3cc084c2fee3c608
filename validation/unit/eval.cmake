# Evaluation: generators, scoring, results (unit), a toy model trained in-process that must solve
# niah_single_1 (unit), and the evaluate app from the outside with 1 and 2 ranks (mpi).
headroom_test(test_eval SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_eval_generators.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_eval_scoring.cpp ${CMAKE_CURRENT_LIST_DIR}/test_eval_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_eval_checkpoint.cpp LABELS unit LIBS headroom)
target_compile_definitions(test_eval PRIVATE HEADROOM_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
headroom_test(test_eval_toy SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_eval_toy.cpp LABELS unit LIBS headroom
  TIMEOUT 300)
target_compile_definitions(test_eval_toy PRIVATE HEADROOM_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_test(NAME test_eval_cli
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_eval_cli.sh $<TARGET_FILE_DIR:evaluate> ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
set_tests_properties(test_eval_cli PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
# RULER's prediction files (eval.ruler_pred) re-scored without Headroom.
add_test(NAME test_ruler_pred
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_ruler_pred.sh $<TARGET_FILE_DIR:evaluate> ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
set_tests_properties(test_ruler_pred PROPERTIES LABELS unit TIMEOUT 300)
