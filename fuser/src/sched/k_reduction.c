/*
 * k_reduction.c -- the reduction scheduler: normalization-style groups in
 * one kernel.
 *
 * The group's row reductions share a domain D (the shape they reduce) split
 * into outer axes (rows) and inner axes (reduced). A block owns a row at a
 * time (persistent grid: rows strided by gridDim.x, or taken in order from a
 * queue where the kernel also writes whole rows) and sweeps the row in
 * passes:
 *   - each pass computes the row reductions whose inputs are ready and writes
 *     the full-size outputs that depend only on what is ready;
 *   - sum(exp(E - max(E))) is recognized and computed in the same pass as
 *     max(E) with an online rescaling (one read for log-sum-exp);
 *   - when a later pass re-reads an input, the row is kept from the first pass
 *     instead, if it fits: in shared memory (each thread's own slots, so the
 *     passes stay rolled loops) or in registers (ROW_CACHE_SMEM=0): one read of
 *     the logits for a fused cross entropy forward+backward.
 * After the passes, per-row values (a loss per row) are written by one thread.
 * Reductions over all rows ("grid" reductions: a mean loss) are accumulated
 * per block (per row with the queue), written as partials, and combined in a
 * fixed order by the last block to finish, which then writes the scalar outputs: the result
 * is deterministic and needs no second kernel and no memset (the last block
 * resets the counter). A grid reduction that a row needs before it can finish
 * (the count of non-ignored rows in a mean backward) and that depends on no
 * row reduction is computed by every block up front (the prologue).
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "reduce_common.h"

#define MAX_REDS 32
#define MAX_CACHE 4
#ifndef CACHE_BYTES
#define CACHE_BYTES 128 /* bytes of a row each thread may keep between passes */
#endif
/* Loads a thread issues together (bytes in flight). One pass: 128 bytes of
 * the widest row input, whatever the dtype (32 elements left a bf16 row with
 * half the bytes in flight of an f32 one: 156 -> 146 us for the bf16 cross
 * entropy forward). Several passes without a register cache: 32 elements (with
 * 64 bf16 elements staged, the 3-pass bf16 backward at V = 128256 went from
 * 1483 to 1922 us on the H200: the staging registers of later passes cost
 * occupancy). */
#ifndef STAGE_BYTES
#define STAGE_BYTES 128
#endif
#define STAGE_ELEMS_MULTIPASS 32
/* Vectors of a row per thread: where the row is kept between passes, and
 * where it does not (one pass, or passes reading memory again). */
#ifndef CACHED_ROW_ITERS
#define CACHED_ROW_ITERS 8
#endif
#ifndef STREAMED_ROW_ITERS
#define STREAMED_ROW_ITERS 16
#endif
/* Where a row read again by a later pass is kept: 0 in registers (every pass
 * unrolled over the whole row, so the arrays are indexed by constants), 1 in
 * shared memory (each thread's own slots: rolled passes, a fraction of the
 * code for NVRTC). Later passes read ROW_SMEM_BATCH vectors at a time. */
#ifndef ROW_CACHE_SMEM
#define ROW_CACHE_SMEM 1
#endif
#ifndef REGISTER_ROW_ITERS
#define REGISTER_ROW_ITERS 4
#endif
#ifndef ROW_SMEM_BATCH
#define ROW_SMEM_BATCH 2
#endif
/* Rows taken in order from a queue (an atomic counter) instead of strided by
 * gridDim.x, where a persistent grid both reads and writes whole rows: the
 * SMs then sweep memory together, while strided rows drift apart. A copy of
 * 128 KiB rows through shared memory on the H200: 542.8 us strided, 524.9
 * from the queue, 521.3 with one block per row (docs/perf.md v13). Grid
 * reductions then keep one partial per row, combined in row order, so the
 * result does not depend on which block took which row. */
#ifndef ROW_QUEUE
#define ROW_QUEUE 1
#endif
/* A row's first batch of loads is issued before its per-row values (the
 * target id, the logit it picks), which wait on a load each: otherwise every
 * row starts with that round trip, its bulk loads not yet in flight. */
#ifndef ROW_LOADS_FIRST
#define ROW_LOADS_FIRST 1
#endif
/* Rows a block works on at once, a warp each, where a row needs one warp
 * (rows of up to 32 x CACHED/STREAMED_ROW_ITERS vectors: widths 768-4096):
 * a block of one warp per row let an SM hold 32 blocks, half its warps, and
 * paid a ticket from the row queue and two barriers per block reduction for
 * each short row. With WARP_ROWS warps a block, each row is reduced with
 * shuffles alone and rows are strided (no queue). 1 turns it off. */
#ifndef WARP_ROWS
#define WARP_ROWS 8
#endif
/* Rows whose later passes re-read more than a block's shared memory holds are
 * split over the blocks of a thread-block cluster (2, 4 or 8, the fewest
 * whose parts fit), each keeping its part in shared memory; the row's
 * reductions are combined through distributed shared memory. The row is then
 * read from memory once (cross entropy fwd+bwd f32 at V = 128256 re-read it:
 * 49.5% of copy). 0 turns it off. */
#ifndef CLUSTER_ROWS
#define CLUSTER_ROWS 1
#endif
#define STATIC_SHARED_BYTES 1024 /* fu_smem, fu_last and fu_next, rounded up */
/* Column reductions: the blocks' partials are combined by the last block of
 * each group of COL_GROUP_BLOCKS blocks, then the groups' by the last group;
 * each thread keeps at most COL_MAX_ACC accumulators (registers). */
#ifndef COL_GROUP_BLOCKS
#define COL_GROUP_BLOCKS 16
#endif
#define COL_MAX_ACC 16 /* (32 spilled the bf16 layer norm backward at C = 4096 under 64 registers) */
#define COL_BLOCKS_PER_SM 4 /* fewer blocks: fewer partials to combine */

/* RK_COL: a reduction of a full-size value over the outer axes (a column sum
 * of a row kernel: dweight and dbias of a norm backward), accumulated by each
 * thread at its own row positions in registers over the block's rows, then
 * combined over the blocks (COL_GROUP_BLOCKS, two levels of last blocks). */
typedef enum rkind { RK_ROW, RK_ROWGRID, RK_GRID_PRO, RK_GRID_EPI, RK_COL } rkind;
typedef enum batch_max_kind { BM_NONE, BM_REGISTER, BM_PACKED_BF16 } batch_max_kind;

typedef struct red_info {
    int node;
    fu_tensor out, in;
    fu_op op;
    rkind kind;
    int pass;
    int online_max; /* sum(exp(E - m)) computed with max m: index of m, else -1 */
    int online_sum; /* for that max: index of its sum, else -1 */
    batch_max_kind batch_max; /* how phase M reads the source in the pass being emitted */
    bool avail;
    char var[16];
} red_info;

typedef struct red_ctx {
    const fu_group *g;
    const fu_fusion *f;
    fu_kernel_writer *w;
    int rank;
    int64_t D[FU_MAX_RANK];
    bool inner[FU_MAX_RANK];
    int64_t rows, K;
    int nred;
    red_info reds[MAX_REDS];
    uint32_t *deps;  /* per tensor: reductions reached without passing one */
    int *seen;       /* per tensor, in one walk of the graph (walk_begin): 1 + the
                      * smallest depth it was reached at so far, 0 = not reached */
    int vec, threads, iters, passes;
    int warp_rows;      /* rows of a block at once, a warp each (WARP_ROWS), or 1: the block's threads a row */
    int cluster;        /* blocks a row is split over (CLUSTER_ROWS), or 1 */
    int64_t K_part;     /* a block's part of the row: K, or K / cluster rounded up to vectors */
    int nslots;         /* distributed-shared-memory slots per row (the row reductions), with cluster > 1 */
    int block_threads;  /* threads * warp_rows */
    const char *tid;    /* the thread's index within its row: "threadIdx.x" or "fu_lane" */
    int elem_bytes; /* size of the widest full-size tensor's element */
    int ncache;
    fu_tensor cache_t[MAX_CACHE];
    char cache_base[MAX_CACHE][CG_EXPR];
    char cache_var[64]; /* what lookup_cache hands back (the memo copies it) */
    int nsmem;                    /* inputs kept in shared memory between passes */
    fu_tensor smem_t[MAX_CACHE];
    int smem_slot_bytes[MAX_CACHE]; /* one thread's vector of it */
    int64_t smem_offset[MAX_CACHE]; /* where its slots start in fu_rows */
    int64_t smem_bytes;           /* all slots of the block */
    int pass;                     /* the pass being emitted */
    int nstage;          /* inputs of the current pass loaded a batch ahead */
    fu_tensor stage_t[MAX_CACHE];
    char stage_base[MAX_CACHE][CG_EXPR];
    int batch;
    bool in_pass;
    bool first_batch_issued; /* pass 1's first batch was loaded before the per-row values */
    int ncol;                /* column reductions (RK_COL) */
} red_ctx;

static int red_of(const red_ctx *r, fu_tensor t)
{
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].out == t) return i;
    return -1;
}

/* Index of t among the inputs kept in shared memory between passes, or -1. */
static int smem_index(const red_ctx *r, fu_tensor t)
{
    for (int k = 0; k < r->nsmem; k++)
        if (r->smem_t[k] == t) return k;
    return -1;
}

static bool is_full_shape(const red_ctx *r, const fu_value *v)
{
    return v->rank == r->rank && !memcmp(v->shape, r->D, (size_t)r->rank * sizeof *v->shape);
}

/* The index of a per-row tensor t at the current row, or false if t is not
 * per-row (constant along the inner axes). */
static bool row_index(const red_ctx *r, const fu_value *t, cg_index *idx)
{
    const cg_ctx *c = &r->w->cg;
    if (t->rank <= r->rank) {
        bool ok = true;
        for (int a = 0; a < t->rank && ok; a++) {
            int da = r->rank - t->rank + a;
            if (t->shape[a] == 1) cg_index_const(&idx[a], 0);
            else if (r->inner[da] || t->shape[a] != r->D[da]) ok = false;
            else cg_index_var(&idx[a], da, c->var_names[da]);
        }
        if (ok) return true;
    }
    /* squeezed form: the non-1 extents are the outer extents in order ([N] for [N, 1]) */
    int oa[FU_MAX_RANK], no = 0;
    for (int a = 0; a < r->rank; a++)
        if (!r->inner[a] && r->D[a] != 1) oa[no++] = a;
    int k = 0;
    for (int a = 0; a < t->rank; a++) {
        if (t->shape[a] == 1) {
            cg_index_const(&idx[a], 0);
            continue;
        }
        if (k >= no || t->shape[a] != r->D[oa[k]]) return false;
        cg_index_var(&idx[a], oa[k], c->var_names[oa[k]]);
        k++;
    }
    return k == no;
}

/* The index of a per-column tensor t (the inner axes' extents, the outer ones
 * 1 or left out) at the current column (the inner variables), or false. */
