# The reduced toy study (inputs/studies/toy_cpu_ci.study) against the full study's recorded
# results (validation/reference/toy_cpu_study.json): label validation.
add_test(NAME toy_study_reference
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_toy_study.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
set_tests_properties(toy_study_reference PROPERTIES LABELS validation TIMEOUT 900 PROCESSORS 2)
