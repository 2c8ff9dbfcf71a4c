/*
 * test_interp_workloads.c -- the interpreter's composites on workload shapes
 * against direct loops written here: cross entropy (every reduction,
 * ignore_index, label smoothing, GPT-2's vocabulary, bf16), its backward,
 * embedding and its backward, and nanoGPT's QKV split. Also times cross
 * entropy at [1024, 32768] (and [8192, 32768] with FUSER_LARGE_TESTS=1).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fuser.h"

/* ------------------------------------------------------------ helpers */

typedef struct rng { uint64_t s; } rng;

static uint64_t rng_next(rng *r) /* splitmix64 */
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }
static double rng_normal(rng *r)
{
    double u = rng_uniform(r), v = rng_uniform(r);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}
static int64_t rng_int(rng *r, int64_t n) { return (int64_t)(rng_next(r) % (uint64_t)n); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static fu_host_tensor alloc_t(fu_dtype dt, int rank, const int64_t *shape)
{
    fu_host_tensor t;
    fu_error e;
    if (fu_host_tensor_alloc(&t, dt, rank, shape, &e) != FU_OK) {
        fprintf(stderr, "alloc: %s\n", e.message);
        exit(2);
    }
    return t;
}

static fu_host_tensor random_t(rng *r, fu_dtype dt, int rank, const int64_t *shape, double scale)
{
    fu_host_tensor t = alloc_t(dt, rank, shape);
    for (int64_t i = 0; i < fu_host_tensor_numel(&t); i++) fu_host_tensor_set(&t, i, scale * rng_normal(r));
    return t;
}

static fu_status run(fu_fusion *f, fu_host_tensor *in, fu_host_tensor *out, fu_error *err)
{
    fu_status s = fu_fusion_verify(f, err);
    if (s == FU_OK) s = fu_interp_run(f, in, out, err);
    if (s != FU_OK) fprintf(stderr, "run %s: %s\n", fu_fusion_name(f), err->message);
    return s;
}

/* Compares got (a tensor) with want, |g - w| <= rtol * |w| + atol; reports the worst element. */
static void compare(const char *what, const fu_host_tensor *got, const double *want, int64_t n, double rtol,
                    double atol)
{
    check_count++;
    if (fu_host_tensor_numel(got) != n) {
        check_failures++;
        fprintf(stderr, "%s: %lld elements, want %lld\n", what, (long long)fu_host_tensor_numel(got), (long long)n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double g = fu_host_tensor_get(got, i), w = want[i];
        if (isnan(g) && isnan(w)) continue;
        if (!(fabs(g - w) <= rtol * fabs(w) + atol)) {
            check_failures++;
            fprintf(stderr, "%s: element %lld is %.10g, want %.10g\n", what, (long long)i, g, w);
            return;
        }
    }
}

/* ------------------------------------------------------------ cross entropy reference */

typedef struct ce_case {
    const char *name;
    fu_dtype dtype;
    int64_t n, c;
    fu_reduction red;
    int64_t ignore_index;
    double eps;
    int nignored; /* rows whose target is set to ignore_index */
} ce_case;

/* Direct loops: log_softmax, then the per-row loss of torch's cross_entropy. */
static void ref_ce_rows(const fu_host_tensor *x, const fu_host_tensor *t, int64_t ign, double eps, double *loss,
                        bool *counted)
{
    int64_t n = x->shape[0], c = x->shape[1];
    double *lsm = malloc((size_t)c * sizeof *lsm);
    for (int64_t i = 0; i < n; i++) {
        int64_t ti = (int64_t)fu_host_tensor_get(t, i);
        counted[i] = ti != ign;
        if (!counted[i]) {
            loss[i] = 0;
            continue;
        }
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < c; k++) m = fmax(m, fu_host_tensor_get(x, i * c + k));
        for (int64_t k = 0; k < c; k++) s += exp(fu_host_tensor_get(x, i * c + k) - m);
        double smooth = 0;
        for (int64_t k = 0; k < c; k++) {
            lsm[k] = fu_host_tensor_get(x, i * c + k) - m - log(s);
            smooth -= lsm[k];
        }
        loss[i] = (1 - eps) * -lsm[ti] + eps * smooth / (double)c;
    }
    free(lsm);
}

static fu_fusion *ce_fusion(const ce_case *cc, bool backward)
{
    fu_fusion *f = fu_fusion_new(cc->name);
    int64_t xs[2] = {cc->n, cc->c};
    fu_tensor x = fu_input(f, "logits", cc->dtype, 2, xs);
    fu_tensor t = fu_input(f, "target", FU_I64, 1, xs);
    if (!backward) {
        fu_output(f, fu_cross_entropy(f, x, t, cc->red, cc->ignore_index, cc->eps, "loss"));
    } else {
        fu_tensor g = fu_input(f, "grad_loss", cc->dtype, cc->red == FU_REDUCTION_NONE ? 1 : 0, xs);
        fu_output(f, fu_cross_entropy_backward(f, x, t, g, cc->red, cc->ignore_index, cc->eps, "dlogits"));
    }
    return f;
}

static void ce_inputs(rng *r, const ce_case *cc, fu_host_tensor *x, fu_host_tensor *t)
{
    int64_t xs[2] = {cc->n, cc->c};
    *x = random_t(r, cc->dtype, 2, xs, 2.0);
    *t = alloc_t(FU_I64, 1, xs);
    for (int64_t i = 0; i < cc->n; i++) fu_host_tensor_set(t, i, (double)rng_int(r, cc->c));
    for (int k = 0; k < cc->nignored; k++) /* spread the ignored rows */
        fu_host_tensor_set(t, (k * 7) % cc->n, (double)cc->ignore_index);
}

static void check_ce(rng *r, const ce_case *cc)
{
    bool half = cc->dtype == FU_BF16 || cc->dtype == FU_F16;
    double tol = half ? 1e-2 : 1e-6; /* half results carry their own rounding */
    fu_host_tensor in[3], out[1];
    fu_error err;
    ce_inputs(r, cc, &in[0], &in[1]);
    double *loss = malloc((size_t)cc->n * sizeof *loss);
    bool *counted = malloc((size_t)cc->n * sizeof *counted);
    ref_ce_rows(&in[0], &in[1], cc->ignore_index, cc->eps, loss, counted);
    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < cc->n; i++) {
        total += loss[i];
        count += counted[i];
    }

    /* forward */
    fu_fusion *f = ce_fusion(cc, false);
    CHECK(run(f, in, out, &err) == FU_OK);
    char what[160];
    snprintf(what, sizeof what, "%s forward", cc->name);
    if (cc->red == FU_REDUCTION_NONE) {
        compare(what, &out[0], loss, cc->n, tol, 1e-7);
    } else {
        double want = cc->red == FU_REDUCTION_SUM ? total : total / (double)count; /* 0/0 = NaN */
        CHECK(out[0].rank == 0);
        compare(what, &out[0], &want, 1, tol, 1e-7);
    }
    fu_host_tensor_free(&out[0]);
    fu_fusion_free(f);

    /* backward: g_i * (softmax - (1-eps) onehot - eps/C) on counted rows */
    int64_t gs[1] = {cc->n};
    in[2] = alloc_t(cc->dtype, cc->red == FU_REDUCTION_NONE ? 1 : 0, gs);
    for (int64_t i = 0; i < fu_host_tensor_numel(&in[2]); i++) fu_host_tensor_set(&in[2], i, 0.5 + rng_uniform(r));
    double *dx = calloc((size_t)(cc->n * cc->c), sizeof *dx);
    for (int64_t i = 0; i < cc->n; i++) {
        if (!counted[i]) continue;
        double g = cc->red == FU_REDUCTION_NONE ? fu_host_tensor_get(&in[2], i)
                   : cc->red == FU_REDUCTION_MEAN ? fu_host_tensor_get(&in[2], 0) / (double)count
                                                  : fu_host_tensor_get(&in[2], 0);
        int64_t ti = (int64_t)fu_host_tensor_get(&in[1], i);
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < cc->c; k++) m = fmax(m, fu_host_tensor_get(&in[0], i * cc->c + k));
        for (int64_t k = 0; k < cc->c; k++) s += exp(fu_host_tensor_get(&in[0], i * cc->c + k) - m);
        for (int64_t k = 0; k < cc->c; k++) {
            double p = exp(fu_host_tensor_get(&in[0], i * cc->c + k) - m) / s;
            dx[i * cc->c + k] = g * (p - (k == ti ? 1 - cc->eps : 0) - cc->eps / (double)cc->c);
        }
    }
    f = ce_fusion(cc, true);
    CHECK(run(f, in, out, &err) == FU_OK);
    snprintf(what, sizeof what, "%s backward", cc->name);
    compare(what, &out[0], dx, cc->n * cc->c, tol, half ? 1e-4 : 1e-12);
    fu_host_tensor_free(&out[0]);
    fu_fusion_free(f);

    for (int i = 0; i < 3; i++) fu_host_tensor_free(&in[i]);
    free(dx);
    free(loss);
    free(counted);
}

