/*
 * k_outer.c -- the outer-reduction scheduler: reductions over axes that are
 * not the innermost one (column sums, dbias = sum over (B, T) of dy), read
 * coalesced.
 *
 * The group's reductions share a domain D (their input's shape) and reduce the
 * same axes R, and the innermost axis of D is kept. The kept axes flatten to C
 * columns, the reduced ones to Rn rows. A thread owns `vec` consecutive
 * columns (one 16-byte load per row and input); a block is TX threads along
 * the columns by TY along the rows, so a warp reads whole 512-byte (or, with
 * few columns, TX * 16-byte) segments of each row. Each thread accumulates its
 * rows, then the block's TY partials of a column are combined in shared
 * memory in ty order. Where there are few column blocks, the rows are split
 * over `splits` blocks per column block; each writes its partial to the
 * workspace and the last of them to finish (a counter per column block)
 * combines the partials in split order and writes the outputs: deterministic,
 * no memset, no second kernel; the last block resets its counter.
 *
 * Outputs are the reductions (keepdim or not) and per-column functions of
 * them and of per-column inputs (mean = sum / N, a bias added); a full-size
 * output or a reduction that reads another is left to the other schedulers.
 *
 * fu_outer_heuristics makes every decision above into an outer_params (its
 * text in kp->config, its JSON in kp->params_json); fu_outer_emit writes the
 * kernel from that struct alone.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "reduce_common.h"

#define OUTER_MAX_REDS 8
#ifndef OUTER_THREADS
#define OUTER_THREADS 256
#endif
#ifndef OUTER_TX_MAX
#define OUTER_TX_MAX 32 /* threads along the columns: one warp reads 512 contiguous bytes */
#endif
#ifndef OUTER_BLOCKS_PER_SM
#define OUTER_BLOCKS_PER_SM 4 /* split the rows until about this many blocks per SM */
#endif
/* Rows a thread sums at least before the rows are split further: OUTER_MIN_ROWS,
 * and OUTER_MIN_ROWS_SPREAD while the grid has fewer blocks than SMs. Few
 * columns and few rows are spread wide: on the H100 (scripts/gpu/variants.sh
 * over the generator's 200, two rounds) fz_7_197, 1024 x 14 bf16, took 6.11
 * and 6.14 us a call in 32 splits of 2 rows a thread against 8.64 and 8.58 in 8
 * of 8 (kernel 3.78 against 6.30 us), and fz_7_100 (1024 x 16 f32) 4.67 us of
 * kernel in 8 splits against 5.28 in 2. One block of 1024 threads for fz_7_197
 * was slower still (11.4 us): more SMs' loads in flight are worth the grid step. */
#ifndef OUTER_MIN_ROWS
#define OUTER_MIN_ROWS 8
#endif
#ifndef OUTER_MIN_ROWS_SPREAD
#define OUTER_MIN_ROWS_SPREAD 2
#endif
/* Where a thread's rows of its split hold at most this many elements a
 * column lane (rows x vec), the row loop is unrolled whole: every load is in
 * flight at once, one memory round trip, where `#pragma unroll 4` over a trip
 * count it cannot see takes one round trip per 4 rows. 0 turns it off. */
#ifndef OUTER_UNROLL_ELEMS
#define OUTER_UNROLL_ELEMS 16
#endif

typedef struct outer_red {
    int node;
    fu_tensor out, in;
    fu_op op;
    fu_dtype acc_dt; /* the output dtype; accumulated in its compute type */
} outer_red;

