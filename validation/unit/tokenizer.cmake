# Tokenizer unit tests (byte-level and BPE encode/decode, BPE training, tokenizer files).
include(${CMAKE_CURRENT_LIST_DIR}/../../src/data/tokenizer.cmake)
headroom_test(test_tokenizer
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.cpp ${HEADROOM_TOKENIZER_SOURCES}
  LABELS unit)
target_include_directories(test_tokenizer PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../../src)
