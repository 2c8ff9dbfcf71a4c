# The GPU runtime (src/runtime): NVRTC compilation and its cache (no GPU
# needed; NVRTC must be present), and the device side (skipped without a GPU).
fuser_add_test(test_runtime_compile SOURCES test_runtime_compile.c LABELS compile)
fuser_add_test(test_nvrtc_time SOURCES test_nvrtc_time.c LABELS compile)
fuser_add_test(test_runtime_gpu SOURCES test_runtime_gpu.c LABELS gpu)

if(FUSER_SANITIZE)
  # The CUDA driver maps memory at fixed low addresses that AddressSanitizer
  # keeps as its shadow gap: without protect_shadow_gap=0, cuInit fails with
  # CUDA_ERROR_OUT_OF_MEMORY (and libcuda leaks on that path). Both tests open
  # the driver where there is one (the compile test through a default open).
  # NVRTC needs nothing: the runtime keeps it mapped (RTLD_NODELETE), so its
  # load-time allocations stay reachable and leak detection stays on.
  set_property(TEST test_runtime_compile test_runtime_gpu APPEND PROPERTY ENVIRONMENT
    "ASAN_OPTIONS=protect_shadow_gap=0")
endif()
