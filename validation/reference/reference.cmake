# The C++ model against the independent PyTorch reference (MODEL_SPEC.md, compare.py): one CTest per
# named knob combination of run_reference.sh, label `validation`.
add_executable(export_exchange ${CMAKE_CURRENT_LIST_DIR}/export_exchange.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../unit/model_fixtures.cpp)
target_include_directories(export_exchange PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../unit)
target_link_libraries(export_exchange PRIVATE headroom)
set_target_properties(export_exchange PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

# The combinations are the case labels of run_reference.sh (its `list`), read here so the script is
# the one place that names them; editing it re-runs CMake.
set(_reference_script ${CMAKE_CURRENT_LIST_DIR}/run_reference.sh)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_reference_script})
file(STRINGS ${_reference_script} _reference_cases REGEX "^  [a-z0-9_]+\\)  ")
set(_reference_python ${HEADROOM_PYTHON})
if(NOT _reference_python)
  set(_reference_python /usr/bin/python3)
endif()
foreach(_line ${_reference_cases})
  string(REGEX REPLACE "^  ([a-z0-9_]+)\\).*" "\\1" _name "${_line}")
  add_test(NAME reference_${_name}
    COMMAND bash ${_reference_script} $<TARGET_FILE:export_exchange> ${_reference_python} ${_name})
  set_tests_properties(reference_${_name} PROPERTIES LABELS validation TIMEOUT 120
    ENVIRONMENT "OMP_NUM_THREADS=1")
endforeach()

# The reference model's own tests: closed forms, finite differences, the AdamW formula, and
# compare.py failing on a deliberately perturbed or incomplete exchange file.
add_test(NAME reference_selftest COMMAND ${_reference_python} ${CMAKE_CURRENT_LIST_DIR}/test_reference.py)
set_tests_properties(reference_selftest PROPERTIES LABELS validation TIMEOUT 120 ENVIRONMENT "OMP_NUM_THREADS=1")
