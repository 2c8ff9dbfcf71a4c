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
 * them and of per-column inputs (mean = sum / N, a bias added).
 *
 * With fu_plan_options.outer_norm, it also takes normalizations over those
 * axes (a softmax or a layer norm over a non-innermost axis): full-size
 * outputs that read the reductions back, and reductions of reductions. Each
 * block then owns a tile of columns over all the rows (no row splits, so its
 * reductions are final without a grid-wide step) and makes one pass over its
 * rows a level of reductions (a reduction reading another is a level after
 * it), each ended by a combine over ty in a fixed order (shuffles within the
 * warp, then the warps through shared memory: the same bits in every thread
 * and every run) whose results every thread holds, then a last pass that
 * writes the full-size outputs. Inputs read in two passes or more are
 * kept in shared memory where the tile fits (each thread reads back only the
 * slots it wrote: no barrier), else read again. Where the reduction scheduler
 * would walk such rows one strided element a thread (32 sectors a warp's
 * load), every load here reads whole sectors. Off by default until measured.
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
#define OUTER_MAX_CACHE 8
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
/* A normalization's block, and the bytes of each row its tile of columns spans: 64
 * (two sectors a row), narrowed to 32 while that leaves fewer blocks than SMs; a group
 * with fewer column blocks than half the SMs even then is left to the row scheduler
 * (a softmax over axis 0 of [8192, 1024] f32 has 128 blocks of 32 bytes on 132 SMs). */
#ifndef OUTER_NORM_THREADS
#define OUTER_NORM_THREADS 512
#endif
#ifndef OUTER_NORM_TILE_BYTES
#define OUTER_NORM_TILE_BYTES 64
#endif
/* A normalization's first pass (the one that reads memory, into the tile where there is one)
 * is unrolled this far: 8 trips of 16-byte loads in flight a thread are 64 KB an SM at 512
 * threads, beside the ~37 KB an H200 SM needs in flight to keep its share of the memory busy
 * (18.8 bytes a clock for ~1 us); its blocks are few (one an SM with a 128 KB tile), so each
 * thread's own loads must cover it. The later passes keep 4 (more lanes' values are live). */
#ifndef OUTER_NORM_UNROLL
#define OUTER_NORM_UNROLL 8
#endif
/* A normalization's partials are static shared memory, which a kernel may hold up to 48 KB of:
 * a group whose level's partials need more is left to the row scheduler. */
#define OUTER_NORM_MAX_PARTIAL_BYTES 32768

typedef struct outer_red {
    int node;
    fu_tensor out, in;
    fu_op op;
    fu_dtype acc_dt; /* the output dtype; accumulated in its compute type */
    int level;       /* 0, or one past the highest level of the reductions it reads */
    bool broadcast;  /* its input is the domain with some kept axes of extent 1 (a mask [B, T, 1]
                      * beside [B, T, D]): each column's thread reduces it at its own column */
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
    /* a normalization (fu_plan_options.outer_norm): a pass over the rows a level, then one
     * writing the full-size outputs; no row splits */
    bool norm;
    int nlevels;       /* levels of reductions (1 where none reads another) */
    bool full_outputs; /* outputs of the domain's shape */
    int rows_a_warp;   /* ty rows of threads a warp holds (32 / tx, at least 1): combined by shuffles */
    int groups;        /* ty / rows_a_warp: each group's partials go through shared memory */
    int level_reds;    /* the most reductions of one level: their partials share the barriers */
    int ncache;        /* inputs kept in shared memory: cache_t[i] at byte cache_at[i] */
    fu_tensor cache_t[OUTER_MAX_CACHE];
    size_t cache_at[OUTER_MAX_CACHE];
    size_t shared_bytes; /* the cache (dynamic shared memory) */
} outer_params;