static bool col_index(const red_ctx *r, const fu_value *t, cg_index *idx)
{
    const cg_ctx *c = &r->w->cg;
    if (t->rank == r->rank) {
        for (int a = 0; a < t->rank; a++) {
            if (t->shape[a] == 1) cg_index_const(&idx[a], 0);
            else if (!r->inner[a] || t->shape[a] != r->D[a]) return false;
            else cg_index_var(&idx[a], a, c->var_names[a]);
        }
        return true;
    }
    int ia[FU_MAX_RANK], ni = 0;
    for (int a = 0; a < r->rank; a++)
        if (r->inner[a]) ia[ni++] = a;
    if (t->rank != ni) return false;
    for (int k = 0; k < ni; k++) {
        if (t->shape[k] != r->D[ia[k]]) return false;
        if (t->shape[k] == 1) cg_index_const(&idx[k], 0);
        else cg_index_var(&idx[k], ia[k], c->var_names[ia[k]]);
    }
    return true;
}

static const char *lookup_register(cg_ctx *c, fu_tensor t, const cg_index *idx, void *user)
{
    red_ctx *r = user;
    int i = red_of(r, t);
    if (i < 0) return NULL;
    red_info *ri = &r->reds[i];
    const fu_value *v = fu_val(r->f, t);
    if (!ri->avail) {
        cg_fail(c, "reduction: '%s' is needed before it can be computed", v->name);
        return NULL;
    }
    if (ri->kind == RK_COL) {
        cg_index want[FU_MAX_RANK];
        bool ok = col_index(r, v, want);
        for (int a = 0; ok && a < v->rank; a++) ok = strcmp(want[a].expr, idx[a].expr) == 0;
        if (!ok) {
            cg_fail(c, "reduction: column value '%s' is read at another column", v->name);
            return NULL;
        }
    }
    if (ri->kind == RK_ROW) {
        cg_index want[FU_MAX_RANK];
        if (!row_index(r, v, want)) {
            cg_fail(c, "reduction: '%s' is not a per-row value", v->name);
            return NULL;
        }
        for (int a = 0; a < v->rank; a++)
            if (strcmp(want[a].expr, idx[a].expr) != 0) {
                cg_fail(c, "reduction: row value '%s' is read at another row", v->name);
                return NULL;
            }
    }
    return ri->var;
}

/* Element `lane` of slot `slot` of register array <array><k> as f32. Pairs of
 * bf16 are read as words, each half converted by one instruction (a 16-bit
 * read of the upper half took a PRMT and a shift). */
static const char *register_element(red_ctx *r, const cg_ctx *c, fu_tensor t, int k, const char *array, const char *slot)
{
    if (fu_val(r->f, t)->dtype == FU_BF16 && c->vec % 2 == 0)
        snprintf(r->cache_var, sizeof r->cache_var, "fu_pair_%s(%s%d, %s * %d + %d)", c->lane % 2 ? "hi" : "lo", array, k,
                 slot, c->vec / 2, c->lane / 2);
    else
        snprintf(r->cache_var, sizeof r->cache_var, "fu_load(%s%d[%s * %d + %d])", array, k, slot, c->vec, c->lane);
    return r->cache_var;
}

/* Inside a pass, a load at the row position of a cached or staged input is a
 * register read. */
static const char *lookup_cache(cg_ctx *c, fu_tensor t, const cg_index *off, void *user)
{
    red_ctx *r = user;
    if (!r->in_pass || !off->affine || off->lane_coef != (c->vec > 1 ? 1 : 0)) return NULL;
    char base[CG_EXPR];
    cg_offset_base_expr(c, off, base, sizeof base);
    for (int i = 0; i < r->ncache; i++)
        if (r->cache_t[i] == t && strcmp(r->cache_base[i], base) == 0) return register_element(r, c, t, i, "fu_c", "it");
    for (int i = 0; i < r->nstage; i++)
        if (r->stage_t[i] == t && strcmp(r->stage_base[i], base) == 0) return register_element(r, c, t, i, "fu_s", "b");
    return NULL;
}

/* ------------------------------------------------------------ analysis */

static int output_pass(const struct red_ctx *r, fu_tensor t);

static uint32_t deps_of(const red_ctx *r, fu_tensor t) { return r->deps[t]; }

/* E of an online sum(exp(E - max(E))) ri: what its max and its terms read. */
static fu_tensor online_source(const red_ctx *r, const red_info *ri)
{
    return fu_producer(r->f, fu_producer(r->f, ri->in)->inputs[0])->inputs[0];
}

static bool analyse(red_ctx *r, char *why, size_t nwhy)
{
    const fu_fusion *f = r->f;
    const fu_group *g = r->g;
    /* the domain: the input of the reductions that keep some axes */
    int first_partial = -1, largest_full = -1;
    bool first_inner = false; /* first_partial reduces the innermost axis */
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i] || fu_op_kind_of(n->op) != FU_KIND_REDUCE) continue;
        if (r->nred == MAX_REDS) {
            snprintf(why, nwhy, "reduction: more than %d reductions", MAX_REDS);
            return false;
        }
        const fu_value *x = fu_val(f, n->inputs[0]);
        red_info *ri = &r->reds[r->nred++];
        memset(ri, 0, sizeof *ri);
        ri->node = i;
        ri->out = n->output;
        ri->in = n->inputs[0];
        ri->op = n->op;
        ri->online_max = ri->online_sum = -1;
        snprintf(ri->var, sizeof ri->var, "r%d", r->nred - 1);
        bool full = n->attrs.naxes == 0 || n->attrs.naxes == x->rank;
        bool inner_reduced = n->attrs.naxes == 0;
        for (int k = 0; k < n->attrs.naxes; k++) inner_reduced |= n->attrs.axes[k] == x->rank - 1;
        /* the rows run along the innermost axis: a column reduction found first
         * does not make the columns the rows */
        if (!full && (first_partial < 0 || (inner_reduced && !first_inner))) {
            first_partial = r->nred - 1;
            first_inner = inner_reduced;
        }
        if (full && x->rank >= 1 &&
            (largest_full < 0 || fu_shape_numel(x->rank, x->shape) >
                                     fu_tensor_numel(f, r->reds[largest_full].in)))
            largest_full = r->nred - 1;
    }
    if (r->nred == 0) {
        snprintf(why, nwhy, "reduction: no reductions");
        return false;
    }
    if (first_partial >= 0) {
        const fu_node *n = &f->nodes[r->reds[first_partial].node];
        const fu_value *x = fu_val(f, n->inputs[0]);
        r->rank = x->rank;
        memcpy(r->D, x->shape, sizeof x->shape);
        for (int k = 0; k < n->attrs.naxes; k++) r->inner[n->attrs.axes[k]] = true;
    } else if (largest_full >= 0) {
        const fu_value *x = fu_val(f, r->reds[largest_full].in);
        r->rank = x->rank;
        memcpy(r->D, x->shape, sizeof x->shape);
        r->inner[x->rank - 1] = true; /* rows of the last axis, then across rows */
        if (x->rank == 1) r->inner[0] = true;
    } else {
        snprintf(why, nwhy, "reduction: only reductions of scalars");
        return false;
    }
    r->rows = r->K = 1;
    for (int a = 0; a < r->rank; a++) {
        if (r->inner[a]) r->K *= r->D[a];
        else r->rows *= r->D[a];
    }
    /* classify */
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        const fu_node *n = &f->nodes[ri->node];
        const fu_value *x = fu_val(f, ri->in);
        bool full = n->attrs.naxes == 0 || n->attrs.naxes == x->rank;
        if (is_full_shape(r, x) && !full) {
            bool same = true;
            bool red[FU_MAX_RANK] = {false};
            for (int k = 0; k < n->attrs.naxes; k++) red[n->attrs.axes[k]] = true;
            bool opposite = true;
            for (int a = 0; a < r->rank; a++) {
                same &= red[a] == r->inner[a];
                opposite &= red[a] == !r->inner[a];
            }
            if (opposite && !same) {
                ri->kind = RK_COL;
                continue;
            }
            if (!same) {
                snprintf(why, nwhy, "reduction: '%s' reduces other axes than the row reductions", x->name);
                return false;
            }
            ri->kind = RK_ROW;
        } else if (is_full_shape(r, x) && full) {
            ri->kind = r->rows == 1 ? RK_ROW : RK_ROWGRID; /* one row: the grid is the row */
        } else if (full) {
            cg_index idx[FU_MAX_RANK];
            if (!row_index(r, x, idx)) {
                snprintf(why, nwhy, "reduction: '%s' is neither a row nor a per-row value", x->name);
                return false;
            }
            ri->kind = RK_GRID_EPI;
        } else {
            snprintf(why, nwhy, "reduction: '%s' does not fit the row domain", fu_val(f, ri->out)->name);
            return false;
        }
    }
    /* dependencies: which reductions each tensor reads without passing through one */
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i]) continue;
        int ri = red_of(r, n->output);
        if (ri >= 0) {
            r->deps[n->output] = 1u << ri;
            continue;
        }
        uint32_t d = 0;
        for (int k = 0; k < n->ninputs; k++) d |= r->deps[n->inputs[k]];
        r->deps[n->output] = d;
    }
    /* online softmax: sum(exp(E - m)) with m = max(E) over the same row */
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        /* the online state is float (f32, f16, bf16 rows); f64 rows take two passes */
        if (ri->op != FU_OP_SUM || ri->kind != RK_ROW || strcmp(cg_compute_type(fu_val(f, ri->out)->dtype), "float") != 0)
            continue;
        const fu_node *e = fu_producer(f, ri->in);
        if (!e || e->op != FU_OP_EXP || !g->in_group[e - f->nodes]) continue;
        const fu_node *sub = fu_producer(f, e->inputs[0]);
        if (!sub || sub->op != FU_OP_SUB || !g->in_group[sub - f->nodes]) continue;
        fu_tensor m = sub->inputs[1];
        const fu_node *mb = fu_producer(f, m);
        while (mb && mb->op == FU_OP_BROADCAST && g->in_group[mb - f->nodes]) {
            m = mb->inputs[0];
            mb = fu_producer(f, m);
        }
        int mi = red_of(r, m);
        if (mi < 0 || r->reds[mi].op != FU_OP_RMAX || r->reds[mi].kind != RK_ROW || r->reds[mi].in != sub->inputs[0] ||
            r->reds[mi].online_sum >= 0 || !is_full_shape(r, fu_val(f, sub->inputs[0])))
            continue;
        ri->online_max = mi;
        r->reds[mi].online_sum = i;
    }
    /* grid reductions needed inside the row loop go to the prologue */
    uint32_t row_bits = 0;
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].kind == RK_ROW || r->reds[i].kind == RK_ROWGRID) row_bits |= 1u << i;
    uint32_t needed_in_rows = 0;
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].kind != RK_GRID_EPI) needed_in_rows |= deps_of(r, r->reds[i].in);
    for (int o = 0; o < g->noutputs; o++) {
        const fu_value *v = fu_val(f, g->outputs[o]);
        cg_index idx[FU_MAX_RANK];
        bool per_row = row_index(r, v, idx) && (fu_shape_numel(v->rank, v->shape) > 1 || r->rows == 1);
        if (is_full_shape(r, v) || per_row) needed_in_rows |= deps_of(r, g->outputs[o]);
    }
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        if (ri->kind != RK_GRID_EPI) continue;
        bool in_rows = needed_in_rows & (1u << i);
        bool row_free = !(deps_of(r, ri->in) & row_bits);
        if (in_rows && row_free) ri->kind = RK_GRID_PRO;
    }
    /* a prologue reduction may only read earlier prologue reductions */
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        uint32_t d = deps_of(r, ri->in);
        for (int j = 0; j < r->nred; j++) {
            if (!(d & (1u << j))) continue;
            rkind kj = r->reds[j].kind;
            if (ri->kind == RK_GRID_PRO && kj != RK_GRID_PRO) {
                snprintf(why, nwhy, "reduction: '%s' is needed by every row but depends on a row value", fu_val(f, ri->out)->name);
                return false;
            }
            if ((ri->kind == RK_ROW || ri->kind == RK_ROWGRID) && (kj == RK_GRID_EPI || kj == RK_ROWGRID)) {
                snprintf(why, nwhy, "reduction: row reduction '%s' needs the grid-wide '%s'", fu_val(f, ri->out)->name,
                         fu_val(f, r->reds[j].out)->name);
                return false;
            }
            if (ri->kind == RK_GRID_EPI && (kj == RK_GRID_EPI || kj == RK_ROWGRID)) {
                snprintf(why, nwhy, "reduction: '%s' needs another grid-wide reduction", fu_val(f, ri->out)->name);
                return false;
            }
            if (kj == RK_COL || (ri->kind == RK_COL && kj != RK_ROW && kj != RK_GRID_PRO)) {
                snprintf(why, nwhy, "reduction: '%s' reads '%s', a column or grid-wide reduction", fu_val(f, ri->out)->name,
                         fu_val(f, r->reds[j].out)->name);
                return false;
            }
        }
    }
    /* passes: a row reduction runs after the row reductions it reads */
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        if (ri->kind != RK_ROW && ri->kind != RK_ROWGRID) continue;
        uint32_t d = deps_of(r, ri->online_max >= 0 ? online_source(r, ri) : ri->in);
        int p = 1;
        for (int j = 0; j < i; j++)
            if ((d & (1u << j)) && r->reds[j].pass + 1 > p) p = r->reds[j].pass + 1;
        for (int j = i; j < r->nred; j++)
            if (d & (1u << j)) {
                snprintf(why, nwhy, "reduction: '%s' reads a later reduction", fu_val(f, ri->out)->name);
                return false;
            }
        if (ri->online_max >= 0) p = r->reds[ri->online_max].pass;
        ri->pass = p;
        if (p > r->passes) r->passes = p;
    }
    if (r->passes == 0) r->passes = 1;
    /* column reductions accumulate in the pass after the row values they read */
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].kind == RK_COL) {
            r->reds[i].pass = output_pass(r, r->reds[i].in);
            if (r->reds[i].pass > r->passes) r->passes = r->reds[i].pass;
            r->ncol++;
        }
    /* full-size outputs are written in the pass after the row values they read */
    for (int o = 0; o < g->noutputs; o++)
        if (is_full_shape(r, fu_val(f, g->outputs[o]))) {
            int p = output_pass(r, g->outputs[o]);
            if (p > r->passes) r->passes = p;
        }
    return true;
}

