headroom_test(test_spike_monitor SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_spike_monitor.cpp
  LABELS unit LIBS headroom)
