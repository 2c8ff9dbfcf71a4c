/*
 * k_transpose.c -- the transpose scheduler: a pointwise group (no reductions,
 * no scatters) of one output shape that reads some input along another axis
 * than the output's innermost (a permute of the two, `y = permute(x) + z`).
 *
 * The pointwise scheduler walks the output in order, so such an input is read
 * a column at a time: each warp's load touches 32 sectors and uses 4 bytes of
 * each (in0[(d0 + 4096 * d1)]). Here a block owns a 32 x 32 tile of two
 * output axes (64 x 64 where a staged input's elements are 2 bytes or fewer,
 * 2 lanes a thread): j, along which the input is contiguous, and the innermost L.
 * It first reads each such input's tile along j (coalesced) into shared
 * memory, then computes the outputs along L (coalesced), reading the staged
 * values back across the tile (nvFuser's transpose scheduler; the classic
 * tiled transpose with a padded row against bank conflicts).
 *
 * Which reads are staged comes from a probe: the outputs are generated once
 * over plain axis variables, and each load's offset, an affine form over them
 * where it has one, says how the input is read: a coefficient of 1 along j
 * and of more than 1 along L is a transposed read. Reads of other forms
 * (coalesced, broadcast, gathered, another j) load from memory as in the
 * pointwise kernel. Where no read is transposed, or the tile's axes are short,
 * the group is left to the pointwise scheduler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define TR_WARP 32          /* threads along a tile's row */
#define TR_ROWS 8           /* rows of threads: a block is TR_WARP x TR_ROWS threads */
#define TR_THREADS (TR_WARP * TR_ROWS)
/* Elements a thread moves at a time where a staged input's elements are 2 bytes or fewer: the
 * tile is then 64 x 64, each staged load 2 elements (a warp's load 128 bytes of a bf16 input,
 * not 64) and each thread computes 2 outputs 32 apart (measured on an H100, docs/perf.md v52:
 * bf16 [1, 8192, 8192] at 32 x 32 ran at 74% of copy, f32 at 98%). */
#ifndef TR_NARROW_LANES
#define TR_NARROW_LANES 2
#endif
#define TR_MAX_STAGED 8     /* staged reads (input, offset form) a kernel */
#define TR_MAX_FORMS 32     /* distinct reads the probe keeps */
/* Both tile axes at least this long: shorter, a warp of the pointwise kernel reads few
 * sectors anyway (a [4096, 3] transpose touches 3 rows of its input), and the tile idles. */
#ifndef TR_MIN_EXTENT
#define TR_MIN_EXTENT 16
#endif
/* A staged tile's row: `tile` elements and a pad that makes it an odd number of 4-byte words,
 * so that the 32 lanes reading down a column fall in 32 banks (8-byte elements: an even
 * count, but such a warp's access is served by half-warps, which it keeps apart). */
static int tile_row(int tile, size_t esize) { return esize == 1 ? tile + 4 : esize == 2 ? tile + 2 : tile + 1; }

/* Static shared memory a block may declare (NVRTC refuses more than 48 KB). */
#define TR_MAX_SHARED (40 * 1024)

/* One read of an external tensor: its offset's affine form over the domain's axes. */
typedef struct tr_form {
    fu_tensor t;
    bool affine;
    long long coef[FU_MAX_RANK];
    long long c;
} tr_form;

typedef struct tr_params {
    int rank;
    int64_t shape[FU_MAX_RANK];
    int axis_j;                       /* the tile's axis along which the staged inputs are contiguous */
    int lanes;                        /* elements a thread moves at a time: the tile is 32 x lanes square */
    int tile;
    int nstaged;
    tr_form staged[TR_MAX_STAGED];
    bool vector_load[TR_MAX_STAGED];  /* the lanes of a staged load are one aligned vector */
    int64_t tiles_j, tiles_l, outer;  /* tiles along j and along the last axis; positions of the other axes */
    size_t shared_bytes;
} tr_params;

/* ---- the probe */

typedef struct tr_probe {
    int rank;
    int nforms;
    tr_form forms[TR_MAX_FORMS];
    bool overflow; /* more distinct reads than kept: the probe says nothing */
} tr_probe;

static bool same_form(const tr_form *a, const tr_form *b, int rank)
{
    if (a->t != b->t || a->affine != b->affine) return false;
    if (!a->affine) return true;
    return a->c == b->c && !memcmp(a->coef, b->coef, (size_t)rank * sizeof a->coef[0]);
}