/* Pass in which a full-size output is written: after the row reductions it reads. */
static int output_pass(const struct red_ctx *r, fu_tensor t)
{
    int p = 1;
    uint32_t d = deps_of(r, t);
    for (int i = 0; i < r->nred; i++)
        if ((d & (1u << i)) && r->reds[i].pass + 1 > p) p = r->reds[i].pass + 1;
    return p;
}

const char *fu_red_identity(fu_op op, fu_dtype dt)
{
    bool integer = fu_dtype_is_int(dt);
    if (op == FU_OP_SUM) return integer ? "0ll" : dt == FU_F64 ? "0.0" : "0.0f";
    if (op == FU_OP_RMAX) return integer ? "(-9223372036854775807ll - 1)" : dt == FU_F64 ? "-FU_DINF" : "-FU_INF";
    return integer ? "9223372036854775807ll" : dt == FU_F64 ? "FU_DINF" : "FU_INF";
}

static const char *op_functor(fu_op op) { return op == FU_OP_SUM ? "fu_op_sum()" : op == FU_OP_RMAX ? "fu_op_max()" : "fu_op_min()"; }

void fu_red_combine(cg_ctx *c, fu_op op, const char *acc, const char *v)
{
    if (op == FU_OP_SUM) cg_line(c, "%s += %s;", acc, v);
    else cg_line(c, "%s = %s(%s, %s);", acc, op == FU_OP_RMAX ? "fu_max" : "fu_min", acc, v);
}

static const char *smem_of(const char *ct)
{
    return !strcmp(ct, "float") ? "(float *)fu_smem" : !strcmp(ct, "double") ? "(double *)fu_smem" : "(long long *)fu_smem";
}

/* ------------------------------------------------------------ emission */

static void emit_outer_vars(red_ctx *r, const char *row)
{
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    int64_t stride = 1;
    int64_t strides[FU_MAX_RANK];
    for (int a = r->rank - 1; a >= 0; a--) {
        strides[a] = stride;
        if (!r->inner[a]) stride *= r->D[a];
    }
    int nouter = 0;
    for (int a = 0; a < r->rank; a++) nouter += !r->inner[a] && r->D[a] != 1;
    for (int a = 0; a < r->rank; a++) {
        if (r->inner[a]) continue;
        if (r->D[a] == 1) cg_line(c, "const %s %s = 0;", it, c->var_names[a]);
        else if (nouter == 1) cg_line(c, "const %s %s = %s;", it, c->var_names[a], row);
        else cg_line(c, "const %s %s = (%s / %lld) %% %lld;", it, c->var_names[a], row, (long long)strides[a], (long long)r->D[a]);
    }
}

static void full_index(red_ctx *r, cg_index *idx)
{
    cg_ctx *c = &r->w->cg;
    for (int a = 0; a < r->rank; a++) cg_index_var(&idx[a], a, c->var_names[a]);
    if (r->vec > 1) {
        idx[r->rank - 1].lane_coef = 1;
        cg_index_refresh(c, &idx[r->rank - 1]);
    }
}

/* Starts a walk of the graph from one root: no tensor reached yet. The walks
 * below follow a DAG whose tensors can be reached along many paths (x1 =
 * add(x0, x0), x2 = add(x1, x1), ...: 2^depth paths), so each visits a tensor
 * again only when it reaches it at a smaller depth than before. A visit at a
 * smaller depth goes at least as deep under the depth caps, so skipping the
 * others changes nothing: reads_at_row answers the same, hoist_row_values
 * makes the same cg_value calls first (repeated calls hit the memo). */
static void walk_begin(const red_ctx *r) { memset(r->seen, 0, (size_t)r->f->nvalues * sizeof *r->seen); }

/* Whether the walk should visit t at `depth` (first time, or shallower than
 * before); records the depth. */
static bool walk_visit(const red_ctx *r, fu_tensor t, int depth)
{
    if (r->seen[t] && r->seen[t] - 1 <= depth) return false;
    r->seen[t] = depth + 1;
    return true;
}

static bool reads_at_row_walk(const red_ctx *r, fu_tensor from, fu_tensor t, int depth)
{
    if (from == t) return true;
    if (depth > 256 || red_of(r, from) >= 0) return false;
    if (!walk_visit(r, from, depth)) return false; /* that visit went as deep and found no t */
    const fu_node *n = fu_producer(r->f, from);
    if (!n || !r->g->in_group[n - r->f->nodes]) return false;
    fu_op_kind k = fu_op_kind_of(n->op);
    bool keeps_index = k == FU_KIND_UNARY || k == FU_KIND_BINARY || k == FU_KIND_WHERE || k == FU_KIND_CAST ||
                       k == FU_KIND_HINT || k == FU_KIND_BROADCAST ||
                       (k == FU_KIND_RESHAPE && fu_val(r->f, n->inputs[0])->rank == fu_val(r->f, from)->rank &&
                        !memcmp(fu_val(r->f, n->inputs[0])->shape, fu_val(r->f, from)->shape,
                                sizeof(int64_t) * (size_t)fu_val(r->f, from)->rank));
    if (!keeps_index) return false;
    for (int i = 0; i < n->ninputs; i++)
        if (reads_at_row_walk(r, n->inputs[i], t, depth + 1)) return true;
    return false;
}

/* Does the pass read full-size input t at the row position (through ops that
 * keep the index: pointwise, cast, where, broadcast, same-shape reshape)? */
static bool reads_at_row(const red_ctx *r, fu_tensor from, fu_tensor t)
{
    walk_begin(r);
    return reads_at_row_walk(r, from, t, 0);
}


/* Full-size outputs written in this pass. */
static int pass_outputs(const red_ctx *r, int pass, fu_tensor *out, int cap)
{
    int n = 0;
    for (int o = 0; o < r->g->noutputs && n < cap; o++)
        if (is_full_shape(r, fu_val(r->f, r->g->outputs[o])) && output_pass(r, r->g->outputs[o]) == pass)
            out[n++] = r->g->outputs[o];
    return n;
}

/* The offset of input t at the row position with the lane term removed: what
 * lookup_cache matches to find a cached or staged element. */
static void canonical_base(red_ctx *r, fu_tensor t, char *buf)
{
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, t);
    cg_index idx[FU_MAX_RANK], off;
    int saved_vec = c->vec, saved_lane_var = c->lane_var;
    c->vec = r->vec;
    c->lane_var = r->vec > 1 ? r->rank - 1 : -1;
    c->lane = 0;
    full_index(r, idx);
    cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
    cg_offset_base_expr(c, &off, buf, CG_EXPR);
    c->vec = saved_vec;
    c->lane_var = saved_lane_var;
}

/* Does the pass read full-size input t at the row position (its row
 * reductions or the full-size outputs it writes)? */
static bool pass_reads(const red_ctx *r, int pass, fu_tensor t)
{
    for (int q = 0; q < r->nred; q++) {
        const red_info *ri = &r->reds[q];
        if (ri->pass != pass || (ri->kind != RK_ROW && ri->kind != RK_ROWGRID && ri->kind != RK_COL)) continue;
        if (reads_at_row(r, ri->online_max >= 0 ? online_source(r, ri) : ri->in, t)) return true;
    }
    fu_tensor outs[16];
    int nout = pass_outputs(r, pass, outs, 16);
    for (int o = 0; o < nout; o++)
        if (reads_at_row(r, outs[o], t)) return true;
    return false;
}

static void add_staged(red_ctx *r, fu_tensor t)
{
    canonical_base(r, t, r->stage_base[r->nstage]);
    r->stage_t[r->nstage++] = t;
}

/* The inputs a pass reads at the row position and that are not in the
 * register cache: loaded a batch ahead of the arithmetic (staged). Pass 1
 * stages the inputs kept in shared memory first, read or not, since it fills
 * their slots (at most MAX_CACHE of them, so they always fit). */
