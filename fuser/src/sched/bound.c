/*
 * bound.c -- a lower bound on the kernels a fusion needs, from its math alone
 * (no scheduler, no segmenter): the number of levels that forced boundaries
 * separate.
 *
 * Each tensor gets a level (how many boundaries lie before it) and what it
 * depends on within its level: nothing ("free": a pointwise value, or a
 * reduction over all axes of one, which every block can compute up front),
 * per-row values of one row kind (partial reductions that keep the same
 * axes, of the same extents), a grid-wide value (a reduction across the
 * rows of per-row values: over all axes, or over other axes, as a row
 * kernel's column sums; unless there is only one row) or a scatter's result.
 * A boundary is forced where
 *   - an op reads a grid-wide value at more elements than it has and than
 *     FU_TAIL_OUT_MAX_ELEMS (a full-size value needs the whole grid's reduction
 *     first; counted at the elements the outputs can read of the op, `demands`:
 *     a value only gathered at a few positions the last block computes), or a
 *     scatter's result;
 *   - an op combines per-row values of two row kinds;
 *   - the op is a segment_set (the user asked for one).
 * Grid-wide values combine with each other and reduce further without one
 * (the last block can finish them). It ignores what no fuser can avoid only
 * sometimes (a row value read at another row, say), so it may be lower than
 * the real minimum, never higher. Outputs of no elements need no kernel, nor
 * an output that is an input's bytes (fu_output_is_input_view: copied). Nor is
 * a boundary forced before a value that one block can compute from the inputs
 * (block_local: the one-block scheduler): within a block a grid-wide value is
 * a barrier, and so is a scatter of floats (a stage of that scheduler).
 */
#include <string.h>

#include "plan.h"

typedef enum dep_kind { DEP_FREE, DEP_ROWS, DEP_GRID, DEP_SCATTER } dep_kind;

typedef struct dep {
    int level;
    dep_kind kind;
    int row_kind; /* DEP_ROWS: index into the row kinds */
} dep;

typedef struct row_kind {
    int nkept;
    int64_t kept[FU_MAX_RANK]; /* extents of the kept axes, in order */
    int rank;                  /* the first reduction of the kind: its input's shape */
    int64_t shape[FU_MAX_RANK];
    bool reduced[FU_MAX_RANK]; /* and the axes it reduces */
} row_kind;

/* Whether reductions of x over `reduced` are of kind k broadcast: the same axes reduced over the
 * same extents, each kept axis of the same extent or of extent 1 on one side (a mask [B, T, 1]
 * counted over T beside states [B, T, D] summed over T: the outer scheduler reduces both in one
 * kernel, k_outer.c). */
static bool broadcast_kind(const row_kind *k, const fu_value *x, const bool *reduced)
{
    if (k->rank != x->rank) return false;
    for (int a = 0; a < x->rank; a++) {
        if (k->reduced[a] != reduced[a]) return false;
        if (k->shape[a] != x->shape[a] && (reduced[a] || (k->shape[a] != 1 && x->shape[a] != 1))) return false;
    }
    return true;
}

static int find_row_kind(row_kind *kinds, int *nkinds, const fu_value *x, const bool *reduced)
{
    row_kind k = {0};
    k.rank = x->rank;
    for (int a = 0; a < x->rank; a++) {
        k.shape[a] = x->shape[a];
        k.reduced[a] = reduced[a];
        if (!reduced[a]) k.kept[k.nkept++] = x->shape[a];
    }
    for (int i = 0; i < *nkinds; i++)
        if (kinds[i].nkept == k.nkept && !memcmp(kinds[i].kept, k.kept, (size_t)k.nkept * sizeof k.kept[0])) return i;
    for (int i = 0; i < *nkinds && fu_shape_numel(k.nkept, k.kept) > 1; i++) { /* (a single row stays its own) */
        if (fu_shape_numel(kinds[i].nkept, kinds[i].kept) == 1 || !broadcast_kind(&kinds[i], x, reduced)) continue;
        for (int a = 0, j = 0; a < x->rank; a++) { /* the kind widened to both */
            if (x->shape[a] > kinds[i].shape[a]) kinds[i].shape[a] = x->shape[a];
            if (!reduced[a]) kinds[i].kept[j++] = kinds[i].shape[a];
        }
        return i;
    }
    kinds[*nkinds] = k;
    return (*nkinds)++;
}

/* The highest level among n's inputs. */
static int inputs_level(const fu_node *n, const dep *deps)
{
    int level = 0;
    for (int k = 0; k < n->ninputs; k++)
        if (deps[n->inputs[k]].level > level) level = deps[n->inputs[k]].level;
    return level;
}

