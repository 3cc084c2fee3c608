# bench_tokenizer: byte-level / BPE encode throughput and BPE training time (not a test).
add_executable(bench_tokenizer ${CMAKE_CURRENT_LIST_DIR}/bench_tokenizer.cpp)
target_link_libraries(bench_tokenizer PRIVATE headroom)
