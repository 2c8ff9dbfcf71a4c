/*
 * variant_reference.c -- the `reference` variant: for each suite case whose
 * manifest names one, the hand-written kernel of the suite folder's
 * reference.cu (after reference/kernels/common.cuh),
 * compiled by NVRTC through fu_runtime_compile with the case's shapes and the
 * launch configuration as -D defines (the fuser specializes on shapes too),
 * its workspace allocated once, and its launches enqueued by fu_runtime_launch.
 *
 * Which kernel: the one the case's manifest line names (reference=FAMILY);
 * the kernel finds the inputs and outputs by their names in the .fusion file:
 *   cross_entropy_fwd     logits[N, V], target[N]        -> loss[]               ce_fwd
 *   cross_entropy_bwd     logits, target, dloss[]         -> dlogits[N, V]        ce_bwd
 *   cross_entropy_fwdbwd  logits, target, dloss[]         -> loss[], dlogits      ce_fwdbwd
 *   embedding_fwd         weight[V, D], ids[T]            -> out[T, D]            emb_fwd
 *   embedding_bwd         grad[T, D], ids[T]              -> dweight[V, D]        emb_bwd_atomic or
 *                                                                                emb_bwd_deterministic (hb_case.scatter)
 *   qkv_split             x[B, T, 3C]                     -> q, k, v[B, H, T, C/H] qkv_split
 * Element types f32 and bf16; the index inputs i64.
 *
 * Out-of-range indices (a target not in [0, V) and not -100, an id not in
 * [0, V)) are flagged by the kernels in a 3-word device flag; `check` reads
 * and clears it and reports the first one.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ref_sources.h"
#include "variant_reference.h"

typedef enum ref_family {
    REF_FAM_CE_FWD,
    REF_FAM_CE_BWD,
    REF_FAM_CE_FWDBWD,
    REF_FAM_EMB_FWD,
    REF_FAM_EMB_BWD_ATOMIC,
    REF_FAM_EMB_BWD_DET,
    REF_FAM_QKV,
    REF_FAM_COUNT
} ref_family;

/* ORDER ref_family */
static const char *const family_names[REF_FAM_COUNT] = {
    "ce_fwd", "ce_bwd", "ce_fwdbwd", "emb_fwd", "emb_bwd_atomic", "emb_bwd_deterministic", "qkv_split",
};

/* The deterministic embedding backward's scan tiles (embedding.cu: SCAN_TILE, SCAN_B). */
#define EMB_SCAN_B 1024
#define EMB_SCAN_TILE (4 * EMB_SCAN_B)

#define MAX_OPTS 16
#define MAX_WS 6

typedef struct ref_launch {
    const char *name;           /* entry point */
    fu_kernel *k;
    unsigned grid, block;
} ref_launch;

typedef struct ref_state {
    fu_runtime *rt;
    ref_family fam;
    fu_dtype dt;
    char fusion[FU_MAX_NAME];
    /* shapes */
    int64_t n, v;               /* cross entropy: rows, classes */
    int64_t rows, d, tok;       /* embedding: table rows, width, tokens */
    int64_t b, t, c, hd;        /* qkv: batch, sequence, width, head size */
    /* positions of the named inputs and outputs in the case fusion */
    int in[3], out[3];
    /* compilation */
    char opts_text[MAX_OPTS][48];
    const char *opts[MAX_OPTS];
    int nopts;
    char opts_line[512];
    char entry[4][48];
    ref_launch l[HB_REF_MAX_KERNELS];
    int nl;
    fu_module *mod;
    /* device memory: the error flag and workspace */
    fu_devptr err;
    fu_devptr ws[MAX_WS];
    /* launch parameters */
    int vw, nv, block, cluster;
    int64_t nscan;              /* deterministic embedding: scan tiles */
    size_t zero_bytes;          /* bytes of the output zeroed before the atomic kernel */
} ref_state;

/* ------------------------------------------------------------ which kernel */

