/*
 * mwu.h -- the Mann-Whitney U test (Wilcoxon rank-sum), two-sided.
 *
 * U counts the pairs (x_i, y_j) with x_i > y_j, a tie counting one half; under
 * the null hypothesis (both samples from one distribution) its mean is
 * nx*ny/2. The p-value is
 *   - exact (the permutation distribution of U, by the usual recurrence) when
 *     there are no ties and nx*ny <= GATE_MWU_EXACT_MAX_PAIRS;
 *   - otherwise the normal approximation with the tie correction of the
 *     variance and a continuity correction of 1/2:
 *       var = nx*ny/12 * ((N+1) - sum(t^3 - t) / (N(N-1))),  N = nx + ny,
 *       z   = (|U - nx*ny/2| - 1/2) / sqrt(var),  p = erfc(z / sqrt 2).
 * When every value is tied (var == 0) the samples cannot be told apart: p = 1.
 */
#ifndef GATE_MWU_H
#define GATE_MWU_H

#include <stddef.h>

#define GATE_MWU_EXACT_MAX_PAIRS 2500

typedef struct gate_mwu {
    double u;   /* U of x: pairs with x > y, ties 1/2 */
    double z;   /* the normal statistic (continuity-corrected); 0 when exact */
    double p;   /* two-sided p-value, in [0, 1] */
    int exact;  /* 1 when p comes from the exact distribution */
    int ties;   /* 1 when any value occurs more than once */
} gate_mwu;

/* Tests x (nx values) against y (ny values). Returns 0, or -1 when a sample
 * is empty or memory ran out. NaNs are not allowed in x or y. */
int gate_mwu_test(const double *x, size_t nx, const double *y, size_t ny, gate_mwu *out);

/* P(U <= u) for samples of sizes nx, ny without ties (the exact null
 * distribution). Returns NAN when memory ran out. Cost O(nx * ny^2 * nx / 2). */
double gate_mwu_exact_cdf(size_t nx, size_t ny, double u);

#endif
