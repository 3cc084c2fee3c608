headroom_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.cpp LABELS unit LIBS headroom)

# The include layers the build enforces (cmake/CheckLayers.cmake): passes on the tree, stops on an
# upward include.
add_test(NAME test_layers COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_layers.sh ${CMAKE_SOURCE_DIR} ${CMAKE_COMMAND})
set_tests_properties(test_layers PROPERTIES LABELS unit TIMEOUT 60)
