/*
 * embedding.c -- the embedding suite: a table of V rows of width D, T tokens.
 *
 * Sizes: VxDxT (vocabulary x hidden x tokens). Defaults: GPT-2
 * (50304x768x8192) and Llama 3 8B (128256x4096x65536).
 *
 * Cases (the .fusion files in suites/embedding/):
 *   fwd                the gather of T rows             bytes 2*T*D*elem + 8T
 *   bwd_atomic         the table's gradient, zeroed     bytes V*D*elem + T*D*elem + 8T
 *                      first, then atomic adds
 *   bwd_deterministic  the same, each block owning       bytes V*D*elem + T*D*elem + 8T
 *                      output rows (bit-identical)
 * The fewest bytes: forward reads the T rows it gathers (T*D*elem, not the
 * whole table) and the i64 ids (8T) and writes T*D*elem; backward reads the
 * output gradient (T*D*elem) and the ids (8T) and writes the whole table's
 * gradient once (V*D*elem).
 */
#include <stdlib.h>

#include "suite.h"

static int64_t bytes_fwd(const hb_size *s, int64_t elem) /* 2*T*D*elem + 8T */
{
    int64_t d = s->d[1], t = s->d[2];
    return 2 * t * d * elem + 8 * t;
}

static int64_t bytes_bwd(const hb_size *s, int64_t elem) /* V*D*elem + T*D*elem + 8T */
{
    int64_t v = s->d[0], d = s->d[1], t = s->d[2];
    return v * d * elem + t * d * elem + 8 * t;
}

/* Rows of out from the definition: out[t, :] = weight[ids[t], :]. */
static bool spot_fwd(const fu_fusion *f, const fu_host_tensor *in, hb_fetch_fn fetch, void *ctx, uint64_t seed,
                     char *why, size_t nwhy)
{
    int iw = hb_input_index(f, "weight"), ii = hb_input_index(f, "ids"), oo = hb_output_index(f, "out");
    if (iw < 0 || ii < 0 || oo < 0) {
        snprintf(why, nwhy, "fusion '%s' lacks weight, ids or out", fu_fusion_name(f));
        return false;
    }
    const fu_host_tensor *w = &in[iw], *ids = &in[ii];
    int64_t d = w->shape[1], t = fu_host_tensor_numel(ids);
    fu_dtype dt = fu_tensor_dtype(f, fu_fusion_output(f, oo));
    double *ref = malloc((size_t)d * sizeof *ref), *got = malloc((size_t)d * sizeof *got);
    bool ok = ref && got;
    if (!ok) snprintf(why, nwhy, "out of memory");
    int64_t rows[HB_SPOT_ROWS];
    int k = hb_spot_rows(t, seed, rows);
    for (int r = 0; ok && r < k; r++) {
        int64_t id = (int64_t)fu_host_tensor_get(ids, rows[r]);
        for (int64_t j = 0; j < d; j++) ref[j] = fu_host_tensor_get(w, id * d + j);
        if (!fetch(ctx, oo, rows[r] * d, d, got)) {
            snprintf(why, nwhy, "could not read row %lld of out", (long long)rows[r]);
            ok = false;
            break;
        }
        char what[96];
        snprintf(what, sizeof what, "out row %lld (token id %lld)", (long long)rows[r], (long long)id);
        ok = hb_spot_compare(got, ref, d, dt, what, why, nwhy);
    }
    free(ref);
    free(got);
    return ok;
}

/* Rows of dweight from the definition: dweight[v, :] = the sum of grad[t, :]
 * over the tokens t with ids[t] = v; the rows of the first and last tokens'
 * ids, and random rows (mostly with few or no tokens). */
