# I/O and command-line tests: .npy reading/writing, and the `fuser` command
# driven as a subprocess (FUSER_BIN).
fuser_add_test(test_npy SOURCES test_npy.c LABELS unit)
fuser_add_test(test_cli SOURCES test_cli.c LABELS unit)
# Four threads whatever the machine's cores, so that test_random_prefix splits the fill.
set_property(TEST test_npy APPEND PROPERTY ENVIRONMENT OMP_NUM_THREADS=4)