static void choose_staged(red_ctx *r, int pass)
{
    const fu_fusion *f = r->f;
    r->nstage = 0;
    if (pass == 1)
        for (int k = 0; k < r->nsmem; k++) add_staged(r, r->smem_t[k]);
    for (int i = 0; i < r->w->nparams && r->nstage < MAX_CACHE; i++) {
        const cg_param *p = &r->w->params[i];
        if (p->is_output || !is_full_shape(r, fu_val(f, p->tensor))) continue;
        bool cached = false;
        for (int k = 0; k < r->ncache; k++) cached |= r->cache_t[k] == p->tensor;
        if (cached || (pass == 1 && smem_index(r, p->tensor) >= 0)) continue;
        if (pass_reads(r, pass, p->tensor)) add_staged(r, p->tensor);
    }
}

static void emit_inner_vars(red_ctx *r)
{
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    int ninner = 0, last_inner = -1;
    for (int a = 0; a < r->rank; a++)
        if (r->inner[a]) {
            ninner++;
            last_inner = a;
        }
    if (ninner == 1) {
        cg_line(c, "const %s %s = kb;", it, c->var_names[last_inner]);
        return;
    }
    int64_t stride = 1;
    for (int a = r->rank - 1; a >= 0; a--) {
        if (!r->inner[a]) continue;
        cg_line(c, "const %s %s = (kb / %lld) %% %lld;", it, c->var_names[a], (long long)stride, (long long)r->D[a]);
        stride *= r->D[a];
    }
}

/* This thread's shared-memory slot `it` of the input kept there (index k). */
static void smem_slot(const red_ctx *r, int k, char *buf, size_t n)
{
    snprintf(buf, n, "fu_rows + %lld + ((int)it * %d + threadIdx.x) * %d", (long long)r->smem_offset[k], r->block_threads,
             r->smem_slot_bytes[k]);
}

/* Loads input t at the row position of batch slot b into `dst` (raw storage:
 * "fu_s0 + b * 4"; after pass 1 from this thread's shared-memory slot where t
 * is kept there), or into register cache k. */
static void emit_row_load(red_ctx *r, fu_tensor t, const cg_index *idx, const char *raw_dst, int cache_k)
{
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, t);
    const cg_param *p = cg_find_param(c, t);
    cg_index off;
    c->lane = 0;
    cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
    char base[CG_EXPR];
    cg_offset_base_expr(c, &off, base, sizeof base);
    int bytes = (int)fu_dtype_size(v->dtype) * r->vec;
    const char *wide = cg_vector_type(bytes);
    bool vector = r->vec > 1 && cg_offset_vectorizable(c, &off, r->vec);
    int sk = smem_index(r, t);
    if (raw_dst && sk >= 0 && r->pass > 1) { /* kept by pass 1 in this thread's slots */
        char slot[96];
        smem_slot(r, sk, slot, sizeof slot);
        cg_line(c, "*(%s *)(%s) = *(const %s *)(%s);", wide, raw_dst, wide, slot);
        c->lane = 0;
        return;
    }
    if (raw_dst) {
        if (vector) cg_line(c, "*(%s *)(%s) = __ldg((const %s *)(%s + %s));", wide, raw_dst, wide, p->name, base);
        else
            for (int lane = 0; lane < r->vec; lane++) {
                c->lane = lane;
                cg_index_refresh(c, &off);
                cg_line(c, "(%s)[%d] = %s[%s];", raw_dst, lane, p->name, off.expr);
            }
    } else { /* the cross-pass cache keeps the row in its storage type */
        char dst[48];
        snprintf(dst, sizeof dst, "fu_c%d + it * %d", cache_k, r->vec);
        emit_row_load(r, t, idx, dst, -1);
    }
    c->lane = 0;
}

/* Opens the block of one batch slot's work: guarded by the row length unless
 * the batches cover the row exactly (no branches in the unrolled passes:
 * less code for NVRTC, fewer instructions: bf16 forward 147 -> 144 us). Kept
 * where the row stays in registers between passes: without the branches
 * ptxas spilled the bf16 fused cross entropy (152 bytes; 312 -> 404 us). */
static void open_position_guard(red_ctx *r)
{
    int64_t covered = (int64_t)((r->iters + r->batch - 1) / r->batch) * r->batch * r->threads * r->vec;
    bool exact = covered == r->K_part && r->K_part * r->cluster == r->K;
    if (r->cluster > 1 && (!exact || r->ncache > 0)) cg_line(&r->w->cg, "if (kb < fu_kend) {");
    else if (!exact || r->ncache > 0) cg_line(&r->w->cg, "if (kb < %lld) {", (long long)r->K);
    else cg_line(&r->w->cg, "{ // the batches cover the row exactly");
}

/* Opens one batch slot of an unrolled pass (b, its iteration it and row
 * position kb, guarded as open_position_guard says, and the inner-axis
 * variables); close_batch_slot ends it. */
static void open_batch_slot(red_ctx *r)
{
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int b = 0; b < %d; b++) {", r->batch);
    c->indent++;
    c->scope++;
    cg_line(c, "const int it = it0 + b;");
    cg_line(c, "const %s kb = %s((%s)it * %d + %s) * %d;", it, r->cluster > 1 ? "fu_kbase + " : "", it, r->threads, r->tid,
            r->vec);
    open_position_guard(r);
    c->indent++;
    c->scope++;
    emit_inner_vars(r);
}

static void close_batch_slot(red_ctx *r)
{
    cg_ctx *c = &r->w->cg;
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "}");
    cg_close(c); /* b */
}

/* How phase M reads an online source: not at all (the source is computed
 * from the row, so phase M would compute it twice and keep both copies live:
 * the bf16 primitives kernel spilled), as the staged or cached f32 element
 * itself (a register), or as the packed pairs of a staged or cached bf16
 * input converted to f32 (raw = "fu_s0 + b * 8": two elements per max). */
static batch_max_kind batch_max_source(const red_ctx *r, const red_info *ri, char *raw, size_t n)
{
    fu_tensor e = online_source(r, ri), t = e;
    const fu_node *cast = fu_producer(r->f, e);
    if (cast && cast->op == FU_OP_CAST) t = cast->inputs[0];
    const fu_value *tv = fu_val(r->f, t);
    if (fu_val(r->f, e)->dtype != FU_F32 || !is_full_shape(r, tv)) return BM_NONE;
    int k = 0;
    while (k < r->nstage && r->stage_t[k] != t) k++;
    bool staged = k < r->nstage;
    if (!staged) {
        k = 0;
        while (k < r->ncache && r->cache_t[k] != t) k++;
        if (k == r->ncache) return BM_NONE;
    }
    if (tv->dtype == FU_F32) return BM_REGISTER;
    if (tv->dtype != FU_BF16 || r->vec < 2 || r->vec % 2) return BM_NONE;
    if (staged) snprintf(raw, n, "fu_s%d + b * %d", k, r->vec);
    else snprintf(raw, n, "fu_c%d + it * %d", k, r->vec);
    return BM_PACKED_BF16;
}

/* Phase M of an online log-sum-exp: the max of the batch first, then one
 * rescale of the running sum per batch (not one per vector), so phase B adds
 * exp(x - m) with m fixed. */
static void emit_batch_max(red_ctx *r, int pass, const cg_index *idx)
{
    cg_ctx *c = &r->w->cg;
    bool any = false;
    char raw[MAX_REDS][48];
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        ri->batch_max = BM_NONE;
        if (ri->pass != pass || ri->online_max < 0) continue;
        ri->batch_max = batch_max_source(r, ri, raw[i], sizeof raw[i]);
        if (ri->batch_max == BM_PACKED_BF16) cg_line(c, "unsigned mb%d = 0xff80ff80u; // the batch's max, two bf16 lanes", i);
        else if (ri->batch_max == BM_REGISTER) cg_line(c, "float mb%d = -FU_INF; // the batch's max", i);
        any |= ri->batch_max != BM_NONE;
    }
    if (!any) return;
    open_batch_slot(r);
    r->in_pass = true;
    for (int i = 0; i < r->nred; i++) {
        const red_info *ri = &r->reds[i];
        if (ri->pass != pass || ri->batch_max == BM_NONE) continue;
        if (ri->batch_max == BM_PACKED_BF16) {
            for (int w = 0; w < r->vec / 2; w++)
                cg_line(c, "mb%d = fu_max_bf16x2(mb%d, ((const unsigned *)(%s))[%d]);", i, i, raw[i], w);
            continue;
        }
        for (int lane = 0; lane < r->vec; lane++) {
            c->lane = lane;
            cg_index li[FU_MAX_RANK];
            memcpy(li, idx, sizeof li);
            cg_index_refresh(c, &li[r->rank - 1]);
            cg_line(c, "mb%d = fu_max(mb%d, %s);", i, i, cg_value(c, online_source(r, ri), li));
        }
        c->lane = 0;
    }
    r->in_pass = false;
    close_batch_slot(r);
    for (int i = 0; i < r->nred; i++) {
        const red_info *ri = &r->reds[i];
        if (ri->pass != pass || ri->batch_max == BM_NONE) continue;
        const char *m = r->reds[ri->online_max].var;
        char mb[80];
        if (ri->batch_max == BM_PACKED_BF16) snprintf(mb, sizeof mb, "fu_max(fu_bf16x2_lo(mb%d), fu_bf16x2_hi(mb%d))", i, i);
        else snprintf(mb, sizeof mb, "mb%d", i);
        cg_line(c, "{ const float mx = %s; if (mx > %s) { %s *= fu_exp_sub(%s, mx); %s = mx; } }", mb, m, ri->var, m, m);
    }
}

/* What pass `pass` loads and in batches of how many vectors (r->pass,
 * r->nstage and r->stage_t, r->batch). */
static void plan_pass(red_ctx *r, int pass)
{
    r->pass = pass;
    choose_staged(r, pass);
    /* With a register cache the whole pass is one batch (its arrays must be
     * indexed by constants after unrolling); else batches of stage_iters:
     * STAGE_BYTES from memory in flight where the row is read once, or by the
     * pass that fills the shared-memory slots; ROW_SMEM_BATCH vectors where
     * every staged input comes from those slots; else STAGE_ELEMS_MULTIPASS
     * elements. */
    bool from_slots = pass > 1 && r->nstage > 0;
    for (int k = 0; k < r->nstage; k++) from_slots &= smem_index(r, r->stage_t[k]) >= 0;
    int stage_iters = r->passes == 1 || (r->nsmem && pass == 1) ? STAGE_BYTES / (r->vec * r->elem_bytes)
                      : from_slots                              ? ROW_SMEM_BATCH
                                                                : STAGE_ELEMS_MULTIPASS / r->vec;
    if (stage_iters < 1) stage_iters = 1;
    int batch = r->ncache ? r->iters : (r->iters < stage_iters ? r->iters : stage_iters);
    if (batch < 1) batch = 1;
    r->batch = batch;
}

static void declare_staged(red_ctx *r)
{
    for (int k = 0; k < r->nstage; k++) {
        const fu_value *v = fu_val(r->f, r->stage_t[k]);
        cg_line(&r->w->cg, "alignas(16) %s fu_s%d[%d]; // '%s', loaded a batch ahead", cg_storage_type(v->dtype), k,
                r->batch * r->vec, v->name);
    }
}