static bool spot_bwd(const fu_fusion *f, const fu_host_tensor *in, hb_fetch_fn fetch, void *ctx, uint64_t seed,
                     char *why, size_t nwhy)
{
    int ig = hb_input_index(f, "grad"), ii = hb_input_index(f, "ids"), od = hb_output_index(f, "dweight");
    if (ig < 0 || ii < 0 || od < 0) {
        snprintf(why, nwhy, "fusion '%s' lacks grad, ids or dweight", fu_fusion_name(f));
        return false;
    }
    const fu_host_tensor *g = &in[ig], *ids = &in[ii];
    const int64_t *shape = fu_tensor_shape(f, fu_fusion_output(f, od));
    int64_t v = shape[0], d = shape[1], t = fu_host_tensor_numel(ids);
    fu_dtype dt = fu_tensor_dtype(f, fu_fusion_output(f, od));
    int64_t rows[HB_SPOT_ROWS + 2];
    int k = 0;
    if (t > 0) rows[k++] = (int64_t)fu_host_tensor_get(ids, 0);
    if (t > 1) rows[k++] = (int64_t)fu_host_tensor_get(ids, t - 1);
    k += hb_spot_rows(v, seed, rows + k);
    double *ref = malloc((size_t)d * sizeof *ref), *got = malloc((size_t)d * sizeof *got);
    bool ok = ref && got;
    if (!ok) snprintf(why, nwhy, "out of memory");
    for (int r = 0; ok && r < k; r++) {
        int64_t row = rows[r], count = 0;
        for (int64_t j = 0; j < d; j++) ref[j] = 0;
        for (int64_t i = 0; i < t; i++)
            if ((int64_t)fu_host_tensor_get(ids, i) == row) {
                count++;
                for (int64_t j = 0; j < d; j++) ref[j] += fu_host_tensor_get(g, i * d + j);
            }
        if (!fetch(ctx, od, row * d, d, got)) {
            snprintf(why, nwhy, "could not read row %lld of dweight", (long long)row);
            ok = false;
            break;
        }
        char what[96];
        snprintf(what, sizeof what, "dweight row %lld (%lld tokens)", (long long)row, (long long)count);
        ok = hb_spot_compare(got, ref, d, dt, what, why, nwhy);
    }
    free(ref);
    free(got);
    return ok;
}

static const hb_case cases[] = {
    {"fwd", "embedding/embedding_fwd.fusion", "2*T*D*elem + 8T", bytes_fwd, FU_SCATTER_DETERMINISTIC, spot_fwd},
    {"bwd_atomic", "embedding/embedding_bwd.fusion", "V*D*elem + T*D*elem + 8T", bytes_bwd, FU_SCATTER_ATOMIC,
     spot_bwd},
    {"bwd_deterministic", "embedding/embedding_bwd.fusion", "V*D*elem + T*D*elem + 8T", bytes_bwd,
     FU_SCATTER_DETERMINISTIC, spot_bwd},
};

static bool params(const hb_size *s, fu_dtype dt, hb_params *out, char *why, size_t nwhy)
{
    (void)why, (void)nwhy;
    hb_params_int(out, "V", s->d[0]);
    hb_params_int(out, "D", s->d[1]);
    hb_params_int(out, "T", s->d[2]);
    hb_params_str(out, "DT", fu_dtype_name(dt));
    return true;
}

/* The same width; at most 4096 rows and 4096 tokens (so ids repeat, and the
 * backward's accumulation is exercised). */
static void check_size(const hb_size *s, hb_size *out)
{
    *out = *s;
    if (out->d[0] > 4096) out->d[0] = 4096;
    if (out->d[2] > 4096) out->d[2] = 4096;
}

const hb_suite hb_suite_embedding = {
    .name = "embedding",
    .size_help = "VxDxT (vocabulary x hidden x tokens), e.g. 50304x768x8192",
    .ndims = 3,
    .default_sizes = "50304x768x8192,128256x4096x65536",
    .sweep_sizes = "50304x768x2048,50304x768x8192,50304x768x32768,128256x4096x8192,128256x4096x65536",
    .default_dtypes = "f32,bf16",
    .cases = cases,
    .ncases = (int)(sizeof cases / sizeof cases[0]),
    .params = params,
    .check_size = check_size,
};
