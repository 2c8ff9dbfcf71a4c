# CPU reference interpreter tests: every op on small hand-computed cases, and
# the workload composites (cross entropy, embedding, the nanoGPT QKV split)
# against direct loops. FUSER_LARGE_TESTS=1 adds the [8192, 32768] timing.
fuser_add_test(test_interp_ops SOURCES test_interp_ops.c LABELS unit)
fuser_add_test(test_interp_workloads SOURCES test_interp_workloads.c LABELS unit)
# fu_value_range against the interpreter: every value of every tensor of the generator's fusions
# (and their decompositions) lies in its tensor's interval.
fuser_add_test(test_value_range SOURCES test_value_range.c ../fuzzgen/gen.c LABELS unit)
target_include_directories(test_value_range PRIVATE ${PROJECT_SOURCE_DIR}/fuser/fuzzgen)
# Four threads whatever the machine's cores, so that test_parallel_rows splits the rows.
set_property(TEST test_interp_ops APPEND PROPERTY ENVIRONMENT OMP_NUM_THREADS=4)