/* The family the case's manifest names (`reference=ce_fwd`); -1: none. */
static int family_of(const fu_fusion *f, const hb_case *c)
{
    (void)f;
    for (int i = 0; c && c->reference[0] && i < REF_FAM_COUNT; i++)
        if (strcmp(family_names[i], c->reference) == 0) return i;
    return -1;
}

const char *hb_reference_family(const fu_fusion *f, const hb_case *c)
{
    int fam = family_of(f, c);
    return fam < 0 ? NULL : family_names[fam];
}

/* ------------------------------------------------------------ shapes */

/* Looks up the input (or output) `name` of f: its position, and checks its
 * dtype and rank. */
static fu_status want(const fu_fusion *f, bool output, const char *name, fu_dtype dt, int rank, int *pos,
                      const int64_t **shape, fu_error *err)
{
    int p = output ? hb_output_index(f, name) : hb_input_index(f, name);
    if (p < 0)
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: fusion '%s' has no %s '%s'", fu_fusion_name(f),
                            output ? "output" : "input", name);
    fu_tensor t = output ? fu_fusion_output(f, p) : fu_fusion_input(f, p);
    if (fu_tensor_dtype(f, t) != dt || fu_tensor_rank(f, t) != rank)
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: fusion '%s': %s '%s' is not %s of rank %d",
                            fu_fusion_name(f), output ? "output" : "input", name, fu_dtype_name(dt), rank);
    *pos = p;
    if (shape) *shape = fu_tensor_shape(f, t);
    return FU_OK;
}

/* Elements per vector: 16 bytes' worth, halved until it divides extent. */
static int pick_vw(int64_t extent, fu_dtype dt)
{
    int vw = (int)(16 / fu_dtype_size(dt));
    while (vw > 1 && extent % vw) vw /= 2;
    return vw;
}

/* The kernels are written for f32 and bf16 (REF_BF16). */
static bool ref_takes_dtype(fu_dtype dt) { return dt == FU_F32 || dt == FU_BF16; }

