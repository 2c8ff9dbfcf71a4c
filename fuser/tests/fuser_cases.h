/*
 * fuser_cases.h -- the fusions that the plan/compile test and the GPU test
 * share: the seed workloads read from suites/ (FUSER_SUITES_DIR) with size
 * overrides, C-API variants of the workloads, and fusions that need more than
 * one kernel. Each case says how many kernels it must plan to, and what the
 * GPU test needs to know to make its inputs (targets to set to ignore_index,
 * ids to set to padding_idx) and to check it (determinism).
 *
 * Header-only (static functions) so that each test program stays one file.
 */
#ifndef FUSER_TEST_CASES_H
#define FUSER_TEST_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser.h"
#include "plan.h"

typedef struct tc_case {
    char name[160];
    fu_fusion *f;
    int want_kernels;           /* exact kernel count; 0 = more than one */
    fu_scatter_mode scatter;
    bool want_zero_before;      /* some kernel clears its output first (atomic scatter) */
    bool deterministic;         /* the GPU result must be bit-identical run to run */
    bool is_bf16;               /* float outputs are bf16 (looser tolerance) */
    const char *ignore_input;   /* name of an index input whose some entries become ignore_value */
    int64_t ignore_value;
    int64_t index_range;        /* valid values of ignore_input are [0, index_range) (for inputs
                                 * that fu_fusion_index_bound cannot trace, e.g. through where) */
    const char *pad_input;      /* name of an index input whose some entries become pad_value */
    int64_t pad_value;
} tc_case;

typedef struct tc_list {
    tc_case *v;
    int n, cap;
    int errors;                 /* fusions that could not be built (each reported) */
} tc_list;

static inline void tc_list_free(tc_list *l)
{
    for (int i = 0; i < l->n; i++) fu_fusion_free(l->v[i].f);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Takes ownership of f (freed on error). Returns the case, or NULL when f is
 * invalid (reported, counted in l->errors). */
static inline tc_case *tc_push(tc_list *l, fu_fusion *f, const char *name, int want_kernels)
{
    fu_error err;
    if (!f || fu_fusion_verify(f, &err) != FU_OK) {
        fprintf(stderr, "case %s: the fusion does not build: %s\n", name, f ? err.message : "NULL");
        l->errors++;
        fu_fusion_free(f);
        return NULL;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) abort();
    }
    tc_case *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->f = f;
    c->want_kernels = want_kernels;
    c->scatter = FU_SCATTER_DETERMINISTIC;
    for (int i = 0; i < fu_fusion_num_outputs(f); i++)
        if (fu_tensor_dtype(f, fu_fusion_output(f, i)) == FU_BF16) c->is_bf16 = true;
    return c;
}

/* A cross entropy case (inputs "logits" [N, V] and "target"): some targets
 * become `ignore` in the GPU test, the others are in [0, V). */
static inline void tc_ignore(tc_case *c, int64_t ignore)
{
    if (!c) return;
    c->ignore_input = "target";
    c->ignore_value = ignore;
    fu_tensor x = fu_fusion_find(c->f, "logits");
    if (x >= 0 && fu_tensor_rank(c->f, x) == 2) c->index_range = fu_tensor_shape(c->f, x)[1];
}

/* ------------------------------------------------------------ suite files */

/* The seed workloads, relative to FUSER_SUITES_DIR. */
static const char *const tc_suite_files[] = {
    "cross_entropy/cross_entropy_fwd.fusion",   "cross_entropy/cross_entropy_bwd.fusion",
    "cross_entropy/cross_entropy_fwdbwd.fusion", "cross_entropy/cross_entropy_primitives.fusion",
    "embedding/embedding_fwd.fusion",           "embedding/embedding_bwd.fusion",
    "qkv_split/qkv_split.fusion",               "qkv_split/seed_repro.fusion",
};
#define TC_NSUITES ((int)(sizeof tc_suite_files / sizeof tc_suite_files[0]))

static inline bool tc_program_has_param(const fu_program *p, const char *name)
{
    for (int i = 0; i < fu_program_num_params(p); i++)
        if (strcmp(fu_program_param_name(p, i), name) == 0) return true;
    return false;
}

/* The fusion a text builds (its parameters at their defaults), or NULL with err set. The
 * fusion owns all it holds: the program is freed here. */
static inline fu_fusion *tc_fusion_from_text(const char *text, fu_error *err)
{
    fu_program *prog = NULL;
    fu_fusion *f = NULL;
    if (fu_program_parse(text, "text", &prog, err) == FU_OK) (void)fu_program_build(prog, NULL, 0, &f, err);
    fu_program_free(prog);
    return f;
}

