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
#ifndef OUTER_MIN_ROWS
#define OUTER_MIN_ROWS 8 /* rows a thread sums at least before the rows are split further */
#endif

typedef struct outer_red {
    int node;
    fu_tensor out, in;
    fu_op op;
    fu_dtype acc_dt; /* the output dtype; accumulated in its compute type */
    bool avail;
} outer_red;

typedef struct outer_ctx {
    const fu_group *g;
    const fu_fusion *f;
    fu_kernel_writer *w;
    int rank;
    int64_t D[FU_MAX_RANK];
    bool reduced[FU_MAX_RANK];
    int64_t C, Rn;
    int nred;
    outer_red reds[OUTER_MAX_REDS];
    int vec, tx, ty;
    int64_t gx, splits, rows_per_split;
    char var[OUTER_MAX_REDS][8][24]; /* per reduction and lane: its register */
} outer_ctx;

static int outer_red_of(const outer_ctx *o, fu_tensor t)
{
    for (int i = 0; i < o->nred; i++)
        if (o->reds[i].out == t) return i;
    return -1;
}

static bool is_domain(const outer_ctx *o, const fu_value *v)
{
    return v->rank == o->rank && !memcmp(v->shape, o->D, (size_t)o->rank * sizeof *v->shape);
}

/* The index of a per-column tensor v (the kept axes' extents, with or without
 * the reduced axes as 1, or broadcast from fewer axes) at the current column
 * and lane; false when v is not per-column. */
static bool column_index(const outer_ctx *o, const fu_value *v, cg_index *idx)
{
    const cg_ctx *c = &o->w->cg;
    int last = o->rank - 1;
    if (v->rank == o->rank) { /* keepdim form, or broadcast over some kept axes */
        for (int a = 0; a < v->rank; a++) {
            if (v->shape[a] == 1) cg_index_const(&idx[a], 0);
            else if (o->reduced[a] || v->shape[a] != o->D[a]) return false;
            else cg_index_var(&idx[a], a, c->var_names[a]);
        }
    } else { /* squeezed: the kept axes in order, or a suffix of them (NumPy broadcasting) */
        int ka[FU_MAX_RANK], nk = 0;
        for (int a = 0; a < o->rank; a++)
            if (!o->reduced[a]) ka[nk++] = a;
        if (v->rank > nk) return false;
        for (int i = 0; i < v->rank; i++) {
            int a = ka[nk - v->rank + i];
            if (v->shape[i] == 1) cg_index_const(&idx[i], 0);
            else if (v->shape[i] != o->D[a]) return false;
            else cg_index_var(&idx[i], a, c->var_names[a]);
        }
    }
    for (int i = 0; i < v->rank; i++)
        if (idx[i].affine && idx[i].coef[last] == 1 && o->vec > 1) {
            idx[i].lane_coef = 1;
            cg_index_refresh(c, &idx[i]);
        }
    return true;
}

static const char *outer_lookup_register(cg_ctx *c, fu_tensor t, const cg_index *idx, void *user)
{
    outer_ctx *o = user;
    int i = outer_red_of(o, t);
    if (i < 0) return NULL;
    const fu_value *v = fu_val(o->f, t);
    if (!o->reds[i].avail) {
        cg_fail(c, "outer reduction: '%s' is read before it is complete", v->name);
        return NULL;
    }
    cg_index want[FU_MAX_RANK];
    bool ok = column_index(o, v, want);
    for (int a = 0; ok && a < v->rank; a++) ok = strcmp(want[a].expr, idx[a].expr) == 0;
    if (!ok) {
        cg_fail(c, "outer reduction: '%s' is read at another column", v->name);
        return NULL;
    }
    return o->var[i][c->lane];
}

/* Whether t is computed in the group from a reduction (walks producers). */
static bool reads_reduction(const outer_ctx *o, fu_tensor t, int depth)
{
    const fu_node *n = fu_producer(o->f, t);
    if (!n || !o->g->in_group[n - o->f->nodes] || depth > 64) return false;
    if (fu_op_kind_of(n->op) == FU_KIND_REDUCE) return true;
    for (int k = 0; k < n->ninputs; k++)
        if (reads_reduction(o, n->inputs[k], depth + 1)) return true;
    return false;
}