/* fu_outer_emit's state while it writes the kernel. */
typedef struct outer_emit {
    const outer_params *p;
    const fu_fusion *f;
    fu_kernel_writer *w;
    int levels_done;                 /* the reductions of lower levels are final: may be read */
    char var[OUTER_MAX_REDS][8][24]; /* per reduction and lane: its register */
    bool in_rows;                    /* inside a row loop: cached inputs are read from the tile */
    cg_index cache_base[OUTER_MAX_CACHE]; /* each cached input's offset at the element, lane 0 */
    char cache_var[96];              /* what lookup_cache hands back (the memo copies it) */
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

/* The keepdim form of a per-column value (the domain's rank, the reduced axes as 1), or one
 * broadcast over some kept axes; with c, its index at the current column in idx. */
static bool keepdim_index(const outer_params *p, const cg_ctx *c, const fu_value *v, cg_index *idx)
{
    for (int a = 0; a < v->rank; a++) {
        if (v->shape[a] == 1) {
            if (c) cg_index_const(&idx[a], 0);
        } else if (p->reduced[a] || v->shape[a] != p->D[a]) {
            return false;
        } else if (c) {
            cg_index_var(&idx[a], a, c->var_names[a]);
        }
    }
    return true;
}

/* The squeezed form: the kept axes in order, or a suffix of them (NumPy broadcasting). */
static bool squeezed_index(const outer_params *p, const cg_ctx *c, const fu_value *v, cg_index *idx)
{
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
    return true;
}

/* A reshape of the squeezed form: v's axes of extent > 1 are the kept axes of extent > 1, all
 * of them and in order, its axes of extent 1 anywhere (a reduction of a permuted view in the
 * view's keepdim shape, [C, 1, 1] for a domain [A, B, C] reduced over A and B: segment.c). */
static bool reshaped_index(const outer_params *p, const cg_ctx *c, const fu_value *v, cg_index *idx)
{
    int a = 0;
    for (int i = 0; i < v->rank; i++) {
        if (v->shape[i] == 1) {
            if (c) cg_index_const(&idx[i], 0);
            continue;
        }
        while (a < p->rank && (p->reduced[a] || p->D[a] == 1)) a++;
        if (a == p->rank || v->shape[i] != p->D[a]) return false;
        if (c) cg_index_var(&idx[i], a, c->var_names[a]);
        a++;
    }
    while (a < p->rank && (p->reduced[a] || p->D[a] == 1)) a++;
    return a == p->rank;
}

/* Whether v is per-column (the kept axes' extents, with or without the
 * reduced axes as 1, broadcast from fewer axes, or reshaped); with c, also its
 * index at the current column and lane in idx. */
static bool column_index(const outer_params *p, const cg_ctx *c, const fu_value *v, cg_index *idx)
{
    int last = p->rank - 1;
    bool ok = v->rank == p->rank ? keepdim_index(p, c, v, idx) : squeezed_index(p, c, v, idx);
    if (!ok && !reshaped_index(p, c, v, idx)) return false;
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
    if (e->p->reds[i].level >= e->levels_done) {
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

/* Each reduction's level: 0 where what it reads needs no reduction of the group, else one
 * past the highest level it reads (nodes are in topological order). Levels past 0 are a
 * normalization's (fu_plan_options.outer_norm). */
static bool assign_levels(const fu_group *g, outer_params *p, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    int *after = fu_calloc((size_t)f->nvalues + 1, sizeof *after); /* per tensor: the levels it needs done */
    if (!after) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    p->nlevels = 1;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i]) continue;
        int need = 0;
        for (int k = 0; k < n->ninputs; k++)
            if (fu_tensor_valid(f, n->inputs[k]) && after[n->inputs[k]] > need) need = after[n->inputs[k]];
        int r = outer_red_of(p, n->output);
        if (r >= 0) {
            p->reds[r].level = need++;
            if (need > p->nlevels) p->nlevels = need;
        }
        after[n->output] = need;
    }
    fu_free(after);
    for (int i = 0; i < p->nred && !g->opts->outer_norm; i++)
        if (p->reds[i].level > 0) {
            snprintf(why, nwhy, "outer reduction: '%s' reads another reduction", fu_val(f, p->reds[i].out)->name);
            return false;
        }
    return true;
}

/* Whether reduction input x is the domain, or the domain with some kept axes of extent 1. */
static bool fits_domain(const outer_params *p, const fu_value *x)
{
    if (x->rank != p->rank) return false;
    for (int a = 0; a < p->rank; a++)
        if (x->shape[a] != p->D[a] && (x->shape[a] != 1 || p->reduced[a])) return false;
    return true;
}

/* The index of a reduction's input at the element idx of the domain: 0 along its axes of
 * extent 1 (a broadcast input). */
static void input_index(const outer_params *p, const fu_value *x, const cg_index *idx, cg_index *out)
{
    for (int a = 0; a < p->rank; a++) {
        out[a] = idx[a];
        if (x->shape[a] == 1 && p->D[a] != 1) cg_index_const(&out[a], 0);
    }
}

