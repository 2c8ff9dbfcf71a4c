/*
 * suites.c -- what the suites share: the variants, sizes, dtypes, parameter
 * lists, building a case at a size, comparing rows.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* ORDER: the variants of each case, in the order they run. */
const hb_variant *const hb_variants[] = {&hb_variant_fuser, &hb_variant_reference, NULL};

char *hb_read_text_file(const char *path, char *why, size_t nwhy)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, nwhy, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (cap - len < 2) {
            char *more = realloc(text, cap * 2);
            if (!more) {
                free(text);
                text = NULL;
                break;
            }
            text = more;
            cap *= 2;
        }
    }
    bool failed = ferror(f);
    fclose(f);
    if (!text || failed) {
        free(text);
        snprintf(why, nwhy, "%s: %s", path, failed ? "read error" : "out of memory");
        return NULL;
    }
    text[len] = '\0';
    return text;
}

fu_status hb_build_case(const hb_suite *s, const hb_case *c, const hb_size *size, fu_dtype dt, fu_fusion **out,
                        fu_error *err)
{
    *out = NULL;
    hb_params p;
    char why[512];
    if (!hb_suite_bind(s, c, size, dt, &p, why, sizeof why)) return fu_error_set(err, FU_ERR_ARG, "%s", why);
    fu_status st = fu_program_build(c->prog, p.v, p.n, out, err);
    if (!st) st = fu_fusion_verify(*out, err);
    if (st && *out) {
        fu_fusion_free(*out);
        *out = NULL;
    }
    return st;
}

void hb_size_str(const hb_size *s, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = '\0';
    if (s->n == 0) snprintf(out, cap, "default"); /* a fusion file without size parameters */
    for (int i = 0; i < s->n && k < cap; i++) {
        int w = snprintf(out + k, cap - k, "%s%" PRId64, i ? "x" : "", s->d[i]);
        if (w < 0) break;
        k += (size_t)w;
    }
}

#define HB_MAX_EXTENT ((int64_t)1 << 40)
#define HB_MAX_ELEMENTS ((int64_t)1 << 58)

/* One size, "AxBxC", from [p, end). */
static bool parse_one(const char *p, const char *end, int ndims, hb_size *out, char *why, size_t nwhy)
{
    int len = (int)(end - p);
    memset(out, 0, sizeof *out);
    if (len == 0) {
        snprintf(why, nwhy, "an empty size");
        return false;
    }
    const char *q = p;
    while (q < end) {
        if (!isdigit((unsigned char)*q)) {
            snprintf(why, nwhy, "malformed size '%.*s': expected %d positive integers joined by 'x'", len, p, ndims);
            return false;
        }
        int64_t v = 0;
        while (q < end && isdigit((unsigned char)*q)) {
            v = v * 10 + (*q - '0');
            if (v >= HB_MAX_EXTENT) {
                snprintf(why, nwhy, "size '%.*s': a number is too large (the limit is 2^40)", len, p);
                return false;
            }
            q++;
        }
        if (v < 1) {
            snprintf(why, nwhy, "size '%.*s': every number must be at least 1", len, p);
            return false;
        }
        if (out->n == ndims) {
            snprintf(why, nwhy, "size '%.*s' has more than %d numbers", len, p, ndims);
            return false;
        }
        out->d[out->n++] = v;
        if (q < end) {
            if (*q != 'x' || q + 1 == end) {
                snprintf(why, nwhy, "malformed size '%.*s': expected %d positive integers joined by 'x'", len, p,
                         ndims);
                return false;
            }
            q++;
        }
    }
    if (out->n != ndims) {
        snprintf(why, nwhy, "size '%.*s' has %d number%s, expected %d", len, p, out->n, out->n == 1 ? "" : "s", ndims);
        return false;
    }
    int64_t product = 1; /* every byte count stays far inside int64 */
    for (int i = 0; i < out->n; i++) {
        if (out->d[i] > HB_MAX_ELEMENTS / product) {
            snprintf(why, nwhy, "size '%.*s' is too large (the product of its numbers is above 2^58)", len, p);
            return false;
        }
        product *= out->d[i];
    }
    return true;
}

bool hb_parse_sizes(const char *text, int ndims, hb_size **out, int *n, char *why, size_t nwhy)
{
    *out = NULL;
    *n = 0;
    if (ndims < 1 || ndims > HB_MAX_DIMS) {
        snprintf(why, nwhy, "a suite with %d size numbers", ndims);
        return false;
    }
    int cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ',';
    hb_size *v = calloc((size_t)cap, sizeof *v);
    if (!v) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        if (!parse_one(p, end, ndims, &v[*n], why, nwhy)) {
            free(v);
            *n = 0;
            return false;
        }
        (*n)++;
        if (!*end) break;
        p = end + 1;
    }
    *out = v;
    return true;
}

