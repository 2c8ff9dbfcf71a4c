# Issue 21: inputs that crashed the tools or gave a wrong number (sizes,
# slices, reads, all-or-none outputs; test_robust.c's header lists them).
fuser_add_test(test_robust SOURCES test_robust.c LABELS unit)
