/* welch.c -- see welch.h. */
#include "welch.h"

#include <math.h>

/* The regularized incomplete beta function I_x(a, b) by its continued fraction
 * (modified Lentz), on the side where it converges quickly. */
static double gate_beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300, eps = 1e-15;
    double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 500; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < eps) break;
    }
    return h;
}

static double gate_ibeta(double a, double b, double x)
{
    if (x <= 0) return 0.0;
    if (x >= 1) return 1.0;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return exp(lbt) * gate_beta_cf(a, b, x) / a;
    return 1.0 - exp(lbt) * gate_beta_cf(b, a, 1.0 - x) / b;
}

double gate_t_cdf(double t, double df)
{
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return t > 0 ? 1.0 : 0.0;
    /* P(|T| > |t|) = I_{df/(df+t^2)}(df/2, 1/2) */
    double tail = 0.5 * gate_ibeta(0.5 * df, 0.5, df / (df + t * t));
    return t > 0 ? 1.0 - tail : tail;
}

double gate_t_quantile(double q, double df)
{
    if (!(q > 0 && q < 1) || !(df > 0)) return NAN;
    if (q == 0.5) return 0.0;
    if (q < 0.5) return -gate_t_quantile(1.0 - q, df);
    double lo = 0.0, hi = 1.0;
    while (gate_t_cdf(hi, df) < q && hi < 1e12) hi *= 2.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (gate_t_cdf(mid, df) < q) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* Mean and sample variance of log x; -1 when a value is not > 0. */
static int gate_log_moments(const double *x, size_t n, double *mean, double *var)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(x[i] > 0) || !isfinite(x[i])) return -1;
        s += log(x[i]);
    }
    *mean = s / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
        double d = log(x[i]) - *mean;
        ss += d * d;
    }
    *var = n > 1 ? ss / (double)(n - 1) : NAN;
    return 0;
}

double gate_log_noise_pct(const double *x, size_t n)
{
    double m, v;
    if (n < 2 || gate_log_moments(x, n, &m, &v)) return NAN;
    return 100.0 * sqrt(v);
}

int gate_welch_log_test(const double *x, size_t nx, const double *y, size_t ny, double alpha,
                        gate_welch *out)
{
    double mx, vx, my, vy;
    if (nx < 2 || ny < 2) return -1;
    if (gate_log_moments(x, nx, &mx, &vx) || gate_log_moments(y, ny, &my, &vy)) return -1;
    double ax = vx / (double)nx, ay = vy / (double)ny;
    out->diff = mx - my;
    out->se = sqrt(ax + ay);
    if (out->se > 0) {
        double den = ax * ax / (double)(nx - 1) + ay * ay / (double)(ny - 1);
        out->df = (ax + ay) * (ax + ay) / den;
        out->t = out->diff / out->se;
        out->p = 2.0 * (1.0 - gate_t_cdf(fabs(out->t), out->df));
        if (out->p < 0) out->p = 0;
        if (out->p > 1) out->p = 1;
        out->half_width = gate_t_quantile(1.0 - 0.5 * alpha, out->df) * out->se;
    } else {
        out->df = (double)(nx + ny - 2);
        out->t = out->diff == 0 ? 0.0 : (out->diff > 0 ? INFINITY : -INFINITY);
        out->p = out->diff == 0 ? 1.0 : 0.0;
        out->half_width = 0.0;
    }
    return 0;
}