/* Phase A of a pass: every load of the batch at it0, issued together. */
static void emit_batch_loads(red_ctx *r, const cg_index *idx)
{
    if (r->nstage == 0 && !(r->pass == 1 && r->ncache > 0)) return;
    r->in_pass = false;
    open_batch_slot(r);
    for (int k = 0; k < r->nstage; k++) {
        char dst[32];
        snprintf(dst, sizeof dst, "fu_s%d + b * %d", k, r->vec);
        emit_row_load(r, r->stage_t[k], idx, dst, -1);
    }
    if (r->pass == 1)
        for (int k = 0; k < r->ncache; k++) emit_row_load(r, r->cache_t[k], idx, NULL, k);
    close_batch_slot(r);
}

/* ROW_LOADS_FIRST: pass 1's staged arrays at row scope and its first batch
 * loaded (it0 = 0), before the per-row values are computed. */
static void emit_first_batch_loads(red_ctx *r)
{
    cg_ctx *c = &r->w->cg;
    plan_pass(r, 1);
    if (r->nstage == 0 && r->ncache == 0) return; /* pass 1 loads nothing at the row position */
    cg_line(c, "// pass 1's first batch, in flight before the per-row values wait on theirs");
    declare_staged(r);
    cg_index idx[FU_MAX_RANK];
    full_index(r, idx);
    c->vec = r->vec;
    c->lane_var = r->vec > 1 ? r->rank - 1 : -1;
    cg_open(c);
    cg_line(c, "const int it0 = 0;");
    emit_batch_loads(r, idx);
    cg_close(c);
    c->vec = 1;
    c->lane_var = -1;
    r->first_batch_issued = true;
}

static void emit_pass(red_ctx *r, int pass)
{
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    cg_line(c, "// pass %d over the row", pass);
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        if (ri->pass != pass || (ri->kind != RK_ROW && ri->kind != RK_ROWGRID)) continue;
        const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
        if (ri->online_max >= 0) cg_line(c, "%s %s = 0.0f; // online: sum of exp(x - %s)", ct, ri->var, r->reds[ri->online_max].var);
        else cg_line(c, "%s %s = %s;", ct, ri->var, fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
    }
    const bool issued = pass == 1 && r->first_batch_issued;
    if (!issued) plan_pass(r, pass);
    cg_index idx[FU_MAX_RANK];
    full_index(r, idx);
    c->vec = r->vec;
    c->lane_var = r->vec > 1 ? r->rank - 1 : -1;
    /* unrolled where registers are indexed by the position: the row cache, the column accumulators */
    bool col_pass = false;
    for (int i = 0; i < r->nred; i++) col_pass |= r->reds[i].kind == RK_COL && r->reds[i].pass == pass;
    cg_line(c, "#pragma unroll%s", r->ncache || col_pass ? "" : " 1");
    cg_line(c, "for (int it0 = 0; it0 < %d; it0 += %d) {", r->iters, r->batch);
    c->indent++;
    c->scope++;
    if (!issued) {
        declare_staged(r);
        emit_batch_loads(r, idx);
    } else if (r->iters > r->batch) { /* the first batch is in flight already */
        cg_line(c, "if (it0 != 0) {");
        c->indent++;
        c->scope++;
        emit_batch_loads(r, idx);
        c->scope--;
        cg_drop_scope(c);
        c->indent--;
        cg_line(c, "}");
    }
    emit_batch_max(r, pass, idx);
    /* phase B: the arithmetic, reading what phase A loaded */
    open_batch_slot(r);
    r->in_pass = true;
    /* per lane: the pass's row reductions and full-size outputs */
    char outs[16][16][32];
    fu_tensor out_t[16];
    int nout = pass_outputs(r, pass, out_t, 16);
    char online_e[MAX_REDS][16][32];
    for (int lane = 0; lane < r->vec; lane++) {
        c->lane = lane;
        cg_index li[FU_MAX_RANK];
        memcpy(li, idx, sizeof idx);
        cg_index_refresh(c, &li[r->rank - 1]);
        for (int i = 0; i < r->nred; i++) {
            red_info *ri = &r->reds[i];
            if (ri->pass == pass && ri->kind == RK_COL) { /* this thread's accumulator of the position */
                char acc[48];
                snprintf(acc, sizeof acc, "fu_col%d[it * %d + %d]", i, r->vec, lane);
                fu_red_combine(c, ri->op, acc, cg_value(c, ri->in, li));
                continue;
            }
            if (ri->pass != pass || (ri->kind != RK_ROW && ri->kind != RK_ROWGRID) || ri->online_sum >= 0) continue;
            if (ri->online_max >= 0) {
                snprintf(online_e[i][lane], sizeof online_e[i][lane], "%s", cg_value(c, online_source(r, ri), li));
                continue;
            }
            fu_red_combine(c, ri->op, ri->var, cg_value(c, ri->in, li));
        }
        for (int o = 0; o < nout; o++) snprintf(outs[o][lane], sizeof outs[o][lane], "%s", cg_value(c, out_t[o], li));
    }
    c->lane = 0;
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        if (ri->pass != pass || ri->online_max < 0) continue;
        const char *m = r->reds[ri->online_max].var;
        if (ri->batch_max == BM_NONE) { /* the vector's max, then its terms */
            cg_line(c, "float mx%d = %s;", i, online_e[i][0]);
            for (int lane = 1; lane < r->vec; lane++) cg_line(c, "mx%d = fu_max(mx%d, %s);", i, i, online_e[i][lane]);
            cg_line(c, "if (mx%d > %s) { %s *= fu_exp_sub(%s, mx%d); %s = mx%d; }", i, m, ri->var, m, i, m, i);
        } /* else phase M took the batch's max */
        for (int lane = 0; lane < r->vec; lane++) cg_line(c, "%s += fu_exp_sub(%s, %s);", ri->var, online_e[i][lane], m);
    }
    for (int o = 0; o < nout; o++) {
        const cg_param *p = fu_kw_output(r->w, out_t[o]);
        const fu_value *v = fu_val(f, out_t[o]);
        cg_index li[FU_MAX_RANK], off;
        memcpy(li, idx, sizeof idx);
        cg_offset(c, v->rank, v->shape, v->strides, li, &off);
        if (r->vec > 1 && cg_offset_vectorizable(c, &off, r->vec)) {
            char base[CG_EXPR], tmp[16];
            cg_offset_base_expr(c, &off, base, sizeof base);
            snprintf(tmp, sizeof tmp, "fu_o%d", o);
            fu_kw_vector_store(r->w, p, base, tmp, (const char (*)[32])outs[o], r->vec);
        } else {
            for (int lane = 0; lane < r->vec; lane++) {
                c->lane = lane;
                cg_index_refresh(c, &off);
                fu_kw_store(r->w, p, off.expr, outs[o][lane]);
            }
            c->lane = 0;
        }
    }
    r->in_pass = false;
    close_batch_slot(r);
    /* pass 1 keeps the row in this thread's slots for the later passes */
    if (pass == 1 && r->nsmem) {
        open_batch_slot(r);
        for (int k = 0; k < r->nstage; k++) {
            int sk = smem_index(r, r->stage_t[k]);
            if (sk < 0) continue;
            char slot[96];
            smem_slot(r, sk, slot, sizeof slot);
            const char *wide = cg_vector_type(r->smem_slot_bytes[sk]);
            cg_line(c, "*(%s *)(%s) = *(const %s *)(fu_s%d + b * %d);", wide, slot, wide, k, r->vec);
        }
        close_batch_slot(r);
    }
    c->vec = 1; /* per-row code after the pass is scalar */
    c->lane_var = -1;
    cg_close(c); /* it0 */
    /* the pass's reductions across the block */
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        if (ri->pass != pass || (ri->kind != RK_ROW && ri->kind != RK_ROWGRID) || ri->online_sum >= 0) continue;
        const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
        if (ri->online_max >= 0) {
            const char *m = r->reds[ri->online_max].var;
            if (r->warp_rows > 1) cg_line(c, "fu_lse_warp(%s, %s);", m, ri->var);
            else cg_line(c, "fu_lse_block(%s, %s, (float *)fu_smem);", m, ri->var);
            if (r->cluster > 1)
                cg_line(c, "fu_lse_cluster<%d>(%s, %s, (float *)(fu_cl + (fu_par * %d + %d) * 2)); // the cluster's parts",
                        r->cluster, m, ri->var, r->nslots, i);
            r->reds[ri->online_max].avail = true;
        } else {
            if (r->warp_rows > 1) cg_line(c, "%s = fu_warp_reduce(%s, %s);", ri->var, ri->var, op_functor(ri->op));
            else cg_line(c, "%s = fu_block_reduce(%s, %s, %s);", ri->var, ri->var, op_functor(ri->op), smem_of(ct));
            if (r->cluster > 1)
                cg_line(c, "%s = fu_cluster_reduce<%d>(%s, %s, (%s *)(fu_cl + (fu_par * %d + %d) * 2)); // the cluster's parts",
                        ri->var, r->cluster, ri->var, op_functor(ri->op), ct, r->nslots, i);
        }
        ri->avail = ri->kind == RK_ROW;
    }
}

static void emit_grid_prologue(red_ctx *r, red_info *ri)
{
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    const char *it = c->index64 ? "long long" : "int";
    const fu_value *x = fu_val(f, ri->in);
    const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
    cg_line(c, "%s %s; // %s, computed by every block: rows need it", ct, ri->var, fu_val(f, ri->out)->name);
    cg_open(c);
    cg_line(c, "%s acc = %s;", ct, fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
    cg_line(c, "for (%s row = threadIdx.x; row < %lld; row += %d) {", it, (long long)r->rows, r->block_threads);
    c->indent++;
    c->scope++;
    emit_outer_vars(r, "row");
    cg_index idx[FU_MAX_RANK];
    row_index(r, x, idx);
    fu_red_combine(c, ri->op, "acc", cg_value(c, ri->in, idx));
    cg_close(c);
    cg_line(c, "%s = fu_block_reduce(acc, %s, %s);", ri->var, op_functor(ri->op), smem_of(ct));
    cg_close(c);
    ri->avail = true;
}

/* Per-row values that need no row reduction (the target id, the logit it
 * picks, the row mask) are computed when the row starts, so their loads are in
 * flight during the pass instead of after the block reduction. */
static void hoist_walk(red_ctx *r, fu_tensor t, uint32_t ready, int depth)
{
    if (depth > 64 || red_of(r, t) >= 0) return;
    if (!walk_visit(r, t, depth)) return; /* that visit hoisted all this one would */
    const fu_value *v = fu_val(r->f, t);
    if ((r->deps[t] & ~ready) == 0) {
        cg_index idx[FU_MAX_RANK];
        if (!is_full_shape(r, v) && row_index(r, v, idx))
            cg_value(&r->w->cg, t, idx);
        if (!is_full_shape(r, v)) return;
    }
    const fu_node *n = fu_producer(r->f, t);
    if (!n || !r->g->in_group[n - r->f->nodes]) return;
    for (int k = 0; k < n->ninputs; k++) hoist_walk(r, n->inputs[k], ready, depth + 1);
}

static void hoist_row_values(red_ctx *r, fu_tensor t, uint32_t ready)
{
    walk_begin(r);
    hoist_walk(r, t, ready, 0);
}

static void hoist_all_row_values(red_ctx *r)
{
    uint32_t ready = 0; /* the prologue's reductions are known before any row */
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].kind == RK_GRID_PRO) ready |= 1u << i;
    cg_line(&r->w->cg, "// per-row values that need no reduction: loaded before the passes");
    for (int o = 0; o < r->g->noutputs; o++) hoist_row_values(r, r->g->outputs[o], ready);
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].kind != RK_GRID_PRO) hoist_row_values(r, r->reds[i].in, ready);
}