static fu_status shapes(ref_state *st, const fu_fusion *f, fu_error *err)
{
    const int64_t *s0 = NULL, *s1 = NULL;
    fu_status s = FU_OK;
    switch (st->fam) {
    case REF_FAM_CE_FWD:
    case REF_FAM_CE_BWD:
    case REF_FAM_CE_FWDBWD: {
        int pl = hb_input_index(f, "logits");
        st->dt = pl >= 0 ? fu_tensor_dtype(f, fu_fusion_input(f, pl)) : FU_F32;
        s = want(f, false, "logits", st->dt, 2, &st->in[0], &s0, err);
        if (!s) s = want(f, false, "target", FU_I64, 1, &st->in[1], &s1, err);
        if (!s && st->fam != REF_FAM_CE_FWD) s = want(f, false, "dloss", st->dt, 0, &st->in[2], NULL, err);
        if (!s && st->fam != REF_FAM_CE_BWD) s = want(f, true, "loss", st->dt, 0, &st->out[0], NULL, err);
        if (!s && st->fam != REF_FAM_CE_FWD) s = want(f, true, "dlogits", st->dt, 2, &st->out[1], NULL, err);
        if (s) return s;
        st->n = s0[0];
        st->v = s0[1];
        if (s1[0] != st->n)
            return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: %s: target has %" PRId64 " rows, logits %" PRId64,
                                st->fusion, s1[0], st->n);
        if (st->v >= INT32_MAX / 2)
            return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: %s: V = %" PRId64 " is too large", st->fusion,
                                st->v);
        break;
    }
    case REF_FAM_EMB_FWD: {
        int pw = hb_input_index(f, "weight");
        st->dt = pw >= 0 ? fu_tensor_dtype(f, fu_fusion_input(f, pw)) : FU_F32;
        const int64_t *so;
        s = want(f, false, "weight", st->dt, 2, &st->in[0], &s0, err);
        if (!s) s = want(f, false, "ids", FU_I64, 1, &st->in[1], &s1, err);
        if (!s) s = want(f, true, "out", st->dt, 2, &st->out[0], &so, err);
        if (s) return s;
        st->rows = s0[0];
        st->d = s0[1];
        st->tok = s1[0];
        if (so[0] != st->tok || so[1] != st->d)
            return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: %s: out is not [T, D]", st->fusion);
        break;
    }
    case REF_FAM_EMB_BWD_ATOMIC:
    case REF_FAM_EMB_BWD_DET: {
        int pg = hb_input_index(f, "grad");
        st->dt = pg >= 0 ? fu_tensor_dtype(f, fu_fusion_input(f, pg)) : FU_F32;
        const int64_t *so;
        s = want(f, false, "grad", st->dt, 2, &st->in[0], &s0, err);
        if (!s) s = want(f, false, "ids", FU_I64, 1, &st->in[1], &s1, err);
        if (!s) s = want(f, true, "dweight", st->dt, 2, &st->out[0], &so, err);
        if (s) return s;
        st->tok = s0[0];
        st->d = s0[1];
        st->rows = so[0];
        if (s1[0] != st->tok || so[1] != st->d)
            return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: %s: grad, ids and dweight do not agree",
                                st->fusion);
        break;
    }
    case REF_FAM_QKV: {
        int px = hb_input_index(f, "x");
        st->dt = px >= 0 ? fu_tensor_dtype(f, fu_fusion_input(f, px)) : FU_F32;
        const char *names[3] = {"q", "k", "v"};
        s = want(f, false, "x", st->dt, 3, &st->in[0], &s0, err);
        for (int i = 0; !s && i < 3; i++) s = want(f, true, names[i], st->dt, 4, &st->out[i], &s1, err);
        if (s) return s;
        st->b = s0[0];
        st->t = s0[1];
        st->c = s0[2] / 3;
        st->hd = s1[3];
        if (s0[2] % 3 || st->hd < 1 || st->c % st->hd || s1[0] != st->b || s1[1] != st->c / st->hd || s1[2] != st->t)
            return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: %s: q, k, v are not [B, H, T, C/H] of x[B, T, 3C]",
                                st->fusion);
        break;
    }
    default:
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: no kernel for fusion '%s'", st->fusion);
    }
    if (!ref_takes_dtype(st->dt))
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: %s: dtype %s (the kernels take f32 and bf16)",
                            st->fusion, fu_dtype_name(st->dt));
    if (st->d >= INT32_MAX / 4 || st->rows >= INT32_MAX / 2 || st->tok >= INT32_MAX / 2 || st->c >= INT32_MAX / 4)
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: %s: a dimension is too large", st->fusion);
    return FU_OK;
}

/* ------------------------------------------------------------ configuration */

/* -DNAME=VALUE (or -DNAME when value < 0) */
static void opt(ref_state *st, const char *name, int64_t value)
{
    if (st->nopts >= MAX_OPTS) return;
    if (value < 0) snprintf(st->opts_text[st->nopts], sizeof st->opts_text[0], "-D%s", name);
    else snprintf(st->opts_text[st->nopts], sizeof st->opts_text[0], "-D%s=%lld", name, (long long)value);
    st->opts[st->nopts] = st->opts_text[st->nopts];
    st->nopts++;
}

static void add_entry(ref_state *st, const char *base, bool typed, unsigned grid, unsigned block)
{
    int i = st->nl++;
    snprintf(st->entry[i], sizeof st->entry[i], "%s%s%s", base, typed ? "_" : "", typed ? fu_dtype_name(st->dt) : "");
    st->l[i].name = st->entry[i];
    st->l[i].grid = grid;
    st->l[i].block = block;
}

static unsigned blocks_for(int64_t work, int64_t per_block)
{
    int64_t g = (work + per_block - 1) / per_block;
    return (unsigned)(g < 1 ? 1 : g);
}

