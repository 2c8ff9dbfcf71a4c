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

/* The suite folders of $FUSEBENCH_SUITES_DIR (read once; exits 1 on a bad
 * manifest) and the one called name (NULL and a failed check if absent). */
static inline const hb_suite_set *test_suites(void)
{
    static hb_suite_set set;
    static bool loaded;
    if (!loaded) {
        const char *dir = getenv("FUSEBENCH_SUITES_DIR");
        char why[1200];
        if (!hb_suites_discover(dir ? dir : "suites", &set, why, sizeof why)) {
            fprintf(stderr, "%s\n", why);
            exit(1);
        }
        loaded = true;
    }
    return &set;
}

static inline const hb_suite *test_suite(const char *name)
{
    const hb_suite *s = hb_suite_set_find(test_suites(), name);
    CHECK(s != NULL);
    return s;
}

/* NULL (reported, and a failed check) when it cannot be built. */
static inline fu_fusion *build_suite_case(const hb_suite *s, const hb_case *c, const char *size, fu_dtype dt)
{
    char why[256] = "";
    fu_error err;
    memset(&err, 0, sizeof err);
    hb_size *sz = NULL;
    int nsz = 0;
    fu_fusion *f = NULL;
    bool ok = hb_parse_sizes(size, s->ndims, &sz, &nsz, why, sizeof why) && nsz == 1 &&
              hb_build_case(s, c, &sz[0], dt, &f, &err) == FU_OK;
    if (!ok) fprintf(stderr, "%s/%s %s %s: %s%s\n", s->name, c->name, fu_dtype_name(dt), size, why, err.message);
    CHECK(ok);
    free(sz);
    return f;
}

#endif