/*
 * Builds suite file `rel` with "NAME=VALUE" overrides (those naming a
 * parameter the file lacks are dropped, so one list serves every file) and,
 * when the file has a DT parameter, DT=dtype. `label` names the size set.
 * Cross entropy files get a few targets set to -100 (their ignore_index) in
 * the GPU test. Returns the case or NULL (and *no_dt when the file has no DT
 * and dtype is not f32, so nothing is added).
 */
static inline tc_case *tc_add_suite(tc_list *l, const char *suites_dir, const char *rel, const char *label,
                             const char *const *sets, int nsets, fu_dtype dtype, bool *skipped)
{
    char path[1024], name[160];
    fu_error err;
    fu_program *p = NULL;
    if (skipped) *skipped = false;
    snprintf(path, sizeof path, "%s/%s", suites_dir, rel);
    if (fu_program_parse_file(path, &p, &err) != FU_OK) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        l->errors++;
        return NULL;
    }
    bool has_dt = tc_program_has_param(p, "DT");
    if (!has_dt && dtype != FU_F32) {
        fu_program_free(p);
        if (skipped) *skipped = true;
        return NULL;
    }
    fu_param_value ov[16];
    char buf[16][64];
    int n = 0;
    for (int i = 0; i < nsets && n < 15; i++) {
        const char *eq = strchr(sets[i], '=');
        if (!eq) continue;
        snprintf(buf[n], sizeof buf[n], "%.*s", (int)(eq - sets[i]), sets[i]);
        if (!tc_program_has_param(p, buf[n])) continue;
        ov[n].name = buf[n];
        ov[n].value = eq + 1;
        n++;
    }
    if (has_dt) {
        ov[n].name = "DT";
        ov[n].value = fu_dtype_name(dtype);
        n++;
    }
    fu_fusion *f = NULL;
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    snprintf(name, sizeof name, "%.*s/%s/%s", (int)(strlen(base) - strlen(".fusion")), base, label,
             has_dt ? fu_dtype_name(dtype) : "f32");
    if (fu_program_build(p, ov, n, &f, &err) != FU_OK) {
        fprintf(stderr, "case %s: %s\n", name, err.message);
        fu_program_free(p);
        l->errors++;
        return NULL;
    }
    fu_program_free(p);
    tc_case *c = tc_push(l, f, name, 1);
    if (strstr(rel, "cross_entropy")) tc_ignore(c, -100);
    return c;
}

/* ------------------------------------------------------------ C-API fusions */

static inline fu_tensor tc_scalar(fu_fusion *f, double v, fu_dtype dt, const char *name)
{
    return fu_full(f, 0, NULL, v, dt, name);
}

/* Cross entropy: the loss (fwd), the logits' gradient (bwd), or both. */
static inline fu_fusion *tc_ce(fu_dtype dt, int64_t n, int64_t v, fu_reduction red, int64_t ign, double eps, bool fwd,
                        bool bwd)
{
    fu_fusion *f = fu_fusion_new(fwd && bwd ? "ce_fwdbwd" : fwd ? "ce_fwd" : "ce_bwd");
    int64_t xs[2] = {n, v}, ts[1] = {n};
    fu_tensor x = fu_input(f, "logits", dt, 2, xs);
    fu_tensor t = fu_input(f, "target", FU_I64, 1, ts);
    if (bwd) {
        fu_tensor g = fu_input(f, "dloss", dt, red == FU_REDUCTION_NONE ? 1 : 0, ts);
        if (fwd) fu_output(f, fu_cross_entropy(f, x, t, red, ign, eps, "loss"));
        fu_output(f, fu_cross_entropy_backward(f, x, t, g, red, ign, eps, "dlogits"));
    } else {
        fu_output(f, fu_cross_entropy(f, x, t, red, ign, eps, "loss"));
    }
    return f;
}

/* Cross entropy of logits / temperature written from primitives (mean over
 * the rows whose target is not ignore_index). */