/* The elements of each tensor that the outputs can read, at most, walking back from them: an
 * output all its own; an op's inputs at most as many as the op is read at (each element of a
 * pointwise op, a view or a gather reads one of each input: a gather of k elements reads k of
 * its source); all of a reduction's, a scatter's or a composite's input where any of the op
 * is read. */
static void demands(const fu_fusion *f, int64_t *demand)
{
    for (int k = 0; k < f->noutputs; k++) demand[f->outputs[k]] = fu_tensor_numel(f, f->outputs[k]);
    for (int i = f->nnodes - 1; i >= 0; i--) {
        const fu_node *n = &f->nodes[i];
        const int64_t read = demand[n->output];
        if (read == 0) continue;
        fu_op_kind kind = fu_op_kind_of(n->op);
        bool whole = kind == FU_KIND_REDUCE || kind == FU_KIND_SCATTER || kind == FU_KIND_COMPOSITE;
        for (int k = 0; k < n->ninputs; k++) {
            const int64_t all = fu_tensor_numel(f, n->inputs[k]), want = whole || read > all ? all : read;
            if (want > demand[n->inputs[k]]) demand[n->inputs[k]] = want;
        }
    }
}

/* What an op that is no reduction or segment_set depends on (a scatter: the level; its kind is
 * set after). local: one block can compute the op's value from what earlier kernels left
 * (block_local); demand: demands'. */
static dep combine(const fu_fusion *f, const fu_node *n, const dep *deps, const int64_t *demand, bool local)
{
    dep d = {inputs_level(n, deps), DEP_FREE, -1};
    int64_t numel = demand[n->output];
    bool forced = false, after_scatter = false;
    for (int k = 0; k < n->ninputs; k++) {
        const dep *in = &deps[n->inputs[k]];
        if (in->level < d.level || in->kind == DEP_FREE) continue;
        if (in->kind == DEP_SCATTER) after_scatter = true;
        else if (in->kind == DEP_GRID && numel > fu_tensor_numel(f, n->inputs[k]) && numel > FU_TAIL_OUT_MAX_ELEMS)
            forced = true;
        else if (in->kind == DEP_GRID) d.kind = DEP_GRID;
        else if (d.kind == DEP_ROWS && d.row_kind != in->row_kind) forced = true;
        else if (d.kind != DEP_GRID) {
            d.kind = DEP_ROWS;
            d.row_kind = in->row_kind;
        }
    }
    if (forced && local && !after_scatter) return (dep){d.level, DEP_GRID, -1}; /* one block's barrier */
    if (forced || after_scatter) return (dep){d.level + 1, DEP_FREE, -1};
    return d;
}

/* Scratch of block_local's walk: a stamp per node, a stack of nodes. */
typedef struct cone_walk {
    int *seen;
    int *stack;
    int stamp;
} cone_walk;

/* Whether one block can compute the value of n (no segment_set) at `level` from what the
 * kernels of lower levels left in memory: every input is such a value (local) or one of a
 * lower level, and the reductions and scatters (of floats) it needs at this level read at
 * most FU_BLOCK_MAX_WORK elements together (the one-block scheduler, k_block.c, whose group holds
 * at least those). Its other limits (shared memory, stages, outputs) are left out, so that
 * the bound stays at or under what the planner does. */
static bool block_local(const fu_fusion *f, const fu_node *n, const dep *deps, const bool *local, int level,
                        cone_walk *w)
{
    for (int k = 0; k < n->ninputs; k++)
        if (!local[n->inputs[k]] && deps[n->inputs[k]].level >= level) return false;
    int64_t work = 0;
    int top = 0;
    w->stamp++;
    w->seen[n - f->nodes] = w->stamp;
    w->stack[top++] = (int)(n - f->nodes);
    while (top > 0) {
        const fu_node *m = &f->nodes[w->stack[--top]];
        if (fu_op_kind_of(m->op) == FU_KIND_REDUCE) work += fu_tensor_numel(f, m->inputs[0]);
        if (fu_op_kind_of(m->op) == FU_KIND_SCATTER) {
            int64_t scatter = fu_block_scatter_work(f, m);
            if (scatter < 0) return false;
            work += scatter;
        }
        for (int k = 0; k < m->ninputs; k++) {
            fu_tensor t = m->inputs[k];
            int p = f->values[t].producer;
            if (p < 0 || deps[t].level < level || w->seen[p] == w->stamp) continue;
            w->seen[p] = w->stamp;
            w->stack[top++] = p;
        }
    }
    return work <= FU_BLOCK_MAX_WORK;
}

