/* history.c -- see changepoint.h. */
#include "changepoint.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "welch.h"

void gate_hist_options_default(gate_hist_options *o)
{
    o->alpha = 0.01;
    o->threshold_pct = 3.0;
    o->noise_k = 3.0;
}

/* Mean log of one run's repetitions. */
static double gate_point_log(const gate_hist_point *p)
{
    double s = 0;
    for (size_t i = 0; i < p->nreps; i++) s += log(p->reps[i]);
    return s / (double)p->nreps;
}

/* The split in [s, e) (s < tau < e) with the largest energy statistic over
 * the point values v; 0 when the segment has fewer than 2 points. */
static size_t gate_edivisive_split(const double *v, size_t s, size_t e)
{
    size_t best = 0;
    double best_q = -INFINITY;
    for (size_t tau = s + 1; tau < e; tau++) {
        double m = (double)(tau - s), n = (double)(e - tau);
        double between = 0, within_x = 0, within_y = 0;
        for (size_t i = s; i < tau; i++)
            for (size_t j = tau; j < e; j++) between += fabs(v[i] - v[j]);
        for (size_t i = s; i < tau; i++)
            for (size_t k = i + 1; k < tau; k++) within_x += fabs(v[i] - v[k]);
        for (size_t j = tau; j < e; j++)
            for (size_t k = j + 1; k < e; k++) within_y += fabs(v[j] - v[k]);
        double q = 2.0 * between / (m * n);
        if (m > 1) q -= within_x / (m * (m - 1) / 2.0);
        if (n > 1) q -= within_y / (n * (n - 1) / 2.0);
        q *= m * n / (m + n);
        if (q > best_q) {
            best_q = q;
            best = tau;
        }
    }
    return best;
}

/* The repetitions of points [s, e), appended into buf (room for all). */
static size_t gate_gather(const gate_hist_point *pts, size_t s, size_t e, double *buf)
{
    size_t k = 0;
    for (size_t i = s; i < e; i++)
        for (size_t r = 0; r < pts[i].nreps; r++) buf[k++] = pts[i].reps[r];
    return k;
}

/* Tests [s, tau) against [tau, e): the change (percent) and p. Returns 0, or -1
 * when a side has fewer than 2 repetitions in all (no test). */
static int gate_segments_test(const gate_hist_point *pts, size_t s, size_t tau, size_t e,
                              double alpha, double *buf, double *change_pct, double *p,
                              double *before, double *after)
{
    size_t nl = gate_gather(pts, s, tau, buf);
    size_t nr = gate_gather(pts, tau, e, buf + nl);
    gate_welch w;
    if (gate_welch_log_test(buf + nl, nr, buf, nl, alpha, &w)) return -1;
    *change_pct = (exp(w.diff) - 1.0) * 100.0;
    *p = w.p;
    double sl = 0, sr = 0;
    for (size_t i = 0; i < nl; i++) sl += log(buf[i]);
    for (size_t i = 0; i < nr; i++) sr += log(buf[nl + i]);
    *before = exp(sl / (double)nl);
    *after = exp(sr / (double)nr);
    return 0;
}

typedef struct gate_hist_ctx {
    const gate_hist_point *pts;
    const double *v;
    const gate_hist_options *opt;
    double min_pct; /* max(threshold, noise_k * noise) */
    double *buf;
    unsigned char *is_cp; /* is_cp[i]: a change point right before point i */
} gate_hist_ctx;

static void gate_hist_search(gate_hist_ctx *c, size_t s, size_t e)
{
    if (e - s < 2) return;
    size_t tau = gate_edivisive_split(c->v, s, e);
    if (!tau) return;
    double change, p, before, after;
    if (gate_segments_test(c->pts, s, tau, e, c->opt->alpha, c->buf, &change, &p, &before, &after))
        return;
    if (!(p < c->opt->alpha) || fabs(change) < c->min_pct) return;
    c->is_cp[tau] = 1;
    gate_hist_search(c, s, tau);
    gate_hist_search(c, tau, e);
}

/* Validates pts; 0 or -1. */
static int gate_hist_check(const gate_hist_point *pts, size_t n, size_t *total)
{
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!pts[i].nreps || !pts[i].reps) return -1;
        for (size_t r = 0; r < pts[i].nreps; r++)
            if (!(pts[i].reps[r] > 0) || !isfinite(pts[i].reps[r])) return -1;
        *total += pts[i].nreps;
    }
    return 0;
}