/* The outer scheduler's decisions: what fu_outer_emit writes the kernel from. */
typedef struct outer_params {
    /* the group: one domain D, the same reduced axes for every reduction */
    int rank;
    int64_t D[FU_MAX_RANK];
    bool reduced[FU_MAX_RANK];
    int64_t C, Rn; /* columns (the kept axes, flattened), rows (the reduced ones) */
    int nred;
    outer_red reds[OUTER_MAX_REDS];
    /* the block */
    int threads;    /* tx * ty */
    int min_blocks; /* the launch bounds' minimum blocks per SM */
    int vec;        /* consecutive columns a thread owns: one vector load per row and input */
    int tx, ty;     /* threads along the columns, along the rows */
    int part_slots; /* the block's partials in shared memory (doubles): one per thread and column */
    /* the grid: column blocks x row splits */
    int64_t gx, splits, rows_per_split;
    int unrolled_rows; /* rows a thread of a split sums, unrolled whole (OUTER_UNROLL_ELEMS), else 0 */
    unsigned grid;
    /* with row splits: the workspace, in 8-byte slots (partials of reduction i
     * at ws_partials[i], splits x C each, then a 32-bit counter per column block) */
    bool split;
    int64_t ws_partials[OUTER_MAX_REDS];
    int64_t ws_counters;
    size_t workspace_bytes;
} outer_params;

/* fu_outer_emit's state while it writes the kernel. */
typedef struct outer_emit {
    const outer_params *p;
    const fu_fusion *f;
    fu_kernel_writer *w;
    bool complete;                   /* the reductions are final: the outputs may read them */
    char var[OUTER_MAX_REDS][8][24]; /* per reduction and lane: its register */
} outer_emit;

static int outer_red_of(const outer_params *p, fu_tensor t)
{
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].out == t) return i;
    return -1;
}

static bool is_domain(const outer_params *p, const fu_value *v)
{
    return v->rank == p->rank && !memcmp(v->shape, p->D, (size_t)p->rank * sizeof *v->shape);
}

/* Whether v is per-column (the kept axes' extents, with or without the
 * reduced axes as 1, or broadcast from fewer axes); with c, also its index at
 * the current column and lane in idx. */
static bool column_index(const outer_params *p, const cg_ctx *c, const fu_value *v, cg_index *idx)
{
    int last = p->rank - 1;
    if (v->rank == p->rank) { /* keepdim form, or broadcast over some kept axes */
        for (int a = 0; a < v->rank; a++) {
            if (v->shape[a] == 1) {
                if (c) cg_index_const(&idx[a], 0);
            } else if (p->reduced[a] || v->shape[a] != p->D[a]) {
                return false;
            } else if (c) {
                cg_index_var(&idx[a], a, c->var_names[a]);
            }
        }
    } else { /* squeezed: the kept axes in order, or a suffix of them (NumPy broadcasting) */
        int ka[FU_MAX_RANK], nk = 0;
        for (int a = 0; a < p->rank; a++)
            if (!p->reduced[a]) ka[nk++] = a;
        if (v->rank > nk) return false;
        for (int i = 0; i < v->rank; i++) {
            int a = ka[nk - v->rank + i];
            if (v->shape[i] == 1) {
                if (c) cg_index_const(&idx[i], 0);
            } else if (v->shape[i] != p->D[a]) {
                return false;
            } else if (c) {
                cg_index_var(&idx[i], a, c->var_names[a]);
            }
        }
    }
    for (int i = 0; c && i < v->rank; i++)
        if (idx[i].affine && idx[i].coef[last] == 1 && p->vec > 1) {
            idx[i].lane_coef = 1;
            cg_index_refresh(c, &idx[i]);
        }
    return true;
}

static const char *outer_lookup_register(cg_ctx *c, fu_tensor t, const cg_index *idx, void *user)
{
    outer_emit *e = user;
    int i = outer_red_of(e->p, t);
    if (i < 0) return NULL;
    const fu_value *v = fu_val(e->f, t);
    if (!e->complete) {
        cg_fail(c, "outer reduction: '%s' is read before it is complete", v->name);
        return NULL;
    }
    cg_index want[FU_MAX_RANK];
    bool ok = column_index(e->p, c, v, want);
    for (int a = 0; ok && a < v->rank; a++) ok = cg_index_same(c, &want[a], &idx[a]);
    if (!ok) {
        cg_fail(c, "outer reduction: '%s' is read at another column", v->name);
        return NULL;
    }
    return e->var[i][c->lane];
}

/* Whether t is computed in the group from a reduction (walks producers). */
static bool reads_reduction(const fu_group *g, fu_tensor t, int depth)
{
    const fu_node *n = fu_producer(g->f, t);
    if (!n || !g->in_group[n - g->f->nodes] || depth > 64) return false;
    if (fu_op_kind_of(n->op) == FU_KIND_REDUCE) return true;
    for (int k = 0; k < n->ninputs; k++)
        if (reads_reduction(g, n->inputs[k], depth + 1)) return true;
    return false;
}