/* The group's structure: one domain (the largest reduction input; the others are of its shape
 * or broadcast along kept axes), one set of reduced axes, the innermost kept. */
static bool analyse(const fu_group *g, outer_params *p, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    int64_t largest = -1;
    for (int i = 0; i < f->nnodes; i++) { /* the domain: the first largest input */
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i] || fu_op_kind_of(n->op) != FU_KIND_REDUCE) continue;
        const fu_value *x = fu_val(f, n->inputs[0]);
        if (fu_shape_numel(x->rank, x->shape) <= largest) continue;
        largest = fu_shape_numel(x->rank, x->shape);
        p->rank = x->rank;
        memcpy(p->D, x->shape, sizeof p->D);
        fu_reduced_axes(&n->attrs, x->rank, p->reduced);
    }
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
        if (!fits_domain(p, x) || memcmp(red, p->reduced, sizeof red)) {
            snprintf(why, nwhy, "outer reduction: '%s' reduces another domain or other axes", fu_val(f, n->output)->name);
            return false;
        }
        outer_red *r = &p->reds[p->nred++];
        r->broadcast = !is_domain(p, x);
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
    return assign_levels(g, p, why, nwhy);
}

/* A normalization's passes and tile are planned for inputs of the domain's shape: a broadcast
 * reduction only beside plain column reductions (one level, no output of the domain's shape). */
static bool broadcast_fits(const fu_group *g, const outer_params *p, char *why, size_t nwhy)
{
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].broadcast && (p->nlevels > 1 || p->full_outputs)) {
            snprintf(why, nwhy, "outer reduction: '%s' reduces a broadcast input beside a normalization",
                     fu_val(g->f, p->reds[i].out)->name);
            return false;
        }
    return true;
}

/* Every output is per-column, or (a normalization) of the domain's shape. */
static bool check_outputs(const fu_group *g, outer_params *p, char *why, size_t nwhy)
{
    for (int k = 0; k < g->noutputs; k++) {
        const fu_value *v = fu_val(g->f, g->outputs[k]);
        if (is_domain(p, v) && g->opts->outer_norm) {
            p->full_outputs = true;
            continue;
        }
        if (is_domain(p, v) || !column_index(p, NULL, v, NULL) || fu_shape_numel(v->rank, v->shape) != p->C) {
            snprintf(why, nwhy, "outer reduction: output '%s' is not one value per column", v->name);
            return false;
        }
    }
    return true;
}

/* The block and the grid; `widest`: the largest element of a domain-shaped
 * tensor the kernel moves (its 16-byte vector sets vec). */
static void choose_vec(outer_params *p, size_t widest)
{
    p->vec = (int)(16 / widest);
    if (p->vec > 8) p->vec = 8;
    while (p->vec > 1 && p->D[p->rank - 1] % p->vec) p->vec /= 2;
}

