# The CUDA backend's tests.
#   test_attention_choice  which attention calls go to cuDNN, the blocked or the flash kernels, the
#                      blocked attention's geometry, and the graphs cuDNN is given: their
#                      consistency and, through an fp64 interpreter, their outputs against the CPU
#                      backend's attention (label unit; no GPU)
#   test_gpu_emulated  the kernel sources on the CPU emulator against the CPU backend (label unit;
#                      needs no GPU and no nvcc, so it runs in CI)
#   test_attention_blocked  the blocked attention on cuBLASLt on the emulator against the CPU
#                      attention (label unit; no GPU, no nvcc)
#   test_model_emulated  the model's stored bf16 operands on the emulator: training with the GEMMs'
#                      weight copy gives the losses of rounding in every product, decoding with the
#                      bf16 KV cache the fp32 cache's logits, bit for bit (label unit)
#   test_checkpoint_emulated  a checkpoint loaded on the emulator without fp32 weights holds what a
#                      master model holds (labels mpi; one rank: parallel HDF5 writes it)
#   test_gpu_device    GPU discovery (label gpu; exits 77 = skipped without a GPU)
#   test_gpu_ops       every op of cuda_ops() / cuda_ops_fp32() against the CPU backend (label gpu);
#                      test_gpu_ops_gemm_search: its GEMM and attention cases with HEADROOM_GEMM_SEARCH=8
#   test_gpu_nccl      NcclComm on 2 ranks, device and host buffers (labels gpu, mpi; needs 2 GPUs)
headroom_test(test_gpu_emulated SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_emulated.cpp
  LABELS unit LIBS headroom_kernels headroom_kernels_emulated)
target_include_directories(test_gpu_emulated PRIVATE ${CMAKE_SOURCE_DIR}/kernels ${CMAKE_SOURCE_DIR}/src)
headroom_test(test_attention_blocked SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_attention_blocked.cpp
  LABELS unit LIBS headroom_kernels headroom_kernels_emulated)
target_include_directories(test_attention_blocked PRIVATE ${CMAKE_SOURCE_DIR}/kernels ${CMAKE_SOURCE_DIR}/src)
headroom_test(test_model_emulated SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model_emulated.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_fixtures.cpp LABELS unit LIBS headroom headroom_kernels_emulated)
target_include_directories(test_model_emulated PRIVATE ${CMAKE_SOURCE_DIR}/kernels)
headroom_test(test_checkpoint_emulated SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_checkpoint_emulated.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_fixtures.cpp LABELS mpi LIBS headroom headroom_kernels_emulated NP 1 TIMEOUT 60)
target_include_directories(test_checkpoint_emulated PRIVATE ${CMAKE_SOURCE_DIR}/kernels)
headroom_test(test_attention_choice SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_attention_choice.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_attention_graph.cpp LABELS unit LIBS headroom_attention_choice headroom_kernels_cpu)

if(HEADROOM_HAVE_CUDA)
  headroom_test(test_gpu_device SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_device.cpp
    LABELS gpu LIBS headroom_kernels_cuda)
  headroom_test(test_gpu_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_ops.cpp
    LABELS gpu LIBS headroom_kernels TIMEOUT 600)
  # The GEMMs again with each shape's algorithm timed among cuBLASLt's first 8 (HEADROOM_GEMM_SEARCH):
  # whichever wins, the products are the same within the same tolerances. The blocked attention
  # runs on the same batched GEMMs.
  add_test(NAME test_gpu_ops_gemm_search COMMAND test_gpu_ops --gtest_filter=*Matmul*:*Attention*)
  set_tests_properties(test_gpu_ops_gemm_search PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77
    ENVIRONMENT "HEADROOM_GEMM_SEARCH=8")
  headroom_test(test_gpu_nccl SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_nccl.cpp
    LABELS "gpu;mpi" LIBS headroom NP 2)
endif()

# The GPU session script's plan without a GPU (label unit): every step named, nothing built or run.
add_test(NAME gpu_checks_plan
  COMMAND bash -c "out=$(\"$0\" --dry-run --build-dir \"$1\") || exit 1; echo \"$out\"; for step in build '(s)' '(a)' '(b)' '(d)' '(c)' '(f)' table; do grep -qF -- \"$step\" <<<\"$out\" || { echo \"the plan lacks $step\"; exit 1; }; done; [[ ! -e $1 ]] || { echo \"--dry-run created $1\"; exit 1; }"
          ${CMAKE_SOURCE_DIR}/validation/gpu/run_gpu_checks.sh ${CMAKE_BINARY_DIR}/gpu_checks_plan_never_built)
set_tests_properties(gpu_checks_plan PROPERTIES LABELS unit TIMEOUT 30)