/* After pass p's block reductions: the per-row values that now have every
 * reduction they need (a row's log-sum-exp from its max and sum) are
 * computed once, not in every element of the next pass. */
static void hoist_pass_row_values(red_ctx *r, int pass)
{
    uint32_t ready = 0;
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].avail) ready |= 1u << i;
    cg_line(&r->w->cg, "// per-row values of the reductions so far, before pass %d", pass + 1);
    for (int o = 0; o < r->g->noutputs; o++) hoist_row_values(r, r->g->outputs[o], ready);
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].pass > pass) hoist_row_values(r, r->reds[i].in, ready);
}

/* With ROW_CACHE_SMEM the inputs chosen for the register cache are kept in
 * shared memory instead, if their slots fit in what the device gives a block
 * (else they stay in registers). */
static void choose_smem_cache(red_ctx *r)
{
    /* a row of a few vectors a thread stays in registers: its passes unroll to
     * a few lines, with no shared-memory store and reload (not beside column
     * accumulators: layer norm bwd at 4096 went from 131 to 162 us, f32) */
    if (!ROW_CACHE_SMEM || r->ncache == 0 || (r->iters <= REGISTER_ROW_ITERS && r->ncol == 0)) return;
    int64_t total = 0;
    for (int k = 0; k < r->ncache; k++) {
        r->smem_slot_bytes[k] = (int)fu_dtype_size(fu_val(r->f, r->cache_t[k])->dtype) * r->vec;
        r->smem_offset[k] = total;
        total += (int64_t)r->iters * r->block_threads * r->smem_slot_bytes[k];
        total = (total + 15) / 16 * 16;
    }
    if (total + STATIC_SHARED_BYTES > r->g->opts->max_shared_per_block) return;
    for (int k = 0; k < r->ncache; k++) r->smem_t[k] = r->cache_t[k];
    r->nsmem = r->ncache;
    r->ncache = 0;
    r->smem_bytes = total;
}

/* Threads and vectors a thread for a row part of `vecs` vectors (see choose_config). */
static int row_threads(const red_ctx *r, int64_t vecs)
{
    int per_thread = r->passes >= 2 ? CACHED_ROW_ITERS : STREAMED_ROW_ITERS, max_threads = r->passes >= 2 ? 1024 : 512;
    int threads = 32;
    while (threads < max_threads && (int64_t)threads * per_thread < vecs) threads *= 2;
    return threads;
}

/* CLUSTER_ROWS: the fewest blocks (2, 4, 8) a row is split over so that each
 * block's part of the inputs a later pass reads again fits its shared memory,
 * where the whole row does not; else 1. */
static void choose_cluster(red_ctx *r)
{
    r->cluster = 1;
    r->K_part = r->K;
    /* (not for rows read one element at a time, an odd vocabulary: a cluster's part
     * of 7 scalars a thread keeps too few bytes in flight: bf16 4093 x 50257 fwd+bwd
     * took 2114 us in clusters of 8, 588 us re-reading the row) */
    if (!CLUSTER_ROWS || r->passes < 2 || r->ncol > 0 || r->g->opts->max_cluster < 2 || r->vec == 1) return;
    int64_t elem_bytes = 0; /* of the full-size inputs a later pass reads, per row position */
    for (int i = 0; i < r->w->nparams; i++) {
        const cg_param *p = &r->w->params[i];
        const fu_value *v = fu_val(r->f, p->tensor);
        if (p->is_output || !is_full_shape(r, v)) continue;
        bool read_later = false;
        for (int q = 2; q <= r->passes && !read_later; q++) read_later = pass_reads(r, q, p->tensor);
        if (read_later) elem_bytes += (int64_t)fu_dtype_size(v->dtype);
    }
    if (elem_bytes == 0) return;
    const int64_t room = r->g->opts->max_shared_per_block - STATIC_SHARED_BYTES - 2 * MAX_REDS * 16;
    for (int C = 1; C <= r->g->opts->max_cluster && C <= 8; C *= 2) {
        int64_t part = (r->K + C - 1) / C;
        part = (part + r->vec - 1) / r->vec * r->vec;
        int64_t vecs = part / r->vec;
        int threads = row_threads(r, vecs);
        int64_t iters = (vecs + threads - 1) / threads;
        if (iters > CACHED_ROW_ITERS) continue; /* (a thread's slots: the register budget's rows) */
        if (C == 1 && iters * r->vec * elem_bytes <= CACHE_BYTES) return; /* one block's registers hold the row */
        if (iters * threads * r->vec * elem_bytes + 16 * MAX_CACHE > room) continue;
        if (C == 1) return; /* the whole row fits one block */
        if (r->rows < 2 || r->K < 2 * C * r->vec) return;
        r->cluster = C;
        r->K_part = part;
        return;
    }
}

static void choose_config(red_ctx *r)
{
    const fu_fusion *f = r->f;
    /* vector width from the widest full-size tensor in memory */
    size_t widest = 0;
    for (int i = 0; i < r->w->nparams; i++) {
        const fu_value *v = fu_val(f, r->w->params[i].tensor);
        if (is_full_shape(r, v) && fu_dtype_size(v->dtype) > widest) widest = fu_dtype_size(v->dtype);
    }
    int ninner = 0;
    for (int a = 0; a < r->rank; a++) ninner += r->inner[a];
    r->vec = widest ? (int)(16 / widest) : 4;
    r->elem_bytes = widest ? (int)widest : 4;
    if (ninner != 1 || !r->inner[r->rank - 1]) r->vec = 1;
    while (r->vec > 1 && r->D[r->rank - 1] % r->vec) r->vec /= 2;
    /* A row's vectors over the threads: 8 iterations each where the row is
     * kept between passes (1024 threads hold 32 KiB-float rows),
     * else 16, at most 512 threads, so more rows are in flight per SM. */
    choose_cluster(r);
    int64_t vecs = (r->K_part + r->vec - 1) / r->vec;
    int threads = row_threads(r, vecs);
    /* with column reductions, blocks of 256 threads at least (fewer blocks,
     * fewer partials) and no more accumulators than COL_MAX_ACC a thread */
    if (r->ncol > 0)
        while (threads < 1024 && (threads < 256 || (int64_t)r->ncol * ((vecs + threads - 1) / threads) * r->vec > COL_MAX_ACC))
            threads *= 2;
    r->threads = threads;
    r->iters = (int)((vecs + threads - 1) / threads);
    /* a warp a row where one warp holds it, with enough rows for two blocks an SM */
    r->warp_rows = 1;
    if (threads == 32 && r->ncol == 0 && r->cluster == 1)
        for (int wr = WARP_ROWS; wr > 1 && r->warp_rows == 1; wr /= 2)
            if (r->rows >= (int64_t)wr * 2 * r->g->opts->sm_count) r->warp_rows = wr;
    r->block_threads = threads * r->warp_rows;
    r->tid = r->warp_rows > 1 ? "fu_lane" : "threadIdx.x";
    /* cache the full-size inputs a later pass reads, if they fit */
    if (r->passes >= 2) {
        int64_t budget = CACHE_BYTES;
        for (int i = 0; i < r->w->nparams && r->ncache < MAX_CACHE; i++) {
            const cg_param *p = &r->w->params[i];
            const fu_value *v = fu_val(f, p->tensor);
            int64_t bytes = (int64_t)r->iters * r->vec * (int64_t)fu_dtype_size(v->dtype);
            /* (a cluster's parts are sized to fit shared memory, whatever the budget) */
            if (p->is_output || !is_full_shape(r, v) || (bytes > budget && r->cluster == 1)) continue;
            bool read_later = false;
            for (int q = 2; q <= r->passes && !read_later; q++) read_later = pass_reads(r, q, p->tensor);
            if (!read_later) continue;
            budget -= bytes;
            r->cache_t[r->ncache++] = p->tensor;
        }
    }
    choose_smem_cache(r);
}

/* Groups of COL_GROUP_BLOCKS blocks whose partials the group's last block combines. */
static int64_t col_groups(int64_t grid) { return (grid + COL_GROUP_BLOCKS - 1) / COL_GROUP_BLOCKS; }

/* Workspace of the column reductions (8-byte slots): per reduction the blocks'
 * partials [grid][K], then the groups' [groups][K]; then a counter per group. */
static size_t col_workspace_bytes(const red_ctx *r, int64_t grid)
{
    return (size_t)r->ncol * (size_t)(grid + col_groups(grid)) * (size_t)r->K * 8 + (size_t)col_groups(grid) * 4;
}

/* Before the rows: this thread's accumulators of each column reduction, one
 * per row position it owns (iters x vec, indexed by constants). */
static void emit_column_accumulators(red_ctx *r)
{
    cg_ctx *c = &r->w->cg;
    for (int i = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        if (ri->kind != RK_COL) continue;
        const fu_dtype dt = fu_val(r->f, ri->out)->dtype;
        cg_line(c, "%s fu_col%d[%d]; // %s: this thread's row positions, summed over the block's rows",
                cg_compute_type(dt), i, r->iters * r->vec, fu_val(r->f, ri->out)->name);
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int q = 0; q < %d; q++) fu_col%d[q] = %s;", r->iters * r->vec, i, fu_red_identity(ri->op, dt));
        snprintf(ri->var, sizeof ri->var, "fu_cv%d", i);
    }
}

/* After the rows: the block's column partials, the group's last block
 * combines its blocks' in block order, the last group's combines the groups'
 * in group order and writes the per-column outputs. Deterministic; the
 * counters are left at zero. */