static inline fu_fusion *tc_ce_temperature(fu_dtype dt, int64_t n, int64_t v, double temperature, int64_t ign)
{
    fu_fusion *f = fu_fusion_new("ce_temperature");
    int64_t xs[2] = {n, v}, ts[1] = {n}, col[2] = {n, 1};
    int ax1[1] = {1}, ax0[1] = {0};
    fu_tensor logits = fu_input(f, "logits", dt, 2, xs);
    fu_tensor target = fu_input(f, "target", FU_I64, 1, ts);
    fu_tensor x = fu_binary(f, FU_OP_DIV, logits, tc_scalar(f, temperature, dt, "temperature"), "x");
    fu_tensor m = fu_reduce(f, FU_OP_RMAX, x, 1, ax1, true, "row_max");
    fu_tensor e = fu_unary(f, FU_OP_EXP, fu_binary(f, FU_OP_SUB, x, m, "shifted"), "exps");
    fu_tensor s = fu_reduce(f, FU_OP_SUM, e, 1, ax1, true, "sum_exps");
    fu_tensor lse = fu_binary(f, FU_OP_ADD, fu_unary(f, FU_OP_LOG, s, "log_sum"), m, "lse");
    fu_tensor keep = fu_binary(f, FU_OP_NE, target, fu_full(f, 0, NULL, (double)ign, FU_I64, "ign"), "keep");
    fu_tensor safe = fu_where(f, keep, target, fu_full(f, 0, NULL, 0, FU_I64, "zero_i"), "safe_target");
    fu_tensor picked = fu_take_along_axis(f, x, fu_reshape(f, safe, 2, col, "target_col"), 1, "picked");
    fu_tensor nll = fu_reshape(f, fu_binary(f, FU_OP_SUB, lse, picked, "nll_col"), 1, ts, "nll");
    fu_tensor kept_nll = fu_where(f, keep, nll, tc_scalar(f, 0.0, dt, "zero"), "kept_nll");
    fu_tensor total = fu_reduce(f, FU_OP_SUM, kept_nll, 1, ax0, false, "total");
    fu_tensor count = fu_reduce(f, FU_OP_SUM, fu_cast(f, keep, dt, "kept"), 1, ax0, false, "count");
    fu_output(f, fu_binary(f, FU_OP_DIV, total, count, "loss"));
    return f;
}

static inline fu_fusion *tc_embedding(fu_dtype dt, int64_t v, int64_t d, int64_t t, int64_t pad)
{
    fu_fusion *f = fu_fusion_new("embedding");
    int64_t ws[2] = {v, d}, is[1] = {t};
    fu_tensor w = fu_input(f, "weight", dt, 2, ws);
    fu_tensor ids = fu_input(f, "ids", FU_I64, 1, is);
    fu_output(f, fu_embedding(f, w, ids, pad, "out"));
    return f;
}

static inline fu_fusion *tc_embedding_bwd(fu_dtype dt, int64_t v, int64_t d, int64_t t, int64_t pad)
{
    fu_fusion *f = fu_fusion_new("embedding_bwd");
    int64_t gs[2] = {t, d}, is[1] = {t};
    fu_tensor g = fu_input(f, "grad", dt, 2, gs);
    fu_tensor ids = fu_input(f, "ids", FU_I64, 1, is);
    fu_output(f, fu_embedding_backward(f, g, ids, v, pad, "dweight"));
    return f;
}

/* index_add of src rows onto a base computed from another input (x * 2). */
static inline fu_fusion *tc_index_add_base(fu_dtype dt, int64_t v, int64_t d, int64_t t)
{
    fu_fusion *f = fu_fusion_new("index_add_base");
    int64_t xs[2] = {v, d}, ss[2] = {t, d}, is[1] = {t};
    fu_tensor x = fu_input(f, "x", dt, 2, xs);
    fu_tensor src = fu_input(f, "src", dt, 2, ss);
    fu_tensor ids = fu_input(f, "ids", FU_I64, 1, is);
    fu_tensor base = fu_binary(f, FU_OP_MUL, x, tc_scalar(f, 2.0, dt, "two"), "base");
    fu_output(f, fu_index_add(f, base, ids, src, 0, "y"));
    return f;
}

/* GPT-style input embedding: wte[ids] * scale + wpe[0:T] (broadcast over the batch). */
static inline fu_fusion *tc_embedding_scale_pos(fu_dtype dt, int64_t v, int64_t d, int64_t b, int64_t t, int64_t tmax)
{
    fu_fusion *f = fu_fusion_new("embedding_scale_pos");
    int64_t ws[2] = {v, d}, ps[2] = {tmax, d}, is[2] = {b, t};
    int64_t start[2] = {0, 0}, stop[2] = {t, d}, step[2] = {1, 1};
    fu_tensor wte = fu_input(f, "wte", dt, 2, ws);
    fu_tensor wpe = fu_input(f, "wpe", dt, 2, ps);
    fu_tensor ids = fu_input(f, "ids", FU_I64, 2, is);
    fu_tensor tok = fu_embedding(f, wte, ids, -1, "tok");
    fu_tensor scaled = fu_binary(f, FU_OP_MUL, tok, tc_scalar(f, 0.125, dt, "scale"), "scaled");
    fu_tensor pos = fu_slice(f, wpe, start, stop, step, "pos");
    fu_output(f, fu_binary(f, FU_OP_ADD, scaled, pos, "x"));
    return f;
}