/* The change points of a search with the size floor min_pct into is_cp
 * (n + 1 bytes, zeroed here). v: the points' mean logs; buf: room for every
 * repetition. */
static void gate_hist_find(const gate_hist_point *pts, size_t n, const double *v, const gate_hist_options *opt,
                           double min_pct, double *buf, unsigned char *is_cp)
{
    memset(is_cp, 0, n + 1);
    gate_hist_ctx c = {pts, v, opt, min_pct, buf, is_cp};
    gate_hist_search(&c, 0, n);
}

/* The spread of the points around the means of the segments between the
 * change points in is_cp, as a standard deviation in percent; NAN with fewer
 * than 3 degrees of freedom. */
static double gate_hist_residual_pct(const double *v, size_t n, const unsigned char *is_cp)
{
    double ss = 0;
    size_t segments = 0;
    for (size_t s = 0; s < n;) {
        size_t e = s + 1;
        while (e < n && !is_cp[e]) e++;
        double m = 0;
        for (size_t i = s; i < e; i++) m += v[i];
        m /= (double)(e - s);
        for (size_t i = s; i < e; i++) ss += (v[i] - m) * (v[i] - m);
        segments++;
        s = e;
    }
    if (n < segments + 3) return NAN;
    return 100.0 * sqrt(ss / (double)(n - segments));
}

double gate_hist_noise_pct(const gate_hist_point *pts, size_t n, const gate_hist_options *opt)
{
    size_t total;
    if (n < 2 || gate_hist_check(pts, n, &total)) return NAN;
    double *v = malloc(n * sizeof *v), *buf = malloc(total * sizeof *buf);
    unsigned char *is_cp = malloc(n + 1);
    double noise = NAN;
    if (v && buf && is_cp) {
        for (size_t i = 0; i < n; i++) v[i] = gate_point_log(&pts[i]);
        gate_hist_find(pts, n, v, opt, opt->threshold_pct, buf, is_cp);
        noise = gate_hist_residual_pct(v, n, is_cp);
    }
    free(v);
    free(buf);
    free(is_cp);
    return noise;
}

long gate_hist_steps(const gate_hist_point *pts, size_t n, const gate_hist_options *opt,
                     gate_step **out)
{
    *out = NULL;
    if (n < 2) return 0;
    size_t total;
    if (gate_hist_check(pts, n, &total)) return -1;
    double *v = malloc(n * sizeof *v), *buf = malloc(total * sizeof *buf);
    unsigned char *is_cp = malloc(n + 1);
    if (!v || !buf || !is_cp) {
        free(v);
        free(buf);
        free(is_cp);
        return -1;
    }
    for (size_t i = 0; i < n; i++) v[i] = gate_point_log(&pts[i]);
    /* First the steps above the threshold, then the noise around them, then
     * the steps that also clear noise_k times that noise. */
    gate_hist_find(pts, n, v, opt, opt->threshold_pct, buf, is_cp);
    double noise = gate_hist_residual_pct(v, n, is_cp);
    if (isfinite(noise) && opt->noise_k * noise > opt->threshold_pct)
        gate_hist_find(pts, n, v, opt, opt->noise_k * noise, buf, is_cp);

    size_t ncp = 0;
    for (size_t i = 1; i < n; i++) ncp += is_cp[i];
    gate_step *steps = ncp ? calloc(ncp, sizeof *steps) : NULL;
    if (ncp && !steps) {
        free(v);
        free(buf);
        free(is_cp);
        return -1;
    }
    /* Each step's size and p between its neighbouring change points. */
    size_t k = 0, prev = 0;
    for (size_t i = 1; i < n; i++) {
        if (!is_cp[i]) continue;
        size_t next = i + 1;
        while (next < n && !is_cp[next]) next++;
        gate_step *st = &steps[k++];
        st->index = i;
        if (gate_segments_test(pts, prev, i, next, opt->alpha, buf, &st->change_pct, &st->p_value,
                               &st->before_us, &st->after_us)) {
            st->change_pct = st->p_value = NAN;
            st->before_us = exp(v[i - 1]);
            st->after_us = exp(v[i]);
        }
        prev = i;
    }
    free(v);
    free(buf);
    free(is_cp);
    *out = steps;
    return (long)ncp;
}
