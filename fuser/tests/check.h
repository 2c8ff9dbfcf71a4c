/*
 * check.h -- the tests' tiny assertion kit (no unit-test library is assumed).
 * Each CHECK prints file:line and the failed condition, and counts; a test's
 * main() returns check_finish(), non-zero when anything failed.
 */
#ifndef FUSER_TEST_CHECK_H
#define FUSER_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        check_count++;                                                                \
        if (!(cond)) {                                                                \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol)                                                               \
    do {                                                                                    \
        double check_a_ = (a), check_b_ = (b);                                              \
        check_count++;                                                                      \
        if (!(fabs(check_a_ - check_b_) <= (tol) * fmax(1.0, fabs(check_b_))) &&            \
            !(isnan(check_a_) && isnan(check_b_))) {                                        \
            check_failures++;                                                               \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, %s = %.17g\n", __FILE__, \
                    __LINE__, #a, check_a_, #b, check_b_);                                  \
        }                                                                                   \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                          \
    do {                                                                                          \
        const char *check_h_ = (haystack);                                                        \
        check_count++;                                                                            \
        if (!check_h_ || !strstr(check_h_, (needle))) {                                           \
            check_failures++;                                                                     \
            fprintf(stderr, "%s:%d: expected \"%s\" in \"%s\"\n", __FILE__, __LINE__, (needle),  \
                    check_h_ ? check_h_ : "(null)");                                              \
        }                                                                                         \
    } while (0)

static inline int check_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