/* The group's structure: one domain, one set of reduced axes, the innermost kept. */
static bool analyse(outer_ctx *o, char *why, size_t nwhy)
{
    const fu_fusion *f = o->f;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!o->g->in_group[i]) continue;
        fu_op_kind k = fu_op_kind_of(n->op);
        if (k == FU_KIND_SCATTER) {
            snprintf(why, nwhy, "outer reduction: the group has a scatter");
            return false;
        }
        if (k != FU_KIND_REDUCE) continue;
        if (o->nred == OUTER_MAX_REDS) {
            snprintf(why, nwhy, "outer reduction: more than %d reductions", OUTER_MAX_REDS);
            return false;
        }
        const fu_value *x = fu_val(f, n->inputs[0]);
        bool red[FU_MAX_RANK];
        fu_reduced_axes(&n->attrs, x->rank, red);
        if (o->nred == 0) {
            o->rank = x->rank;
            memcpy(o->D, x->shape, sizeof o->D);
            memcpy(o->reduced, red, sizeof red);
        } else if (!is_domain(o, x) || memcmp(red, o->reduced, sizeof red)) {
            snprintf(why, nwhy, "outer reduction: '%s' reduces another domain or other axes", fu_val(f, n->output)->name);
            return false;
        }
        outer_red *r = &o->reds[o->nred++];
        r->node = i;
        r->out = n->output;
        r->in = n->inputs[0];
        r->op = n->op;
        r->acc_dt = fu_val(f, n->output)->dtype;
        r->avail = false;
        if (n->op != FU_OP_SUM && n->op != FU_OP_RMAX && n->op != FU_OP_RMIN) {
            snprintf(why, nwhy, "outer reduction: '%s' is not a sum, max or min", fu_val(f, n->output)->name);
            return false;
        }
    }
    if (o->nred == 0 || o->rank < 2) {
        snprintf(why, nwhy, "outer reduction: no reduction over a non-innermost axis");
        return false;
    }
    bool any = false;
    for (int a = 0; a < o->rank; a++) any |= o->reduced[a] && o->D[a] != 1;
    if (o->reduced[o->rank - 1] || !any) {
        snprintf(why, nwhy, "outer reduction: the innermost axis is reduced (a row reduction)");
        return false;
    }
    o->C = o->Rn = 1;
    for (int a = 0; a < o->rank; a++) {
        if (o->reduced[a]) o->Rn *= o->D[a];
        else o->C *= o->D[a];
    }
    if (o->C == 0) {
        snprintf(why, nwhy, "outer reduction: no columns");
        return false;
    }
    for (int i = 0; i < o->nred; i++)
        if (reads_reduction(o, o->reds[i].in, 0)) {
            snprintf(why, nwhy, "outer reduction: '%s' reads another reduction", fu_val(f, o->reds[i].out)->name);
            return false;
        }
    return true;
}

/* Every output is per-column. */
static bool check_outputs(outer_ctx *o, char *why, size_t nwhy)
{
    for (int k = 0; k < o->g->noutputs; k++) {
        const fu_value *v = fu_val(o->f, o->g->outputs[k]);
        cg_index idx[FU_MAX_RANK];
        if (is_domain(o, v) || !column_index(o, v, idx) || fu_shape_numel(v->rank, v->shape) != o->C) {
            snprintf(why, nwhy, "outer reduction: output '%s' is not one value per column", v->name);
            return false;
        }
    }
    return true;
}

