# The communicators (label mpi): MpiComm's overlapped reductions in fp32 and bf16 on 4 ranks.
headroom_test(test_comm_reduction SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_comm_reduction.cpp LABELS mpi
  LIBS headroom NP 4 TIMEOUT 60)