static void emit_column_combine(red_ctx *r, int64_t grid, const fu_tensor *col_out, int ncol_out)
{
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    const int64_t groups = col_groups(grid), K = r->K;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "// column reductions: partials per block, per group of %d blocks, then one last block", COL_GROUP_BLOCKS);
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int it = 0; it < %d; it++) {", r->iters);
    c->indent++;
    cg_line(c, "const %s kb = ((%s)it * %d + threadIdx.x) * %d;", it, it, r->threads, r->vec);
    cg_line(c, "if (kb < %lld) {", (long long)K);
    c->indent++;
    int k = 0;
    for (int i = 0; i < r->nred; i++) {
        if (r->reds[i].kind != RK_COL) continue;
        const char *ct = cg_compute_type(fu_val(f, r->reds[i].out)->dtype);
        for (int lane = 0; lane < r->vec; lane++)
            cg_line(c, "((%s *)(fu_ws + %lld))[(long long)blockIdx.x * %lld + kb + %d] = fu_col%d[it * %d + %d];", ct,
                    (long long)(k * (grid + groups) * K), (long long)K, lane, i, r->vec, lane);
        k++;
    }
    c->indent--;
    cg_line(c, "}");
    c->indent--;
    cg_line(c, "}");
    cg_line(c, "unsigned *fu_group_done = (unsigned *)(fu_ws + %lld);", (long long)(r->ncol * (grid + groups) * K));
    cg_line(c, "__shared__ int fu_last;");
    cg_line(c, "const unsigned fu_group = blockIdx.x / %du, fu_first = fu_group * %du;", COL_GROUP_BLOCKS, COL_GROUP_BLOCKS);
    cg_line(c, "const unsigned fu_members = gridDim.x - fu_first < %du ? gridDim.x - fu_first : %du;", COL_GROUP_BLOCKS,
            COL_GROUP_BLOCKS);
    cg_line(c, "__threadfence();");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(&fu_group_done[fu_group], 1u) == fu_members - 1;");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (!fu_last) return;");
    cg_line(c, "__threadfence();");
    cg_line(c, "if (threadIdx.x == 0) fu_group_done[fu_group] = 0u;");
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: the group's blocks into its partial; pass 1: the groups into the columns */
        if (pass == 1) {
            cg_line(c, "__threadfence();");
            cg_line(c, "__syncthreads();");
            cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(fu_count, 1u) == %lldu;", (long long)(groups - 1));
            cg_line(c, "__syncthreads();");
            cg_line(c, "if (!fu_last) return;");
            cg_line(c, "__threadfence();");
            cg_line(c, "if (threadIdx.x == 0) *fu_count = 0u; // ready for the next launch");
        }
        cg_line(c, "for (%s kb = threadIdx.x; kb < %lld; kb += %d) {", it, (long long)K, r->threads);
        c->indent++;
        c->scope++;
        k = 0;
        for (int i = 0; i < r->nred; i++) {
            red_info *ri = &r->reds[i];
            if (ri->kind != RK_COL) continue;
            const fu_dtype dt = fu_val(f, ri->out)->dtype;
            const char *ct = cg_compute_type(dt);
            const long long base = (long long)(k * (grid + groups) * K);
            cg_line(c, "%s %s = %s;", ct, ri->var, fu_red_identity(ri->op, dt));
            char v[160];
            if (pass == 0) {
                cg_line(c, "for (unsigned b = fu_first; b < fu_first + fu_members; b++) // in block order");
                snprintf(v, sizeof v, "__ldcg((const %s *)(fu_ws + %lld) + (long long)b * %lld + kb)", ct, base, (long long)K);
            } else {
                cg_line(c, "for (unsigned q = 0; q < %lldu; q++) // in group order", (long long)groups);
                snprintf(v, sizeof v, "__ldcg((const %s *)(fu_ws + %lld) + (long long)q * %lld + kb)", ct,
                         base + (long long)(grid * K), (long long)K);
            }
            c->indent++;
            fu_red_combine(c, ri->op, ri->var, v);
            c->indent--;
            if (pass == 0)
                cg_line(c, "((%s *)(fu_ws + %lld))[(long long)fu_group * %lld + kb] = %s;", ct, base + (long long)(grid * K),
                        (long long)K, ri->var);
            k++;
        }
        if (pass == 1) {
            for (int i = 0; i < r->nred; i++)
                if (r->reds[i].kind == RK_COL) r->reds[i].avail = true;
            emit_inner_vars(r);
            for (int o = 0; o < ncol_out; o++) {
                const fu_value *v = fu_val(f, col_out[o]);
                cg_index idx[FU_MAX_RANK], off;
                col_index(r, v, idx);
                const char *val = cg_value(c, col_out[o], idx);
                cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
                fu_kw_store(r->w, fu_kw_output(r->w, col_out[o]), off.expr, val);
            }
        }
        cg_close(c);
    }
}

