# Hugging Face checkpoints in and out (apps/import_hf, apps/export_hf): the safetensors reader and
# writer and the mapping (unit), and tiny random Hugging Face directories through import, the
# PyTorch reference, export and import again (validation).
set(_hf ${CMAKE_CURRENT_LIST_DIR})
headroom_test(test_safetensors SOURCES ${_hf}/test_safetensors.cpp LABELS unit LIBS headroom)

# Loads a checkpoint and writes the logits of a fixed batch (for compare_hf.py).
add_executable(dump_logits ${_hf}/dump_logits.cpp)
target_link_libraries(dump_logits PRIVATE headroom)
set_target_properties(dump_logits PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

add_test(NAME hf_import_export
  COMMAND bash ${_hf}/test_hf.sh ${CMAKE_BINARY_DIR}/bin ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
set_tests_properties(hf_import_export PROPERTIES LABELS validation TIMEOUT 300 PROCESSORS 2)

# The imported tiny directories through evaluate, analyze and extend --init, unchanged.
add_test(NAME hf_stages
  COMMAND bash ${_hf}/test_hf_stages.sh ${CMAKE_BINARY_DIR}/bin ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
set_tests_properties(hf_stages PROPERTIES LABELS validation TIMEOUT 300)