static void test_cross_entropy(void)
{
    rng r = {42};
    const fu_reduction reds[3] = {FU_REDUCTION_NONE, FU_REDUCTION_MEAN, FU_REDUCTION_SUM};
    for (int k = 0; k < 3; k++) {
        fu_reduction red = reds[k];
        ce_case cases[] = {
            {"plain", FU_F32, 16, 100, red, -100, 0.0, 0},
            {"ignore rows", FU_F32, 16, 100, red, -100, 0.0, 3},
            {"label smoothing", FU_F32, 16, 100, red, -100, 0.1, 3},
            {"in-range ignore_index", FU_F32, 12, 10, red, 5, 0.1, 2},
            {"gpt2 vocabulary", FU_F32, 4, 50257, red, -100, 0.1, 1},
            {"one row", FU_F32, 1, 37, red, -100, 0.0, 0},
            {"all ignored", FU_F32, 5, 20, red, -100, 0.1, 5},
            {"f64", FU_F64, 8, 300, red, -100, 0.2, 2},
            {"bf16", FU_BF16, 8, 1000, red, -100, 0.0, 1},
            {"bf16 smoothing", FU_BF16, 8, 1000, red, -100, 0.1, 1},
            {"f16", FU_F16, 8, 1000, red, -100, 0.1, 1},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char name[96];
            snprintf(name, sizeof name, "ce %s reduction=%s", cases[i].name, fu_reduction_name(red));
            cases[i].name = name;
            check_ce(&r, &cases[i]);
        }
    }

    /* All rows ignored, spelled out: mean is NaN (0/0, as torch), sum is 0. */
    int64_t xs[2] = {3, 4};
    fu_fusion *f = fu_fusion_new("all_ignored");
    fu_tensor x = fu_input(f, "logits", FU_F32, 2, xs), t = fu_input(f, "target", FU_I64, 1, xs);
    fu_output(f, fu_cross_entropy(f, x, t, FU_REDUCTION_MEAN, -100, 0.0, "mean"));
    fu_output(f, fu_cross_entropy(f, x, t, FU_REDUCTION_SUM, -100, 0.0, "sum"));
    fu_host_tensor in[2] = {random_t(&r, FU_F32, 2, xs, 1.0), alloc_t(FU_I64, 1, xs)};
    for (int i = 0; i < 3; i++) fu_host_tensor_set(&in[1], i, -100);
    fu_host_tensor out[2];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    CHECK(isnan(fu_host_tensor_get(&out[0], 0)));
    CHECK(fu_host_tensor_get(&out[1], 0) == 0.0);
    for (int i = 0; i < 2; i++) {
        fu_host_tensor_free(&out[i]);
        fu_host_tensor_free(&in[i]);
    }
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ embedding */

static void test_embedding(void)
{
    rng r = {7};
    int64_t ws[2] = {10, 4}, is[2] = {2, 3}, os[3] = {2, 3, 4};
    const double ids[6] = {1, 7, 1, 0, 9, 7}; /* repeats */
    fu_fusion *f = fu_fusion_new("emb");
    fu_tensor w = fu_input(f, "wte", FU_F32, 2, ws), id = fu_input(f, "idx", FU_I64, 2, is);
    fu_output(f, fu_embedding(f, w, id, 1, "tok")); /* padding_idx does not change the forward */
    fu_host_tensor in[2] = {random_t(&r, FU_F32, 2, ws, 1.0), alloc_t(FU_I64, 2, is)};
    for (int i = 0; i < 6; i++) fu_host_tensor_set(&in[1], i, ids[i]);
    double want[24];
    for (int k = 0; k < 6; k++)
        for (int d = 0; d < 4; d++) want[k * 4 + d] = fu_host_tensor_get(&in[0], (int64_t)ids[k] * 4 + d);
    fu_host_tensor out[1];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    CHECK(out[0].rank == 3 && out[0].shape[0] == os[0] && out[0].shape[1] == os[1] && out[0].shape[2] == os[2]);
    compare("embedding", &out[0], want, 24, 0, 0);
    fu_host_tensor_free(&out[0]);
    fu_fusion_free(f);
    fu_host_tensor_free(&in[0]);

    /* backward: repeated ids sum; the padding row (1) stays zero */
    f = fu_fusion_new("emb_bwd");
    fu_tensor g = fu_input(f, "grad", FU_F32, 3, os);
    id = fu_input(f, "idx", FU_I64, 2, is);
    fu_output(f, fu_embedding_backward(f, g, id, 10, 1, "dwte"));
    in[0] = random_t(&r, FU_F32, 3, os, 1.0);
    double dw[40] = {0};
    for (int k = 0; k < 6; k++)
        if (ids[k] != 1)
            for (int d = 0; d < 4; d++) dw[(int)ids[k] * 4 + d] += fu_host_tensor_get(&in[0], k * 4 + d);
    for (int i = 0; i < 40; i++) dw[i] = (float)dw[i];
    CHECK(run(f, in, out, &err) == FU_OK);
    CHECK(out[0].rank == 2 && out[0].shape[0] == 10 && out[0].shape[1] == 4);
    compare("embedding_backward", &out[0], dw, 40, 0, 0);
    fu_host_tensor_free(&out[0]);
    fu_fusion_free(f);

    /* no padding: row 1 gets its two contributions */
    f = fu_fusion_new("emb_bwd_nopad");
    g = fu_input(f, "grad", FU_F32, 3, os);
    id = fu_input(f, "idx", FU_I64, 2, is);
    fu_output(f, fu_embedding_backward(f, g, id, 10, -1, "dwte"));
    memset(dw, 0, sizeof dw);
    for (int k = 0; k < 6; k++)
        for (int d = 0; d < 4; d++) dw[(int)ids[k] * 4 + d] += fu_host_tensor_get(&in[0], k * 4 + d);
    for (int i = 0; i < 40; i++) dw[i] = (float)dw[i];
    CHECK(run(f, in, out, &err) == FU_OK);
    compare("embedding_backward without padding", &out[0], dw, 40, 0, 0);
    fu_host_tensor_free(&out[0]);
    fu_fusion_free(f);
    fu_host_tensor_free(&in[0]);
    fu_host_tensor_free(&in[1]);
}

/* ------------------------------------------------------------ nanoGPT QKV split */

static void test_qkv_split(void)
{
    enum { B = 2, T = 5, H = 3, HD = 4, C = H * HD };
    rng r = {99};
    int64_t xs[3] = {B, T, 3 * C}, hs[4] = {B, T, H, HD};
    int perm[4] = {0, 2, 1, 3};
    fu_fusion *f = fu_fusion_new("qkv");
    fu_tensor x = fu_input(f, "qkv", FU_F32, 3, xs);
    const char *names[3] = {"q", "k", "v"};
    for (int s = 0; s < 3; s++) {
        int64_t start[3] = {0, 0, s * C}, stop[3] = {B, T, (s + 1) * C};
        char sn[8], rn[8];
        snprintf(sn, sizeof sn, "%s_s", names[s]);
        snprintf(rn, sizeof rn, "%s_r", names[s]);
        fu_tensor sl = fu_slice(f, x, start, stop, NULL, sn);
        fu_tensor rs = fu_reshape(f, sl, 4, hs, rn);
        fu_output(f, fu_permute(f, rs, perm, names[s]));
    }
    fu_host_tensor in[1] = {random_t(&r, FU_F32, 3, xs, 1.0)}, out[3];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    for (int s = 0; s < 3; s++) {
        double want[B * H * T * HD];
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < HD; d++)
                        want[((b * H + h) * T + t) * HD + d] =
                            fu_host_tensor_get(&in[0], (b * T + t) * 3 * C + s * C + h * HD + d);
        CHECK(out[s].rank == 4 && out[s].shape[1] == H && out[s].shape[2] == T);
        compare(names[s], &out[s], want, B * H * T * HD, 0, 0);
        fu_host_tensor_free(&out[s]);
    }
    fu_host_tensor_free(&in[0]);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ timing */

/* Times mean cross entropy over [n, c] f32 and checks it against direct loops. */
static void time_cross_entropy(int64_t n, int64_t c)
{
    rng r = {1234};
    int64_t xs[2] = {n, c};
    fu_fusion *f = fu_fusion_new("ce_big");
    fu_tensor x = fu_input(f, "logits", FU_F32, 2, xs), t = fu_input(f, "target", FU_I64, 1, xs);
    fu_output(f, fu_cross_entropy(f, x, t, FU_REDUCTION_MEAN, -100, 0.0, "loss"));
    fu_host_tensor in[2] = {alloc_t(FU_F32, 2, xs), alloc_t(FU_I64, 1, xs)};
    float *xd = in[0].data;
    int64_t *td = in[1].data;
    for (int64_t i = 0; i < n * c; i++) xd[i] = (float)(8.0 * rng_uniform(&r) - 4.0); /* cheaper than normals */
    for (int64_t i = 0; i < n; i++) td[i] = i % 97 == 3 ? -100 : rng_int(&r, c);

    fu_host_tensor out[1];
    fu_error err;
    double t0 = now_s();
    fu_status s = run(f, in, out, &err);
    double t1 = now_s();
    CHECK(s == FU_OK);
    printf("cross_entropy f32 [%lld, %lld] mean: %.3f s in the interpreter\n", (long long)n, (long long)c, t1 - t0);

    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (td[i] == -100) continue;
        const float *row = xd + i * c;
        double m = -INFINITY, se = 0;
        for (int64_t k = 0; k < c; k++) m = fmax(m, row[k]);
        for (int64_t k = 0; k < c; k++) se += exp(row[k] - m);
        total += m + log(se) - row[td[i]];
        count++;
    }
    if (s == FU_OK) {
        CHECK_NEAR(fu_host_tensor_get(&out[0], 0), total / (double)count, 1e-6);
        fu_host_tensor_free(&out[0]);
    }
    fu_host_tensor_free(&in[0]);
    fu_host_tensor_free(&in[1]);
    fu_fusion_free(f);
}

int main(void)
{
    test_cross_entropy();
    test_embedding();
    test_qkv_split();
    time_cross_entropy(1024, 32768);
    const char *large = getenv("FUSER_LARGE_TESTS");
    if (large && strcmp(large, "1") == 0) time_cross_entropy(8192, 32768);
    else printf("set FUSER_LARGE_TESTS=1 to time cross_entropy at [8192, 32768]\n");
    return check_finish("test_interp_workloads");
}
