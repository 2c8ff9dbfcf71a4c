/*
 * verify.c -- comparing a GPU output with the CPU interpreter's, tolerances
 * per dtype, a scan of device outputs for unwritten (poisoned) elements, and
 * fast random inputs for sizes where fu_random_inputs would be slow.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The loops over a full-size tensor on every core where the compiler has OpenMP: a cross
 * entropy's logits at 8192 x 256000 in f32 are 2.1 G elements, whose fill took ~10 s on one. */
#ifdef _OPENMP
#define PARALLEL_FILL _Pragma("omp parallel for schedule(static) if (n > 65536)")
#define PARALLEL_COUNT _Pragma("omp parallel for schedule(static) reduction(+ : c) reduction(min : lowest) if (n > 65536)")
#else
#define PARALLEL_FILL
#define PARALLEL_COUNT
#endif

void hb_tolerance(fu_dtype dt, double *rel_l2, double *elem)
{
    /* rel_l2 after METHOD.md: float32 far under 1e-3, bf16 1e-3 to 1e-2. The
     * per-element bound is |out - ref| / (|ref| + rms(ref)): a few units in
     * the last place of the dtype, so that one wrong element fails even
     * where the norm would hide it. */
    switch (dt) {
    case FU_F64: *rel_l2 = 1e-10, *elem = 1e-8; break;
    case FU_F32: *rel_l2 = 1e-4, *elem = 1e-3; break;
    case FU_F16: *rel_l2 = 5e-3, *elem = 2e-2; break;
    case FU_BF16: *rel_l2 = 1e-2, *elem = 5e-2; break;
    default: *rel_l2 = 0, *elem = 0; break; /* integers and bools: exact */
    }
}

void hb_compare_tensors(const fu_host_tensor *out, const fu_host_tensor *ref, hb_compare *c)
{
    memset(c, 0, sizeof *c);
    c->worst_index = -1;
    bool same = out->dtype == ref->dtype && out->rank == ref->rank;
    for (int i = 0; same && i < out->rank; i++) same = out->shape[i] == ref->shape[i];
    if (!same) {
        c->rel_l2 = INFINITY;
        c->worst_elem = INFINITY;
        return;
    }
    int64_t n = fu_host_tensor_numel(ref);
    double ref2 = 0, diff2 = 0, out2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = fu_host_tensor_get(ref, i);
        if (isfinite(r)) ref2 += r * r;
    }
    double rms = n ? sqrt(ref2 / (double)n) : 0.0;
    for (int64_t i = 0; i < n; i++) {
        double o = fu_host_tensor_get(out, i), r = fu_host_tensor_get(ref, i);
        if (isnan(o) != isnan(r)) {
            if (c->nan_count++ == 0) {
                c->worst_index = i, c->worst_out = o, c->worst_ref = r;
                c->worst_elem = INFINITY;
            }
            continue;
        }
        if (isnan(r) || (isinf(r) && o == r)) continue;
        double d = o - r;
        diff2 += d * d;
        out2 += o * o;
        /* An all-zero reference (a loss of exactly 0, V = 1) has no scale: the
         * error is then absolute, as rel_l2 below is. */
        double scale = rms > 0 ? fabs(r) + rms : 1.0;
        double e = fabs(d) / scale;
        if (c->nan_count == 0 && (e > c->worst_elem || c->worst_index < 0)) {
            c->worst_elem = e;
            c->worst_index = i, c->worst_out = o, c->worst_ref = r;
        }
    }
    if (c->nan_count) c->rel_l2 = INFINITY;
    else if (ref2 > 0) c->rel_l2 = sqrt(diff2) / sqrt(ref2);
    else c->rel_l2 = sqrt(out2);
}

/* ------------------------------------------------------------ fast random inputs */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Element i of the stream `key`: splitmix64's i-th output, computed from i
 * alone (a counter-based generator), so that a fill splits over threads and
 * gives the same data however it is split. */
static inline uint64_t counter_random(uint64_t key, uint64_t i)
{
    uint64_t x = key + i * 0x9E3779B97F4A7C15ull;
    return splitmix64(&x);
}

/* Four 16-bit uniforms summed (Irwin-Hall, variance 4/12), centred and scaled
 * to variance 1. */