static void choose_config(const fu_group *g, outer_params *p, size_t widest)
{
    p->threads = OUTER_THREADS;
    p->min_blocks = 1;
    choose_vec(p, widest);
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

/* Whether what t is computed from in the group (stopping at the group's reductions: registers)
 * reads external tensor x; seen marks the tensors walked. */
static bool cone_reads(const fu_group *g, const outer_params *p, fu_tensor t, fu_tensor x, bool *seen)
{
    if (t == x) return true;
    if (!fu_tensor_valid(g->f, t) || seen[t]) return false;
    seen[t] = true;
    const fu_node *n = fu_producer(g->f, t);
    if (!n || !g->in_group[n - g->f->nodes] || outer_red_of(p, t) >= 0) return false;
    for (int k = 0; k < n->ninputs; k++)
        if (cone_reads(g, p, n->inputs[k], x, seen)) return true;
    return false;
}

/* The passes of a normalization that read external tensor x: one a level, then the outputs'. */
static int passes_reading(const fu_group *g, const outer_params *p, fu_tensor x, bool *seen)
{
    int passes = 0;
    for (int level = 0; level <= p->nlevels; level++) {
        bool reads = false;
        memset(seen, 0, (size_t)g->f->nvalues * sizeof *seen);
        for (int i = 0; i < p->nred && level < p->nlevels; i++)
            reads |= p->reds[i].level == level && cone_reads(g, p, p->reds[i].in, x, seen);
        for (int k = 0; k < g->noutputs && level == p->nlevels; k++)
            reads |= is_domain(p, fu_val(g->f, g->outputs[k])) && cone_reads(g, p, g->outputs[k], x, seen);
        passes += reads;
    }
    return passes;
}

/* A normalization's tile, block and cache: every block owns tx * vec columns over all the
 * rows (no splits), with ty rows of threads (fewer, and tx more up to a warp, where the rows
 * are few). The inputs of the domain's shape that two passes or more read are kept in
 * shared memory, in the kernel's parameter order, while their tiles fit; the tile narrows
 * from OUTER_NORM_TILE_BYTES a row to 32 while the column blocks are fewer than the SMs or
 * the candidates' tiles do not fit. False and why where the column blocks are fewer than
 * half the SMs even then, or where the partials would not fit a kernel's static shared
 * memory (OUTER_NORM_MAX_PARTIAL_BYTES). */
static bool choose_norm_config(const fu_group *g, outer_params *p, size_t widest, const cg_param *params,
                               int nparams, char *why, size_t nwhy)
{
    p->threads = OUTER_NORM_THREADS;
    p->min_blocks = 1;
    choose_vec(p, widest);
    bool *seen = fu_calloc((size_t)g->f->nvalues + 1, sizeof *seen);
    if (!seen) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    bool want[64] = {false};
    int64_t want_bytes = 0; /* the candidates' bytes of one element each */
    for (int i = 0; i < nparams && i < 64; i++) {
        const fu_value *v = fu_val(g->f, params[i].tensor);
        want[i] = !params[i].is_output && is_domain(p, v) && passes_reading(g, p, params[i].tensor, seen) >= 2;
        if (want[i]) want_bytes += (int64_t)fu_dtype_size(v->dtype);
    }
    fu_free(seen);
    const int lane_bytes = p->vec * (int)widest;
    const int64_t col_threads = p->C / p->vec;
    const int64_t max_shared = (int64_t)g->opts->max_shared_per_block - g->opts->reserved_shared_per_block;
    p->level_reds = 0;
    for (int level = 0; level < p->nlevels; level++) {
        int n = 0;
        for (int i = 0; i < p->nred; i++) n += p->reds[i].level == level;
        if (n > p->level_reds) p->level_reds = n;
    }
    int64_t left = 0; /* shared memory beside the static partials */
    p->tx = OUTER_NORM_TILE_BYTES / lane_bytes > 1 ? OUTER_NORM_TILE_BYTES / lane_bytes : 1;
    for (;;) {
        p->gx = (col_threads + p->tx - 1) / p->tx;
        p->ty = p->threads / p->tx;
        left = max_shared - (int64_t)p->level_reds * p->ty * p->tx * p->vec * 8; /* at most this many partials */
        bool fits = p->Rn * p->tx * p->vec * want_bytes + 16 * OUTER_MAX_CACHE <= left;
        if (p->tx == 1 || p->tx * lane_bytes <= 32 || (p->gx >= g->opts->sm_count && fits)) break;
        p->tx /= 2;
    }
    if (p->gx * 2 < g->opts->sm_count) {
        snprintf(why, nwhy, "outer normalization: %lld column blocks of %d bytes a row, fewer than half the %d SMs",
                 (long long)p->gx, p->tx * lane_bytes, g->opts->sm_count);
        return false;
    }
    /* Fewer rows than rows of threads: the idle ones go to the columns (a wider tile) while the
     * blocks stay as many as the SMs, then the block shrinks to the rows (whole warps: the
     * combine's shuffles take every lane). */
    int64_t rows_p2 = 1;
    while (rows_p2 < p->Rn && rows_p2 < p->ty) rows_p2 *= 2;
    while (p->ty > rows_p2 && p->tx < 32 && (col_threads + 2 * p->tx - 1) / (2 * p->tx) >= g->opts->sm_count) {
        p->tx *= 2;
        p->ty /= 2;
        p->gx = (col_threads + p->tx - 1) / p->tx;
    }
    if (p->ty > rows_p2) p->ty = (int)(p->tx * rows_p2 >= 32 ? rows_p2 : 32 / p->tx);
    p->threads = p->tx * p->ty;
    p->rows_a_warp = p->tx < 32 ? 32 / p->tx : 1;
    p->groups = p->ty / p->rows_a_warp;
    p->part_slots = p->level_reds * p->groups * p->tx * p->vec;
    if ((int64_t)p->part_slots * 8 > OUTER_NORM_MAX_PARTIAL_BYTES) {
        snprintf(why, nwhy, "outer normalization: %d partials of 8 bytes a level, more than %d bytes of static "
                 "shared memory", p->part_slots, OUTER_NORM_MAX_PARTIAL_BYTES);
        return false;
    }
    left = max_shared - (int64_t)p->part_slots * 8;
    p->splits = 1;
    p->rows_per_split = p->Rn;
    p->unrolled_rows = 0;
    p->split = false;
    for (int i = 0; i < nparams && i < 64 && p->ncache < OUTER_MAX_CACHE; i++) {
        if (!want[i]) continue;
        const int64_t esize = (int64_t)fu_dtype_size(fu_val(g->f, params[i].tensor)->dtype);
        const int64_t bytes = (p->Rn * p->tx * p->vec * esize + 15) / 16 * 16;
        if (bytes > left - (int64_t)p->shared_bytes) continue;
        p->cache_t[p->ncache] = params[i].tensor;
        p->cache_at[p->ncache++] = p->shared_bytes;
        p->shared_bytes += (size_t)bytes;
    }
    return true;
}

/* The widest element of the domain-shaped tensors among the kernel's
 * parameters (every materialized tensor its outputs read, then the outputs),
 * from the list fu_kw_begin makes; false and why where it cannot make one. */
static bool widest_domain_param(const fu_group *g, const outer_params *p, cg_param *params, int *nparams,
                                size_t *widest, char *why, size_t nwhy)
{
    int n = *nparams = fu_kw_params(g, params, why, nwhy);
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
    cg_param kparams[64];
    int nkparams = 0;
    bool ok = analyse(g, p, why, nwhy) && widest_domain_param(g, p, kparams, &nkparams, &widest, why, nwhy) &&
              check_outputs(g, p, why, nwhy) && broadcast_fits(g, p, why, nwhy);
    p->norm = ok && (p->nlevels > 1 || p->full_outputs);
    if (ok && p->norm) ok = choose_norm_config(g, p, widest, kparams, nkparams, why, nwhy);
    else if (ok) choose_config(g, p, widest);
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
    kp->shared_bytes = p->shared_bytes;
    kp->workspace_bytes = p->workspace_bytes;
    int nc = snprintf(kp->config, sizeof kp->config,
                      "outer: rows=%lld columns=%lld vec=%d threads=%dx%d column_blocks=%lld row_splits=%lld reductions=%d",
                      (long long)p->Rn, (long long)p->C, p->vec, p->tx, p->ty, (long long)p->gx, (long long)p->splits,
                      p->nred);
    if (p->norm && nc > 0 && (size_t)nc < sizeof kp->config)
        snprintf(kp->config + nc, sizeof kp->config - (size_t)nc,
                 " normalization: levels=%d full_outputs=%d cached_inputs=%d", p->nlevels, p->full_outputs, p->ncache);
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
                 "\"workspace_bytes\": %zu, \"normalization\": %s, \"levels\": %d, \"full_outputs\": %s, "
                 "\"cached_inputs\": %d, \"shared_bytes\": %zu}",
                 (long long)p->Rn, (long long)p->C, p->nred, p->threads, p->min_blocks, p->vec, p->tx, p->ty,
                 p->part_slots, (long long)p->gx, (long long)p->splits, (long long)p->rows_per_split, p->unrolled_rows,
                 p->grid, p->workspace_bytes, p->norm ? "true" : "false", p->nlevels,
                 p->full_outputs ? "true" : "false", p->ncache, p->shared_bytes);
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

/* Opens the loop over this thread's rows of its split (up to row_end), ty apart, and
 * declares the rows' axis variables; *ragged: a trip of the unrolled loop may be past the
 * split's end (row_ok false: it reads the last row again). Closed by emit_rows_end. */
static void emit_rows_begin(outer_emit *e, bool *ragged)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    /* unrolled whole: straight-line code, so every load can be issued before the first add. Where
     * the splits do not cover the rows exactly, a trip past the split's end reads its last row
     * again and adds the identity instead. */
    *ragged = p->unrolled_rows && (p->Rn % p->rows_per_split || p->rows_per_split % p->ty);
    if (p->unrolled_rows) {
        cg_line(c, "if (live)");
        cg_open(c);
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int trip = 0; trip < %d; trip++) {", p->unrolled_rows);
        c->indent++;
        c->scope++;
        if (*ragged) {
            cg_line(c, "const %s row_at = (%s)by * %lld + ty + trip * %d;", it, it, (long long)p->rows_per_split, p->ty);
            cg_line(c, "const bool row_ok = row_at < row_end;");
            cg_line(c, "const %s row = row_ok ? row_at : row_end - 1;", it);
        } else {
            cg_line(c, "const %s row = (%s)by * %lld + ty + trip * %d;", it, it, (long long)p->rows_per_split, p->ty);
        }
    } else {
        cg_line(c, "#pragma unroll %d", p->norm && e->levels_done == 0 ? OUTER_NORM_UNROLL : 4);
        cg_line(c, "for (%s row = (%s)by * %lld + ty; live && row < row_end; row += %d) {", it, it,
                (long long)p->rows_per_split, p->ty);
        c->indent++;
        c->scope++;
    }
    emit_axis_vars(e, true, "row");
    if (p->ncache)
        cg_line(c, "const int fu_slot = (int)row * %d + (int)tx * %d; // the thread's vector of the tile's row",
                p->tx * p->vec, p->vec);
    c->vec = p->vec;
    c->lane_var = p->vec > 1 ? p->rank - 1 : -1;
    e->in_rows = true;
}

