# The positive control: a model that retrieves by construction (retrieval_circuit.h), written as a
# checkpoint by make_retrieval_checkpoint and put through evaluate and analyze (label validation).
add_executable(make_retrieval_checkpoint ${CMAKE_CURRENT_LIST_DIR}/make_retrieval_checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/retrieval_circuit.cpp)
target_include_directories(make_retrieval_checkpoint PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(make_retrieval_checkpoint PRIVATE headroom)
set_target_properties(make_retrieval_checkpoint PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME constructed_retrieval
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_constructed_retrieval.sh ${CMAKE_BINARY_DIR}/bin ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
# COST: one of the longest tests (~3.5 min), so a fresh CTest run starts it first instead of last.
set_tests_properties(constructed_retrieval PROPERTIES LABELS validation TIMEOUT 900 PROCESSORS 2 COST 300)