/* Sets the -D defines and the launches. sm_count: the device's (0: none). */
static fu_status configure(ref_state *st, int sm_count, fu_error *err)
{
    const int es = (int)fu_dtype_size(st->dt);
    if (st->dt == FU_BF16) opt(st, "REF_BF16", 1);
    switch (st->fam) {
    case REF_FAM_CE_FWD:
    case REF_FAM_CE_BWD:
    case REF_FAM_CE_FWDBWD: {
        const bool grad = st->fam != REF_FAM_CE_FWD;
        st->vw = pick_vw(st->v, st->dt);
        const int64_t vectors = st->v / st->vw;
        const int regs_per_vec = st->vw * es / 4 > 0 ? st->vw * es / 4 : 1;
        const int nv_max = 32 / regs_per_vec; /* at most 32 registers of the row per thread */
        st->block = 512;
        if (vectors < st->block) st->block = (int)((vectors + 31) / 32 * 32);
        st->cluster = 1;
        st->nv = (int)((vectors + st->block - 1) / st->block);
        if (grad)
            while (st->nv > nv_max && st->cluster < 8) {
                st->cluster *= 2;
                st->nv = (int)((vectors + (int64_t)st->block * st->cluster - 1) / ((int64_t)st->block * st->cluster));
            }
        if (st->nv > nv_max) {
            if (grad)
                return fu_error_set(err, FU_ERR_UNSUPPORTED,
                                    "reference: %s: a row of %" PRId64 " classes does not fit in the registers of a "
                                    "cluster of 8 blocks (at most %" PRId64 ")",
                                    st->fusion, st->v, (int64_t)8 * st->block * nv_max * st->vw);
            st->nv = nv_max; /* fwd walks the row in tiles */
        }
        opt(st, "REF_V", st->v);
        opt(st, "REF_VW", st->vw);
        opt(st, "REF_NV", st->nv);
        opt(st, "REF_B", st->block);
        opt(st, "REF_C", st->cluster);
        opt(st, "REF_MINB", 1024 / st->block); /* 1024 threads per SM: 64 registers a thread */
        opt(st, st->fam == REF_FAM_CE_FWD ? "REF_CE_FWD" : st->fam == REF_FAM_CE_BWD ? "REF_CE_BWD" : "REF_CE_FWDBWD", -1);
        unsigned grid;
        if (!grad) {
            grid = blocks_for(st->n, 1); /* a block per row */
        } else { /* persistent: every block counts the kept rows once */
            int64_t per_sm = 1024 / st->block, sms = sm_count > 0 ? sm_count : 132;
            int64_t clusters = per_sm * sms / st->cluster;
            if (clusters < 1) clusters = 1;
            if (clusters > st->n) clusters = st->n;
            grid = (unsigned)(clusters * st->cluster);
        }
        add_entry(st, st->fam == REF_FAM_CE_FWD ? "ref_ce_fwd" : st->fam == REF_FAM_CE_BWD ? "ref_ce_bwd" : "ref_ce_fwdbwd",
                  true, grid, (unsigned)st->block);
        return FU_OK;
    }
    case REF_FAM_EMB_FWD:
    case REF_FAM_EMB_BWD_ATOMIC:
    case REF_FAM_EMB_BWD_DET: {
        st->vw = pick_vw(st->d, st->dt);
        opt(st, "REF_V", st->rows);
        opt(st, "REF_D", st->d);
        opt(st, "REF_VW", st->vw);
        const int64_t vectors = st->tok * (st->d / st->vw);
        if (st->fam == REF_FAM_EMB_FWD) {
            opt(st, "REF_EMB_FWD", -1);
            add_entry(st, "ref_emb_fwd", true, blocks_for(vectors, 256 * 4), 256);
        } else if (st->fam == REF_FAM_EMB_BWD_ATOMIC) {
            opt(st, "REF_EMB_BWD_ATOMIC", -1);
            st->zero_bytes = (size_t)(st->rows * st->d) * (size_t)es;
            add_entry(st, "ref_emb_bwd_atomic", true, blocks_for(vectors, 256 * 4), 256);
        } else {
            opt(st, "REF_EMB_BWD_DET", -1);
            st->nscan = (st->rows + 1 + EMB_SCAN_TILE - 1) / EMB_SCAN_TILE;
            add_entry(st, "ref_emb_bwd_count", false, blocks_for(st->tok, 256), 256);
            add_entry(st, "ref_emb_bwd_scan", false, (unsigned)st->nscan, EMB_SCAN_B);
            add_entry(st, "ref_emb_bwd_place", false, blocks_for(st->tok, 256), 256);
            add_entry(st, "ref_emb_bwd_accum", true, blocks_for(st->rows, 8), 256);
        }
        return FU_OK;
    }
    case REF_FAM_QKV: {
        st->vw = pick_vw(st->hd, st->dt);
        opt(st, "REF_C", st->c);
        opt(st, "REF_HD", st->hd);
        opt(st, "REF_T", st->t);
        opt(st, "REF_VW", st->vw);
        add_entry(st, "ref_qkv_split", true, blocks_for(st->b * st->t * 3 * st->c / st->vw, 256 * 4), 256);
        return FU_OK;
    }
    default:
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: no kernel for fusion '%s'", st->fusion);
    }
}