/* The read of t at offset off, as a form over the axes (variables 0 .. rank-1): not affine
 * where off is not, or uses a variable past the axes (a gathered position). */
static tr_form form_of(const cg_ctx *c, fu_tensor t, const cg_index *off, int rank)
{
    tr_form f;
    memset(&f, 0, sizeof f);
    f.t = t;
    f.affine = off->affine && off->lane_coef == 0;
    for (int v = rank; v < c->nvars && f.affine; v++) f.affine = off->coef[v] == 0;
    for (int a = 0; f.affine && a < rank; a++) f.coef[a] = off->coef[a];
    f.c = f.affine ? off->c : 0;
    return f;
}

static const char *probe_read(cg_ctx *c, fu_tensor t, const cg_index *off, void *user)
{
    tr_probe *pr = user;
    tr_form f = form_of(c, t, off, pr->rank);
    for (int i = 0; i < pr->nforms; i++)
        if (same_form(&pr->forms[i], &f, pr->rank)) return NULL;
    if (pr->nforms == TR_MAX_FORMS) pr->overflow = true;
    else pr->forms[pr->nforms++] = f;
    return NULL; /* loaded from memory as usual: the probe only looks */
}

/* Declares the domain's axes as plain variables d0 .. d{rank-1} (variable a is axis a). */
static void axis_vars(cg_ctx *c, int rank, cg_index *idx)
{
    for (int a = 0; a < rank; a++) {
        char name[16];
        snprintf(name, sizeof name, "d%d", a);
        int v = cg_add_var(c, name);
        cg_index_var(&idx[a], v, name);
    }
    c->lane_fixed_vars = c->nvars;
}

/* Every read of an external tensor by the group's outputs, as forms over the axes; false and
 * why where the outputs cannot be generated. */
static bool probe_reads(const fu_group *g, int rank, tr_probe *pr, char *why, size_t nwhy)
{
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    fu_kernel_plan *scratch = fu_calloc(1, sizeof *scratch);
    bool ok = w && scratch;
    if (!ok) snprintf(why, nwhy, "out of memory");
    else ok = fu_kw_begin(w, g, scratch, "probe", why, nwhy);
    if (ok) {
        cg_ctx *c = &w->cg;
        memset(pr, 0, sizeof *pr);
        pr->rank = rank;
        c->lookup_cache = probe_read;
        c->user = pr;
        cg_index idx[FU_MAX_RANK];
        axis_vars(c, rank, idx);
        for (int o = 0; o < g->noutputs && !c->failed; o++) (void)cg_value(c, g->outputs[o], idx);
        if (c->failed) {
            snprintf(why, nwhy, "transpose: %s", c->error);
            ok = false;
        } else if (pr->overflow) {
            snprintf(why, nwhy, "transpose: more than %d distinct reads", TR_MAX_FORMS);
            ok = false;
        }
    }
    if (w) fu_kw_abort(w);
    if (scratch) fu_kernel_plan_clear(scratch);
    fu_free(w);
    fu_free(scratch);
    return ok;
}

/* The axis j (not the last) along which the read is contiguous where the read is
 * transposed (more than one element apart along the last axis), else -1. */
static int transposed_axis(const tr_form *f, int rank)
{
    if (!f->affine || llabs(f->coef[rank - 1]) <= 1) return -1;
    for (int a = 0; a < rank - 1; a++)
        if (f->coef[a] == 1) return a;
    return -1;
}

/* ---- heuristics */

/* The bytes the reads across axis j take from memory: each input read so once, at most one element
 * an output position (a broadcast input, fewer). */
static int64_t transposed_bytes(const fu_group *g, const tr_probe *pr, int axis_j, int64_t positions)
{
    int64_t bytes = 0;
    for (int i = 0; i < pr->nforms; i++) {
        if (transposed_axis(&pr->forms[i], pr->rank) != axis_j) continue;
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = pr->forms[k].t == pr->forms[i].t && transposed_axis(&pr->forms[k], pr->rank) == axis_j;
        if (seen) continue;
        const fu_value *v = fu_val(g->f, pr->forms[i].t);
        int64_t n = fu_shape_numel(v->rank, v->shape);
        bytes += (n < positions ? n : positions) * (int64_t)fu_dtype_size(v->dtype);
    }
    return bytes;
}

