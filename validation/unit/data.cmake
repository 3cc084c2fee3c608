headroom_test(test_data SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_shard.cpp ${CMAKE_CURRENT_LIST_DIR}/test_prepare.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_prepare_stream.cpp ${CMAKE_CURRENT_LIST_DIR}/test_mixture.cpp
  LABELS unit LIBS headroom)

# The prepare app from the outside: --help, --print-config, refusals, outputs, and h5py reading them.
add_test(NAME test_prepare_cli
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_prepare_cli.sh $<TARGET_FILE:prepare>
          ${HEADROOM_PYTHON} ${CMAKE_SOURCE_DIR})
set_tests_properties(test_prepare_cli PROPERTIES LABELS unit TIMEOUT 300)