static inline float approx_normal(uint64_t r)
{
    float s = (float)(r & 0xffff) + (float)((r >> 16) & 0xffff) + (float)((r >> 32) & 0xffff) + (float)(r >> 48);
    return (s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* round to nearest even; f is finite */
}

static void fill_fast(const fu_fusion *f, fu_tensor in, uint64_t seed, int index, fu_host_tensor *t)
{
    uint64_t x = seed ^ (0xA0761D6478BD642Full * (uint64_t)(index + 1));
    const uint64_t key = splitmix64(&x);
    const int64_t n = fu_host_tensor_numel(t);
    switch (t->dtype) {
    case FU_F32: {
        float *p = t->data;
        PARALLEL_FILL
        for (int64_t i = 0; i < n; i++) p[i] = approx_normal(counter_random(key, (uint64_t)i));
        return;
    }
    case FU_BF16: {
        uint16_t *p = t->data;
        PARALLEL_FILL
        for (int64_t i = 0; i < n; i++) p[i] = f32_to_bf16(approx_normal(counter_random(key, (uint64_t)i)));
        return;
    }
    case FU_F16:
    case FU_F64:
        PARALLEL_FILL
        for (int64_t i = 0; i < n; i++) fu_host_tensor_set(t, i, approx_normal(counter_random(key, (uint64_t)i)));
        return;
    default: break;
    }
    uint64_t bound = 10;
    if (t->dtype == FU_BOOL) bound = 2;
    else if (fu_fusion_index_bound(f, in) > 0) bound = (uint64_t)fu_fusion_index_bound(f, in);
    if (t->dtype == FU_I32 && bound > (uint64_t)INT32_MAX + 1) bound = (uint64_t)INT32_MAX + 1;
    PARALLEL_FILL
    for (int64_t i = 0; i < n; i++) {
        /* uniform in [0, bound) */
        uint64_t v = (uint64_t)(((unsigned __int128)counter_random(key, (uint64_t)i) * bound) >> 64);
        if (t->dtype == FU_I64) ((int64_t *)t->data)[i] = (int64_t)v;
        else if (t->dtype == FU_I32) ((int32_t *)t->data)[i] = (int32_t)v;
        else ((uint8_t *)t->data)[i] = (uint8_t)v;
    }
}

fu_status hb_fast_random_inputs(const fu_fusion *f, uint64_t seed, fu_host_tensor *inputs, fu_error *err)
{
    int n = fu_fusion_num_inputs(f);
    for (int i = 0; i < n; i++) {
        fu_tensor in = fu_fusion_input(f, i);
        fu_status s = fu_host_tensor_alloc(&inputs[i], fu_tensor_dtype(f, in), fu_tensor_rank(f, in),
                                           fu_tensor_shape(f, in), err);
        if (s) {
            for (int j = 0; j < i; j++) fu_host_tensor_free(&inputs[j]);
            return s;
        }
        fill_fast(f, in, seed, i, &inputs[i]);
    }
    return FU_OK;
}

/* ------------------------------------------------------------ output scan */

static int64_t count_nan(const void *p, fu_dtype dt, int64_t n, int64_t base, int64_t *first)
{
    int64_t c = 0, lowest = INT64_MAX;
    PARALLEL_COUNT
    for (int64_t i = 0; i < n; i++) {
        bool nan;
        switch (dt) {
        case FU_F32: nan = isnan(((const float *)p)[i]); break;
        case FU_F64: nan = isnan(((const double *)p)[i]); break;
        case FU_BF16: nan = (((const uint16_t *)p)[i] & 0x7fffu) > 0x7f80u; break;
        case FU_F16: nan = (((const uint16_t *)p)[i] & 0x7fffu) > 0x7c00u; break;
        default: nan = false;
        }
        if (nan) {
            c++;
            if (i < lowest) lowest = i;
        }
    }
    if (c && *first < 0) *first = base + lowest;
    return c;
}

fu_status hb_scan_device_nan(fu_runtime *rt, fu_devptr p, fu_dtype dt, int64_t numel, int64_t *nan_count,
                             int64_t *first_nan, fu_error *err)
{
    *nan_count = 0;
    *first_nan = -1;
    if (!fu_dtype_is_float(dt) || numel <= 0) return FU_OK;
    size_t esize = fu_dtype_size(dt);
    int64_t chunk = ((int64_t)64 << 20) / (int64_t)esize; /* 64 MiB at a time */
    void *buf = malloc((size_t)(numel < chunk ? numel : chunk) * esize);
    if (!buf) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    fu_status s = FU_OK;
    for (int64_t off = 0; !s && off < numel; off += chunk) {
        int64_t n = numel - off < chunk ? numel - off : chunk;
        s = fu_device_download(rt, buf, p + (fu_devptr)off * esize, (size_t)n * esize, err);
        if (!s) *nan_count += count_nan(buf, dt, n, off, first_nan);
    }
    free(buf);
    return s;
}
