# bench_tokenizer: byte-level / BPE encode throughput and BPE training time (not a test).
include(${CMAKE_CURRENT_LIST_DIR}/../src/data/tokenizer.cmake)
if(TARGET headroom)
  add_executable(bench_tokenizer ${CMAKE_CURRENT_LIST_DIR}/bench_tokenizer.cpp)
  target_link_libraries(bench_tokenizer PRIVATE headroom)
else()
  add_executable(bench_tokenizer ${CMAKE_CURRENT_LIST_DIR}/bench_tokenizer.cpp ${HEADROOM_TOKENIZER_SOURCES})
endif()
target_include_directories(bench_tokenizer PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../src)
