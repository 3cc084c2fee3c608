# Tokenizer unit tests (byte-level and BPE encode/decode, BPE training, tokenizer files).
headroom_test(test_tokenizer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.cpp
  LABELS unit LIBS headroom)
# Hugging Face tokenizer.json on tiny hand-made files (validation/hf_tokenizer/ compares real ones).
headroom_test(test_hf_tokenizer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hf_tokenizer.cpp
  LABELS unit LIBS headroom)
