/*
 * suite_case.h -- the reference tests' builder of one suite case: the fusion
 * of case c of suite s at one size given as text ("8192x32768"), dtype dt.
 * Header-only, so that each test program stays one file.
 */
#ifndef REFERENCE_TESTS_SUITE_CASE_H
#define REFERENCE_TESTS_SUITE_CASE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "suite.h"

/* NULL (reported, and a failed check) when it cannot be built. */
static inline fu_fusion *build_suite_case(const char *suites_dir, const hb_suite *s, const hb_case *c,
                                          const char *size, fu_dtype dt)
{
    char why[256] = "";
    fu_error err;
    memset(&err, 0, sizeof err);
    hb_size *sz = NULL;
    int nsz = 0;
    fu_fusion *f = NULL;
    bool ok = hb_parse_sizes(size, s->ndims, &sz, &nsz, why, sizeof why) && nsz == 1 &&
              hb_build_case(suites_dir, s, c, &sz[0], dt, &f, &err) == FU_OK;
    if (!ok) fprintf(stderr, "%s/%s %s %s: %s%s\n", s->name, c->name, fu_dtype_name(dt), size, why, err.message);
    CHECK(ok);
    free(sz);
    return f;
}

#endif
