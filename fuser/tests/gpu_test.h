/*
 * gpu_test.h -- for the tests that need a GPU (label `gpu`): open the runtime
 * or skip, and OK(call). Uses the fuser runtime (runtime.h), so unlike
 * test_util.h it is not for the gate's stand-alone build.
 */
#ifndef FUSER_TEST_GPU_H
#define FUSER_TEST_GPU_H

#include <math.h>
#include <stdio.h>

#include "check.h"
#include "fuser_runtime.h"

/* CHECKs that call returns FU_OK; when it does not, prints the message of
 * `err` (an fu_error in scope, which call fills). */
#define OK(call)                                                         \
    do {                                                                 \
        fu_status ok_s_ = (call);                                        \
        CHECK(ok_s_ == FU_OK);                                           \
        if (ok_s_ != FU_OK) fprintf(stderr, "  -> %s\n", err.message);   \
    } while (0)

/* |x - y| of a GPU element x against the interpreter's y: 0 where both are NaN
 * or the same infinity, inf where only one is NaN or they are different infinities. */
static inline double gpu_test_diff(double x, double y)
{
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y) ? 0 : INFINITY;
    if (isinf(x) || isinf(y)) return x == y ? 0 : INFINITY;
    return fabs(x - y);
}

/* Opens the runtime with opts (NULL: the defaults) into *rt. 0 when it has a
 * GPU. Otherwise nothing stays open and main returns what this returns: 77
 * (ctest: skipped) with one line on stdout, "<test>: skipped: no GPU (<what
 * the runtime found>)", or 1 when the runtime did not open at all (why, on
 * stderr). */
static inline int gpu_test_open(const char *test, const fu_runtime_options *opts, fu_runtime **rt)
{
    fu_error err = {0};
    *rt = NULL;
    if (fu_runtime_open(opts, rt, &err) != FU_OK) {
        fprintf(stderr, "%s: fu_runtime_open: %s\n", test, err.message);
        *rt = NULL;
        return 1;
    }
    if (!fu_runtime_has_device(*rt)) {
        printf("%s: skipped: no GPU (%s)\n", test, fu_runtime_describe(*rt));
        fu_runtime_close(*rt);
        *rt = NULL;
        return 77;
    }
    return 0;
}

#endif
