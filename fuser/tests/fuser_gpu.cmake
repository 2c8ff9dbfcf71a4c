# The whole GPU path (segmenter, schedulers, code generation, runtime,
# executor): every seed workload and its variants plan to the kernels they
# must and compile with NVRTC (no GPU needed), and on a GPU they agree with the
# CPU interpreter (skipped, exit 77, without one). Both share fuser_cases.h.
fuser_add_test(test_plan_compile SOURCES test_plan_compile.c LABELS compile)
fuser_add_test(test_gpu_fuser SOURCES test_gpu_fuser.c LABELS gpu)
set_tests_properties(test_plan_compile PROPERTIES TIMEOUT 600)
set_tests_properties(test_gpu_fuser PROPERTIES TIMEOUT 600)

if(FUSER_SANITIZE)
  # The GPU test opens the CUDA driver: AddressSanitizer's shadow gap must not
  # be protected (see runtime.cmake). The compile test opens the runtime
  # compile-only and never touches the driver.
  set_property(TEST test_gpu_fuser APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=protect_shadow_gap=0")
endif()
