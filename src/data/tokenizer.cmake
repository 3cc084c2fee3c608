# Tokenizer sources; the top-level build adds them to the headroom library.
set(HEADROOM_TOKENIZER_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bpe_train.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_file.cpp)
