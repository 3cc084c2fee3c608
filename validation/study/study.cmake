# The reduced toy studies against their full studies' recorded results (label validation):
# toy_cpu (inputs/studies/toy_cpu_ci.study: two configurations, seed 1, pretrain + evaluate, about
# 2 minutes) and toy_ruler (inputs/studies/toy_ruler_ci.study: wide, seed 1, the main chain
# pretrain -> extend -> sft -> evaluate on 2 data-parallel ranks, both cores, nothing beside it;
# then inputs/studies/toy_ruler_widths_ci.study on the same shards: the width ladder's 8 x 16, seed 1,
# pretraining only, so two head widths above the narrowest are checked).
add_test(NAME toy_study_reference
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_toy_study.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON}
          inputs/studies/toy_cpu_ci.study validation/reference/toy_cpu_study.json)
set_tests_properties(toy_study_reference PROPERTIES LABELS validation TIMEOUT 900 PROCESSORS 2)
add_test(NAME toy_ruler_reference
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_toy_study.sh $<TARGET_FILE_DIR:pretrain> ${CMAKE_SOURCE_DIR} ${HEADROOM_PYTHON}
          inputs/studies/toy_ruler_ci.study validation/reference/toy_ruler_budget_study.json
          --also inputs/studies/toy_ruler_widths_ci.study validation/reference/toy_ruler_widths_study.json
          --ranks 2 --parallel 1)
set_tests_properties(toy_ruler_reference PROPERTIES LABELS validation TIMEOUT 900 PROCESSORS 2)