bool fu_sched_reduction(const fu_group *g, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    if (fu_group_has_op_kind(g, FU_KIND_SCATTER)) {
        snprintf(why, nwhy, "reduction: the group has a scatter");
        return false;
    }
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    red_ctx *r = fu_calloc(1, sizeof *r);
    uint32_t *deps = fu_calloc((size_t)f->nvalues, sizeof *deps);
    int *seen = fu_calloc((size_t)f->nvalues, sizeof *seen);
    bool ok = w && r && deps && seen;
    if (!ok) snprintf(why, nwhy, "out of memory");
    if (ok) ok = fu_kw_begin(w, g, kp, "reduction (rows, online softmax, grid reduction)", why, nwhy);
    if (ok) {
        r->g = g;
        r->f = f;
        r->w = w;
        r->deps = deps;
        r->seen = seen;
        ok = analyse(r, why, nwhy);
    }
    cg_ctx *c = ok ? &w->cg : NULL;
    if (ok) {
        for (int a = 0; a < r->rank; a++) {
            char name[16];
            snprintf(name, sizeof name, "%c%d", r->inner[a] ? 'k' : 'o', a);
            cg_add_var(c, name);
        }
        c->user = r;
        c->lookup_register = lookup_register;
        c->lookup_cache = lookup_cache;
        choose_config(r);
    }
    /* classify the outputs */
    int nrow_out = 0, nscalar_out = 0, ncol_out = 0;
    bool full_out = false;
    fu_tensor row_out[16], scalar_out[16], col_out[16];
    uint32_t epi_bits = 0, col_bits = 0;
    for (int i = 0; ok && i < r->nred; i++) {
        if (r->reds[i].kind == RK_GRID_EPI || r->reds[i].kind == RK_ROWGRID) epi_bits |= 1u << i;
        if (r->reds[i].kind == RK_COL) col_bits |= 1u << i;
    }
    if (ok && col_bits && (epi_bits || r->K <= 1)) {
        snprintf(why, nwhy, "reduction: column reductions with grid-wide reductions or rows of one element");
        ok = false;
    }
    for (int o = 0; ok && o < g->noutputs; o++) {
        fu_tensor t = g->outputs[o];
        const fu_value *v = fu_val(f, t);
        cg_index idx[FU_MAX_RANK];
        uint32_t d = r->deps[t];
        if (d & col_bits) { /* per column, after the columns are combined */
            uint32_t row_bits = 0;
            for (int i = 0; i < r->nred; i++)
                if (r->reds[i].kind == RK_ROW) row_bits |= 1u << i;
            if (is_full_shape(r, v) || !col_index(r, v, idx) || (d & row_bits) || ncol_out == 16 ||
                fu_shape_numel(v->rank, v->shape) != r->K) {
                int ci = 0;
                while (ci < r->nred && !((d & col_bits) & (1u << ci))) ci++;
                snprintf(why, nwhy, "reduction: '%s' reduces other axes than the row reductions, and output '%s' "
                         "reads it but is not one value per column", fu_val(f, r->reds[ci].out)->name, v->name);
                ok = false;
            } else {
                col_out[ncol_out++] = t;
            }
        } else if (is_full_shape(r, v)) {
            full_out = true;
            if (d & epi_bits) {
                snprintf(why, nwhy, "reduction: full-size output '%s' needs a grid-wide value", v->name);
                ok = false;
            }
        } else if (!(d & epi_bits) && row_index(r, v, idx) && nrow_out < 16 && (fu_shape_numel(v->rank, v->shape) > 1 || r->rows == 1)) {
            row_out[nrow_out++] = t;
        } else if (fu_shape_numel(v->rank, v->shape) == 1 && nscalar_out < 16) {
            uint32_t row_bits = 0;
            for (int i = 0; i < r->nred; i++)
                if (r->reds[i].kind == RK_ROW) row_bits |= 1u << i;
            if (d & row_bits) {
                snprintf(why, nwhy, "reduction: scalar output '%s' reads a row value", v->name);
                ok = false;
            }
            scalar_out[nscalar_out++] = t;
        } else {
            snprintf(why, nwhy, "reduction: output '%s' fits neither the rows nor a scalar", v->name);
            ok = false;
        }
    }
    if (!ok) {
        if (w) fu_kw_abort(w);
        fu_free(w);
        fu_free(r);
        fu_free(deps);
        fu_free(seen);
        return false;
    }
    int ngrid = 0;
    for (int i = 0; i < r->nred; i++) ngrid += r->reds[i].kind == RK_GRID_EPI || r->reds[i].kind == RK_ROWGRID;
    int blocks_per_sm = g->opts->max_threads_per_sm / r->block_threads;
    /* at least 1024 threads per SM (registers capped at 64); with rows in
     * shared memory, no more blocks than that and than the slots that fit on
     * an SM (with the driver's reserve and the static shared memory of each):
     * one wave, all resident (a cap of 40 registers for 3 blocks of 512
     * spilled the bf16 fused kernel) */
    int min_blocks = r->block_threads < 1024 ? 1024 / r->block_threads : 1;
    if (r->nsmem) {
        int64_t fit = g->opts->max_shared_per_sm /
                      (r->smem_bytes + g->opts->reserved_shared_per_block + STATIC_SHARED_BYTES);
        blocks_per_sm = min_blocks;
        if (blocks_per_sm > fit) blocks_per_sm = (int)fit;
        min_blocks = blocks_per_sm;
    }
    if (blocks_per_sm < 1) blocks_per_sm = 1;
    if (min_blocks < 1) min_blocks = 1;
    if (r->ncol > 0 && blocks_per_sm > COL_BLOCKS_PER_SM) blocks_per_sm = COL_BLOCKS_PER_SM;
    int64_t grid = (int64_t)g->opts->sm_count * blocks_per_sm;
    if (grid > (r->rows + r->warp_rows - 1) / r->warp_rows) grid = (r->rows + r->warp_rows - 1) / r->warp_rows;
    if (grid < 1) grid = 1;
    if (r->cluster > 1) { /* whole clusters, one a row at a time */
        int64_t clusters = (int64_t)g->opts->sm_count * blocks_per_sm / r->cluster;
        if (clusters > r->rows) clusters = r->rows;
        if (clusters < 1) clusters = 1;
        grid = clusters * r->cluster;
    }
    /* (partials are indexed in 32 bits by the last block); column partials
     * need each block's rows fixed (strided), not taken from the queue */
    const bool queue = ROW_QUEUE && full_out && r->ncol == 0 && r->warp_rows == 1 && r->cluster == 1 && grid < r->rows &&
                       r->rows * (ngrid > 0 ? ngrid : 1) + grid < INT32_MAX;
    const int64_t partials = queue ? r->rows : grid; /* grid reductions: one partial per row or per block */
    kp->sched = FU_SCHED_REDUCTION;
    kp->grid = (unsigned)grid;
    kp->block = (unsigned)r->block_threads;
    kp->cluster = (unsigned)r->cluster;
    kp->shared_bytes = (size_t)r->smem_bytes;
    kp->workspace_bytes = ngrid || queue ? (size_t)ngrid * (size_t)partials * sizeof(double) + 64 : 0;
    if (r->ncol) kp->workspace_bytes = col_workspace_bytes(r, grid) + 64;
    int nonline = 0;
    for (int i = 0; i < r->nred; i++) nonline += r->reds[i].online_max >= 0;
    snprintf(kp->config, sizeof kp->config,
             "rows=%lld inner=%lld vec=%d threads=%d iters=%d passes=%d online_lse=%d cached_inputs=%d%s grid_reductions=%d%s",
             (long long)r->rows, (long long)r->K, r->vec, r->threads, r->iters, r->passes, nonline, r->ncache + r->nsmem,
             r->nsmem ? " (shared memory)" : r->ncache ? " (registers)" : "", ngrid, queue ? " row_queue=1" : "");
    if (r->warp_rows > 1) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " warp_rows=%d", r->warp_rows);
    }
    if (r->cluster > 1) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " cluster=%d part=%lld", r->cluster, (long long)r->K_part);
    }
    if (r->ncol) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " column_reductions=%d groups=%lld", r->ncol, (long long)col_groups(grid));
    }

    fu_kw_signature(w, kp, (unsigned)r->block_threads, (unsigned)min_blocks, ngrid > 0 || queue || r->ncol > 0);
    cg_open(c);
    cg_line(c, "__shared__ double fu_smem[64];");
    if (r->nsmem)
        cg_line(c, "extern __shared__ __align__(16) unsigned char fu_rows[]; // %lld bytes: the row, each thread's own slots",
                (long long)r->smem_bytes);
    const char *it = c->index64 ? "long long" : "int";
    for (int i = 0; i < r->nred; i++)
        if (r->reds[i].kind == RK_GRID_PRO) emit_grid_prologue(r, &r->reds[i]);
    emit_column_accumulators(r);
    for (int i = 0; i < r->nred && !queue; i++)
        if (r->reds[i].kind == RK_GRID_EPI || r->reds[i].kind == RK_ROWGRID)
            cg_line(c, "%s fu_g%d = %s; // this block's part of %s", cg_compute_type(fu_val(f, r->reds[i].out)->dtype), i,
                    fu_red_identity(r->reds[i].op, fu_val(f, r->reds[i].out)->dtype), fu_val(f, r->reds[i].out)->name);
    if (queue) {
        /* rows + gridDim.x tickets in all: one per row, and each block's last one, past the rows */
        cg_line(c, "// rows in order from the queue fu_count[1], each taken a row ahead (see ROW_QUEUE)");
        cg_line(c, "__shared__ unsigned fu_next[2];");
        cg_line(c, "if (threadIdx.x == 0) fu_next[0] = fu_take_row(fu_count + 1, %lldu + gridDim.x);", (long long)r->rows);
        cg_line(c, "__syncthreads();");
        cg_line(c, "for (unsigned fu_q = 0;; fu_q ^= 1u) {");
        c->indent++;
        c->scope++;
        cg_line(c, "const %s row = (%s)fu_next[fu_q];", it, it);
        cg_line(c, "if (row >= %lld) break;", (long long)r->rows);
        cg_line(c, "unsigned fu_ticket = 0; // the block's next row, read at the end of this one");
        cg_line(c, "if (threadIdx.x == 0) fu_ticket = fu_take_row(fu_count + 1, %lldu + gridDim.x);", (long long)r->rows);
    } else if (r->cluster > 1) {
        r->nslots = r->nred;
        cg_line(c, "__shared__ double fu_cl[%d]; // the row reductions' slots, two rows' worth (distributed shared memory)",
                4 * r->nslots);
        cg_line(c, "const unsigned fu_rank = fu_cluster_rank(); // this block's part of the row");
        cg_line(c, "const %s fu_kbase = (%s)fu_rank * %lld, fu_kend = fu_kbase + %lld < %lld ? fu_kbase + %lld : %lld;", it, it,
                (long long)r->K_part, (long long)r->K_part, (long long)r->K, (long long)r->K_part, (long long)r->K);
        cg_line(c, "unsigned fu_par = 0; // which row's slots");
        cg_line(c, "for (%s row = blockIdx.x / %d; row < %lld; row += gridDim.x / %d, fu_par ^= 1u) {", it, r->cluster,
                (long long)r->rows, r->cluster);
        c->indent++;
        c->scope++;
    } else if (r->warp_rows > 1) {
        cg_line(c, "const unsigned fu_lane = threadIdx.x & 31u, fu_warp = threadIdx.x >> 5; // a warp a row");
        cg_line(c, "for (%s row = (%s)blockIdx.x * %d + fu_warp; row < %lld; row += (%s)gridDim.x * %d) {", it, it,
                r->warp_rows, (long long)r->rows, it, r->warp_rows);
        c->indent++;
        c->scope++;
    } else {
        cg_line(c, "for (%s row = blockIdx.x; row < %lld; row += gridDim.x) {", it, (long long)r->rows);
        c->indent++;
        c->scope++;
    }
    emit_outer_vars(r, "row");
    for (int k = 0; k < r->ncache; k++)
        cg_line(c, "alignas(16) %s fu_c%d[%d]; // '%s' kept in registers between passes",
                cg_storage_type(fu_val(f, r->cache_t[k])->dtype), k, r->iters * r->vec, fu_val(f, r->cache_t[k])->name);
    /* the canonical offset of each cached input (what lookup_cache matches) */
    for (int k = 0; k < r->ncache; k++) canonical_base(r, r->cache_t[k], r->cache_base[k]);
    if (ROW_LOADS_FIRST) emit_first_batch_loads(r);
    hoist_all_row_values(r);
    for (int p = 1; p <= r->passes; p++) {
        emit_pass(r, p);
        if (p < r->passes) hoist_pass_row_values(r, p);
    }
    /* per-row outputs, then this row's share of the grid reductions */
    for (int o = 0; o < nrow_out; o++) {
        const fu_value *v = fu_val(f, row_out[o]);
        cg_index idx[FU_MAX_RANK], off;
        row_index(r, v, idx);
        const char *val = cg_value(c, row_out[o], idx);
        cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
        char e[512];
        cg_store_expr(c, e, sizeof e, v->dtype, val);
        cg_line(c, "if (%s == 0%s) %s[%s] = %s;", r->tid, r->cluster > 1 ? " && fu_rank == 0u" : "", fu_kw_output(w, row_out[o])->name,
                off.expr, e);
    }
    for (int i = 0, gi = 0; i < r->nred; i++) {
        red_info *ri = &r->reds[i];
        if (ri->kind != RK_ROWGRID && ri->kind != RK_GRID_EPI) continue;
        const char *val = ri->var;
        if (ri->kind == RK_GRID_EPI) {
            cg_index idx[FU_MAX_RANK];
            row_index(r, fu_val(f, ri->in), idx);
            val = cg_value(c, ri->in, idx);
        }
        if (queue) {
            cg_line(c, "if (threadIdx.x == 0) fu_ws[(long long)row * %d + %d] = (double)%s;", ngrid, gi++, val);
        } else {
            char g[16];
            snprintf(g, sizeof g, "fu_g%d", i);
            fu_red_combine(c, ri->op, g, val);
        }
    }
    if (queue) {
        cg_line(c, "if (threadIdx.x == 0) fu_next[fu_q ^ 1u] = fu_ticket;");
        cg_line(c, "__syncthreads();");
    }
    cg_close(c);
    if (r->cluster > 1) cg_line(c, "fu_cluster_sync(); // no block leaves while another may read its slots");
    if (r->ncol) emit_column_combine(r, grid, col_out, ncol_out);
    /* grid reductions: partials, then the last block combines them in block (or row) order */
    if (ngrid > 0) {
        int gi = 0;
        for (int i = 0; i < r->nred && !queue; i++) {
            red_info *ri = &r->reds[i];
            if (ri->kind != RK_GRID_EPI && ri->kind != RK_ROWGRID) continue;
            if (r->cluster > 1) /* a row's values are the same in every block of its cluster: counted once */
                cg_line(c, "if (fu_rank != 0u) fu_g%d = %s;", i, fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
            if (r->warp_rows > 1) { /* the warps' parts (each lane holds its warp's), in warp order */
                const fu_dtype dt = fu_val(f, ri->out)->dtype;
                cg_line(c, "fu_g%d = fu_block_reduce(fu_lane == 0 ? fu_g%d : %s, %s, %s);", i, i, fu_red_identity(ri->op, dt),
                        op_functor(ri->op), smem_of(cg_compute_type(dt)));
            }
            cg_line(c, "if (threadIdx.x == 0) fu_ws[blockIdx.x * %d + %d] = (double)fu_g%d;", ngrid, gi++, i);
        }
        cg_line(c, "__shared__ int fu_last;");
        cg_line(c, "__threadfence();");
        cg_line(c, "__syncthreads();");
        cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(fu_count, 1u) == gridDim.x - 1;");
        cg_line(c, "__syncthreads();");
        cg_line(c, "if (!fu_last) return;");
        cg_line(c, "__threadfence();");
        gi = 0;
        for (int i = 0; i < r->nred; i++) {
            red_info *ri = &r->reds[i];
            if (ri->kind != RK_GRID_EPI && ri->kind != RK_ROWGRID) continue;
            const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
            cg_line(c, "%s %s = %s;", ct, ri->var, fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
            if (queue) cg_line(c, "for (unsigned b = threadIdx.x; b < %lldu; b += %d) { // the rows' partials", (long long)r->rows, r->block_threads);
            else cg_line(c, "for (unsigned b = threadIdx.x; b < gridDim.x; b += %d) {", r->block_threads);
            c->indent++;
            char v[64];
            snprintf(v, sizeof v, "(%s)__ldcg(&fu_ws[b * %d + %d])", ct, ngrid, gi++);
            fu_red_combine(c, ri->op, ri->var, v);
            c->indent--;
            cg_line(c, "}");
            cg_line(c, "%s = fu_block_reduce(%s, %s, %s);", ri->var, ri->var, op_functor(ri->op), smem_of(ct));
            ri->avail = true;
        }
    } else if (nscalar_out > 0 && !r->ncol) { /* (with column reductions only the last block is left) */
        cg_line(c, "if (blockIdx.x != 0) return;");
    }
    for (int o = 0; o < nscalar_out; o++) {
        const fu_value *v = fu_val(f, scalar_out[o]);
        cg_index idx[FU_MAX_RANK];
        for (int a = 0; a < v->rank; a++) cg_index_const(&idx[a], 0);
        const char *val = cg_value(c, scalar_out[o], idx);
        char e[512];
        cg_store_expr(c, e, sizeof e, v->dtype, val);
        cg_line(c, "if (threadIdx.x == 0) %s[0] = %s;", fu_kw_output(w, scalar_out[o])->name, e);
    }
    if (ngrid > 0) cg_line(c, "if (threadIdx.x == 0) *fu_count = 0u; // ready for the next launch");
    cg_close(c);
    ok = fu_kw_finish(w, kp, why, nwhy);
    fu_free(w);
    fu_free(r);
    fu_free(deps);
    fu_free(seen);
    return ok;
}
