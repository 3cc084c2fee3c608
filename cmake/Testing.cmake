# headroom_test(NAME SOURCES a.cpp ... LABELS unit [LIBS ...] [NP n] [TIMEOUT s])
# A GoogleTest executable registered with CTest. NP > 0 launches it under mpirun with that many ranks
# (label mpi). Tests that exit 77 are reported as skipped (GPU tests without a GPU).
set(HEADROOM_MPIEXEC ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe)
add_library(headroom_test_main STATIC ${CMAKE_SOURCE_DIR}/validation/unit/test_main.cpp)
target_link_libraries(headroom_test_main PUBLIC GTest::gtest headroom_kernels)
function(headroom_test name)
  cmake_parse_arguments(T "" "NP;TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} headroom_test_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(T_NP)
    add_test(NAME ${name} COMMAND ${HEADROOM_MPIEXEC} -np ${T_NP} $<TARGET_FILE:${name}>)
  else()
    add_test(NAME ${name} COMMAND ${name})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE 77
    ENVIRONMENT "OMP_NUM_THREADS=1;OMPI_MCA_btl=self,vader;OMPI_MCA_pml=ob1;OMPI_MCA_btl_vader_single_copy_mechanism=none;OMPI_MCA_rmaps_base_oversubscribe=1;HEADROOM_SOURCE_DIR=${CMAKE_SOURCE_DIR};HEADROOM_BIN_DIR=${CMAKE_BINARY_DIR}/bin;HEADROOM_PYTHON=${HEADROOM_PYTHON}")
endfunction()
