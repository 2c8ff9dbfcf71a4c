# ci/sharded.cmake -- the tests of `ci/nightly --sharded`: one CTest test per
# suite, each asking for one GPU (RESOURCE_GROUPS "gpus:1"), so that
#   ctest --resource-spec-file resources.json -j <GPUs>
# runs the suites in parallel, one GPU each (ci/ctest-resources.json is an
# example spec: one `gpus` resource of one slot per device).
#
# ci/nightly writes a CTestTestfile.cmake that sets these and includes this file:
#   FUSEBENCH_ROOT       the repository
#   FUSEBENCH_SHARD_DIR  where each suite writes <suite>.json
#   FUSEBENCH_SUITES     the suites, a list
#   FUSEBENCH_RUN_SUITE  ./run_suite, or a stand-in
#   FUSEBENCH_RUN_ARGS   more run_suite arguments (a list; may be empty)
#   FUSEBENCH_GPU_LIST   comma-separated devices; resource id N is entry N
#   FUSEBENCH_SHARD_TIMEOUT  seconds per suite (default 7200)
# ci/run_shard turns CTest's CTEST_RESOURCE_GROUP_0_GPUS ("id:N,slots:1") into
# CUDA_VISIBLE_DEVICES and runs the suite.
if(NOT DEFINED FUSEBENCH_SHARD_TIMEOUT)
  set(FUSEBENCH_SHARD_TIMEOUT 7200)
endif()
foreach(suite IN LISTS FUSEBENCH_SUITES)
  add_test(suite_${suite} sh "${FUSEBENCH_ROOT}/ci/run_shard" "${suite}"
           "${FUSEBENCH_SHARD_DIR}/${suite}.json" ${FUSEBENCH_RUN_ARGS})
  set_tests_properties(suite_${suite} PROPERTIES
    RESOURCE_GROUPS "gpus:1"
    LABELS "bench;gpu"
    TIMEOUT ${FUSEBENCH_SHARD_TIMEOUT}
    ENVIRONMENT "FUSEBENCH_GPU_LIST=${FUSEBENCH_GPU_LIST};FUSEBENCH_RUN_SUITE=${FUSEBENCH_RUN_SUITE}")
endforeach()