static void choose_config(outer_ctx *o)
{
    size_t widest = 1;
    for (int i = 0; i < o->w->nparams; i++) {
        const fu_value *v = fu_val(o->f, o->w->params[i].tensor);
        if (is_domain(o, v) && fu_dtype_size(v->dtype) > widest) widest = fu_dtype_size(v->dtype);
    }
    o->vec = (int)(16 / widest);
    if (o->vec > 8) o->vec = 8;
    while (o->vec > 1 && o->D[o->rank - 1] % o->vec) o->vec /= 2;
    int64_t col_threads = o->C / o->vec;
    o->tx = 1;
    while (o->tx < OUTER_TX_MAX && o->tx < col_threads) o->tx *= 2;
    o->ty = OUTER_THREADS / o->tx;
    o->gx = (col_threads + o->tx - 1) / o->tx;
    /* split the rows while there are fewer blocks than OUTER_BLOCKS_PER_SM per
     * SM and each thread still sums OUTER_MIN_ROWS rows */
    int64_t want = (int64_t)o->g->opts->sm_count * OUTER_BLOCKS_PER_SM;
    o->splits = 1;
    while (o->gx * o->splits * 2 <= want && o->Rn / (o->splits * 2) >= (int64_t)o->ty * OUTER_MIN_ROWS) o->splits *= 2;
    o->rows_per_split = (o->Rn + o->splits - 1) / o->splits;
}

/* The domain variables of axis group `reduced` (true: the rows) from `flat`. */
static void emit_axis_vars(outer_ctx *o, bool reduced, const char *flat)
{
    cg_ctx *c = &o->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    int64_t stride = 1;
    for (int a = o->rank - 1; a >= 0; a--) {
        if (o->reduced[a] != reduced) continue;
        if (o->D[a] == 1) cg_line(c, "const %s %s = 0;", it, c->var_names[a]);
        else cg_line(c, "const %s %s = (%s / %lld) %% %lld;", it, c->var_names[a], flat, (long long)stride, (long long)o->D[a]);
        stride *= o->D[a];
    }
}

static void full_index(outer_ctx *o, cg_index *idx)
{
    cg_ctx *c = &o->w->cg;
    for (int a = 0; a < o->rank; a++) cg_index_var(&idx[a], a, c->var_names[a]);
    if (o->vec > 1) {
        idx[o->rank - 1].lane_coef = 1;
        cg_index_refresh(c, &idx[o->rank - 1]);
    }
}