/* ------------------------------------------------------------ the variant */

static void ref_free(void *p)
{
    ref_state *st = p;
    if (!st) return;
    if (st->err) fu_device_free(st->rt, st->err, NULL);
    for (int i = 0; i < MAX_WS; i++)
        if (st->ws[i]) fu_device_free(st->rt, st->ws[i], NULL);
    fu_module_free(st->mod);
    free(st);
}

/* common.cuh (embedded), then the case's reference.cu with its own line numbers. */
static char *kernel_source(const hb_case *c, fu_error *err)
{
    const char *common = ref_source_text("common.cuh");
    if (!common) {
        fu_error_set(err, FU_ERR_RUNTIME, "reference: common.cuh is not embedded in this binary");
        return NULL;
    }
    char why[512];
    char *body = hb_read_text_file(c->reference_file, why, sizeof why);
    if (!body) {
        fu_error_set(err, FU_ERR_IO, "reference: %s", why);
        return NULL;
    }
    size_t n = strlen(common) + strlen(body) + strlen(c->reference_file) + 128;
    char *src = malloc(n);
    if (src) snprintf(src, n, "%s\n#line 1 \"%s\"\n%s", common, c->reference_file, body);
    else fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    free(body);
    return src;
}

static fu_status alloc_zeroed(fu_runtime *rt, size_t bytes, fu_devptr *p, fu_error *err)
{
    fu_status s = fu_device_alloc(rt, bytes, p, err);
    if (!s) s = fu_device_memset8(rt, *p, 0, bytes, err);
    return s;
}

/* Workspace: the error flag, and per family what its kernels keep between
 * launches (ce: per-row losses and the ticket; deterministic embedding: the
 * counts, the scan, the buckets and the ticket). Counters start at zero and
 * the kernels leave them at zero. */
static fu_status alloc_workspace(ref_state *st, fu_error *err)
{
    fu_status s = alloc_zeroed(st->rt, 3 * sizeof(uint64_t), &st->err, err);
    if (s) return s;
    switch (st->fam) {
    case REF_FAM_CE_FWD:
    case REF_FAM_CE_FWDBWD:
        s = fu_device_alloc(st->rt, (size_t)st->n * 8, &st->ws[0], err); /* row_loss: float2[N] */
        if (!s) s = alloc_zeroed(st->rt, 16, &st->ws[1], err);           /* ticket */
        return s;
    case REF_FAM_EMB_BWD_DET: {
        size_t padded = (size_t)st->nscan * EMB_SCAN_TILE * sizeof(int);
        s = alloc_zeroed(st->rt, padded, &st->ws[0], err);                                  /* count */
        if (!s) s = fu_device_alloc(st->rt, padded, &st->ws[1], err);                      /* local */
        if (!s) s = fu_device_alloc(st->rt, (size_t)st->nscan * sizeof(int), &st->ws[2], err); /* tile totals */
        if (!s) s = fu_device_alloc(st->rt, (size_t)st->nscan * sizeof(int), &st->ws[3], err); /* tile prefix */
        if (!s) s = alloc_zeroed(st->rt, 16, &st->ws[4], err);                             /* ticket */
        if (!s) s = fu_device_alloc(st->rt, (size_t)(st->tok > 0 ? st->tok : 1) * sizeof(int), &st->ws[5], err);
        return s;
    }
    default:
        return FU_OK;
    }
}