static void emit_rows_end(outer_emit *e)
{
    cg_ctx *c = &e->w->cg;
    e->in_rows = false;
    c->lane = 0;
    c->vec = 1;
    c->lane_var = -1;
    cg_close(c);
    if (e->p->unrolled_rows) cg_close(c); /* if (live) */
}

/* The first pass of a normalization copies each cached input's element vector of the row into
 * the thread's slot of the tile (every pass then reads it there, lookup_cache). */
static void emit_cache_fill(outer_emit *e)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    cg_index idx[FU_MAX_RANK];
    c->lane = 0;
    full_index(e, idx);
    for (int i = 0; i < p->ncache; i++) {
        const fu_value *v = fu_val(e->f, p->cache_t[i]);
        const cg_param *par = cg_find_param(c, p->cache_t[i]);
        cg_index off;
        cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
        e->cache_base[i] = off;
        e->cache_base[i].lane_coef = 0;
        cg_index_refresh(c, &e->cache_base[i]);
        const int bytes = p->vec * (int)fu_dtype_size(v->dtype);
        if (p->vec > 1 && cg_offset_vectorizable(c, &off, p->vec) && bytes <= 16 && 16 % bytes == 0) {
            char base[CG_EXPR];
            const char *wide = cg_vector_type(bytes);
            cg_offset_base_expr(c, &off, base, sizeof base);
            cg_line(c, "*(%s *)(fu_t%d + fu_slot) = __ldg((const %s *)(%s + %s));", wide, i, wide, par->name, base);
        } else {
            for (int lane = 0; lane < p->vec; lane++) {
                c->lane = lane;
                cg_index_refresh(c, &off);
                cg_line(c, "fu_t%d[fu_slot + %d] = %s[%s];", i, lane, par->name, off.expr);
            }
            c->lane = 0;
        }
    }
}