/* The group's structure: one domain, one set of reduced axes, the innermost kept. */
static bool analyse(const fu_group *g, outer_params *p, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i]) continue;
        fu_op_kind k = fu_op_kind_of(n->op);
        if (k == FU_KIND_SCATTER) {
            snprintf(why, nwhy, "outer reduction: the group has a scatter");
            return false;
        }
        if (k != FU_KIND_REDUCE) continue;
        if (p->nred == OUTER_MAX_REDS) {
            snprintf(why, nwhy, "outer reduction: more than %d reductions", OUTER_MAX_REDS);
            return false;
        }
        const fu_value *x = fu_val(f, n->inputs[0]);
        bool red[FU_MAX_RANK];
        fu_reduced_axes(&n->attrs, x->rank, red);
        if (p->nred == 0) {
            p->rank = x->rank;
            memcpy(p->D, x->shape, sizeof p->D);
            memcpy(p->reduced, red, sizeof red);
        } else if (!is_domain(p, x) || memcmp(red, p->reduced, sizeof red)) {
            snprintf(why, nwhy, "outer reduction: '%s' reduces another domain or other axes", fu_val(f, n->output)->name);
            return false;
        }
        outer_red *r = &p->reds[p->nred++];
        r->node = i;
        r->out = n->output;
        r->in = n->inputs[0];
        r->op = n->op;
        r->acc_dt = fu_val(f, n->output)->dtype;
        if (n->op != FU_OP_SUM && n->op != FU_OP_RMAX && n->op != FU_OP_RMIN) {
            snprintf(why, nwhy, "outer reduction: '%s' is not a sum, max or min", fu_val(f, n->output)->name);
            return false;
        }
    }
    if (p->nred == 0 || p->rank < 2) {
        snprintf(why, nwhy, "outer reduction: no reduction over a non-innermost axis");
        return false;
    }
    bool any = false;
    for (int a = 0; a < p->rank; a++) any |= p->reduced[a] && p->D[a] != 1;
    if (p->reduced[p->rank - 1] || !any) {
        snprintf(why, nwhy, "outer reduction: the innermost axis is reduced (a row reduction)");
        return false;
    }
    p->C = p->Rn = 1;
    for (int a = 0; a < p->rank; a++) {
        if (p->reduced[a]) p->Rn *= p->D[a];
        else p->C *= p->D[a];
    }
    if (p->C == 0) {
        snprintf(why, nwhy, "outer reduction: no columns");
        return false;
    }
    for (int i = 0; i < p->nred; i++)
        if (reads_reduction(g, p->reds[i].in, 0)) {
            snprintf(why, nwhy, "outer reduction: '%s' reads another reduction", fu_val(f, p->reds[i].out)->name);
            return false;
        }
    return true;
}

/* Every output is per-column. */
static bool check_outputs(const fu_group *g, const outer_params *p, char *why, size_t nwhy)
{
    for (int k = 0; k < g->noutputs; k++) {
        const fu_value *v = fu_val(g->f, g->outputs[k]);
        if (is_domain(p, v) || !column_index(p, NULL, v, NULL) || fu_shape_numel(v->rank, v->shape) != p->C) {
            snprintf(why, nwhy, "outer reduction: output '%s' is not one value per column", v->name);
            return false;
        }
    }
    return true;
}

/* The block and the grid; `widest`: the largest element of a domain-shaped
 * tensor the kernel moves (its 16-byte vector sets vec). */
