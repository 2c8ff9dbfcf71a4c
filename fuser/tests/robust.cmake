# Issue 21: inputs that crashed the tools or gave a wrong number (sizes,
# slices, reads, all-or-none outputs; test_robust.c's header lists them).
fuser_add_test(test_robust SOURCES test_robust.c LABELS unit)
# The kernel cache's bad entries (FIFO, /dev/zero, lying header) and write
# failures, through `fuser plan` (NVRTC, no GPU).
fuser_add_test(test_robust_cache SOURCES test_robust.c LABELS compile ARGS cache)
if(FUSER_SANITIZE)
  set_property(TEST test_robust_cache APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=protect_shadow_gap=0")
endif()
