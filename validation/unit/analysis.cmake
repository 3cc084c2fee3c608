# analyze: the attention metrics on hand-built rows, the streaming diagnostics against a naive
# full-matrix computation on a small random model, the linear algebra and bootstrap, feature
# predicates, probes; then (label mpi: it trains tiny checkpoints with mpirun) a whole study from
# fixtures, whose statistics are recomputed independently with numpy.
headroom_test(test_analysis SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_analysis.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_analysis_diagnostics.cpp ${CMAKE_CURRENT_LIST_DIR}/model_fixtures.cpp
  LABELS unit LIBS headroom)
target_compile_definitions(test_analysis PRIVATE HEADROOM_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_test(NAME analyze_study
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_analyze_study.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
set_tests_properties(analyze_study PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
