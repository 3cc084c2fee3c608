# Tests that launch MPI ranks (label mpi): layout independence, checkpoints and resume, faults.
set(_mpi ${CMAKE_CURRENT_LIST_DIR})
set(_py ${HEADROOM_PYTHON})
foreach(case
    "mha"
    "gqa|--model.n_kv_heads;2"
    "mqa_replicated_kv|--model.n_kv_heads;1;--model.qk_norm;layer"
    "qk_layer|--model.qk_norm;layer;--model.n_kv_heads;2"
    "qk_head_post|--model.qk_norm;head;--model.norm_order;post"
    "sliding|--model.layer_pattern;SSF;--model.window;8;--model.n_kv_heads;2"
    "docmask|--data.document_mask;true;--model.layer_pattern;SF;--model.window;8;--model.n_kv_heads;2")
  string(REPLACE "|" ";" _parts "${case}")
  list(GET _parts 0 _name)
  list(REMOVE_AT _parts 0)
  add_test(NAME layout_${_name}
    COMMAND bash ${_mpi}/test_layout.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${_py} ${_name} ${_parts})
  set_tests_properties(layout_${_name} PROPERTIES LABELS mpi TIMEOUT 300 PROCESSORS 2)
endforeach()
foreach(t checkpoint faults stages probe grad_reduction step_profile)
  add_test(NAME ${t} COMMAND bash ${_mpi}/test_${t}.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${_py})
  set_tests_properties(${t} PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
endforeach()

# Two jobs launched side by side outside Slurm each get every core (jobs/lib/stage.sh's mpirun line).
add_test(NAME launcher_binding COMMAND bash ${_mpi}/test_launcher_binding.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(launcher_binding PROPERTIES LABELS mpi TIMEOUT 60 SKIP_RETURN_CODE 77 PROCESSORS 2)

# The trainer's GPU path on the emulated GPU (bin/emulated, built with HEADROOM_EMULATED_DEVICE,
# which jobs/run_tests.sh turns on): every knob family in fp32 and bf16 against the CPU backend,
# tp=2, dp=2 with ZeRO-1, checkpoints across devices, SIGUSR1, evaluate's decoded tokens.
if(HEADROOM_EMULATED_DEVICE)
  add_test(NAME emulated_device COMMAND bash ${_mpi}/test_emulated_device.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${_py})
  set_tests_properties(emulated_device PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
endif()

# prepare on 1 and 2 ranks: same tokens and split, bounded shards and memory, read by pretrain.
add_test(NAME prepare_mpi
  COMMAND bash ${_mpi}/test_prepare_mpi.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${_py})
set_tests_properties(prepare_mpi PROPERTIES LABELS mpi TIMEOUT 120 PROCESSORS 2)

# data.mix: shares within 1% of the weights, the same for dp = 1 and 2, resumed bit-exactly.
add_test(NAME mixture
  COMMAND bash ${_mpi}/test_mixture.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${_py})
set_tests_properties(mixture PROPERTIES LABELS mpi TIMEOUT 120 PROCESSORS 2)
