headroom_test(test_model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gradcheck.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_decode.cpp ${CMAKE_CURRENT_LIST_DIR}/test_params.cpp
  ${CMAKE_CURRENT_LIST_DIR}/test_optimizer.cpp ${CMAKE_CURRENT_LIST_DIR}/model_fixtures.cpp
  LABELS unit LIBS headroom)