static void choose_config(const fu_group *g, outer_params *p, size_t widest)
{
    p->threads = OUTER_THREADS;
    p->min_blocks = 1;
    p->vec = (int)(16 / widest);
    if (p->vec > 8) p->vec = 8;
    while (p->vec > 1 && p->D[p->rank - 1] % p->vec) p->vec /= 2;
    int64_t col_threads = p->C / p->vec;
    p->tx = 1;
    while (p->tx < OUTER_TX_MAX && p->tx < col_threads) p->tx *= 2;
    p->ty = p->threads / p->tx;
    p->part_slots = p->threads * p->vec;
    p->gx = (col_threads + p->tx - 1) / p->tx;
    /* split the rows while there are fewer blocks than OUTER_BLOCKS_PER_SM per
     * SM and each thread still sums OUTER_MIN_ROWS rows (OUTER_MIN_ROWS_SPREAD
     * while the blocks are fewer than the SMs) */
    int64_t want = (int64_t)g->opts->sm_count * OUTER_BLOCKS_PER_SM;
    p->splits = 1;
    for (;;) {
        int64_t blocks = p->gx * p->splits * 2;
        int min_rows = blocks <= g->opts->sm_count ? OUTER_MIN_ROWS_SPREAD : OUTER_MIN_ROWS;
        if (blocks > want || p->Rn / (p->splits * 2) < (int64_t)p->ty * min_rows) break;
        p->splits *= 2;
    }
    p->rows_per_split = (p->Rn + p->splits - 1) / p->splits;
    int64_t trips = (p->rows_per_split + p->ty - 1) / p->ty;
    p->unrolled_rows = trips * p->vec <= OUTER_UNROLL_ELEMS ? (int)trips : 0;
    p->split = p->splits > 1;
    if (p->split) { /* partials, then the counters */
        for (int i = 0; i < p->nred; i++) p->ws_partials[i] = i * p->splits * p->C;
        p->ws_counters = p->nred * p->splits * p->C;
        p->workspace_bytes = (size_t)p->ws_counters * 8 + (size_t)p->gx * 4 + 64;
    }
}

/* The widest element of the domain-shaped tensors among the kernel's
 * parameters (every materialized tensor its outputs read, then the outputs),
 * from the list fu_kw_begin makes; false and why where it cannot make one. */
static bool widest_domain_param(const fu_group *g, const outer_params *p, size_t *widest, char *why, size_t nwhy)
{
    cg_param params[64];
    int n = fu_kw_params(g, params, why, nwhy);
    *widest = 1;
    for (int i = 0; i < n; i++) {
        const fu_value *v = fu_val(g->f, params[i].tensor);
        if (is_domain(p, v) && fu_dtype_size(v->dtype) > *widest) *widest = fu_dtype_size(v->dtype);
    }
    return n >= 0;
}

bool fu_outer_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    *params = NULL;
    outer_params *p = fu_calloc(1, sizeof *p);
    if (!p) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    size_t widest = 1;
    bool ok = analyse(g, p, why, nwhy) && widest_domain_param(g, p, &widest, why, nwhy);
    if (ok) {
        choose_config(g, p, widest);
        ok = check_outputs(g, p, why, nwhy);
    }
    /* the kernel's grid is 32 bits of blocks and its workspace indices 64 */
    if (ok && p->gx * p->splits >= INT32_MAX) {
        snprintf(why, nwhy, "outer reduction: %lld blocks do not fit a 32-bit grid", (long long)(p->gx * p->splits));
        ok = false;
    }
    if (!ok) {
        fu_free(p);
        return false;
    }
    p->grid = (unsigned)(p->gx * p->splits);
    kp->sched = FU_SCHED_OUTER;
    kp->grid = p->grid;
    kp->block = (unsigned)p->threads;
    kp->shared_bytes = 0;
    kp->workspace_bytes = p->workspace_bytes;
    snprintf(kp->config, sizeof kp->config,
             "outer: rows=%lld columns=%lld vec=%d threads=%dx%d column_blocks=%lld row_splits=%lld reductions=%d",
             (long long)p->Rn, (long long)p->C, p->vec, p->tx, p->ty, (long long)p->gx, (long long)p->splits, p->nred);
    fu_strbuf js;
    fu_sb_init(&js);
    fu_sb_puts(&js, "{\"domain\": [");
    for (int a = 0; a < p->rank; a++) fu_sb_printf(&js, "%s%lld", a ? ", " : "", (long long)p->D[a]);
    fu_sb_puts(&js, "], \"reduced_axes\": [");
    for (int a = 0, n = 0; a < p->rank; a++)
        if (p->reduced[a]) fu_sb_printf(&js, "%s%d", n++ ? ", " : "", a);
    fu_sb_printf(&js,
                 "], \"rows\": %lld, \"columns\": %lld, \"reductions\": %d, \"threads\": %d, \"min_blocks_per_sm\": %d, "
                 "\"vec\": %d, \"threads_x\": %d, \"threads_y\": %d, \"shared_partials\": %d, \"column_blocks\": %lld, "
                 "\"row_splits\": %lld, \"rows_per_split\": %lld, \"unrolled_rows\": %d, \"grid\": %u, "
                 "\"workspace_bytes\": %zu}",
                 (long long)p->Rn, (long long)p->C, p->nred, p->threads, p->min_blocks, p->vec, p->tx, p->ty,
                 p->part_slots, (long long)p->gx, (long long)p->splits, (long long)p->rows_per_split, p->unrolled_rows,
                 p->grid, p->workspace_bytes);
    kp->params_json = fu_sb_take(&js);
    *params = p;
    return true;
}