static void emit_kernel(outer_ctx *o, fu_kernel_plan *kp)
{
    cg_ctx *c = &o->w->cg;
    const fu_fusion *f = o->f;
    const char *it = c->index64 ? "long long" : "int";
    const bool split = o->splits > 1;
    fu_kw_signature(o->w, kp, OUTER_THREADS, 1, split);
    cg_open(c);
    cg_line(c, "// [%lld rows] x [%lld columns]: %d columns a thread, %d x %d threads, %lld column blocks x %lld row splits",
            (long long)o->Rn, (long long)o->C, o->vec, o->tx, o->ty, (long long)o->gx, (long long)o->splits);
    cg_line(c, "__shared__ double fu_part[%d]; // one value per thread and column: the block's partials", OUTER_THREADS * o->vec);
    cg_line(c, "const unsigned bx = blockIdx.x %% %lldu, by = blockIdx.x / %lldu;", (long long)o->gx, (long long)o->gx);
    cg_line(c, "const unsigned tx = threadIdx.x %% %du, ty = threadIdx.x / %du;", o->tx, o->tx);
    cg_line(c, "const %s col = ((%s)bx * %d + tx) * %d;", it, it, o->tx, o->vec);
    cg_line(c, "const bool live = col < %lld;", (long long)o->C);
    emit_axis_vars(o, false, "col");
    for (int i = 0; i < o->nred; i++)
        for (int lane = 0; lane < o->vec; lane++) {
            snprintf(o->var[i][lane], sizeof o->var[i][lane], "r%d_%d", i, lane);
            cg_line(c, "%s %s = %s;", cg_compute_type(o->reds[i].acc_dt), o->var[i][lane],
                    fu_red_identity(o->reds[i].op, o->reds[i].acc_dt));
        }
    /* the rows of this split, ty apart */
    cg_line(c, "const %s row_end = %lld < (%s)(by + 1) * %lld ? %lld : (%s)(by + 1) * %lld;", it, (long long)o->Rn, it,
            (long long)o->rows_per_split, (long long)o->Rn, it, (long long)o->rows_per_split);
    cg_line(c, "#pragma unroll 4");
    cg_line(c, "for (%s row = (%s)by * %lld + ty; live && row < row_end; row += %d) {", it, it, (long long)o->rows_per_split,
            o->ty);
    c->indent++;
    c->scope++;
    emit_axis_vars(o, true, "row");
    cg_index idx[FU_MAX_RANK];
    full_index(o, idx);
    c->vec = o->vec;
    c->lane_var = o->vec > 1 ? o->rank - 1 : -1;
    for (int lane = 0; lane < o->vec; lane++) {
        c->lane = lane;
        cg_index li[FU_MAX_RANK];
        memcpy(li, idx, sizeof li);
        cg_index_refresh(c, &li[o->rank - 1]);
        for (int i = 0; i < o->nred; i++) fu_red_combine(c, o->reds[i].op, o->var[i][lane], cg_value(c, o->reds[i].in, li));
    }
    c->lane = 0;
    c->vec = 1;
    c->lane_var = -1;
    cg_close(c);
    /* the block's ty partials of each column, in ty order */
    for (int i = 0; i < o->nred; i++) {
        const char *ct = cg_compute_type(o->reds[i].acc_dt);
        cg_line(c, "__syncthreads(); // fu_part may still be read");
        for (int lane = 0; lane < o->vec; lane++)
            cg_line(c, "((%s *)fu_part)[threadIdx.x * %d + %d] = %s;", ct, o->vec, lane, o->var[i][lane]);
        cg_line(c, "__syncthreads();");
        cg_line(c, "if (ty == 0)");
        cg_open(c);
        cg_line(c, "for (unsigned y = 1; y < %du; y++)", o->ty);
        cg_open(c);
        for (int lane = 0; lane < o->vec; lane++) {
            char v[96];
            snprintf(v, sizeof v, "((const %s *)fu_part)[(y * %d + tx) * %d + %d]", ct, o->tx, o->vec, lane);
            fu_red_combine(c, o->reds[i].op, o->var[i][lane], v);
        }
        cg_close(c);
        cg_close(c);
    }
    if (split) {
        /* partials of this split, then the last split of the column block combines them */
        int64_t per_red = o->splits * o->C; /* 8-byte slots */
        cg_line(c, "if (ty == 0 && live)");
        cg_open(c);
        for (int i = 0; i < o->nred; i++)
            for (int lane = 0; lane < o->vec; lane++)
                cg_line(c, "((%s *)(fu_ws + %lld))[(long long)by * %lld + col + %d] = %s;",
                        cg_compute_type(o->reds[i].acc_dt), (long long)(i * per_red), (long long)o->C, lane,
                        o->var[i][lane]);
        cg_close(c);
        cg_line(c, "unsigned *fu_done = (unsigned *)(fu_ws + %lld); // per column block: splits finished",
                (long long)(o->nred * per_red));
        cg_line(c, "__shared__ int fu_last;");
        cg_line(c, "__threadfence();");
        cg_line(c, "__syncthreads();");
        cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(&fu_done[bx], 1u) == %lldu;", (long long)(o->splits - 1));
        cg_line(c, "__syncthreads();");
        cg_line(c, "if (!fu_last) return;");
        cg_line(c, "__threadfence();");
        cg_line(c, "if (threadIdx.x == 0) fu_done[bx] = 0u; // ready for the next launch");
        cg_line(c, "if (ty == 0 && live)");
        cg_open(c);
        for (int i = 0; i < o->nred; i++) {
            for (int lane = 0; lane < o->vec; lane++)
                cg_line(c, "%s = %s;", o->var[i][lane], fu_red_identity(o->reds[i].op, o->reds[i].acc_dt));
            cg_line(c, "for (unsigned s = 0; s < %lldu; s++) // in split order", (long long)o->splits);
            cg_open(c);
            for (int lane = 0; lane < o->vec; lane++) {
                char v[128];
                snprintf(v, sizeof v, "__ldcg((const %s *)(fu_ws + %lld) + (long long)s * %lld + col + %d)",
                         cg_compute_type(o->reds[i].acc_dt), (long long)(i * per_red), (long long)o->C, lane);
                fu_red_combine(c, o->reds[i].op, o->var[i][lane], v);
            }
            cg_close(c);
        }
        cg_close(c);
    }
    /* the outputs of the columns */
    for (int i = 0; i < o->nred; i++) o->reds[i].avail = true;
    cg_line(c, "if (ty != 0 || !live) return;");
    c->vec = o->vec;
    c->lane_var = o->vec > 1 ? o->rank - 1 : -1;
    for (int k = 0; k < o->g->noutputs; k++) {
        fu_tensor t = o->g->outputs[k];
        const fu_value *v = fu_val(f, t);
        const cg_param *p = fu_kw_output(o->w, t);
        char lanes[8][32];
        cg_index oidx[FU_MAX_RANK], off;
        for (int lane = 0; lane < o->vec; lane++) {
            c->lane = lane;
            column_index(o, v, oidx);
            snprintf(lanes[lane], sizeof lanes[lane], "%s", cg_value(c, t, oidx));
        }
        c->lane = 0;
        column_index(o, v, oidx);
        cg_offset(c, v->rank, v->shape, v->strides, oidx, &off);
        if (o->vec > 1 && cg_offset_vectorizable(c, &off, o->vec)) {
            char base[CG_EXPR], tmp[16];
            cg_offset_base_expr(c, &off, base, sizeof base);
            snprintf(tmp, sizeof tmp, "fu_o%d", k);
            fu_kw_vector_store(o->w, p, base, tmp, (const char (*)[32])lanes, o->vec);
        } else {
            for (int lane = 0; lane < o->vec; lane++) {
                c->lane = lane;
                cg_index_refresh(c, &off);
                fu_kw_store(o->w, p, off.expr, lanes[lane]);
            }
            c->lane = 0;
        }
    }
    c->vec = 1;
    c->lane_var = -1;
    cg_close(c);
    kp->sched = FU_SCHED_OUTER;
    kp->grid = (unsigned)(o->gx * o->splits);
    kp->block = OUTER_THREADS;
    kp->shared_bytes = 0;
    kp->workspace_bytes = split ? (size_t)(o->nred * o->splits * o->C) * 8 + (size_t)o->gx * 4 + 64 : 0;
    snprintf(kp->config, sizeof kp->config,
             "outer: rows=%lld columns=%lld vec=%d threads=%dx%d column_blocks=%lld row_splits=%lld reductions=%d",
             (long long)o->Rn, (long long)o->C, o->vec, o->tx, o->ty, (long long)o->gx, (long long)o->splits, o->nred);
}