bool fu_tr_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    *params = NULL;
    if (!g->opts->transpose) {
        snprintf(why, nwhy, "transpose: off (fu_plan_options.transpose, FUSER_TRANSPOSE=0)");
        return false;
    }
    if (g->noutputs < 1) { /* (a group whose values only views read: no kernel is left of it) */
        snprintf(why, nwhy, "transpose: no outputs");
        return false;
    }
    const fu_value *v0 = fu_val(f, g->outputs[0]);
    for (int i = 1; i < g->noutputs; i++) {
        const fu_value *v = fu_val(f, g->outputs[i]);
        if (v->rank != v0->rank || memcmp(v->shape, v0->shape, (size_t)v->rank * sizeof v->shape[0])) {
            snprintf(why, nwhy, "transpose: outputs of several shapes");
            return false;
        }
    }
    const int rank = v0->rank;
    if (rank < 2) {
        snprintf(why, nwhy, "transpose: outputs of rank %d", rank);
        return false;
    }
    tr_probe *pr = fu_calloc(1, sizeof *pr);
    if (!pr) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    if (!probe_reads(g, rank, pr, why, nwhy)) {
        fu_free(pr);
        return false;
    }
    /* the tile's axis j: the one most staged bytes are contiguous along */
    int64_t bytes_along[FU_MAX_RANK] = {0};
    for (int i = 0; i < pr->nforms; i++) {
        int j = transposed_axis(&pr->forms[i], rank);
        if (j >= 0) bytes_along[j] += (int64_t)fu_dtype_size(fu_val(f, pr->forms[i].t)->dtype);
    }
    int axis_j = -1;
    for (int a = 0; a < rank - 1; a++)
        if (bytes_along[a] > 0 && (axis_j < 0 || bytes_along[a] > bytes_along[axis_j])) axis_j = a;
    const int64_t ext_j = axis_j >= 0 ? v0->shape[axis_j] : 0, ext_l = v0->shape[rank - 1];
    if (axis_j < 0 || ext_j < TR_MIN_EXTENT || ext_l < TR_MIN_EXTENT) {
        if (axis_j < 0) snprintf(why, nwhy, "transpose: no input is read across the output's innermost axis");
        else snprintf(why, nwhy, "transpose: the tile's axes are short (%lld and %lld elements; %d at least)",
                      (long long)ext_j, (long long)ext_l, TR_MIN_EXTENT);
        fu_free(pr);
        return false;
    }
    /* Small transposed reads stay with the pointwise kernel: the L2 holds the sectors its strided
     * reads share, and a tile's barrier costs more than they do (an H100, v52-v53: bf16
     * [256, 128, 64], 4 MB, 9.07 us pointwise against 10.50 tiled; f32, 8 MB, 14.21 against 14.11;
     * bf16 [4, 1024, 2048], 16 MB, 69.02 against 25.73). */
    const int64_t staged_bytes = transposed_bytes(g, pr, axis_j, fu_shape_numel(rank, v0->shape));
    if (staged_bytes <= g->opts->transpose_min_bytes) {
        snprintf(why, nwhy, "transpose: its transposed reads are %lld bytes, which the L2 serves (%lld at most: "
                 "fu_plan_options.transpose_min_bytes)", (long long)staged_bytes, (long long)g->opts->transpose_min_bytes);
        fu_free(pr);
        return false;
    }
    tr_params *tp = fu_calloc(1, sizeof *tp);
    if (!tp) {
        fu_free(pr);
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    tp->rank = rank;
    memcpy(tp->shape, v0->shape, sizeof tp->shape);
    tp->axis_j = axis_j;
    size_t narrowest = 16;
    for (int i = 0; i < pr->nforms; i++)
        if (transposed_axis(&pr->forms[i], rank) == axis_j && fu_dtype_size(fu_val(f, pr->forms[i].t)->dtype) < narrowest)
            narrowest = fu_dtype_size(fu_val(f, pr->forms[i].t)->dtype);
    tp->lanes = narrowest <= 2 ? TR_NARROW_LANES : 1;
    /* ... while the wider tiles still fill a wave of resident blocks: bf16 [256, 128, 64] made
     * 512 blocks of 64 x 64 on 132 SMs, 11.39 us, against 10.50 at 32 x 32 (an H100, v52) */
    int64_t outer_elems = fu_shape_numel(rank, v0->shape) / (ext_j * ext_l);
    int64_t wave = (int64_t)g->opts->sm_count * (g->opts->max_threads_per_sm / TR_THREADS);
    int64_t wide = (int64_t)TR_WARP * tp->lanes;
    if (tp->lanes > 1 && outer_elems * ((ext_j + wide - 1) / wide) * ((ext_l + wide - 1) / wide) < wave) tp->lanes = 1;
    tp->tile = TR_WARP * tp->lanes;
    for (int i = 0; i < pr->nforms && tp->nstaged < TR_MAX_STAGED; i++) {
        const tr_form *fm = &pr->forms[i];
        if (transposed_axis(fm, rank) != axis_j) continue;
        size_t esize = fu_dtype_size(fu_val(f, fm->t)->dtype), bytes = (size_t)tp->tile * (size_t)tile_row(tp->tile, esize) * esize;
        if (tp->shared_bytes + bytes > TR_MAX_SHARED) break; /* the rest read from memory */
        tp->shared_bytes += bytes;
        /* one vector a thread where its lanes start at a multiple of lanes and end within the row:
         * every other coefficient and the constant multiples of lanes, j's extent too */
        bool aligned = ext_j % tp->lanes == 0 && fm->c % tp->lanes == 0 && esize * (size_t)tp->lanes <= 16;
        for (int a = 0; a < rank; a++) aligned &= a == axis_j || fm->coef[a] % tp->lanes == 0;
        tp->vector_load[tp->nstaged] = tp->lanes > 1 && aligned;
        tp->staged[tp->nstaged++] = *fm;
    }
    fu_free(pr);
    tp->tiles_j = (ext_j + tp->tile - 1) / tp->tile;
    tp->tiles_l = (ext_l + tp->tile - 1) / tp->tile;
    tp->outer = 1;
    for (int a = 0; a < rank - 1; a++)
        if (a != axis_j) tp->outer *= v0->shape[a];
    const int64_t blocks = tp->outer * tp->tiles_j * tp->tiles_l;
    if (blocks <= 0 || blocks > 0x7fffffff) {
        snprintf(why, nwhy, "transpose: %lld blocks", (long long)blocks);
        fu_free(tp);
        return false;
    }
    kp->sched = FU_SCHED_TRANSPOSE;
    kp->grid = (unsigned)blocks;
    kp->block = TR_THREADS;
    size_t k = (size_t)snprintf(kp->config, sizeof kp->config, "tile %dx%d of axes %d and %d, lanes=%d, %d staged read%s:",
                                tp->tile, tp->tile, axis_j, rank - 1, tp->lanes, tp->nstaged, tp->nstaged == 1 ? "" : "s");
    for (int i = 0; i < tp->nstaged && k < sizeof kp->config; i++)
        k += (size_t)snprintf(kp->config + k, sizeof kp->config - k, " %s", fu_val(f, tp->staged[i].t)->name);
    if (k < sizeof kp->config)
        snprintf(kp->config + k, sizeof kp->config - k, "; blocks=%lld (%lld x %lld x %lld)", (long long)blocks,
                 (long long)tp->outer, (long long)tp->tiles_j, (long long)tp->tiles_l);
    fu_strbuf js;
    fu_sb_init(&js);
    fu_sb_printf(&js, "{\"threads\": %d, \"tile\": [%d, %d], \"lanes\": %d, \"axes\": [%d, %d], \"staged\": [", TR_THREADS,
                 tp->tile, tp->tile, tp->lanes, axis_j, rank - 1);
    for (int i = 0; i < tp->nstaged; i++) fu_sb_printf(&js, "%s\"%s\"", i ? ", " : "", fu_val(f, tp->staged[i].t)->name);
    fu_sb_puts(&js, "], \"vector_loads\": [");
    for (int i = 0; i < tp->nstaged; i++) fu_sb_printf(&js, "%s%s", i ? ", " : "", tp->vector_load[i] ? "true" : "false");
    fu_sb_printf(&js, "], \"shared_bytes\": %zu, \"blocks\": [%lld, %lld, %lld]}", tp->shared_bytes, (long long)tp->outer,
                 (long long)tp->tiles_j, (long long)tp->tiles_l);
    kp->params_json = fu_sb_take(&js);
    *params = tp;
    return true;
}