static fu_status ref_prepare(fu_runtime *rt, const fu_fusion *f, const hb_case *c, void **state, hb_variant_info *info,
                             fu_error *err)
{
    *state = NULL;
    memset(info, 0, sizeof *info);
    int fam = family_of(f, c);
    if (fam < 0)
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: no reference kernel '%s' for fusion '%s'",
                            c && c->reference[0] ? c->reference : "(none named)", fu_fusion_name(f));
    ref_state *st = calloc(1, sizeof *st);
    if (!st) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    st->rt = rt;
    st->fam = (ref_family)fam;
    snprintf(st->fusion, sizeof st->fusion, "%s", fu_fusion_name(f));
    for (int i = 0; i < 3; i++) st->in[i] = st->out[i] = -1;
    bool dev = fu_runtime_has_device(rt);
    fu_status s = shapes(st, f, err);
    if (!s) s = configure(st, dev ? fu_runtime_device(rt)->sm_count : 0, err);
    char *src = s ? NULL : kernel_source(c, err);
    if (!s && !src) s = err ? err->status : FU_ERR_RUNTIME;
    fu_compile_info ci;
    memset(&ci, 0, sizeof ci);
    if (!s) {
        char name[1200];
        snprintf(name, sizeof name, "%s (%s)", c->reference_file, st->l[0].name);
        s = fu_runtime_compile(rt, src, name, st->opts, st->nopts, &st->mod, &ci, err);
    }
    uint64_t h = src ? hb_hash_text(HB_HASH_INIT, src) : 0;
    free(src);
    for (int i = 0; !s && dev && i < st->nl; i++) s = fu_module_get_kernel(st->mod, st->l[i].name, &st->l[i].k, err);
    if (!s && dev) s = alloc_workspace(st, err);
    if (s) {
        ref_free(st);
        return s;
    }
    size_t k = 0;
    for (int i = 0; i < st->nopts && k < sizeof st->opts_line; i++) {
        int w = snprintf(st->opts_line + k, sizeof st->opts_line - k, "%s%s", i ? " " : "", st->opts[i]);
        if (w > 0) k += (size_t)w;
    }
    info->segments = 0;
    info->kernels = st->nl;
    info->memsets = st->zero_bytes > 0;
    info->copies = 0;
    info->compiled = 1;
    info->cache_hits = ci.cache_hit;
    info->compile_ms = ci.compile_ms;
    if (st->fam <= REF_FAM_CE_FWDBWD)
        snprintf(info->detail, sizeof info->detail, "%s: %d x %d threads a row, %d x %d-element vectors a thread",
                 family_names[st->fam], st->cluster, st->block, st->nv, st->vw);
    else
        snprintf(info->detail, sizeof info->detail, "%s: %d-element vectors", family_names[st->fam], st->vw);
    hb_hash_hex(hb_hash_text(hb_hash_text(h, st->opts_line), info->detail), info->source_hash);
    *state = st;
    return FU_OK;
}

static fu_status launch(ref_state *st, int i, void **args, fu_error *err)
{
    unsigned grid[3] = {st->l[i].grid, 1, 1}, block[3] = {st->l[i].block, 1, 1};
    return fu_runtime_launch(st->rt, st->l[i].k, grid, block, 0, args, err);
}

