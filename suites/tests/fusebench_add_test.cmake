# fusebench_add_test(NAME SOURCES... LABELS... [OPENS_DRIVER] [ENV VAR=VALUE...])
# builds one test program of the harness (linked to fusebench, with the C
# sources next to the calling CMakeLists.txt and fuser/tests, for check.h,
# test_util.h and gpu_test.h, on its include path) and registers it with
# CTest: exit 77 means skipped; the environment names the suites
# (FUSEBENCH_SUITES_DIR) and run_suite (RUN_SUITE_BIN), plus ENV.
# OPENS_DRIVER: the test opens the CUDA driver, which maps memory where
# AddressSanitizer keeps its shadow gap (see fuser/tests/runtime.cmake).
# Used by suites/tests and reference/tests.
include_guard(GLOBAL)

function(fusebench_add_test name)
  cmake_parse_arguments(T "OPENS_DRIVER" "" "SOURCES;LABELS;ENV" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE fusebench)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/fuser/tests)
  add_test(NAME ${name} COMMAND ${name})
  set(env "FUSEBENCH_SUITES_DIR=${PROJECT_SOURCE_DIR}/suites;RUN_SUITE_BIN=$<TARGET_FILE:run_suite>" ${T_ENV})
  if(FUSER_SANITIZE AND T_OPENS_DRIVER)
    list(APPEND env "ASAN_OPTIONS=protect_shadow_gap=0")
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
endfunction()