/* ---- emit */

typedef struct tr_emit {
    const tr_params *p;
    char var[64];
} tr_emit;

/* Renders an affine offset with each axis a's value given by vals[a] ("4096 * (fu_l0 + fu_ty + fu_r)"). */
static void render_offset(const tr_form *fm, int rank, const char (*vals)[48], bool index64, char *buf, size_t n)
{
    const char *suffix = index64 ? "ll" : "";
    size_t k = 0;
    buf[0] = 0;
    for (int a = 0; a < rank && k < n; a++) {
        if (!fm->coef[a]) continue;
        if (fm->coef[a] == 1) k += (size_t)snprintf(buf + k, n - k, "%s(%s)", k ? " + " : "", vals[a]);
        else k += (size_t)snprintf(buf + k, n - k, "%s%lld%s * (%s)", k ? " + " : "", fm->coef[a], suffix, vals[a]);
    }
    if (fm->c || !k) snprintf(buf + k, n - k, "%s%lld%s", k ? " + " : "", fm->c, suffix);
}

/* Compute phase: a staged read is the tile's element at this thread's position, across. */
static const char *staged_read(cg_ctx *c, fu_tensor t, const cg_index *off, void *user)
{
    tr_emit *e = user;
    const int rank = e->p->rank;
    tr_form f = form_of(c, t, off, rank);
    for (int i = 0; i < e->p->nstaged; i++)
        if (same_form(&e->p->staged[i], &f, rank)) {
            snprintf(e->var, sizeof e->var, "v%d", c->tmp++);
            cg_line(c, "const %s %s = fu_load(fu_tile%d[fu_tx + %d * fu_k][fu_ty + fu_r]);",
                    cg_compute_type(fu_val(c->f, t)->dtype), e->var, i, TR_WARP);
            return e->var;
        }
    return NULL;
}