int fu_kernels_lower_bound(const fu_fusion *f)
{
    if (f->nnodes == 0) return 0;
    dep *deps = fu_calloc((size_t)f->nvalues + 1, sizeof *deps);
    row_kind *kinds = fu_calloc((size_t)f->nnodes + 1, sizeof *kinds);
    bool *local = fu_calloc((size_t)f->nvalues + 1, sizeof *local);
    int64_t *demand = fu_calloc((size_t)f->nvalues + 1, sizeof *demand);
    cone_walk walk = {fu_calloc((size_t)f->nnodes + 1, sizeof(int)), fu_calloc((size_t)f->nnodes + 1, sizeof(int)), 0};
    if (!deps || !kinds || !local || !demand || !walk.seen || !walk.stack) {
        fu_free(deps);
        fu_free(kinds);
        fu_free(local);
        fu_free(demand);
        fu_free(walk.seen);
        fu_free(walk.stack);
        return 1;
    }
    for (int t = 0; t < f->nvalues; t++) local[t] = f->values[t].producer < 0;
    demands(f, demand);
    int nkinds = 0;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        fu_op_kind kind = fu_op_kind_of(n->op);
        dep d;
        if (n->op == FU_OP_RESHAPE) {
            d = deps[n->inputs[0]]; /* the same bytes: a view, never a boundary of its own */
            local[n->output] = local[n->inputs[0]];
        } else if (n->op == FU_OP_SEGMENT_SET) {
            d = (dep){deps[n->inputs[0]].level + 1, DEP_FREE, -1};
            local[n->output] = true; /* the input, left in memory by the kernel before */
        } else if (kind == FU_KIND_SCATTER) {
            /* one block computes it as a stage where its cone fits (k_block.c): then, as a
             * grid-wide value, a barrier and not a boundary before what reads it */
            int level = inputs_level(n, deps);
            bool floats = fu_block_scatter_work(f, n) >= 0;
            bool one_block = floats && block_local(f, n, deps, local, level, &walk);
            d = combine(f, n, deps, demand, one_block);
            if (d.level > level) one_block = floats && block_local(f, n, deps, local, d.level, &walk);
            d.kind = one_block ? DEP_GRID : DEP_SCATTER;
            local[n->output] = one_block;
        } else if (kind == FU_KIND_REDUCE) {
            const fu_value *x = fu_val(f, n->inputs[0]);
            const dep *in = &deps[n->inputs[0]];
            bool reduced[FU_MAX_RANK];
            fu_reduced_axes(&n->attrs, x->rank, reduced);
            int nred = 0;
            for (int a = 0; a < x->rank; a++) nred += reduced[a];
            bool single_row = in->kind == DEP_ROWS &&
                              fu_shape_numel(kinds[in->row_kind].nkept, kinds[in->row_kind].kept) == 1;
            if (in->kind == DEP_SCATTER) {
                d = (dep){in->level + 1, DEP_FREE, -1};
            } else if (nred == x->rank) { /* over every axis */
                if (single_row) d = *in; /* over the only row: a value of that row */
                else d = (dep){in->level, in->kind == DEP_FREE ? DEP_FREE : DEP_GRID, -1};
            } else {
                int rk = find_row_kind(kinds, &nkinds, x, reduced);
                if (in->kind == DEP_FREE || (in->kind == DEP_ROWS && in->row_kind == rk)) d = (dep){in->level, DEP_ROWS, rk};
                else if (single_row) d = (dep){in->level, DEP_ROWS, in->row_kind};
                else d = (dep){in->level, DEP_GRID, -1}; /* across the rows of another kind: grid-wide */
            }
            local[n->output] = block_local(f, n, deps, local, d.level, &walk);
        } else {
            int level = inputs_level(n, deps);
            local[n->output] = block_local(f, n, deps, local, level, &walk);
            d = combine(f, n, deps, demand, local[n->output]);
            if (d.level > level) local[n->output] = true; /* past a boundary: from memory */
        }
        deps[n->output] = d;
    }
    /* Only what the outputs need counts (the planner drops the rest), and an output of
     * no elements needs no kernel: nothing is launched for it. */
    int kernels = 0;
    for (int k = 0; k < f->noutputs; k++) {
        const fu_value *v = fu_val(f, f->outputs[k]);
        if (v->producer >= 0 && fu_output_is_input_view(f, &f->nodes[v->producer])) continue; /* copied */
        if (fu_shape_numel(v->rank, v->shape) > 0 && deps[f->outputs[k]].level + 1 > kernels)
            kernels = deps[f->outputs[k]].level + 1;
    }
    fu_free(deps);
    fu_free(kinds);
    fu_free(local);
    fu_free(demand);
    fu_free(walk.seen);
    fu_free(walk.stack);
    return kernels;
}