/* The domain variables of axis group `reduced` (true: the rows) from `flat`. */
static void emit_axis_vars(outer_emit *e, bool reduced, const char *flat)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    int64_t stride = 1;
    for (int a = p->rank - 1; a >= 0; a--) {
        if (p->reduced[a] != reduced) continue;
        cg_digit_var(c, a, flat, stride, p->D[a], false);
        stride *= p->D[a];
    }
}

static void full_index(outer_emit *e, cg_index *idx)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    for (int a = 0; a < p->rank; a++) cg_index_var(&idx[a], a, c->var_names[a]);
    if (p->vec > 1) {
        idx[p->rank - 1].lane_coef = 1;
        cg_index_refresh(c, &idx[p->rank - 1]);
    }
}

/* Each thread's rows of this split, ty apart, into its registers. */
static void emit_row_loop(outer_emit *e)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "const %s row_end = %lld < (%s)(by + 1) * %lld ? %lld : (%s)(by + 1) * %lld;", it, (long long)p->Rn, it,
            (long long)p->rows_per_split, (long long)p->Rn, it, (long long)p->rows_per_split);
    /* unrolled whole: straight-line code, so every load can be issued before the first add. Where
     * the splits do not cover the rows exactly, a trip past the split's end reads its last row
     * again and adds the identity instead. */
    bool ragged = p->unrolled_rows && (p->Rn % p->rows_per_split || p->rows_per_split % p->ty);
    if (p->unrolled_rows) {
        cg_line(c, "if (live)");
        cg_open(c);
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int trip = 0; trip < %d; trip++) {", p->unrolled_rows);
        c->indent++;
        c->scope++;
        if (ragged) {
            cg_line(c, "const %s row_at = (%s)by * %lld + ty + trip * %d;", it, it, (long long)p->rows_per_split, p->ty);
            cg_line(c, "const bool row_ok = row_at < row_end;");
            cg_line(c, "const %s row = row_ok ? row_at : row_end - 1;", it);
        } else {
            cg_line(c, "const %s row = (%s)by * %lld + ty + trip * %d;", it, it, (long long)p->rows_per_split, p->ty);
        }
    } else {
        cg_line(c, "#pragma unroll 4");
        cg_line(c, "for (%s row = (%s)by * %lld + ty; live && row < row_end; row += %d) {", it, it,
                (long long)p->rows_per_split, p->ty);
        c->indent++;
        c->scope++;
    }
    emit_axis_vars(e, true, "row");
    cg_index idx[FU_MAX_RANK];
    full_index(e, idx);
    c->vec = p->vec;
    c->lane_var = p->vec > 1 ? p->rank - 1 : -1;
    for (int lane = 0; lane < p->vec; lane++) {
        c->lane = lane;
        cg_index li[FU_MAX_RANK];
        memcpy(li, idx, sizeof li);
        cg_index_refresh(c, &li[p->rank - 1]);
        for (int i = 0; i < p->nred; i++) {
            char guarded[CG_EXPR + 96];
            fu_red_combine(c, p->reds[i].op, e->var[i][lane],
                           fu_red_guard(p->reds[i].op, p->reds[i].acc_dt, ragged ? "row_ok" : "",
                                        cg_value(c, p->reds[i].in, li), guarded, sizeof guarded));
        }
    }
    c->lane = 0;
    c->vec = 1;
    c->lane_var = -1;
    cg_close(c);
    if (p->unrolled_rows) cg_close(c); /* if (live) */
}

