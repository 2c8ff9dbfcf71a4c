# The reduction schedulers' and the code generator's numerics (issue 19, items
# 3 and 4): the fusions of fuser/tests/data plan and compile without a GPU
# (compile), and match the CPU interpreter on one (gpu). scripts/gpu/reduce.sh
# runs the gpu test with timing on the H200.
fuser_add_test(test_reduce_codegen SOURCES test_reduce_codegen.c LABELS compile)
fuser_add_test(test_reduce_gpu SOURCES test_reduce_gpu.c LABELS gpu)
foreach(t test_reduce_codegen test_reduce_gpu)
  set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "FUSER_TEST_DATA=${CMAKE_CURRENT_SOURCE_DIR}/data")
  set_tests_properties(${t} PROPERTIES TIMEOUT 300)
endforeach()
if(FUSER_SANITIZE)
  set_property(TEST test_reduce_gpu APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=protect_shadow_gap=0")
endif()
