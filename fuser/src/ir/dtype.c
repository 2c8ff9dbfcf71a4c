/* dtype.c -- dtype table, rounding to f16/bf16/f32 as PyTorch does, status names, error messages. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

typedef struct dtype_info {
    const char *name;
    size_t size;
    bool is_float, is_int;
} dtype_info;

/* ORDER fu_dtype */
static const dtype_info dtype_table[] = {
    [FU_F32] = {"f32", 4, true, false},  [FU_F16] = {"f16", 2, true, false},
    [FU_BF16] = {"bf16", 2, true, false}, [FU_F64] = {"f64", 8, true, false},
    [FU_I32] = {"i32", 4, false, true},  [FU_I64] = {"i64", 8, false, true},
    [FU_BOOL] = {"bool", 1, false, false},
};
_Static_assert(sizeof dtype_table / sizeof dtype_table[0] == FU_DTYPE_COUNT, "dtype table out of date");

static bool dtype_ok(fu_dtype t) { return (unsigned)t < FU_DTYPE_COUNT; }

const char *fu_dtype_name(fu_dtype t) { return dtype_ok(t) ? dtype_table[t].name : "?"; }
size_t fu_dtype_size(fu_dtype t) { return dtype_ok(t) ? dtype_table[t].size : 0; }
bool fu_dtype_is_float(fu_dtype t) { return dtype_ok(t) && dtype_table[t].is_float; }
bool fu_dtype_is_int(fu_dtype t) { return dtype_ok(t) && dtype_table[t].is_int; }

bool fu_dtype_from_name(const char *name, fu_dtype *out)
{
    for (int i = 0; i < FU_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_table[i].name) == 0) { *out = (fu_dtype)i; return true; }
    return false;
}

/* Rounds v to a float with `mant` explicit mantissa bits, smallest normal 2^emin
 * (`min_normal`, given as a constant: an ldexp per element cost as much as the rest), largest
 * finite `maxv`, to nearest even, directly from double
 * (no double rounding through f32). */
static double round_float(double v, int mant, int emin, double min_normal, double maxv)
{
    if (isnan(v) || isinf(v) || v == 0.0) return v;
    double a = fabs(v), r;
    if (a >= min_normal) {
        /* A normal of the target: to nearest even on the double's bits. Adding half a quantum
         * less one, plus the kept last bit, carries into the exponent exactly when the value
         * rounds up to the next power of 2. The interpreter rounds every element of every
         * 16-bit value here: frexp, ldexp and nearbyint made it most of a bf16 run's time. */
        const int drop = 52 - mant;
        uint64_t u;
        memcpy(&u, &a, sizeof u);
        u += (((uint64_t)1 << (drop - 1)) - 1) + ((u >> drop) & 1);
        u &= ~(((uint64_t)1 << drop) - 1);
        memcpy(&r, &u, sizeof r);
    } else {
        /* A subnormal of the target: the smallest normal's quantum. */
        double quantum = ldexp(1.0, emin - mant);
        r = nearbyint(a / quantum) * quantum; /* default rounding mode: to nearest even */
    }
    /* Past the largest finite value only when the value lies at or past the halfway point to
     * the next power of 2 (the ties there round to even, up): infinity. */
    if (r > maxv) r = INFINITY;
    return v < 0 ? -r : r;
}

static const double BF16_MAX = 3.38953138925153547590470800371487866880e38;
static const double F16_MAX = 65504.0;

double fu_round_to_dtype(double v, fu_dtype t)
{
    switch (t) {
    case FU_F64: return v;
    case FU_F32: return (double)(float)v;
    case FU_BF16: return round_float(v, 7, -126, 0x1p-126, BF16_MAX);
    case FU_F16: return round_float(v, 10, -14, 0x1p-14, F16_MAX);
    case FU_I32:
        if (isnan(v)) return 0;
        v = trunc(v);
        return (double)(int32_t)(v > 2147483647.0 ? 2147483647.0 : v < -2147483648.0 ? -2147483648.0 : v);
    case FU_I64:
        /* Clamped like i32, NaN as 0. INT64_MAX is not a double: its nearest,
         * 2^63, stands for it (fu_f64_to_i64 in ir.h stores it as INT64_MAX).
         * The in-range test first: it costs what the NaN test did, and the
         * interpreter rounds every i64 element here. */
        if (fabs(v) < 0x1p63) return trunc(v);
        return isnan(v) ? 0 : v > 0 ? 0x1p63 : -0x1p63;
    case FU_BOOL: return v != 0.0 ? 1.0 : 0.0;
    default: return v;
    }
}

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t fu_f64_to_bf16(double v)
{
    if (isnan(v)) return 0x7fc0;
    /* After rounding to bf16 precision the value is exact in f32, so its top 16 bits are it. */
    return (uint16_t)(f32_bits((float)fu_round_to_dtype(v, FU_BF16)) >> 16);
}

float fu_bf16_to_f32(uint16_t bits) { return bits_f32((uint32_t)bits << 16); }

uint16_t fu_f64_to_f16(double v)
{
    if (isnan(v)) return 0x7e00;
    double r = fu_round_to_dtype(v, FU_F16);
    uint16_t sign = (signbit(r) ? 0x8000 : 0);
    double a = fabs(r);
    if (isinf(a)) return sign | 0x7c00;
    if (a == 0.0) return sign;
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5,1) */
    int exp = e - 1;
    if (exp < -14) /* subnormal: a = frac * 2^-24 */
        return sign | (uint16_t)llround(ldexp(a, 24));
    uint16_t frac = (uint16_t)llround((m * 2.0 - 1.0) * 1024.0);
    return sign | (uint16_t)((exp + 15) << 10) | frac;
}

float fu_f16_to_f32(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    float v;
    if (exp == 0) v = ldexpf((float)frac, -24);
    else if (exp == 31) v = frac ? NAN : INFINITY;
    else v = ldexpf((float)(frac | 0x400), exp - 25);
    return sign ? -v : v;
}

const char *fu_status_name(fu_status s)
{
    switch (s) {
    case FU_OK: return "ok";
    case FU_ERR_ARG: return "bad argument";
    case FU_ERR_PARSE: return "parse error";
    case FU_ERR_VERIFY: return "invalid fusion";
    case FU_ERR_INDEX: return "index out of range";
    case FU_ERR_IO: return "I/O error";
    case FU_ERR_NOMEM: return "out of memory";
    case FU_ERR_RUNTIME: return "runtime error";
    case FU_ERR_NO_DEVICE: return "no GPU";
    case FU_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

fu_status fu_error_set(fu_error *err, fu_status s, const char *fmt, ...)
{
    if (err) {
        err->status = s;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return s;
}

fu_status fu_error_vset_at(fu_error *err, fu_status s, const char *file, int line, int col, const char *fmt,
                           va_list ap)
{
    if (!err) return s;
    char msg[sizeof err->message]; /* formatted first: an argument may point into err */
    vsnprintf(msg, sizeof msg, fmt, ap);
    return fu_error_set(err, s, "%s:%d:%d: %s", file ? file : "<input>", line, col, msg);
}

fu_status fu_error_set_at(fu_error *err, fu_status s, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fu_error_vset_at(err, s, file, line, col, fmt, ap);
    va_end(ap);
    return s;
}