/* Inside a normalization's row loop, a load of a cached input at the element's own position
 * is a read of the thread's slot of the tile. */
static const char *lookup_cache(cg_ctx *c, fu_tensor t, const cg_index *off, void *user)
{
    outer_emit *e = user;
    if (!e->in_rows || !off->affine || off->lane_coef != (c->vec > 1 ? 1 : 0)) return NULL;
    cg_index base = *off;
    base.lane_coef = 0;
    for (int i = 0; i < e->p->ncache; i++)
        if (e->p->cache_t[i] == t && cg_index_same(c, &e->cache_base[i], &base)) {
            snprintf(e->cache_var, sizeof e->cache_var, "fu_load(fu_t%d[fu_slot + %d])", i, c->lane);
            return e->cache_var;
        }
    return NULL;
}

/* Each thread's rows of this split into its registers: the reductions of `level`. */
static void emit_row_loop(outer_emit *e, int level)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    bool ragged;
    emit_rows_begin(e, &ragged);
    if (level == 0) emit_cache_fill(e);
    cg_index idx[FU_MAX_RANK];
    full_index(e, idx);
    for (int lane = 0; lane < p->vec; lane++) {
        c->lane = lane;
        cg_index li[FU_MAX_RANK];
        memcpy(li, idx, sizeof li);
        cg_index_refresh(c, &li[p->rank - 1]);
        for (int i = 0; i < p->nred; i++) {
            if (p->reds[i].level != level) continue;
            char guarded[CG_EXPR + 96];
            cg_index xi[FU_MAX_RANK];
            input_index(p, fu_val(e->f, p->reds[i].in), li, xi);
            fu_red_combine(c, p->reds[i].op, e->var[i][lane],
                           fu_red_guard(p->reds[i].op, p->reds[i].acc_dt, ragged ? "row_ok" : "",
                                        cg_value(c, p->reds[i].in, xi), guarded, sizeof guarded));
        }
    }
    emit_rows_end(e);
}

