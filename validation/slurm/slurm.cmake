# The Slurm plumbing on the single-node cluster (label slurm): jobs/slurm_local_up.sh, a tiny study
# through jobs/submit_pipeline.sh, dependency order, a failing stage cancelling its dependents,
# preemption with requeue, jobs/slurm_local_down.sh. Skipped (77) without root or the packages.
add_test(NAME slurm_pipeline
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_slurm.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON})
set_tests_properties(slurm_pipeline PROPERTIES LABELS slurm TIMEOUT 900 PROCESSORS 2 SKIP_RETURN_CODE 77
  RUN_SERIAL TRUE)

# The GPU jobs' sbatch and launch lines for 1 and 4 nodes (dry runs; no Slurm daemons, no GPU).
add_test(NAME slurm_gpu_jobs
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpu_jobs.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR})
set_tests_properties(slurm_gpu_jobs PROPERTIES LABELS unit TIMEOUT 120)
