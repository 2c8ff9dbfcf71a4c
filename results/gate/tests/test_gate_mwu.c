/*
 * test_gate_mwu.c -- the statistics under the gate: the Mann-Whitney U test
 * (exact p against enumeration of every split, the normal approximation with
 * ties against a hand computation), the median, and thresholds files.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mwu.h"
#include "synth.h"
#include "thresholds.h"
#include "util.h"

/* Two-sided permutation p of U by enumerating every way of choosing which nx
 * of the n = nx + ny pooled values are "x" (no ties). */
static double brute_p(const double *x, size_t nx, const double *y, size_t ny)
{
    size_t n = nx + ny;
    double pool[16];
    for (size_t i = 0; i < nx; i++) pool[i] = x[i];
    for (size_t j = 0; j < ny; j++) pool[nx + j] = y[j];
    double u_obs = 0;
    for (size_t i = 0; i < nx; i++)
        for (size_t j = 0; j < ny; j++) u_obs += x[i] > y[j];
    double total = 0, le = 0, ge = 0;
    for (uint32_t mask = 0; mask < (1u << n); mask++) {
        size_t bits = 0;
        for (uint32_t m = mask; m; m >>= 1) bits += m & 1;
        if (bits != nx) continue;
        double u = 0;
        for (size_t a = 0; a < n; a++)
            for (size_t b = 0; b < n; b++)
                if ((mask >> a & 1) && !(mask >> b & 1)) u += pool[a] > pool[b];
        total++;
        le += u <= u_obs;
        ge += u >= u_obs;
    }
    double p = 2 * (le < ge ? le : ge) / total;
    return p > 1 ? 1 : p;
}

static void test_exact(void)
{
    const double x[5] = {6, 7, 8, 9, 10}, y[5] = {1, 2, 3, 4, 5};
    gate_mwu t;
    CHECK(gate_mwu_test(x, 5, y, 5, &t) == 0);
    CHECK(t.exact);
    CHECK(!t.ties);
    CHECK_NEAR(t.u, 25, 0);
    CHECK_NEAR(t.p, 2.0 / 252.0, 1e-12);
    CHECK(gate_mwu_test(y, 5, x, 5, &t) == 0);
    CHECK_NEAR(t.u, 0, 0);
    CHECK_NEAR(t.p, 2.0 / 252.0, 1e-12);

    /* Against enumeration, for random samples of several sizes. */
    synth_rng rng = {42};
    const size_t sizes[][2] = {{3, 4}, {4, 6}, {7, 3}, {5, 5}, {1, 8}, {6, 7}, {2, 2}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int trial = 0; trial < 20; trial++) {
            double xs[16], ys[16];
            size_t nx = sizes[s][0], ny = sizes[s][1];
            double shift = 0.3 * (trial % 4);
            for (size_t i = 0; i < nx; i++) xs[i] = synth_normal(&rng) + shift;
            for (size_t j = 0; j < ny; j++) ys[j] = synth_normal(&rng);
            CHECK(gate_mwu_test(xs, nx, ys, ny, &t) == 0);
            CHECK(t.exact);
            CHECK_NEAR(t.p, brute_p(xs, nx, ys, ny), 1e-9);
        }

    /* The exact distribution sums to 1 and is symmetric, for sizes far apart. */
    CHECK_NEAR(gate_mwu_exact_cdf(3, 40, 120), 1.0, 0);
    CHECK_NEAR(gate_mwu_exact_cdf(40, 3, 59), 1.0 - gate_mwu_exact_cdf(40, 3, 60), 1e-12);
    CHECK_NEAR(gate_mwu_exact_cdf(3, 40, 10), gate_mwu_exact_cdf(40, 3, 10), 1e-12);
    CHECK(gate_mwu_exact_cdf(4, 4, -1) == 0);
}

