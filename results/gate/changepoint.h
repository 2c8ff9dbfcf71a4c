/*
 * changepoint.h -- step changes in one case's history: the stored runs of one GPU
 * model in date order, each with its repetition medians (run.h).
 *
 * The method is Apache Otava's (Hunter's, as MongoDB's CI uses it): E-divisive
 * means places a change point, Student's t decides whether it is real, and
 * the search recurses into both sides until no split is significant.
 *   1. Location: within a segment of runs, each run a point (the mean log of
 *      its repetitions), the split tau that maximises the energy statistic
 *        Q(tau) = m n / (m + n) * (2/(mn) sum |x_i - y_j|
 *                 - 1/C(m,2) sum_{i<k} |x_i - x_k| - 1/C(n,2) sum_{j<k} |y_j - y_k|)
 *      (the within-side terms are 0 for a side of one run).
 *   2. Significance: Welch's t-test (welch.h) on the logs of the repetition
 *      medians of the runs left and right of tau, p < alpha; and a size that
 *      counts: |change| >= threshold, and >= noise_k times the case's
 *      run-to-run noise. The noise: the standard deviation of the runs around
 *      the means of the segments between the steps a first search (with the
 *      threshold alone) finds, so that the steps themselves are not counted
 *      as noise; unknown (the threshold alone applies) with fewer than 3
 *      degrees of freedom left.
 *   3. Recursion into [start, tau) and [tau, end) with the accepted split kept.
 * A step's reported size and p-value are those of the segments next to it
 * (from the change point before it to the one after), as Otava reports them.
 */
#ifndef GATE_CHANGEPOINT_H
#define GATE_CHANGEPOINT_H

#include <stddef.h>

typedef struct gate_hist_point {
    const double *reps; /* repetition medians (us), > 0 */
    size_t nreps;       /* at least 1 */
} gate_hist_point;

typedef struct gate_hist_options {
    double alpha;         /* default 0.01 */
    double threshold_pct; /* default 3 */
    double noise_k;       /* default 3 */
} gate_hist_options;

void gate_hist_options_default(gate_hist_options *o);

typedef struct gate_step {
    size_t index;         /* the first run after the step */
    double change_pct;    /* exp(mean log after - mean log before) - 1, in percent */
    double p_value;       /* Welch on the repetitions of the two segments */
    double before_us, after_us; /* the segments' geometric means */
} gate_step;

/* The run-to-run noise of a history, percent (see 2. above); NAN when it
 * cannot be told (then only the threshold applies). */
double gate_hist_noise_pct(const gate_hist_point *pts, size_t n, const gate_hist_options *opt);

/* Finds the steps of pts[0..n). Returns the number found (in order of index)
 * written to *out (malloc'd, NULL when none), or -1 when memory ran out or a
 * point is empty or not > 0. */
long gate_hist_steps(const gate_hist_point *pts, size_t n, const gate_hist_options *opt,
                     gate_step **out);

#endif