static fu_status ref_run(void *p, const fu_devptr *inputs, const fu_devptr *outputs, fu_error *err)
{
    ref_state *st = p;
    fu_devptr a = inputs[st->in[0]], b = st->in[1] >= 0 ? inputs[st->in[1]] : 0, g = st->in[2] >= 0 ? inputs[st->in[2]] : 0;
    fu_devptr o0 = st->out[0] >= 0 ? outputs[st->out[0]] : 0, o1 = st->out[1] >= 0 ? outputs[st->out[1]] : 0;
    fu_devptr o2 = st->out[2] >= 0 ? outputs[st->out[2]] : 0;
    switch (st->fam) {
    case REF_FAM_CE_FWD: {
        long long n = st->n;
        void *args[] = {&a, &b, &o0, &st->ws[0], &st->ws[1], &st->err, &n};
        return launch(st, 0, args, err);
    }
    case REF_FAM_CE_BWD: {
        long long n = st->n;
        void *args[] = {&a, &b, &g, &o1, &st->err, &n};
        return launch(st, 0, args, err);
    }
    case REF_FAM_CE_FWDBWD: {
        long long n = st->n;
        void *args[] = {&a, &b, &g, &o0, &o1, &st->ws[0], &st->ws[1], &st->err, &n};
        return launch(st, 0, args, err);
    }
    case REF_FAM_EMB_FWD:
    case REF_FAM_EMB_BWD_ATOMIC: {
        long long ntok = st->tok;
        if (st->zero_bytes) {
            fu_status s = fu_device_memset8_async(st->rt, o0, 0, st->zero_bytes, err);
            if (s) return s;
        }
        void *args[] = {&a, &b, &o0, &st->err, &ntok};
        return launch(st, 0, args, err);
    }
    case REF_FAM_EMB_BWD_DET: {
        long long ntok = st->tok;
        void *count_args[] = {&b, &st->ws[0], &st->err, &ntok};
        void *scan_args[] = {&st->ws[0], &st->ws[1], &st->ws[2], &st->ws[3], &st->ws[4]};
        void *place_args[] = {&b, &st->ws[0], &st->ws[1], &st->ws[3], &st->ws[5], &ntok};
        void *accum_args[] = {&a, &st->ws[1], &st->ws[3], &st->ws[5], &o0};
        fu_status s = launch(st, 0, count_args, err);
        if (!s) s = launch(st, 1, scan_args, err);
        if (!s) s = launch(st, 2, place_args, err);
        if (!s) s = launch(st, 3, accum_args, err);
        return s;
    }
    case REF_FAM_QKV: {
        long long rows = st->b * st->t;
        void *args[] = {&a, &o0, &o1, &o2, &rows};
        return launch(st, 0, args, err);
    }
    default:
        return fu_error_set(err, FU_ERR_UNSUPPORTED, "reference: no kernel for fusion '%s'", st->fusion);
    }
}

static fu_status ref_check(void *p, fu_error *err)
{
    ref_state *st = p;
    fu_status s = fu_runtime_synchronize(st->rt, err);
    if (s || !st->err) return s;
    uint64_t flag[3];
    s = fu_device_download(st->rt, flag, st->err, sizeof flag, err);
    if (s || flag[0] == 0) return s;
    fu_device_memset8(st->rt, st->err, 0, sizeof flag, NULL);
    long long value = (long long)flag[1], pos = (long long)flag[2];
    if (st->fam <= REF_FAM_CE_FWDBWD)
        return fu_error_set(err, FU_ERR_INDEX,
                            "reference %s: target %lld of row %lld is out of range [0, %" PRId64 ") and is not the "
                            "ignore_index -100",
                            family_names[st->fam], value, pos, st->v);
    return fu_error_set(err, FU_ERR_INDEX, "reference %s: ids[%lld] = %lld is out of range [0, %" PRId64 ")",
                        family_names[st->fam], pos, value, st->rows);
}

static void ref_counts(void *p, int *kernels, int *memsets, int *copies)
{
    ref_state *st = p;
    *kernels = st->nl;
    *memsets = st->zero_bytes > 0;
    *copies = 0;
}

int hb_reference_kernels(const void *state, const fu_module **module, const char **names, int cap)
{
    const ref_state *st = state;
    if (module) *module = st->mod;
    for (int i = 0; i < st->nl && i < cap; i++) names[i] = st->l[i].name;
    return st->nl;
}

const char *hb_reference_options(const void *state) { return ((const ref_state *)state)->opts_line; }

const hb_variant hb_variant_reference = {
    .name = "reference",
    .prepare = ref_prepare,
    .run = ref_run,
    .check = ref_check,
    .launch_counts = ref_counts,
    .free = ref_free,
    .takes_dtype = ref_takes_dtype,
};