bool hb_parse_dtypes(const char *text, fu_dtype *out, int cap, int *n, char *why, size_t nwhy)
{
    *n = 0;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        int len = (int)(end - p);
        fu_dtype dt;
        char name[16];
        if (len <= 0 || len >= (int)sizeof name) {
            snprintf(why, nwhy, "unknown dtype '%.*s' (the suites take f32, bf16, f16 and f64)", len, p);
            return false;
        }
        memcpy(name, p, (size_t)len);
        name[len] = '\0';
        if (!fu_dtype_from_name(name, &dt) || !fu_dtype_is_float(dt)) {
            snprintf(why, nwhy, "unknown dtype '%s' (the suites take f32, bf16, f16 and f64)", name);
            return false;
        }
        bool dup = false;
        for (int i = 0; i < *n; i++) dup |= out[i] == dt;
        if (!dup) {
            if (*n == cap) {
                snprintf(why, nwhy, "too many dtypes");
                return false;
            }
            out[(*n)++] = dt;
        }
        if (!*end) break;
        p = end + 1;
    }
    return true;
}

static void params_set(hb_params *p, const char *name, const char *value)
{
    if (p->n >= HB_MAX_PARAMS) return;
    int i = p->n++;
    snprintf(p->names[i], sizeof p->names[i], "%s", name);
    snprintf(p->values[i], sizeof p->values[i], "%s", value);
    /* the pointers are refreshed every time: the struct may have been copied */
    for (int k = 0; k < p->n; k++) {
        p->v[k].name = p->names[k];
        p->v[k].value = p->values[k];
    }
}

void hb_params_int(hb_params *p, const char *name, int64_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, value);
    params_set(p, name, buf);
}

void hb_params_str(hb_params *p, const char *name, const char *value) { params_set(p, name, value); }

/* ------------------------------------------------------------ spot checks */

int hb_input_index(const fu_fusion *f, const char *name)
{
    for (int i = 0; i < fu_fusion_num_inputs(f); i++)
        if (strcmp(fu_tensor_name(f, fu_fusion_input(f, i)), name) == 0) return i;
    return -1;
}

int hb_output_index(const fu_fusion *f, const char *name)
{
    for (int i = 0; i < fu_fusion_num_outputs(f); i++)
        if (strcmp(fu_tensor_name(f, fu_fusion_output(f, i)), name) == 0) return i;
    return -1;
}

int hb_spot_rows(int64_t n, uint64_t seed, int64_t *rows)
{
    int k = 0;
    if (n <= 0) return 0;
    rows[k++] = 0;
    if (n > 1) rows[k++] = n - 1;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    for (int tries = 0; k < HB_SPOT_ROWS && k < n && tries < 64; tries++) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        int64_t r = (int64_t)(x % (uint64_t)n);
        bool seen = false;
        for (int i = 0; i < k; i++) seen |= rows[i] == r;
        if (!seen) rows[k++] = r;
    }
    return k;
}

bool hb_spot_compare(const double *got, const double *ref, int64_t n, fu_dtype dt, const char *what, char *why,
                     size_t nwhy)
{
    double tol_l2, tol_elem, ref2 = 0, diff2 = 0;
    hb_tolerance(dt, &tol_l2, &tol_elem);
    for (int64_t i = 0; i < n; i++) ref2 += ref[i] * ref[i];
    double rms = n ? sqrt(ref2 / (double)n) : 0;
    for (int64_t i = 0; i < n; i++) {
        double d = got[i] - ref[i];
        double scale = fabs(ref[i]) + rms;
        double e = scale > 0 ? fabs(d) / scale : (d != 0 ? INFINITY : 0);
        if (isnan(got[i]) || !(e <= tol_elem)) {
            snprintf(why, nwhy, "%s: element %lld is %.9g, expected %.9g (error %.3g, tolerance %.0e)", what,
                     (long long)i, got[i], ref[i], e, tol_elem);
            return false;
        }
        diff2 += d * d;
    }
    double rel = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    if (!(rel <= tol_l2)) {
        snprintf(why, nwhy, "%s: relative L2 error %.3g (tolerance %.0e)", what, rel, tol_l2);
        return false;
    }
    return true;
}

uint64_t hb_hash_text(uint64_t h, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; p && *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator, so that "ab" + "c" differs from "a" + "bc" */
}

void hb_hash_hex(uint64_t h, char out[17]) { snprintf(out, 17, "%016" PRIx64, h); }