/* The block's ty partials of each column, in ty order. */
static void emit_block_combine(outer_emit *e)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    for (int i = 0; i < p->nred; i++) {
        const char *ct = cg_compute_type(p->reds[i].acc_dt);
        cg_line(c, "__syncthreads(); // fu_part may still be read");
        for (int lane = 0; lane < p->vec; lane++)
            cg_line(c, "((%s *)fu_part)[threadIdx.x * %d + %d] = %s;", ct, p->vec, lane, e->var[i][lane]);
        cg_line(c, "__syncthreads();");
        cg_line(c, "if (ty == 0)");
        cg_open(c);
        cg_line(c, "for (unsigned y = 1; y < %du; y++)", p->ty);
        cg_open(c);
        for (int lane = 0; lane < p->vec; lane++) {
            char v[96];
            snprintf(v, sizeof v, "((const %s *)fu_part)[(y * %d + tx) * %d + %d]", ct, p->tx, p->vec, lane);
            fu_red_combine(c, p->reds[i].op, e->var[i][lane], v);
        }
        cg_close(c);
        cg_close(c);
    }
}

/* The partials of this split to the workspace; the last split of the column
 * block to finish combines them in split order. */
static void emit_split_combine(outer_emit *e)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    cg_line(c, "if (ty == 0 && live)");
    cg_open(c);
    for (int i = 0; i < p->nred; i++)
        for (int lane = 0; lane < p->vec; lane++)
            cg_line(c, "((%s *)(fu_ws + %lld))[(long long)by * %lld + col + %d] = %s;", cg_compute_type(p->reds[i].acc_dt),
                    (long long)p->ws_partials[i], (long long)p->C, lane, e->var[i][lane]);
    cg_close(c);
    cg_line(c, "unsigned *fu_done = (unsigned *)(fu_ws + %lld); // per column block: splits finished",
            (long long)p->ws_counters);
    cg_line(c, "__shared__ int fu_last;");
    cg_line(c, "__threadfence();");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(&fu_done[bx], 1u) == %lldu;", (long long)(p->splits - 1));
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (!fu_last) return;");
    cg_line(c, "__threadfence();");
    cg_line(c, "if (threadIdx.x == 0) fu_done[bx] = 0u; // ready for the next launch");
    cg_line(c, "if (ty == 0 && live)");
    cg_open(c);
    for (int i = 0; i < p->nred; i++) {
        for (int lane = 0; lane < p->vec; lane++)
            cg_line(c, "%s = %s;", e->var[i][lane], fu_red_identity(p->reds[i].op, p->reds[i].acc_dt));
        cg_line(c, "for (unsigned s = 0; s < %lldu; s++) // in split order", (long long)p->splits);
        cg_open(c);
        for (int lane = 0; lane < p->vec; lane++) {
            char v[128];
            snprintf(v, sizeof v, "__ldcg((const %s *)(fu_ws + %lld) + (long long)s * %lld + col + %d)",
                     cg_compute_type(p->reds[i].acc_dt), (long long)p->ws_partials[i], (long long)p->C, lane);
            fu_red_combine(c, p->reds[i].op, e->var[i][lane], v);
        }
        cg_close(c);
    }
    cg_close(c);
}

