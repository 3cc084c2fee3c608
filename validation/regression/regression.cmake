# The numerical regression test (validation/regression/README.md): fixed-seed toy runs of every stage
# compared with validation/reference/regression.json, naming every figure that moved. Launches its
# stages with mpirun (1 rank each), hence label mpi next to validation.
add_test(NAME regression_reference
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check.sh ${CMAKE_BINARY_DIR})
set_tests_properties(regression_reference PROPERTIES LABELS "validation;mpi" TIMEOUT 600 PROCESSORS 1
  ENVIRONMENT "OMP_NUM_THREADS=1")
