/*
 * qkv_split.c -- the QKV split of multi-head attention (nanoGPT): [B, T, 3C]
 * sliced into q, k, v, each reshaped to heads of 64 and permuted to
 * [B, H, T, 64].
 *
 * Sizes: BxTx3C (batch x sequence x three times the width); heads H = C / 64.
 * Defaults: 16x128x3072, 16x1024x2304 (GPT-2 small), 32x2048x6144.
 *
 * Case (suites/qkv_split/qkv_split.fusion):
 *   fwd   bytes 2*B*T*3C*elem: the input read once, q, k and v (together as
 *         large as the input) written once.
 */
#include <stdlib.h>

#include "suite.h"

#define HEAD 64

static int64_t bytes_qkv(const hb_size *s, int64_t elem) /* 2*B*T*3C*elem */
{
    return 2 * s->d[0] * s->d[1] * s->d[2] * elem;
}

/* Whole (b, t) rows from the definition: q[b, h, t, :] = x[b, t, h*64 : h*64+64],
 * k and v likewise from C and 2C on, for every head. */
static bool spot_qkv(const fu_fusion *f, const fu_host_tensor *in, hb_fetch_fn fetch, void *ctx, uint64_t seed,
                     char *why, size_t nwhy)
{
    const char *names[3] = {"q", "k", "v"};
    int ix = hb_input_index(f, "x"), out[3];
    for (int o = 0; o < 3; o++) out[o] = hb_output_index(f, names[o]);
    if (ix < 0 || out[0] < 0 || out[1] < 0 || out[2] < 0) {
        snprintf(why, nwhy, "fusion '%s' lacks x, q, k or v", fu_fusion_name(f));
        return false;
    }
    const fu_host_tensor *x = &in[ix];
    int64_t b = x->shape[0], t = x->shape[1], c3 = x->shape[2], c = c3 / 3;
    const int64_t *qs = fu_tensor_shape(f, fu_fusion_output(f, out[0])); /* [B, H, T, hd] */
    int64_t h = qs[1], hd = qs[3];
    double ref[HEAD], got[HEAD];
    if (hd != HEAD || h * hd != c) {
        snprintf(why, nwhy, "fusion '%s': q is not [B, C/%d, T, %d]", fu_fusion_name(f), HEAD, HEAD);
        return false;
    }
    int64_t rows[HB_SPOT_ROWS];
    int k = hb_spot_rows(b * t, seed, rows);
    for (int r = 0; r < k; r++) {
        int64_t bi = rows[r] / t, ti = rows[r] % t;
        for (int o = 0; o < 3; o++)
            for (int64_t hi = 0; hi < h; hi++) {
                for (int64_t j = 0; j < hd; j++) ref[j] = fu_host_tensor_get(x, (bi * t + ti) * c3 + o * c + hi * hd + j);
                if (!fetch(ctx, out[o], ((bi * h + hi) * t + ti) * hd, hd, got)) {
                    snprintf(why, nwhy, "could not read %s", names[o]);
                    return false;
                }
                char what[96];
                snprintf(what, sizeof what, "%s[%lld, %lld, %lld, :]", names[o], (long long)bi, (long long)hi,
                         (long long)ti);
                if (!hb_spot_compare(got, ref, hd, fu_tensor_dtype(f, fu_fusion_output(f, out[o])), what, why, nwhy))
                    return false;
            }
    }
    return true;
}

static const hb_case cases[] = {
    {"fwd", "qkv_split/qkv_split.fusion", "2*B*T*3C*elem", bytes_qkv, FU_SCATTER_DETERMINISTIC, spot_qkv},
};

static bool params(const hb_size *s, fu_dtype dt, hb_params *out, char *why, size_t nwhy)
{
    int64_t c3 = s->d[2];
    if (c3 % (3 * HEAD) != 0) {
        snprintf(why, nwhy, "qkv_split size %lldx%lldx%lld: the last number is 3*C and must be a multiple of %d "
                 "(three parts, each of heads of %d)", (long long)s->d[0], (long long)s->d[1], (long long)c3,
                 3 * HEAD, HEAD);
        return false;
    }
    int64_t c = c3 / 3;
    hb_params_int(out, "B", s->d[0]);
    hb_params_int(out, "T", s->d[1]);
    hb_params_int(out, "C", c);
    hb_params_int(out, "H", c / HEAD);
    hb_params_str(out, "DT", fu_dtype_name(dt));
    return true;
}

/* Whole sequences, fewer of them: about 16M input elements. */
static void check_size(const hb_size *s, hb_size *out)
{
    *out = *s;
    int64_t per_batch = s->d[1] * s->d[2];
    int64_t b = ((int64_t)16 << 20) / per_batch;
    if (b < 1) b = 1;
    if (b < out->d[0]) out->d[0] = b;
}

const hb_suite hb_suite_qkv_split = {
    .name = "qkv_split",
    .size_help = "BxTx3C (batch x sequence x 3*width; heads of 64), e.g. 16x128x3072",
    .ndims = 3,
    .default_sizes = "16x128x3072,16x1024x2304,32x2048x6144",
    .sweep_sizes = "16x128x3072,16x1024x2304,32x2048x6144",
    .default_dtypes = "f32,bf16",
    .cases = cases,
    .ncases = (int)(sizeof cases / sizeof cases[0]),
    .params = params,
    .check_size = check_size,
};