/* The outputs of the columns, by the threads of row 0. */
static void emit_outputs(outer_emit *e, const fu_group *g)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    e->complete = true;
    cg_line(c, "if (ty != 0 || !live) return;");
    for (int i = 0; i < p->nred; i++)
        for (int lane = 0; lane < p->vec; lane++) fu_red_round(c, p->reds[i].op, p->reds[i].acc_dt, e->var[i][lane]);
    c->vec = p->vec;
    c->lane_var = p->vec > 1 ? p->rank - 1 : -1;
    for (int k = 0; k < g->noutputs; k++) {
        fu_tensor t = g->outputs[k];
        const fu_value *v = fu_val(e->f, t);
        const cg_param *par = fu_kw_output(e->w, t);
        char lanes[8][32];
        cg_index oidx[FU_MAX_RANK], off;
        for (int lane = 0; lane < p->vec; lane++) {
            c->lane = lane;
            column_index(p, c, v, oidx);
            snprintf(lanes[lane], sizeof lanes[lane], "%s", cg_value(c, t, oidx));
        }
        c->lane = 0;
        column_index(p, c, v, oidx);
        cg_offset(c, v->rank, v->shape, v->strides, oidx, &off);
        if (p->vec > 1 && cg_offset_vectorizable(c, &off, p->vec)) {
            char base[CG_EXPR], tmp[16];
            cg_offset_base_expr(c, &off, base, sizeof base);
            snprintf(tmp, sizeof tmp, "fu_o%d", k);
            fu_kw_vector_store(e->w, par, base, tmp, (const char (*)[32])lanes, p->vec);
        } else {
            for (int lane = 0; lane < p->vec; lane++) {
                c->lane = lane;
                cg_index_refresh(c, &off);
                fu_kw_store(e->w, par, off.expr, lanes[lane]);
            }
            c->lane = 0;
        }
    }
    c->vec = 1;
    c->lane_var = -1;
}

static void emit_kernel(outer_emit *e, const fu_group *g, const fu_kernel_plan *kp)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    fu_kw_signature(e->w, kp, (unsigned)p->threads, (unsigned)p->min_blocks, p->split);
    cg_line(c, "// [%lld rows] x [%lld columns]: %d columns a thread, %d x %d threads, %lld column blocks x %lld row splits",
            (long long)p->Rn, (long long)p->C, p->vec, p->tx, p->ty, (long long)p->gx, (long long)p->splits);
    cg_line(c, "__shared__ double fu_part[%d]; // one value per thread and column: the block's partials", p->part_slots);
    cg_line(c, "const unsigned bx = blockIdx.x %% %lldu, by = blockIdx.x / %lldu;", (long long)p->gx, (long long)p->gx);
    cg_line(c, "const unsigned tx = threadIdx.x %% %du, ty = threadIdx.x / %du;", p->tx, p->tx);
    cg_line(c, "const %s col = ((%s)bx * %d + tx) * %d;", it, it, p->tx, p->vec);
    cg_line(c, "const bool live = col < %lld;", (long long)p->C);
    emit_axis_vars(e, false, "col");
    for (int i = 0; i < p->nred; i++)
        for (int lane = 0; lane < p->vec; lane++) {
            snprintf(e->var[i][lane], sizeof e->var[i][lane], "r%d_%d", i, lane);
            cg_line(c, "%s %s = %s;", cg_compute_type(p->reds[i].acc_dt), e->var[i][lane],
                    fu_red_identity(p->reds[i].op, p->reds[i].acc_dt));
        }
    emit_row_loop(e);
    emit_block_combine(e);
    if (p->split) emit_split_combine(e);
    emit_outputs(e, g);
    cg_close(c);
}

bool fu_outer_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const outer_params *p = params;
    outer_emit *e = fu_calloc(1, sizeof *e);
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    if (!e || !w) {
        fu_free(e);
        fu_free(w);
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    e->p = p;
    e->f = g->f;
    e->w = w;
    bool ok = fu_kw_begin(w, g, kp, "outer reduction (columns, coalesced; row splits combined by the last block)", why, nwhy);
    if (ok) {
        cg_ctx *c = &w->cg;
        for (int a = 0; a < p->rank; a++) {
            char name[16];
            snprintf(name, sizeof name, "%c%d", p->reduced[a] ? 'k' : 'o', a);
            cg_add_var(c, name);
        }
        c->user = e;
        c->lookup_register = outer_lookup_register;
        emit_kernel(e, g, kp);
        ok = fu_kw_finish(w, kp, why, nwhy);
    } else {
        fu_kw_abort(w);
    }
    fu_free(e);
    fu_free(w);
    return ok;
}