/* A normalization's partials of `level`'s reductions, combined over ty in a fixed order into
 * every thread of the column (the same bits in each, and in every run): within each warp by
 * shuffles between the lanes tx apart (a butterfly: both lanes of a pair add the same two
 * values), then the warps' rows in group order from shared memory. Two barriers a level.
 * Each reduction's partials have a region of groups x width 8-byte slots of their own (its
 * start in doubles), so that reductions of other compute types (f32, i64) never overlap. */
static void emit_norm_combine(outer_emit *e, int level)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    const int width = p->tx * p->vec;
    cg_line(c, "__syncthreads(); // fu_part may still be read");
    int slot = 0;
    for (int i = 0; i < p->nred; i++) {
        if (p->reds[i].level != level) continue;
        for (int lane = 0; lane < p->vec; lane++) {
            const char *v = e->var[i][lane];
            for (int off = 16; off >= p->tx; off /= 2) {
                char shfl[96];
                snprintf(shfl, sizeof shfl, "__shfl_xor_sync(0xffffffffu, %s, %d)", v, off);
                fu_red_combine(c, p->reds[i].op, v, shfl);
            }
            cg_line(c, "if (ty %% %du == 0u) ((%s *)(fu_part + %d))[ty / %du * %d + tx * %d + %d] = %s;",
                    p->rows_a_warp, cg_compute_type(p->reds[i].acc_dt), slot * p->groups * width, p->rows_a_warp,
                    width, p->vec, lane, v);
        }
        slot++;
    }
    cg_line(c, "__syncthreads();");
    slot = 0;
    for (int i = 0; i < p->nred; i++) {
        if (p->reds[i].level != level) continue;
        const char *ct = cg_compute_type(p->reds[i].acc_dt);
        for (int lane = 0; lane < p->vec; lane++) {
            const char *v = e->var[i][lane];
            cg_line(c, "%s = ((const %s *)(fu_part + %d))[tx * %d + %d];", v, ct, slot * p->groups * width, p->vec, lane);
            if (p->groups > 1) {
                cg_line(c, "#pragma unroll");
                cg_line(c, "for (int grp = 1; grp < %d; grp++)", p->groups);
                cg_open(c);
                char rd[128];
                snprintf(rd, sizeof rd, "((const %s *)(fu_part + %d))[grp * %d + tx * %d + %d]", ct,
                         slot * p->groups * width, width, p->vec, lane);
                fu_red_combine(c, p->reds[i].op, v, rd);
                cg_close(c);
            }
            fu_red_round(c, p->reds[i].op, p->reds[i].acc_dt, v);
        }
        slot++;
    }
}

/* The block's ty partials of each column of `level`'s reductions, in ty order, into the
 * threads of ty = 0 (a normalization's: emit_norm_combine). */