/* x[B, T, parts*C] sliced into `parts` chunks, each to [B, H, T, C/H]. */
static inline fu_fusion *tc_qkv(fu_dtype dt, int64_t b, int64_t t, int64_t c, int64_t h, int parts)
{
    fu_fusion *f = fu_fusion_new("qkv_split");
    int64_t xs[3] = {b, t, parts * c}, hs[4] = {b, t, h, c / h};
    int perm[4] = {0, 2, 1, 3};
    fu_tensor x = fu_input(f, "x", dt, 3, xs);
    for (int i = 0; i < parts; i++) {
        int64_t start[3] = {0, 0, i * c}, stop[3] = {b, t, (i + 1) * c}, step[3] = {1, 1, 1};
        char n1[32], n2[32], n3[32];
        snprintf(n1, sizeof n1, "part%d", i);
        snprintf(n2, sizeof n2, "heads%d", i);
        snprintf(n3, sizeof n3, "out%d", i);
        fu_tensor s = fu_slice(f, x, start, stop, step, n1);
        fu_output(f, fu_permute(f, fu_reshape(f, s, 4, hs, n2), perm, n3));
    }
    return f;
}

/* softmax over the rows, then a sum over the other axis: one kernel (the
 * column sum accumulated by the row kernel, combined by its last blocks). */
static inline fu_fusion *tc_softmax_colsum(fu_dtype dt, int64_t n, int64_t v)
{
    fu_fusion *f = fu_fusion_new("softmax_colsum");
    int64_t xs[2] = {n, v};
    int ax0[1] = {0};
    fu_tensor x = fu_input(f, "x", dt, 2, xs);
    fu_tensor p = fu_softmax(f, x, 1, "p");
    fu_output(f, fu_reduce(f, FU_OP_SUM, p, 1, ax0, false, "colsum"));
    return f;
}

/* A pointwise chain cut in the middle by segment_set: two kernels. */
static inline fu_fusion *tc_segment_chain(fu_dtype dt, int64_t n, int64_t v)
{
    fu_fusion *f = fu_fusion_new("segment_chain");
    int64_t xs[2] = {n, v};
    fu_tensor x = fu_input(f, "x", dt, 2, xs);
    fu_tensor a = fu_unary(f, FU_OP_TANH, x, "a");
    fu_tensor b = fu_binary(f, FU_OP_MUL, a, tc_scalar(f, 3.0, dt, "three"), "b");
    fu_tensor cut = fu_segment_set(f, b, "cut");
    fu_tensor c = fu_unary(f, FU_OP_EXP, cut, "c");
    fu_output(f, fu_binary(f, FU_OP_ADD, c, x, "y"));
    return f;
}

/* Row statistics, then a column reduction of the centered values: one kernel
 * (the column sum accumulated in the pass after the row mean). */
static inline fu_fusion *tc_center_colsum(fu_dtype dt, int64_t n, int64_t v)
{
    fu_fusion *f = fu_fusion_new("center_colsum");
    int64_t xs[2] = {n, v};
    int ax0[1] = {0}, ax1[1] = {1};
    fu_tensor x = fu_input(f, "x", dt, 2, xs);
    fu_tensor mean = fu_reduce(f, FU_OP_MEAN, x, 1, ax1, true, "row_mean");
    fu_tensor c = fu_binary(f, FU_OP_SUB, x, mean, "centered");
    fu_tensor sq = fu_binary(f, FU_OP_MUL, c, c, "sq");
    fu_output(f, fu_reduce(f, FU_OP_SUM, sq, 1, ax0, false, "colvar"));
    return f;
}

/* ------------------------------------------------------------ the C-API case list */

typedef struct tc_sizes {
    int64_t ce_n, ce_v;        /* cross entropy rows, classes */
    int64_t emb_v, emb_d, emb_t;
    int64_t qkv_b, qkv_t, qkv_c;
    int64_t multi_n, multi_v;
} tc_sizes;

