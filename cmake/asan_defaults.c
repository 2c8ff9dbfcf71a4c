/*
 * asan_defaults.c -- linked into every program of a sanitizer build
 * (FUSER_SANITIZE): the AddressSanitizer options it starts with, before
 * those of the ASAN_OPTIONS environment variable (which add to them and
 * win where they name the same option).
 *
 * intercept_tls_get_addr=0: LeakSanitizer's exit-time scan of dynamic TLS
 * (the blocks of dlopen'd libraries: NVRTC, CUPTI) guesses glibc's TLS
 * header layout from the block's address and, at some heap layouts, takes a
 * bogus range and crashes ("Tracer caught signal 11", google/sanitizers
 * issue 1322). test_reduce_codegen hit it after an unrelated change, when
 * run from some working directories only. Leak detection stays on for
 * everything else.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0"; }
