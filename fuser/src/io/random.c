/*
 * random.c -- seeded random inputs for a fusion.
 *
 * Every input gets its own xoshiro256** stream whose state is filled by
 * splitmix64 from a hash of (seed, input position), so the values of one
 * input do not depend on the shapes of the others, and the same seed always
 * gives the same values. No global state.
 *
 * floats: normal(0, 1) by Box-Muller, rounded to the dtype;
 * ints used as an index (fu_fusion_index_bound > 0): uniform in [0, bound);
 * other ints: uniform in [0, 10); bool: 0 or 1.
 */
#include <math.h>
#include <string.h>

#include "ir.h"

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* The stream of input number `stream` under `seed`. */
static void rng_init(rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed;
    uint64_t h = splitmix64(&x); /* hash of the seed */
    uint64_t y = stream;
    x = h ^ splitmix64(&y);      /* combined with a hash of the stream */
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3])) r->s[0] = 1; /* never all zero */
}

/* Uniform in [0, bound), bound > 0, without modulo bias. */
static uint64_t rng_below(rng *r, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound; /* values >= limit would bias */
    for (;;) {
        uint64_t x = rng_next(r);
        if (x < limit) return x % bound;
    }
}

/* Element pairs of a Box-Muller fill: pair p of this block takes bits[2p], bits[2p + 1] and
 * writes elements first + 2p and first + 2p + 1 (the last of an odd n alone). */
typedef struct normal_job {
    const uint64_t *bits;
    fu_host_tensor *t;
    int64_t first, n;
} normal_job;

static bool normal_chunk(void *ctx, int64_t begin, int64_t end)
{
    const normal_job *j = ctx;
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t p = begin; p < end; p++) {
        double u1 = 1.0 - (double)(j->bits[2 * p] >> 11) * 0x1.0p-53; /* (0, 1]: log is finite */
        double u2 = (double)(j->bits[2 * p + 1] >> 11) * 0x1.0p-53;
        double rad = sqrt(-2.0 * log(u1));
        int64_t i = j->first + 2 * p;
        fu_host_tensor_set(j->t, i, rad * cos(two_pi * u2));
        if (i + 1 < j->n) fu_host_tensor_set(j->t, i + 1, rad * sin(two_pi * u2));
    }
    return true;
}

/* The stream's draws stay in order, one thread (they are the sequence, and cheap); the logs,
 * roots, cosines and sines of each block of them, most of the time, go on every core. */
#define NORMAL_BLOCK_PAIRS ((int64_t)1 << 18)

static void fill_normal(rng *r, fu_host_tensor *t, int64_t n)
{
    const int64_t pairs = (n + 1) / 2;
    int64_t block = pairs < NORMAL_BLOCK_PAIRS ? pairs : NORMAL_BLOCK_PAIRS;
    uint64_t one[2], *bits = block > 1 ? fu_malloc((size_t)block * 2 * sizeof *bits) : NULL;
    if (!bits) { /* a pair at a time: the same values */
        bits = one;
        block = 1;
    }
    for (int64_t p0 = 0; p0 < pairs; p0 += block) {
        const int64_t m = pairs - p0 < block ? pairs - p0 : block;
        for (int64_t k = 0; k < 2 * m; k++) bits[k] = rng_next(r);
        normal_job j = {bits, t, 2 * p0, n};
        fu_parallel_chunks(m, 2 * m * 16, normal_chunk, &j); /* ~16 simple operations' worth an element */
    }
    if (bits != one) fu_free(bits);
}

static void fill_ints(rng *r, fu_host_tensor *t, int64_t n, int64_t bound)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)rng_below(r, (uint64_t)bound);
        if (t->dtype == FU_I64) ((int64_t *)t->data)[i] = v;
        else if (t->dtype == FU_I32) ((int32_t *)t->data)[i] = (int32_t)v;
        else ((uint8_t *)t->data)[i] = (uint8_t)v;
    }
}

static void fill_input(const fu_fusion *f, fu_tensor in, uint64_t seed, int index, fu_host_tensor *t)
{
    rng r;
    rng_init(&r, seed, (uint64_t)index);
    int64_t n = fu_host_tensor_numel(t);
    if (fu_dtype_is_float(t->dtype)) {
        fill_normal(&r, t, n);
    } else if (t->dtype == FU_BOOL) {
        fill_ints(&r, t, n, 2);
    } else {
        int64_t bound = fu_fusion_index_bound(f, in);
        if (bound <= 0) bound = 10;
        if (t->dtype == FU_I32 && bound > (int64_t)INT32_MAX + 1) bound = (int64_t)INT32_MAX + 1;
        fill_ints(&r, t, n, bound);
    }
}

fu_status fu_random_inputs(const fu_fusion *f, uint64_t seed, fu_host_tensor *inputs, fu_error *err)
{
    if (!f || (!inputs && fu_fusion_num_inputs(f) > 0))
        return fu_error_set(err, FU_ERR_ARG, "fu_random_inputs: NULL argument");
    int n = fu_fusion_num_inputs(f);
    for (int i = 0; i < n; i++) {
        fu_tensor in = fu_fusion_input(f, i);
        fu_status s = fu_host_tensor_alloc(&inputs[i], fu_tensor_dtype(f, in), fu_tensor_rank(f, in),
                                           fu_tensor_shape(f, in), err);
        if (s) {
            for (int j = 0; j < i; j++) fu_host_tensor_free(&inputs[j]);
            return s;
        }
        fill_input(f, in, seed, i, &inputs[i]);
    }
    return FU_OK;
}
