/*
 * cross_entropy.c -- the cross_entropy suite: the loss of LLM training over N
 * rows (tokens) of V logits (vocabulary), mean reduction, ignore_index -100.
 *
 * Sizes: NxV. Default [8192, 32768]; the sweep varies the rows at V = 32768
 * and the vocabulary at N = 8192, up to Llama 3's 128256.
 *
 * Cases (the .fusion files in suites/cross_entropy/):
 *   fwd     the loss                           bytes N*V*elem + 8N
 *   bwd     the gradient of the logits         bytes 2*N*V*elem + 8N
 *   fwdbwd  both from one read of the logits   bytes 2*N*V*elem + 8N
 * The fewest bytes: the logits read once (N*V*elem), the i64 targets read
 * once (8N), the gradient (when there is one) written once (N*V*elem); the
 * scalar loss and upstream gradient are left out. fwdbwd writes the gradient
 * in the forward pass, so it reads the logits once (../shared/anchors/README.md
 * counts 3*N*V*elem + 16N for PyTorch's two passes).
 */
#include <math.h>
#include <stdlib.h>

#include "suite.h"

static int64_t bytes_fwd(const hb_size *s, int64_t elem) /* N*V*elem + 8N */
{
    int64_t n = s->d[0], v = s->d[1];
    return n * v * elem + 8 * n;
}

static int64_t bytes_bwd(const hb_size *s, int64_t elem) /* 2*N*V*elem + 8N */
{
    int64_t n = s->d[0], v = s->d[1];
    return 2 * n * v * elem + 8 * n;
}

/* Rows of dlogits from the definition, in double: (softmax(x_i) - onehot(t_i))
 * * dloss / (rows not ignored), zero for an ignored row (mean reduction,
 * ignore_index -100, no label smoothing, as the fusion files say). The loss,
 * a mean over every row, is left to the interpreter's check. */
static bool spot_grad(const fu_fusion *f, const fu_host_tensor *in, hb_fetch_fn fetch, void *ctx, uint64_t seed,
                      char *why, size_t nwhy)
{
    int il = hb_input_index(f, "logits"), it = hb_input_index(f, "target"), ig = hb_input_index(f, "dloss");
    int od = hb_output_index(f, "dlogits");
    if (il < 0 || it < 0 || ig < 0 || od < 0) {
        snprintf(why, nwhy, "fusion '%s' lacks logits, target, dloss or dlogits", fu_fusion_name(f));
        return false;
    }
    const fu_host_tensor *x = &in[il], *t = &in[it];
    int64_t n = x->shape[0], v = x->shape[1], kept = 0;
    for (int64_t i = 0; i < n; i++) kept += fu_host_tensor_get(t, i) != -100;
    double scale = kept ? fu_host_tensor_get(&in[ig], 0) / (double)kept : 0.0;
    fu_dtype dt = fu_tensor_dtype(f, fu_fusion_output(f, od));
    double *ref = malloc((size_t)v * sizeof *ref), *got = malloc((size_t)v * sizeof *got);
    bool ok = ref && got;
    if (!ok) snprintf(why, nwhy, "out of memory");
    int64_t rows[HB_SPOT_ROWS];
    int k = hb_spot_rows(n, seed, rows);
    for (int r = 0; ok && r < k; r++) {
        int64_t row = rows[r], target = (int64_t)fu_host_tensor_get(t, row);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < v; j++) mx = fmax(mx, fu_host_tensor_get(x, row * v + j));
        for (int64_t j = 0; j < v; j++) sum += exp(fu_host_tensor_get(x, row * v + j) - mx);
        for (int64_t j = 0; j < v; j++)
            ref[j] = target == -100 ? 0.0
                                    : (exp(fu_host_tensor_get(x, row * v + j) - mx) / sum - (j == target)) * scale;
        if (!fetch(ctx, od, row * v, v, got)) {
            snprintf(why, nwhy, "could not read row %lld of dlogits", (long long)row);
            ok = false;
            break;
        }
        char what[64];
        snprintf(what, sizeof what, "dlogits row %lld", (long long)row);
        ok = hb_spot_compare(got, ref, v, dt, what, why, nwhy);
    }
    free(ref);
    free(got);
    return ok;
}

static const hb_case cases[] = {
    {"fwd", "cross_entropy/cross_entropy_fwd.fusion", "N*V*elem + 8N", bytes_fwd, FU_SCATTER_DETERMINISTIC, NULL},
    {"bwd", "cross_entropy/cross_entropy_bwd.fusion", "2*N*V*elem + 8N", bytes_bwd, FU_SCATTER_DETERMINISTIC,
     spot_grad},
    {"fwdbwd", "cross_entropy/cross_entropy_fwdbwd.fusion", "2*N*V*elem + 8N", bytes_bwd, FU_SCATTER_DETERMINISTIC,
     spot_grad},
};

static bool params(const hb_size *s, fu_dtype dt, hb_params *out, char *why, size_t nwhy)
{
    (void)why, (void)nwhy;
    hb_params_int(out, "N", s->d[0]);
    hb_params_int(out, "V", s->d[1]);
    hb_params_str(out, "DT", fu_dtype_name(dt));
    return true;
}

/* About 16M logits on the CPU: every row has all V classes, fewer rows. */
static void check_size(const hb_size *s, hb_size *out)
{
    *out = *s;
    int64_t rows = ((int64_t)16 << 20) / s->d[1];
    if (rows < 16) rows = 16;
    if (rows < out->d[0]) out->d[0] = rows;
}

const hb_suite hb_suite_cross_entropy = {
    .name = "cross_entropy",
    .size_help = "NxV (rows x vocabulary), e.g. 8192x32768",
    .ndims = 2,
    .default_sizes = "8192x32768",
    .sweep_sizes = "1024x32768,4096x32768,16384x32768,8192x4096,8192x8192,8192x16384,8192x32768,8192x50304,"
                   "8192x65536,8192x128256",
    .default_dtypes = "f32,bf16",
    .cases = cases,
    .ncases = (int)(sizeof cases / sizeof cases[0]),
    .params = params,
    .check_size = check_size,
};
