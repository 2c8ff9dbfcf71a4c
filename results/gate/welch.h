/*
 * welch.h -- Welch's two-sample t-test on the logarithms of per-repetition
 * medians, the test of the gate (gate.h) and of the change-point search
 * (changepoint.h).
 *
 * Why logarithms: a slowdown multiplies times, so log(time) shifts by
 * log(1 + change) whatever the case's size; the confidence interval of the
 * mean difference of the logs is an interval of the ratio.
 * Why Welch (unequal variances): the two runs may come from different days,
 * with different noise.
 *   d   = mean(log x) - mean(log y)
 *   se  = sqrt(s_x^2/n_x + s_y^2/n_y)
 *   df  = se^4 / ((s_x^2/n_x)^2/(n_x-1) + (s_y^2/n_y)^2/(n_y-1))   (Welch-Satterthwaite)
 *   t   = d / se,  p = 2 P(T_df > |t|)
 * When se is 0 (every value equal on both sides) p is 1 if d is 0, else 0.
 */
#ifndef GATE_WELCH_H
#define GATE_WELCH_H

#include <stddef.h>

typedef struct gate_welch {
    double diff;      /* mean log difference (x over y) */
    double se;        /* its standard error */
    double df;        /* Welch-Satterthwaite degrees of freedom */
    double t, p;      /* statistic and two-sided p-value */
    double half_width; /* t quantile (1 - alpha/2) * se: half of the (1 - alpha) interval of diff */
} gate_welch;

/* Tests x against y (values > 0; at least 2 each). Returns 0, or -1 when a side
 * has fewer than 2 values or a value is not > 0. alpha sets half_width. */
int gate_welch_log_test(const double *x, size_t nx, const double *y, size_t ny, double alpha,
                        gate_welch *out);

/* P(T <= t) for Student's t with df degrees of freedom (df > 0). */
double gate_t_cdf(double t, double df);

/* The q quantile of Student's t with df degrees of freedom (0 < q < 1). */
double gate_t_quantile(double q, double df);

/* Relative standard deviation of values (> 0), in percent: the sample standard
 * deviation of their logarithms times 100 (close to stddev/mean for small
 * spreads). NAN with fewer than 2 values. */
double gate_log_noise_pct(const double *x, size_t n);

#endif
