/*
 * bound.c -- a lower bound on the kernels a fusion needs, from its math alone
 * (no scheduler, no segmenter): the number of levels that forced boundaries
 * separate.
 *
 * Each tensor gets a level (how many boundaries lie before it) and what it
 * depends on within its level: nothing ("free": a pointwise value, or a
 * reduction over all axes of one, which every block can compute up front),
 * per-row values of one row kind (partial reductions that keep the same
 * axes, of the same extents), a grid-wide value (a reduction over all axes
 * of per-row values, unless there is only one row) or a scatter's result. A boundary is forced where
 *   - a partial reduction reads per-row values of another row kind, or a
 *     grid-wide value or a scatter's result (a change of reduction axis needs
 *     the earlier reduction complete over the whole grid), except a reduction
 *     over exactly the axes that rows over the innermost axis keep (column
 *     sums of row results: the row kernel accumulates them as its rows
 *     complete, k_reduction.c's column reductions);
 *   - an op combines per-row values of two row kinds, or reads a grid-wide
 *     value at more than one element, or a scatter's result;
 *   - the op is a segment_set (the user asked for one).
 * It ignores what no fuser can avoid only sometimes (a row value read at
 * another row, say), so it may be lower than the real minimum, never higher.
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

/* A reduction of x over `reduced`, exactly the axes that the rows of kind k
 * keep, in k's domain, where k reduces the innermost axis: column sums of
 * row results, which need no boundary. */
static bool columns_of_rows(const row_kind *k, const fu_value *x, const bool *reduced)
{
    if (k->rank != x->rank || memcmp(k->shape, x->shape, (size_t)x->rank * sizeof *x->shape) || !k->reduced[x->rank - 1])
        return false;
    for (int a = 0; a < x->rank; a++)
        if (reduced[a] == k->reduced[a]) return false;
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
    kinds[*nkinds] = k;
    return (*nkinds)++;
}

/* What an op that is no reduction, scatter or segment_set depends on. */
static dep combine(const fu_fusion *f, const fu_node *n, const dep *deps)
{
    dep d = {0, DEP_FREE, -1};
    for (int k = 0; k < n->ninputs; k++)
        if (deps[n->inputs[k]].level > d.level) d.level = deps[n->inputs[k]].level;
    bool scalar = fu_tensor_numel(f, n->output) <= 1;
    bool forced = false;
    for (int k = 0; k < n->ninputs; k++) {
        const dep *in = &deps[n->inputs[k]];
        if (in->level < d.level || in->kind == DEP_FREE) continue;
        if (in->kind == DEP_SCATTER || (in->kind == DEP_GRID && !scalar)) forced = true;
        else if (in->kind == DEP_GRID) d.kind = DEP_GRID;
        else if (d.kind == DEP_ROWS && d.row_kind != in->row_kind) forced = true;
        else if (d.kind != DEP_GRID) {
            d.kind = DEP_ROWS;
            d.row_kind = in->row_kind;
        }
    }
    if (forced) return (dep){d.level + 1, DEP_FREE, -1};
    return d;
}

int fu_kernels_lower_bound(const fu_fusion *f)
{
    if (f->nnodes == 0) return 0;
    dep *deps = fu_calloc((size_t)f->nvalues + 1, sizeof *deps);
    row_kind *kinds = fu_calloc((size_t)f->nnodes + 1, sizeof *kinds);
    if (!deps || !kinds) {
        fu_free(deps);
        fu_free(kinds);
        return 1;
    }
    int nkinds = 0, top = 0;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        fu_op_kind kind = fu_op_kind_of(n->op);
        dep d;
        if (n->op == FU_OP_SEGMENT_SET) {
            d = (dep){deps[n->inputs[0]].level + 1, DEP_FREE, -1};
        } else if (kind == FU_KIND_SCATTER) {
            d = combine(f, n, deps);
            d.kind = DEP_SCATTER;
        } else if (kind == FU_KIND_REDUCE) {
            const fu_value *x = fu_val(f, n->inputs[0]);
            const dep *in = &deps[n->inputs[0]];
            bool reduced[FU_MAX_RANK];
            fu_reduced_axes(&n->attrs, x->rank, reduced);
            int nred = 0;
            for (int a = 0; a < x->rank; a++) nred += reduced[a];
            if (nred == x->rank) { /* over every axis */
                if (in->kind == DEP_SCATTER) d = (dep){in->level + 1, DEP_FREE, -1};
                else if (in->kind == DEP_ROWS && fu_shape_numel(kinds[in->row_kind].nkept, kinds[in->row_kind].kept) == 1)
                    d = *in; /* over the only row: a value of that row */
                else d = (dep){in->level, in->kind == DEP_FREE ? DEP_FREE : DEP_GRID, -1};
            } else {
                int rk = find_row_kind(kinds, &nkinds, x, reduced);
                bool same = in->kind == DEP_FREE ||
                            (in->kind == DEP_ROWS && (in->row_kind == rk || columns_of_rows(&kinds[in->row_kind], x, reduced)));
                d = (dep){same ? in->level : in->level + 1, DEP_ROWS, rk};
            }
        } else {
            d = combine(f, n, deps);
        }
        deps[n->output] = d;
        if (d.level > top) top = d.level;
    }
    fu_free(deps);
    fu_free(kinds);
    return top + 1;
}
