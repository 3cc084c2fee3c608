headroom_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.cpp LABELS unit LIBS headroom)

# The include layers the build enforces (cmake/CheckLayers.cmake): passes on the tree, stops on an
# upward include.
add_test(NAME test_layers COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_layers.sh ${CMAKE_SOURCE_DIR} ${CMAKE_COMMAND})
set_tests_properties(test_layers PROPERTIES LABELS unit TIMEOUT 60)

# docs/config.md is generated from the option schema (--config-reference); fails with the diff and
# the regenerate command when it is out of date.
add_test(NAME test_config_reference
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/config_reference.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR}/docs/config.md --check)
set_tests_properties(test_config_reference PROPERTIES LABELS unit TIMEOUT 120)

# Every relative link (and #anchor) in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/ resolves.
add_test(NAME test_doc_links COMMAND ${HEADROOM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/doc_links.py ${CMAKE_SOURCE_DIR})
set_tests_properties(test_doc_links PROPERTIES LABELS unit TIMEOUT 60)

# The C++ and CUDA sources follow .clang-format (clang-format from Debian, installed by jobs/setup.sh).
add_test(NAME test_clang_format COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/clang_format.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(test_clang_format PROPERTIES LABELS unit TIMEOUT 300)