static inline const char *tc_red_name(fu_reduction r) { return fu_reduction_name(r); }

/*
 * The variants of (b) and the multi-kernel fusions of (d), for one dtype.
 * Names end in the dtype.
 */
static inline void tc_add_api_cases(tc_list *l, const tc_sizes *z, fu_dtype dt)
{
    char name[160];
    const char *dn = fu_dtype_name(dt);
    const fu_reduction reds[3] = {FU_REDUCTION_NONE, FU_REDUCTION_SUM, FU_REDUCTION_MEAN};
    tc_case *c;
    /* cross entropy: every reduction, forward and backward, default ignore_index */
    for (int r = 0; r < 3; r++)
        for (int dir = 0; dir < 2; dir++) {
            snprintf(name, sizeof name, "ce_%s_%s/%s", dir ? "bwd" : "fwd", tc_red_name(reds[r]), dn);
            c = tc_push(l, tc_ce(dt, z->ce_n, z->ce_v, reds[r], -100, 0.0, !dir, dir), name, 1);
            tc_ignore(c, -100);
        }
    /* ignore_index (a class id) and label smoothing, fwd, bwd and both */
    for (int dir = 0; dir < 3; dir++) {
        const char *dname = dir == 0 ? "fwd" : dir == 1 ? "bwd" : "fwdbwd";
        bool fwd = dir != 1, bwd = dir != 0;
        snprintf(name, sizeof name, "ce_%s_ignore3/%s", dname, dn);
        c = tc_push(l, tc_ce(dt, z->ce_n, z->ce_v, FU_REDUCTION_MEAN, 3, 0.0, fwd, bwd), name, 1);
        tc_ignore(c, 3);
        snprintf(name, sizeof name, "ce_%s_smooth0.1/%s", dname, dn);
        c = tc_push(l, tc_ce(dt, z->ce_n, z->ce_v, FU_REDUCTION_MEAN, -100, 0.1, fwd, bwd), name, 1);
        tc_ignore(c, -100);
        snprintf(name, sizeof name, "ce_%s_sum_smooth0.1_ignore0/%s", dname, dn);
        c = tc_push(l, tc_ce(dt, z->ce_n, z->ce_v, FU_REDUCTION_SUM, 0, 0.1, fwd, bwd), name, 1);
        tc_ignore(c, 0);
    }
    snprintf(name, sizeof name, "ce_fwdbwd_none/%s", dn);
    c = tc_push(l, tc_ce(dt, z->ce_n, z->ce_v, FU_REDUCTION_NONE, -100, 0.0, true, true), name, 1);
    tc_ignore(c, -100);
    /* GPT-2's vocabulary (odd) and a single row */
    snprintf(name, sizeof name, "ce_fwdbwd_v50257/%s", dn);
    c = tc_push(l, tc_ce(dt, 64, 50257, FU_REDUCTION_MEAN, -100, 0.0, true, true), name, 1);
    tc_ignore(c, -100);
    snprintf(name, sizeof name, "ce_fwd_1row/%s", dn);
    tc_push(l, tc_ce(dt, 1, z->ce_v, FU_REDUCTION_MEAN, -100, 0.0, true, false), name, 1);
    snprintf(name, sizeof name, "ce_fwdbwd_1row_v50257/%s", dn);
    tc_push(l, tc_ce(dt, 1, 50257, FU_REDUCTION_MEAN, -100, 0.0, true, true), name, 1);
    /* a hand-written cross entropy with a temperature */
    snprintf(name, sizeof name, "ce_temperature0.7/%s", dn);
    c = tc_push(l, tc_ce_temperature(dt, z->ce_n, z->ce_v, 0.7, -100), name, 1);
    tc_ignore(c, -100);

    /* embedding: with padding_idx, forward and backward (both scatter modes) */
    snprintf(name, sizeof name, "embedding_fwd_pad/%s", dn);
    c = tc_push(l, tc_embedding(dt, z->emb_v, z->emb_d, z->emb_t, 1), name, 1);
    if (c) c->pad_input = "ids", c->pad_value = 1;
    snprintf(name, sizeof name, "embedding_fwd_d100/%s", dn);
    tc_push(l, tc_embedding(dt, z->emb_v, 100, z->emb_t, -1), name, 1);
    for (int mode = 0; mode < 2; mode++) {
        const char *mn = mode ? "atomic" : "deterministic";
        /* 16-bit atomic adds accumulate in f32: the scatter, then a kernel that rounds once */
        const int kernels = mode == 1 && (dt == FU_BF16 || dt == FU_F16) ? 2 : 1;
        snprintf(name, sizeof name, "embedding_bwd_pad_%s/%s", mn, dn);
        c = tc_push(l, tc_embedding_bwd(dt, z->emb_v, z->emb_d, z->emb_t, 1), name, kernels);
        if (c) {
            c->pad_input = "ids", c->pad_value = 1;
            c->scatter = mode ? FU_SCATTER_ATOMIC : FU_SCATTER_DETERMINISTIC;
            c->want_zero_before = mode == 1;
            c->deterministic = mode == 0;
        }
        snprintf(name, sizeof name, "embedding_bwd_d100_%s/%s", mn, dn);
        c = tc_push(l, tc_embedding_bwd(dt, z->emb_v, 100, z->emb_t, -1), name, kernels);
        if (c) {
            c->scatter = mode ? FU_SCATTER_ATOMIC : FU_SCATTER_DETERMINISTIC;
            c->want_zero_before = mode == 1;
            c->deterministic = mode == 0;
        }
    }
    /* deterministic index_add onto a base that reads memory; and 3 rows for 10000
     * positions, more than a block's list holds: later flushes add to the rows */
    snprintf(name, sizeof name, "index_add_base/%s", dn);
    c = tc_push(l, tc_index_add_base(dt, 777, 96, 3000), name, 1);
    if (c) c->deterministic = true;
    snprintf(name, sizeof name, "embedding_bwd_list_overflow/%s", dn);
    c = tc_push(l, tc_embedding_bwd(dt, 3, 256, 10000, -1), name, 1);
    if (c) c->deterministic = true;
    snprintf(name, sizeof name, "embedding_scale_pos/%s", dn);
    tc_push(l, tc_embedding_scale_pos(dt, z->emb_v, z->emb_d, 4, z->emb_t / 4, z->emb_t / 4 + 7), name, 1);

    /* QKV split: 4 parts; head size 128 */
    snprintf(name, sizeof name, "qkv_split_4parts/%s", dn);
    tc_push(l, tc_qkv(dt, z->qkv_b, z->qkv_t, z->qkv_c, z->qkv_c / 64, 4), name, 1);
    snprintf(name, sizeof name, "qkv_split_head128/%s", dn);
    tc_push(l, tc_qkv(dt, z->qkv_b, z->qkv_t, z->qkv_c, z->qkv_c / 128, 3), name, 1);

    /* (d) fusions that needed more than one kernel (a row statistic, then a
     * column reduction: one kernel since the row kernel sums columns too) */
    snprintf(name, sizeof name, "multi_softmax_colsum/%s", dn);
    tc_push(l, tc_softmax_colsum(dt, z->multi_n, z->multi_v), name, 1);
    snprintf(name, sizeof name, "multi_segment_chain/%s", dn);
    tc_push(l, tc_segment_chain(dt, z->multi_n, z->multi_v), name, 0);
    snprintf(name, sizeof name, "multi_center_colsum/%s", dn);
    tc_push(l, tc_center_colsum(dt, z->multi_n, z->multi_v), name, 1);
}