static void emit_block_combine(outer_emit *e, int level)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    if (p->norm) {
        emit_norm_combine(e, level);
        return;
    }
    for (int i = 0; i < p->nred; i++) {
        if (p->reds[i].level != level) continue;
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

/* Output k (tensor t) at the current element (full: the domain's; else the column's): its
 * lanes' values, stored as one vector where the offset allows. */
static void emit_store(outer_emit *e, int k, fu_tensor t, bool full)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    const fu_value *v = fu_val(e->f, t);
    const cg_param *par = fu_kw_output(e->w, t);
    char lanes[8][32];
    cg_index oidx[FU_MAX_RANK], off;
    for (int lane = 0; lane < p->vec; lane++) {
        c->lane = lane;
        if (full) full_index(e, oidx);
        else column_index(p, c, v, oidx);
        snprintf(lanes[lane], sizeof lanes[lane], "%s", cg_value(c, t, oidx));
    }
    c->lane = 0;
    if (full) full_index(e, oidx);
    else column_index(p, c, v, oidx);
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

/* A normalization's last pass: the outputs of the domain's shape, at every row. */
static void emit_full_outputs(outer_emit *e, const fu_group *g)
{
    bool ragged;
    emit_rows_begin(e, &ragged);
    for (int k = 0; k < g->noutputs; k++)
        if (is_domain(e->p, fu_val(e->f, g->outputs[k]))) emit_store(e, k, g->outputs[k], true);
    emit_rows_end(e);
}

/* The outputs of the columns, by the threads of row 0. */
static void emit_outputs(outer_emit *e, const fu_group *g)
{
    const outer_params *p = e->p;
    cg_ctx *c = &e->w->cg;
    e->levels_done = p->nlevels;
    if (p->full_outputs) emit_full_outputs(e, g);
    cg_line(c, "if (ty != 0 || !live) return;");
    for (int i = 0; i < p->nred && !p->norm; i++) /* (a normalization's are rounded as each level ends) */
        for (int lane = 0; lane < p->vec; lane++) fu_red_round(c, p->reds[i].op, p->reds[i].acc_dt, e->var[i][lane]);
    c->vec = p->vec;
    c->lane_var = p->vec > 1 ? p->rank - 1 : -1;
    for (int k = 0; k < g->noutputs; k++)
        if (!is_domain(p, fu_val(e->f, g->outputs[k]))) emit_store(e, k, g->outputs[k], false);
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
    if (p->norm) {
        cg_line(c, "// a normalization: %d pass%s of reductions over the block's rows%s; %d input%s kept in shared memory",
                p->nlevels, p->nlevels == 1 ? "" : "es", p->full_outputs ? ", then one writing the outputs" : "",
                p->ncache, p->ncache == 1 ? "" : "s");
        cg_line(c, "__shared__ double fu_part[%d]; // per reduction of a level, group of %d rows of threads and column",
                p->part_slots, p->rows_a_warp);
    } else {
        cg_line(c, "__shared__ double fu_part[%d]; // one value per thread and column: the block's partials", p->part_slots);
    }
    if (p->ncache)
        cg_line(c, "extern __shared__ __align__(16) unsigned char fu_tile[]; // %zu bytes: the cached inputs' [rows, %d] tiles",
                p->shared_bytes, p->tx * p->vec);
    for (int i = 0; i < p->ncache; i++) {
        const fu_value *v = fu_val(e->f, p->cache_t[i]);
        const char *st = cg_storage_type(v->dtype);
        cg_line(c, "%s *const fu_t%d = (%s *)(fu_tile + %zu); // '%s'", st, i, st, p->cache_at[i], v->name);
    }
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
    cg_line(c, "const %s row_end = %lld < (%s)(by + 1) * %lld ? %lld : (%s)(by + 1) * %lld;",
            it, (long long)p->Rn, it, (long long)p->rows_per_split, (long long)p->Rn, it, (long long)p->rows_per_split);
    for (int level = 0; level < p->nlevels; level++) {
        e->levels_done = level;
        emit_row_loop(e, level);
        emit_block_combine(e, level);
    }
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
    bool ok = fu_kw_begin(w, g, kp,
                          p->norm ? "outer normalization (a column tile over all rows, coalesced; a pass a level)"
                                  : "outer reduction (columns, coalesced; row splits combined by the last block)",
                          why, nwhy);
    if (ok) {
        cg_ctx *c = &w->cg;
        for (int a = 0; a < p->rank; a++) {
            char name[16];
            snprintf(name, sizeof name, "%c%d", p->reduced[a] ? 'k' : 'o', a);
            cg_add_var(c, name);
        }
        c->user = e;
        c->lookup_register = outer_lookup_register;
        if (p->ncache) c->lookup_cache = lookup_cache;
        emit_kernel(e, g, kp);
        ok = fu_kw_finish(w, kp, why, nwhy);
    } else {
        fu_kw_abort(w);
    }
    fu_free(e);
    fu_free(w);
    return ok;
}