static void test_normal_with_ties(void)
{
    /* Ranks: 1 | 2 2 2 -> 3 | 3 3 -> 5.5 | 4 -> 7 | 5 -> 8 | 6 6 -> 9.5 | 7 -> 11.
     * R_x = 19.5, U = 4.5, ties 3, 2, 2: sum(t^3 - t) = 36; N = 11;
     * var = 30/12 (12 - 36/110); z = (15 - 4.5 - 0.5) / sqrt(var). */
    const double x[5] = {1, 2, 2, 3, 4}, y[6] = {2, 3, 5, 6, 6, 7};
    gate_mwu t;
    CHECK(gate_mwu_test(x, 5, y, 6, &t) == 0);
    CHECK(!t.exact);
    CHECK(t.ties);
    CHECK_NEAR(t.u, 4.5, 0);
    CHECK_NEAR(t.z, 1.8511594413390131, 1e-12);
    CHECK_NEAR(t.p, 0.06414661873440443, 1e-12);

    /* Every value tied: nothing to tell apart. */
    const double a[6] = {3, 3, 3, 3, 3, 3}, b[5] = {3, 3, 3, 3, 3};
    CHECK(gate_mwu_test(a, 6, b, 5, &t) == 0);
    CHECK_NEAR(t.p, 1.0, 0);

    /* Large samples, no ties: normal approximation; a clear shift is tiny p,
     * no shift is a large p. */
    synth_rng rng = {7};
    enum { N = 400 };
    double *p = malloc(N * sizeof *p), *q = malloc(N * sizeof *q), *r = malloc(N * sizeof *r);
    for (int i = 0; i < N; i++) {
        p[i] = 100 * (1 + 0.01 * synth_normal(&rng));
        q[i] = 105 * (1 + 0.01 * synth_normal(&rng));
        r[i] = 100 * (1 + 0.01 * synth_normal(&rng));
    }
    CHECK(gate_mwu_test(q, N, p, N, &t) == 0);
    CHECK(!t.exact);
    CHECK(t.p < 1e-50);
    CHECK(t.u > 0.99 * N * N);
    CHECK(gate_mwu_test(r, N, p, N, &t) == 0);
    CHECK(t.p > 0.001);
    free(p);
    free(q);
    free(r);

    CHECK(gate_mwu_test(x, 0, y, 6, &t) == -1);
}

static void test_median(void)
{
    const double odd[5] = {5, 1, 4, 2, 3}, even[4] = {10, 1, 3, 2};
    CHECK_NEAR(gate_median(odd, 5), 3, 0);
    CHECK_NEAR(gate_median(even, 4), 2.5, 0);
    CHECK(isnan(gate_median(odd, 0)));
    CHECK_NEAR(odd[0], 5, 0); /* untouched */
}

static void test_thresholds(void)
{
    gate_thresholds t;
    char err[256];
    const char *text = "# per-suite and per-case minimum effects\n"
                       "\n"
                       "*                       4\n"
                       "embedding/*             6%   # a whole suite\n"
                       "  embedding/bwd/*/bf16/*  2.5\n";
    CHECK(gate_thresholds_parse(&t, text, "t.txt", err, sizeof err) == 0);
    CHECK(t.n == 3);
    CHECK_NEAR(gate_thresholds_lookup(&t, "qkv_split/fwd/fuser/bf16/12x1024x768", 3), 4, 0);
    CHECK_NEAR(gate_thresholds_lookup(&t, "embedding/fwd/fuser/bf16/8192x768", 3), 6, 0);
    CHECK_NEAR(gate_thresholds_lookup(&t, "embedding/bwd/fuser/bf16/8192x768", 3), 2.5, 0);
    CHECK_NEAR(gate_thresholds_lookup(NULL, "x", 3), 3, 0);
    gate_thresholds_free(&t);

    CHECK(gate_thresholds_parse(&t, "", "t.txt", err, sizeof err) == 0);
    CHECK(t.n == 0);
    CHECK_NEAR(gate_thresholds_lookup(&t, "x", 3), 3, 0);
    gate_thresholds_free(&t);

    CHECK(gate_thresholds_parse(&t, "a 1\nembedding/*\n", "t.txt", err, sizeof err) == -1);
    CHECK_CONTAINS(err, "t.txt:2:");
    CHECK_CONTAINS(err, "no threshold");
    CHECK(gate_thresholds_parse(&t, "a -1\n", "t.txt", err, sizeof err) == -1);
    CHECK_CONTAINS(err, "t.txt:1:");
    CHECK(gate_thresholds_parse(&t, "a 3 4\n", "t.txt", err, sizeof err) == -1);
    CHECK(gate_thresholds_parse(&t, "a three\n", "t.txt", err, sizeof err) == -1);
    CHECK_CONTAINS(err, "not a percentage");
    CHECK(gate_thresholds_load(&t, "/nonexistent/thresholds.txt", err, sizeof err) == -1);
    CHECK_CONTAINS(err, "/nonexistent/thresholds.txt");
}

int main(void)
{
    test_exact();
    test_normal_with_ties();
    test_median();
    test_thresholds();
    return check_finish("test_gate_mwu");
}
