# The fuzz targets (fuser/fuzz/): label `fuzz`, in CI. fuzz_build builds them
# with clang and libFuzzer (a project of its own: the main build stays gcc);
# each target then runs for FUSER_FUZZ_SECONDS (60) from its committed seeds.
# All of it takes about 4.5 minutes on 2 cores.
set(FUSER_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz test runs its target")
set(FUZZ_DIR ${PROJECT_SOURCE_DIR}/fuser/fuzz)
set(FUZZ_BIN ${CMAKE_BINARY_DIR}/fuzz)
add_test(NAME fuzz_build COMMAND sh ${FUZZ_DIR}/build.sh ${FUZZ_BIN})
set_tests_properties(fuzz_build PROPERTIES LABELS fuzz FIXTURES_SETUP fuzz_targets SKIP_RETURN_CODE 77 TIMEOUT 600)
foreach(pair format:fusion plan:fusion npy:npy run_json:run_json)
  string(REPLACE ":" ";" parts ${pair})
  list(GET parts 0 target)
  list(GET parts 1 seeds)
  add_test(NAME fuzz_${target}
           COMMAND sh ${FUZZ_DIR}/run.sh ${FUZZ_BIN}/fuzz_${target} ${FUZZ_DIR}/corpus/${seeds} ${FUSER_FUZZ_SECONDS})
  set_tests_properties(fuzz_${target} PROPERTIES LABELS fuzz FIXTURES_REQUIRED fuzz_targets SKIP_RETURN_CODE 77
                       TIMEOUT 300 WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endforeach()
