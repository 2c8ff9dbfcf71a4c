# CPU reference interpreter tests: every op on small hand-computed cases, and
# the workload composites (cross entropy, embedding, the nanoGPT QKV split)
# against direct loops. FUSER_LARGE_TESTS=1 adds the [8192, 32768] timing.
fuser_add_test(test_interp_ops SOURCES test_interp_ops.c LABELS unit)
fuser_add_test(test_interp_workloads SOURCES test_interp_workloads.c LABELS unit)