/* Plans a case; prints its kernel count. Returns the plan (NULL on error, reported). */
static inline fu_plan *tc_plan(const tc_case *c, int sm_count, fu_error *err)
{
    fu_plan_options o;
    fu_plan_options_default(&o);
    fu_plan_options_set_sm_count(&o, sm_count);
    o.scatter = c->scatter;
    fu_plan *p = NULL;
    if (fu_plan_build(c->f, &o, &p, err) != FU_OK) return NULL;
    return p;
}

/* Whether a plan has what the case wants; prints the plan text when not. */
static inline bool tc_plan_ok(const tc_case *c, const fu_plan *p)
{
    bool ok = c->want_kernels ? p->nkernels == c->want_kernels : p->nkernels > 1;
    if (c->want_zero_before) {
        bool any = false;
        for (int k = 0; k < p->nkernels; k++) any |= p->kernels[k].zero_before >= 0;
        ok &= any;
    }
    if (!ok) {
        char *text = fu_plan_text(p);
        fprintf(stderr, "case %s: wanted %s%s, got this plan:\n%s", c->name,
                c->want_kernels == 1 ? "1 kernel" : c->want_kernels ? "that many kernels" : "more than one kernel",
                c->want_zero_before ? " with a memset" : "", text ? text : "(no text)\n");
        free(text);
    }
    return ok;
}

#endif
