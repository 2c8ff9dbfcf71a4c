/*
 * stats.c -- medians, quantiles, spread, and the stop rule of the sampling
 * loop. Pure functions; unit-tested in suites/tests/test_harness_unit.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double hb_quantile_sorted(const double *sorted, int n, double q)
{
    if (n <= 0) return NAN;
    if (q <= 0) return sorted[0];
    if (q >= 1) return sorted[n - 1];
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : n - 1;
    double frac = pos - lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

/* A sorted malloc'd copy, or NULL. */
static double *sorted_copy(const double *x, int n)
{
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return NULL;
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return s;
}

double hb_median(const double *x, int n)
{
    if (n <= 0) return NAN;
    double *s = sorted_copy(x, n);
    if (!s) return NAN;
    double m = hb_quantile_sorted(s, n, 0.5);
    free(s);
    return m;
}

bool hb_summarize(const double *x, int n, hb_summary *out)
{
    memset(out, 0, sizeof *out);
    out->median = out->p25 = out->p75 = out->min = out->max = out->mean = NAN;
    if (n <= 0) return false;
    double *s = sorted_copy(x, n);
    if (!s) return false;
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    out->mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (s[i] - out->mean) * (s[i] - out->mean);
    out->stddev = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    out->median = hb_quantile_sorted(s, n, 0.5);
    out->p25 = hb_quantile_sorted(s, n, 0.25);
    out->p75 = hb_quantile_sorted(s, n, 0.75);
    double iqr = out->p75 - out->p25;
    if (n < 2 || iqr == 0) out->spread = 0.0;
    else if (out->median == 0) out->spread = INFINITY;
    else out->spread = iqr / fabs(out->median);
    free(s);
    return true;
}

const char *hb_stop_name(hb_stop s)
{
    switch (s) {
    case HB_CONTINUE: return "continue";
    case HB_STOP_CONVERGED: return "converged";
    case HB_STOP_MAX_SAMPLES: return "max_samples";
    case HB_STOP_TIME_LIMIT: return "time_limit";
    }
    return "?";
}

hb_stop hb_should_stop(const hb_stop_rule *r, const double *samples, int n, double elapsed_s)
{
    if (n >= r->max_samples) return HB_STOP_MAX_SAMPLES;
    /* Past the limit, stop once a few samples are in (a slow call still gets
     * a median of several); past twice the limit, stop regardless. */
    int few = r->min_samples / 2 > 3 ? r->min_samples / 2 : 3;
    if (elapsed_s >= 2 * r->time_limit_s && n > 0) return HB_STOP_TIME_LIMIT;
    if (elapsed_s >= r->time_limit_s && n >= few) return HB_STOP_TIME_LIMIT;
    if (n < r->min_samples) return HB_CONTINUE;
    hb_summary s;
    if (!hb_summarize(samples, n, &s)) return HB_CONTINUE;
    return s.spread <= r->max_spread ? HB_STOP_CONVERGED : HB_CONTINUE;
}
