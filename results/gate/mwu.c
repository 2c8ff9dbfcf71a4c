/* mwu.c -- see mwu.h. */
#include "mwu.h"

#include <math.h>
#include <stdlib.h>

typedef struct gate_mwu_obs {
    double v;
    int from_x;
} gate_mwu_obs;

static int gate_mwu_cmp(const void *a, const void *b)
{
    double x = ((const gate_mwu_obs *)a)->v, y = ((const gate_mwu_obs *)b)->v;
    return (x > y) - (x < y);
}

double gate_mwu_exact_cdf(size_t nx, size_t ny, double u)
{
    if (u < 0) return 0.0;
    if (u >= (double)nx * (double)ny) return 1.0;
    if (ny > nx) { /* the distribution is symmetric in (nx, ny); keep the rows short */
        size_t t = nx;
        nx = ny;
        ny = t;
    }
    /* P_{i,j}(k): probability that U == k for samples of sizes i and j.
     * The largest of the i + j values belongs to x with probability i/(i+j),
     * and then beats all j values of y:
     *   P_{i,j}(k) = i/(i+j) P_{i-1,j}(k-j) + j/(i+j) P_{i,j-1}(k).
     * Row i keeps P_{i,j} for j = 0..ny in one block; off[j] is where the
     * i*j + 1 values of P_{i,j} start. */
    size_t *off = malloc((ny + 2) * sizeof *off);
    if (!off) return NAN;
    off[0] = 0;
    for (size_t j = 0; j <= ny; j++) off[j + 1] = off[j] + nx * j + 1; /* room for the last row */
    double *prev = calloc(off[ny + 1], sizeof *prev);
    double *cur = calloc(off[ny + 1], sizeof *cur);
    if (!prev || !cur) {
        free(off);
        free(prev);
        free(cur);
        return NAN;
    }
    for (size_t j = 0; j <= ny; j++) prev[off[j]] = 1.0; /* i = 0: U is 0 */
    for (size_t i = 1; i <= nx; i++) {
        for (size_t j = 0; j <= ny; j++) {
            double *c = cur + off[j];
            size_t len = i * j + 1;
            if (j == 0) {
                c[0] = 1.0;
                continue;
            }
            const double *up = prev + off[j];   /* P_{i-1,j}, length (i-1)*j + 1 */
            const double *left = cur + off[j - 1]; /* P_{i,j-1}, length i*(j-1) + 1 */
            double a = (double)i / (double)(i + j), b = (double)j / (double)(i + j);
            size_t up_len = (i - 1) * j + 1, left_len = i * (j - 1) + 1;
            for (size_t k = 0; k < len; k++) {
                double v = 0.0;
                if (k >= j && k - j < up_len) v += a * up[k - j];
                if (k < left_len) v += b * left[k];
                c[k] = v;
            }
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    const double *dist = prev + off[ny];
    double cdf = 0.0;
    for (size_t k = 0; k <= nx * ny && (double)k <= u + 1e-9; k++) cdf += dist[k];
    free(off);
    free(prev);
    free(cur);
    return cdf > 1.0 ? 1.0 : cdf;
}

int gate_mwu_test(const double *x, size_t nx, const double *y, size_t ny, gate_mwu *out)
{
    if (nx == 0 || ny == 0 || !out) return -1;
    size_t n = nx + ny;
    gate_mwu_obs *obs = malloc(n * sizeof *obs);
    if (!obs) return -1;
    for (size_t i = 0; i < nx; i++) obs[i] = (gate_mwu_obs){x[i], 1};
    for (size_t j = 0; j < ny; j++) obs[nx + j] = (gate_mwu_obs){y[j], 0};
    qsort(obs, n, sizeof *obs, gate_mwu_cmp);

    /* Average ranks (1-based) over runs of ties; rank sum of x; tie term. */
    double rank_sum_x = 0.0, tie_term = 0.0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && obs[j].v == obs[i].v) j++;
        double t = (double)(j - i);
        double avg_rank = 0.5 * ((double)(i + 1) + (double)j);
        for (size_t k = i; k < j; k++)
            if (obs[k].from_x) rank_sum_x += avg_rank;
        tie_term += t * t * t - t;
        i = j;
    }
    free(obs);

    double dnx = (double)nx, dny = (double)ny, dn = (double)n;
    double u = rank_sum_x - dnx * (dnx + 1.0) / 2.0;
    double mu = dnx * dny / 2.0;
    out->u = u;
    out->ties = tie_term > 0.0;
    out->z = 0.0;

    if (!out->ties && (double)nx * (double)ny <= GATE_MWU_EXACT_MAX_PAIRS) {
        double u_min = fmin(u, dnx * dny - u);
        double cdf = gate_mwu_exact_cdf(nx, ny, floor(u_min + 0.5));
        if (!isnan(cdf)) {
            out->exact = 1;
            out->p = fmin(1.0, 2.0 * cdf);
            return 0;
        }
        /* out of memory for the table: fall through to the approximation */
    }
    out->exact = 0;
    double var = dnx * dny / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0)));
    if (!(var > 0.0)) {
        out->p = 1.0;
        return 0;
    }
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    if (z < 0.0) z = 0.0;
    out->z = z;
    out->p = fmin(1.0, erfc(z / sqrt(2.0)));
    return 0;
}