bool fu_sched_outer_reduction(const fu_group *g, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    outer_ctx *o = fu_calloc(1, sizeof *o);
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    if (!o || !w) {
        fu_free(o);
        fu_free(w);
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    o->g = g;
    o->f = g->f;
    o->w = w;
    bool ok = analyse(o, why, nwhy);
    /* the kernel's grid is 32 bits of blocks and its workspace indices 64 */
    ok = ok && fu_kw_begin(w, g, kp, "outer reduction (columns, coalesced; row splits combined by the last block)", why, nwhy);
    bool begun = ok;
    if (ok) {
        cg_ctx *c = &w->cg;
        for (int a = 0; a < o->rank; a++) {
            char name[16];
            snprintf(name, sizeof name, "%c%d", o->reduced[a] ? 'k' : 'o', a);
            cg_add_var(c, name);
        }
        c->user = o;
        c->lookup_register = outer_lookup_register;
        choose_config(o);
        ok = check_outputs(o, why, nwhy);
        if (ok && o->gx * o->splits >= INT32_MAX) {
            snprintf(why, nwhy, "outer reduction: %lld blocks do not fit a 32-bit grid", (long long)(o->gx * o->splits));
            ok = false;
        }
        if (ok) emit_kernel(o, kp);
        if (ok) ok = fu_kw_finish(w, kp, why, nwhy);
        else fu_kw_abort(w);
    }
    if (!ok && begun) { /* leave kp as it came for the next scheduler */
        fu_free(kp->ops);
        fu_free(kp->params);
        fu_free(kp->source);
        memset(kp, 0, sizeof *kp);
    }
    fu_free(o);
    fu_free(w);
    return ok;
}