bool fu_tr_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const tr_params *p = params;
    const fu_fusion *f = g->f;
    fu_kernel_writer w;
    if (!fu_kw_begin(&w, g, kp, "transpose (tiles staged in shared memory)", why, nwhy)) {
        fu_kw_abort(&w);
        return false;
    }
    fu_kw_signature(&w, kp, TR_THREADS, 1, false);
    cg_ctx *c = &w.cg;
    const char *it = c->index64 ? "long long" : "int";
    const int rank = p->rank, j = p->axis_j, l = rank - 1;
    for (int i = 0; i < p->nstaged; i++) {
        const fu_value *v = fu_val(f, p->staged[i].t);
        cg_line(c, "__shared__ %s fu_tile%d[%d][%d]; // '%s' at [d%d, d%d] of the tile, read along d%d", cg_storage_type(v->dtype),
                i, p->tile, tile_row(p->tile, fu_dtype_size(v->dtype)), v->name, l, j, j);
    }
    cg_line(c, "const int fu_tx = threadIdx.x %% %d, fu_ty = threadIdx.x / %d;", TR_WARP, TR_WARP);
    cg_line(c, "%s fu_b = blockIdx.x;", it);
    cg_line(c, "const %s fu_l0 = fu_b %% %lld * %d; // the tile's first position along d%d", it, (long long)p->tiles_l, p->tile, l);
    cg_line(c, "fu_b /= %lld;", (long long)p->tiles_l);
    cg_line(c, "const %s fu_j0 = fu_b %% %lld * %d; // ... and along d%d", it, (long long)p->tiles_j, p->tile, j);
    cg_line(c, "fu_b /= %lld;", (long long)p->tiles_j);
    /* the other axes: digits of what is left, the last the fastest */
    char vals[FU_MAX_RANK][48];
    for (int a = rank - 2; a >= 0; a--) {
        if (a == j) continue;
        if (p->shape[a] == 1) {
            cg_line(c, "const %s d%d = 0; // extent 1", it, a);
        } else {
            cg_line(c, "const %s d%d = fu_b %% %lld;", it, a, (long long)p->shape[a]);
            cg_line(c, "fu_b /= %lld;", (long long)p->shape[a]);
        }
        snprintf(vals[a], sizeof vals[a], "d%d", a);
    }
    /* stage: each input's tile read along j (threads along fu_tx, lanes consecutive elements
     * each), kept as [d_l][d_j] */
    if (p->nstaged) {
        const int lanes = p->lanes;
        snprintf(vals[l], sizeof vals[l], "fu_l0 + fu_ty + fu_r");
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int fu_r = 0; fu_r < %d; fu_r += %d) {", p->tile, TR_ROWS);
        c->indent++;
        cg_line(c, "const %s fu_j = fu_j0 + %d * fu_tx; // this thread's first of %d", it, lanes, lanes);
        cg_line(c, "if (fu_j < %lld && fu_l0 + fu_ty + fu_r < %lld) {", (long long)p->shape[j], (long long)p->shape[l]);
        c->indent++;
        for (int i = 0; i < p->nstaged && !c->failed; i++) {
            const fu_value *v = fu_val(f, p->staged[i].t);
            const cg_param *in = cg_find_param(c, p->staged[i].t);
            if (!in) {
                cg_fail(c, "transpose: '%s' is no parameter of the kernel", v->name);
                break;
            }
            char off[600];
            if (p->vector_load[i]) { /* the lanes as one aligned vector, then element by element into the row */
                snprintf(vals[j], sizeof vals[j], "fu_j");
                render_offset(&p->staged[i], rank, (const char (*)[48])vals, c->index64, off, sizeof off);
                const char *wide = cg_vector_type((int)fu_dtype_size(v->dtype) * lanes);
                cg_line(c, "{");
                c->indent++;
                cg_line(c, "alignas(16) %s fu_v[%d];", cg_storage_type(v->dtype), lanes);
                cg_line(c, "*(%s *)fu_v = __ldg((const %s *)(%s + %s));", wide, wide, in->name, off);
                for (int k = 0; k < lanes; k++) cg_line(c, "fu_tile%d[fu_ty + fu_r][%d * fu_tx + %d] = fu_v[%d];", i, lanes, k, k);
                c->indent--;
                cg_line(c, "}");
                continue;
            }
            for (int k = 0; k < lanes; k++) { /* element by element, each within the row */
                snprintf(vals[j], sizeof vals[j], k ? "fu_j + %d" : "fu_j", k);
                render_offset(&p->staged[i], rank, (const char (*)[48])vals, c->index64, off, sizeof off);
                if (k) cg_line(c, "if (fu_j + %d < %lld)", k, (long long)p->shape[j]);
                cg_line(c, "%sfu_tile%d[fu_ty + fu_r][%d * fu_tx + %d] = %s[%s];", k ? "  " : "", i, lanes, k, in->name, off);
            }
        }
        c->indent--;
        cg_line(c, "}");
        c->indent--;
        cg_line(c, "}");
        cg_line(c, "__syncthreads();");
    }
    /* compute: the outputs along the last axis (threads along fu_tx), staged reads across the tile */
    tr_emit e = {.p = p};
    c->lookup_cache = staged_read;
    c->user = &e;
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int fu_r = 0; fu_r < %d; fu_r += %d) {", p->tile, TR_ROWS);
    c->indent++;
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int fu_k = 0; fu_k < %d; fu_k++) { // outputs %d apart along d%d", p->lanes, TR_WARP, l);
    c->indent++;
    c->scope++;
    cg_line(c, "const %s d%d = fu_j0 + fu_ty + fu_r, d%d = fu_l0 + fu_tx + %d * fu_k;", it, j, l, TR_WARP);
    cg_line(c, "if (d%d < %lld && d%d < %lld) {", j, (long long)p->shape[j], l, (long long)p->shape[l]);
    c->indent++;
    c->scope++;
    cg_index idx[FU_MAX_RANK];
    axis_vars(c, rank, idx);
    int64_t strides[FU_MAX_RANK];
    fu_shape_contiguous_strides(rank, p->shape, strides);
    tr_form out_form = {.affine = true};
    char names[FU_MAX_RANK][48];
    for (int a = 0; a < rank; a++) {
        out_form.coef[a] = strides[a];
        snprintf(names[a], sizeof names[a], "d%d", a);
    }
    char flat[600];
    render_offset(&out_form, rank, (const char (*)[48])names, c->index64, flat, sizeof flat);
    for (int o = 0; o < g->noutputs && !c->failed; o++) {
        const char *val = cg_value(c, g->outputs[o], idx);
        const cg_param *out = fu_kw_output(&w, g->outputs[o]);
        if (out) fu_kw_store(&w, out, flat, val);
        else cg_fail(c, "transpose: output '%s' is no parameter of the kernel", fu_val(f, g->outputs[o])->name);
    }
    cg_close(c); /* the bounds check */
    cg_close(c); /* the outputs' loop */
    c->indent--; /* the rows' loop (opened without a scope of its own) */
    cg_line(c, "}");
    cg_close(c); /* the kernel */
    return fu_kw_finish(&w, kp, why, nwhy);
}
