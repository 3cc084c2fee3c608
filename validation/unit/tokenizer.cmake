# Tokenizer unit tests (byte-level and BPE encode/decode, BPE training, tokenizer files).
headroom_test(test_tokenizer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.cpp
  LABELS unit LIBS headroom)
