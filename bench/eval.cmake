# bench_eval: evaluate's speed (the RULER suite on a toy model) and memory (one long sample).
add_executable(bench_eval ${CMAKE_CURRENT_LIST_DIR}/bench_eval.cpp)
target_link_libraries(bench_eval PRIVATE headroom)
