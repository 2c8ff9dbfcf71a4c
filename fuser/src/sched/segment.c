/*
 * segment.c -- the segmenter: decomposes and simplifies a fusion, then splits
 * it into the fewest kernels the schedulers take.
 *
 * 1. Composites are expanded (fu_fusion_decompose); identical ops are merged
 *    and dead ops dropped (so a fused forward+backward computes its row
 *    statistics once); degenerate shapes are rewritten (canonical_op: empty
 *    tensors, reductions over extent-0 and extent-1 axes). Where the fusion has
 *    reductions over at most 8 elements an output, it is planned a second time
 *    with them unrolled into pointwise ops, and the plan with fewer kernels is
 *    kept (fu_plan_build).
 * 2. segment_set outputs start a new level: everything that reads one runs in
 *    a later kernel.
 * 3. Each level is offered whole to the schedulers of the registry
 *    (registry.c), in priority order. If none takes it, the merging
 *    segmenter (merge.c) starts from one op a group and merges neighbours
 *    while a scheduler takes the merged group; the groups are then planned in
 *    order. A single op is always taken, so every valid fusion plans.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

double fu_dram_bytes_per_sm_clock(int memory_clock_khz, int memory_bus_width_bits, int sm_count, int clock_khz)
{
    if (memory_clock_khz <= 0 || memory_bus_width_bits <= 0 || sm_count <= 0 || clock_khz <= 0) return 0;
    return 2.0 * memory_clock_khz * (memory_bus_width_bits / 8.0) / ((double)sm_count * clock_khz);
}

void fu_plan_options_set_sm_count(fu_plan_options *o, int sm_count)
{
    if (sm_count <= 0) return;
    if (o->sm_count > 0) o->dram_bytes_per_sm_clock *= (double)o->sm_count / sm_count;
    o->sm_count = sm_count;
}

/* An H200's numbers: 132 SMs at 1.98 GHz, HBM3e at 3.2 GHz over 6144 bits (4.9 TB/s). */
void fu_plan_options_default(fu_plan_options *o)
{
    o->sm_count = 132;
    o->max_threads_per_sm = 2048;
    o->max_shared_per_block = 227 * 1024;
    o->max_shared_per_sm = 228 * 1024;
    o->reserved_shared_per_block = 1024;
    o->max_cluster = 8;
    o->dram_bytes_per_sm_clock = fu_dram_bytes_per_sm_clock(3201000, 6144, 132, 1980000);
    o->scatter = FU_SCATTER_DETERMINISTIC;
    o->outer_norm = false;
    o->transpose = true;
    o->transpose_min_bytes = fu_transpose_min_bytes(60 * 1024 * 1024); /* an H200's L2 */
}

int64_t fu_transpose_min_bytes(int64_t l2_bytes) { return l2_bytes > 0 ? l2_bytes / 8 : 0; }

/* ------------------------------------------------------------ simplify */

static bool same_attrs(fu_op op, const fu_attrs *a, const fu_attrs *b)
{
    if (a->axis != b->axis || a->naxes != b->naxes || a->keepdim != b->keepdim || a->rank != b->rank ||
        a->dtype != b->dtype || a->reduction != b->reduction || a->ignore_index != b->ignore_index ||
        a->padding_idx != b->padding_idx || a->num_weights != b->num_weights)
        return false;
    if (memcmp(&a->value, &b->value, sizeof a->value) || memcmp(&a->label_smoothing, &b->label_smoothing, sizeof(double)))
        return false;
    for (int i = 0; i < FU_MAX_RANK; i++)
        if (a->axes[i] != b->axes[i] || a->shape[i] != b->shape[i] || a->perm[i] != b->perm[i] ||
            a->start[i] != b->start[i] || a->stop[i] != b->stop[i] || a->step[i] != b->step[i])
            return false;
    (void)op;
    return true;
}

/* 1: views that keep every element where it is are planned as reshapes (plain_view);
 * 0: as written. fz_7_20's identity broadcast of a reshaped log-softmax made its output
 * "fit neither the rows nor a scalar": 2 kernels where the reshape alone takes 1. */
#ifndef PLAIN_VIEWS_AS_RESHAPES
#define PLAIN_VIEWS_AS_RESHAPES 1
#endif
/* 1: elementwise ops between a reshape and the outputs are computed in the reshaped tensor's
 * shape, the reshape moved to the outputs (elementwise_of_reshape), and a reshape of a cast of
 * an input is the cast of the input's reshape (reshape_of_elementwise_input); 0: as written (a
 * group norm's affine in [N, C, H, W] was a second kernel). */
#ifndef REGROUP_ELEMENTWISE
#define REGROUP_ELEMENTWISE 1
#endif

/* Whether v has this shape. */
static bool has_shape(const fu_value *v, int rank, const int64_t *shape)
{
    return v->rank == rank && !memcmp(v->shape, shape, (size_t)rank * sizeof *shape);
}

static bool is_output(const fu_fusion *f, fu_tensor t)
{
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i] == t) return true;
    return false;
}

static bool is_read(const fu_fusion *f, fu_tensor t)
{
    for (int i = 0; i < f->nnodes; i++)
        for (int k = 0; k < f->nodes[i].ninputs; k++)
            if (f->nodes[i].inputs[k] == t) return true;
    return false;
}

/* Whether n keeps its input's bytes in order: a reshape, or a permute that moves
 * only axes of extent 1 (the others keep their order). */
static bool same_bytes(const fu_fusion *f, const fu_node *n)
{
    if (n->op == FU_OP_RESHAPE) return true;
    if (n->op != FU_OP_PERMUTE) return false;
    const fu_value *x = fu_val(f, n->inputs[0]);
    int last = -1;
    for (int i = 0; i < x->rank; i++) {
        int a = n->attrs.perm[i];
        if (x->shape[a] == 1) continue;
        if (a < last) return false;
        last = a;
    }
    return true;
}

bool fu_output_is_input_view(const fu_fusion *f, const fu_node *n)
{
    return same_bytes(f, n) && f->values[n->inputs[0]].input_index >= 0 && is_output(f, n->output) &&
           !is_read(f, n->output);
}

/* A 16-bit scatter with atomic adds accumulates in f32, as PyTorch's
 * embedding backward does (each add rounded to bf16 loses up to 14% on a row
 * that half the tokens hit): the adds go into an f32 tensor, and a pointwise
 * kernel adds the base and rounds once. Cost: one more kernel, and beside
 * the 16-bit output's bytes an f32 copy of it zeroed, added into and read
 * back (3 x 4 bytes an element more than the 2-byte memset it replaces). */
static fu_tensor atomic_in_f32(fu_fusion *d, const fu_node *n, const fu_tensor *in, const char *name)
{
    const fu_value *base = fu_val(d, in[0]);
    fu_dtype dt = base->dtype;
    char part[FU_MAX_NAME + 16];
    snprintf(part, sizeof part, "%.*s.zero32", FU_MAX_NAME - 8, name);
    fu_tensor zeros = fu_full(d, base->rank, base->shape, 0.0, FU_F32, part);
    snprintf(part, sizeof part, "%.*s.src32", FU_MAX_NAME - 8, name);
    fu_tensor src = fu_cast(d, in[2], FU_F32, part);
    snprintf(part, sizeof part, "%.*s.acc32", FU_MAX_NAME - 8, name);
    fu_tensor ops[3] = {zeros, in[1], src};
    fu_tensor acc = fu_add_op(d, n->op, 3, ops, &n->attrs, part);
    snprintf(part, sizeof part, "%.*s.base32", FU_MAX_NAME - 8, name);
    fu_tensor base32 = fu_cast(d, in[0], FU_F32, part);
    snprintf(part, sizeof part, "%.*s.sum32", FU_MAX_NAME - 8, name);
    fu_tensor sum = fu_binary(d, FU_OP_ADD, base32, acc, part);
    return fu_cast(d, sum, dt, name);
}

/* The most elements an output of a reduction may take for the reduction to be unrolled
 * (unroll_small_reduction; Inductor's unroll_reductions_threshold is 8 too). */
#ifndef UNROLL_REDUCTION_MAX
#define UNROLL_REDUCTION_MAX 8
#endif

/* Whether t of d is computed from a reduction (anywhere in its cone). */
static bool reads_a_reduction(const fu_fusion *d, fu_tensor t)
{
    int *stack = fu_malloc(((size_t)d->nnodes + 1) * sizeof *stack);
    bool *seen = fu_calloc((size_t)d->nnodes + 1, sizeof *seen);
    bool found = !stack || !seen; /* (out of memory: as if it did, so nothing is rewritten) */
    int top = 0, p = d->values[t].producer;
    if (!found && p >= 0) {
        seen[p] = true;
        stack[top++] = p;
    }
    while (!found && top > 0) {
        const fu_node *m = &d->nodes[stack[--top]];
        found = fu_op_kind_of(m->op) == FU_KIND_REDUCE;
        for (int k = 0; k < m->ninputs && !found; k++) {
            int q = d->values[m->inputs[k]].producer;
            if (q < 0 || seen[q]) continue;
            seen[q] = true;
            stack[top++] = q;
        }
    }
    fu_free(stack);
    fu_free(seen);
    return found;
}

/* A float sum, max or min over at most UNROLL_REDUCTION_MAX elements an output (the product
 * of the reduced axes' extents) as pointwise ops: the input's slices at each reduced index,
 * added (in a wider type, rounded once) or taken the maximum or minimum of, pairwise, then
 * reshaped. A kernel then computes the value where it reads it, instead of a reduction
 * splitting the group. Not over values that other reductions computed (below). Returns -1
 * where n is not such a reduction. keep: the reduced axes of extent > 1. */
static fu_tensor unroll_small_reduction(fu_fusion *d, const fu_node *n, fu_tensor x, const int *keep, int nkeep,
                                        const fu_value *ov)
{
    const fu_value xv_copy = *fu_val(d, x), *xv = &xv_copy; /* (d's values move as the slices are added) */
    if (!fu_dtype_is_float(xv->dtype) || ov->dtype != xv->dtype || (n->op != FU_OP_SUM && n->op != FU_OP_RMAX && n->op != FU_OP_RMIN))
        return -1;
    int64_t count = 1;
    for (int k = 0; k < nkeep; k++) count *= xv->shape[keep[k]];
    /* over the results of other reductions it stays a reduction: the row kernel combines
     * rows' values over the grid, but reads no row's value at another row (fz_7_157: the
     * min of 4 row maxima, one kernel as a reduction, two as slices) */
    if (count > UNROLL_REDUCTION_MAX || reads_a_reduction(d, x)) return -1;
    /* a sum adds in a wider type and rounds once, as the interpreter's double sum does:
     * 16-bit in f32, f32 in f64. In f32 adds the 7 sigmoids of fz_11_172 minus their mean
     * were 1.6e-5 from it, over f32's 1e-5 (the reductions' kernels add in f32 too); a
     * conversion and a double add a term cost little beside the term's load */
    const fu_dtype wide = n->op != FU_OP_SUM || xv->dtype == FU_F64 ? xv->dtype : xv->dtype == FU_F32 ? FU_F64 : FU_F32;
    const bool widen = wide != xv->dtype;
    const fu_op combine = n->op == FU_OP_SUM ? FU_OP_ADD : n->op == FU_OP_RMAX ? FU_OP_MAX : FU_OP_MIN;
    const char *name = ov->name;
    char part[FU_MAX_NAME + 16];
    int64_t start[FU_MAX_RANK], stop[FU_MAX_RANK], step[FU_MAX_RANK];
    for (int a = 0; a < xv->rank; a++) {
        start[a] = 0;
        stop[a] = xv->shape[a];
        step[a] = 1;
    }
    fu_tensor terms[UNROLL_REDUCTION_MAX] = {x};
    for (int64_t j = 0; j < count; j++) {
        int64_t rest = j; /* j's digits over the kept-reduced axes, the last fastest */
        for (int k = nkeep - 1; k >= 0; k--) {
            start[keep[k]] = rest % xv->shape[keep[k]];
            stop[keep[k]] = start[keep[k]] + 1;
            rest /= xv->shape[keep[k]];
        }
        snprintf(part, sizeof part, "%.*s.at%lld", FU_MAX_NAME - 12, name, (long long)j);
        fu_tensor term = fu_slice(d, x, start, stop, step, part);
        if (widen) {
            snprintf(part, sizeof part, "%.*s.wide%lld", FU_MAX_NAME - 12, name, (long long)j);
            term = fu_cast(d, term, wide, part);
        }
        terms[j] = term;
    }
    /* pairwise, as a block's shuffles combine */
    int level = 0;
    for (int64_t n_terms = count; n_terms > 1; n_terms = (n_terms + 1) / 2, level++)
        for (int64_t j = 0; j < n_terms / 2; j++) {
            snprintf(part, sizeof part, "%.*s.acc%d_%lld", FU_MAX_NAME - 12, name, level, (long long)j);
            terms[j] = fu_binary(d, combine, terms[2 * j], terms[2 * j + 1], part);
            if (n_terms % 2 && j == n_terms / 2 - 1) terms[j + 1] = terms[n_terms - 1]; /* the odd one moves up */
        }
    fu_tensor acc = terms[0];
    if (widen) {
        snprintf(part, sizeof part, "%.*s.rounded", FU_MAX_NAME - 12, name);
        acc = fu_cast(d, acc, xv->dtype, part);
    }
    return fu_reshape(d, acc, ov->rank, ov->shape, name);
}

/* Whether view n keeps every element where it is: a broadcast to its input's shape, a
 * slice of the whole tensor, a permute by the identity or one moving only axes of extent
 * 1, a reshape. Such a view is the same bytes under (maybe) another shape. */
static bool is_plain_view(const fu_fusion *f, const fu_node *n)
{
    const fu_value *x = fu_val(f, n->inputs[0]), *y = fu_val(f, n->output);
    switch (fu_op_kind_of(n->op)) {
    case FU_KIND_RESHAPE:
        return true;
    case FU_KIND_PERMUTE:
        return same_bytes(f, n);
    case FU_KIND_BROADCAST:
        return has_shape(x, y->rank, y->shape);
    case FU_KIND_SLICE:
        for (int a = 0; a < x->rank; a++)
            if (n->attrs.start[a] != 0 || n->attrs.step[a] != 1 || n->attrs.stop[a] < x->shape[a]) return false;
        return true;
    default:
        return false;
    }
}

/* A plain view (is_plain_view) as a reshape of what its input views: a chain of them is
 * one reshape of the computed tensor, which an output takes as its own bytes
 * (alias_output_reshapes) instead of a kernel writing it in another shape; one that
 * changes nothing and is no output is its input. -1: n is no plain view. */
static fu_tensor plain_view(fu_fusion *d, const fu_fusion *f, const fu_node *n, fu_tensor x)
{
    if (!PLAIN_VIEWS_AS_RESHAPES || !is_plain_view(f, n)) return -1;
    const fu_value *ov = fu_val(f, n->output);
    const fu_node *pn = fu_producer(d, x);
    if (pn && pn->op == FU_OP_RESHAPE) x = pn->inputs[0]; /* (a reshape of a reshape) */
    const fu_value *xv = fu_val(d, x);
    if (has_shape(xv, ov->rank, ov->shape) && !is_output(f, n->output)) return x;
    if (n->op == FU_OP_RESHAPE && !(pn && pn->op == FU_OP_RESHAPE)) return -1; /* already one */
    return fu_reshape(d, x, ov->rank, ov->shape, ov->name);
}

/* Whether t is read by reductions alone (and is no output), or also by casts that only
 * reductions read where through_casts. */
static bool only_reductions_read(const fu_fusion *f, fu_tensor t, bool through_casts)
{
    if (is_output(f, t)) return false;
    for (int i = 0; i < f->nnodes; i++)
        for (int k = 0; k < f->nodes[i].ninputs; k++) {
            const fu_node *r = &f->nodes[i];
            if (r->inputs[k] != t || fu_op_kind_of(r->op) == FU_KIND_REDUCE) continue;
            if (!through_casts || r->op != FU_OP_CAST || !only_reductions_read(f, r->output, false)) return false;
        }
    return true;
}

/* A reduction of a permuted view that moves the innermost axis, where only reductions read the
 * view and the kept axes are in the same order in the view as in y
 * (`sum(permute(y, dims=[1, 0]), axes=[1])`): the same reduction of y over the axes the view's
 * reduced axes are in y, reshaped to the result's shape (the same values in the same order).
 * The reduction then reads y as it is laid out, a column sum coalesced (the outer scheduler),
 * where the view's rows were strided columns of y, a sector a 4-byte element. A cast between
 * the view and the reduction (a bf16 mean's decomposition casts to f32 first) is taken with
 * it: the reduction of the cast of y (the view read only by reductions and by casts that only
 * reductions read). Where the kept axes
 * change order, the result would need a permute of its own, which no reduction scheduler
 * writes with it: left as it is. -1 where n is no such reduction (in: n's input in d). */
static fu_tensor reduce_of_permute(fu_fusion *d, const fu_fusion *f, const fu_node *n, fu_tensor in)
{
    const fu_node *pn = fu_producer(d, in), *cast = NULL;
    fu_tensor view_f = n->inputs[0]; /* the view, in f */
    if (pn && pn->op == FU_OP_CAST) { /* cast(permute(y)) */
        const fu_node *fc = fu_producer(f, n->inputs[0]);
        if (!fc || fc->op != FU_OP_CAST) return -1;
        view_f = fc->inputs[0];
        cast = pn;
        pn = fu_producer(d, pn->inputs[0]);
    }
    if (!only_reductions_read(f, view_f, true)) return -1;
    if (!pn || pn->op != FU_OP_PERMUTE) return -1;
    const fu_value *view = fu_val(d, in), *ov = fu_val(f, n->output);
    const int rank = view->rank;
    if (rank < 2 || pn->attrs.perm[rank - 1] == rank - 1) return -1;
    bool reduced[FU_MAX_RANK], y_reduced[FU_MAX_RANK] = {false};
    fu_reduced_axes(&n->attrs, rank, reduced);
    int last_kept = -1;
    for (int a = 0; a < rank; a++) {
        if (reduced[a]) {
            y_reduced[pn->attrs.perm[a]] = true;
        } else {
            if (pn->attrs.perm[a] < last_kept) return -1; /* the kept axes change order */
            last_kept = pn->attrs.perm[a];
        }
    }
    int axes[FU_MAX_RANK], naxes = 0;
    for (int b = 0; b < rank; b++)
        if (y_reduced[b]) axes[naxes++] = b;
    char part[FU_MAX_NAME + 8];
    snprintf(part, sizeof part, "%.*s.r", FU_MAX_NAME - 3, ov->name);
    fu_tensor y = pn->inputs[0];
    if (cast) { /* (two reductions of one cast make two casts of y: the next pass merges them) */
        char cname[FU_MAX_NAME + 8];
        snprintf(cname, sizeof cname, "%.*s.c", FU_MAX_NAME - 3, fu_val(d, cast->output)->name);
        y = fu_cast(d, y, cast->attrs.dtype, cname);
    }
    fu_tensor r = fu_reduce(d, n->op, y, naxes, axes, false, part);
    return fu_reshape(d, r, ov->rank, ov->shape, ov->name);
}

static bool is_elementwise(fu_op op)
{
    fu_op_kind kind = fu_op_kind_of(op);
    return kind == FU_KIND_UNARY || kind == FU_KIND_BINARY || kind == FU_KIND_WHERE || kind == FU_KIND_CAST;
}

/* feeds[t] for every tensor t of f: t reaches only outputs through elementwise ops (it is an
 * output, or read, and only by unary, binary, where and cast ops whose results do the same).
 * One pass over the nodes from the last (a reader comes after what it reads), so a DAG of many
 * paths costs no more than its edges. feeds has f->nvalues entries; false where memory ran out. */
static void find_feeds_only_outputs(const fu_fusion *f, bool *feeds)
{
    unsigned char *seen = fu_calloc((size_t)f->nvalues + 1, 1); /* 1: read, 2: read by another kind of op */
    memset(feeds, 0, (size_t)f->nvalues * sizeof *feeds);
    if (!seen) return;
    for (int i = f->nnodes - 1; i >= 0; i--) {
        const fu_node *n = &f->nodes[i];
        fu_tensor t = n->output;
        feeds[t] = (seen[t] == 1 || (seen[t] == 0 && is_output(f, t))) && !(seen[t] & 2);
        bool passes = is_elementwise(n->op) && feeds[t];
        for (int k = 0; k < n->ninputs; k++)
            if (fu_tensor_valid(f, n->inputs[k])) seen[n->inputs[k]] |= passes ? 1 : 2;
    }
    fu_free(seen);
}

/* The shape, in the axes of `from` (rank fr), that a tensor of shape b (rank rb, broadcast to
 * `to`, rank tr) has once `to` is reshaped back to `from`: the two shapes are split into groups
 * of axes of equal products (32 x 8 = 256); over each group b has extent 1 everywhere (1 on
 * every axis of `from`'s side) or the full extents (those of `from`). False where b is partly
 * broadcast over a group, or the shapes have no such groups. */
static bool regroup_shape(const int64_t *from, int fr, const int64_t *to, int tr, const int64_t *b, int rb, int64_t *out)
{
    int i = 0, j = 0; /* axes of `to`, of `from` */
    while (i < tr || j < fr) {
        int i0 = i, j0 = j;
        int64_t pt = 1, pf = 1;
        if (i < tr) pt *= to[i++];
        if (j < fr) pf *= from[j++];
        while (pt != pf) {
            if (pt < pf && i < tr) pt *= to[i++];
            else if (pf < pt && j < fr) pf *= from[j++];
            else return false;
        }
        bool ones = true, full = true;
        for (int a = i0; a < i; a++) {
            int ba = a - (tr - rb); /* b's axis, right-aligned */
            int64_t e = ba >= 0 ? b[ba] : 1;
            ones &= e == 1;
            full &= e == to[a];
        }
        if (!ones && !full) return false;
        for (int a = j0; a < j; a++) out[a] = ones ? 1 : from[a];
    }
    return true;
}

/* An elementwise op reading a reshape of a tensor y computed in another shape from a reduction,
 * where the op's result reaches only outputs through elementwise ops (a group norm's affine on [N, C, H, W]
 * after the normalization over [N, G, C / G, H, W]): the op in y's shape, its other operands
 * reshaped to it (a per-channel weight [C, 1, 1] as [G, C / G, 1, 1]), then reshaped back to
 * its own shape. The reshape moves to the outputs, which take it as their bytes
 * (alias_output_reshapes): the kernel that computes y writes the outputs in its own shape,
 * where an output of another shape than the rows' was a second kernel reading y back. -1 where
 * n is no such op. */
static fu_tensor elementwise_of_reshape(fu_fusion *d, const fu_fusion *f, const fu_node *n, const fu_tensor *in,
                                        const bool *feeds)
{
    if (!feeds || !is_elementwise(n->op)) return -1;
    const fu_value *ov = fu_val(f, n->output);
    int yrank = -1; /* y's shape (d's values move as the rewrite adds to d) */
    int64_t yshape[FU_MAX_RANK];
    fu_tensor y = -1;
    for (int k = 0; k < n->ninputs && yrank < 0; k++) {
        if (!fu_tensor_valid(d, in[k])) return -1;
        const fu_node *r = fu_producer(d, in[k]);
        const fu_value *iv = fu_val(d, in[k]);
        /* (a reshape that a reduction also reads is that reduction's domain: the op stays in it) */
        if (r && r->op == FU_OP_RESHAPE && has_shape(iv, ov->rank, ov->shape) && feeds[n->inputs[k]]) {
            y = r->inputs[0];
            yrank = fu_val(d, y)->rank;
            memcpy(yshape, fu_val(d, y)->shape, sizeof yshape);
        }
    }
    /* only after a reduction's kernel: a pointwise chain keeps its own (vectorized) shape */
    if (yrank < 0 || fu_shape_numel(ov->rank, ov->shape) == 0 || !feeds[n->output] ||
        !reads_a_reduction(d, y))
        return -1;
    /* each operand in y's shape, checked before anything is added to d */
    int64_t shapes[FU_MAX_OP_INPUTS][FU_MAX_RANK];
    fu_tensor yin[FU_MAX_OP_INPUTS];
    bool reshape[FU_MAX_OP_INPUTS];
    for (int k = 0; k < n->ninputs; k++) {
        if (!fu_tensor_valid(d, in[k])) return -1;
        const fu_node *r = fu_producer(d, in[k]);
        const fu_value *iv = fu_val(d, in[k]);
        reshape[k] = false;
        yin[k] = in[k];
        if (r && r->op == FU_OP_RESHAPE && has_shape(fu_val(d, r->inputs[0]), yrank, yshape) &&
            has_shape(iv, ov->rank, ov->shape)) {
            yin[k] = r->inputs[0]; /* (a reshape of a tensor of y's shape: that tensor) */
            continue;
        }
        if (iv->rank == 0) continue;
        if (iv->rank > ov->rank || !regroup_shape(yshape, yrank, ov->shape, ov->rank, iv->shape, iv->rank, shapes[k]))
            return -1;
        reshape[k] = true;
    }
    for (int k = 0; k < n->ninputs; k++) /* (named after the op: each name is new) */
        if (reshape[k]) {
            char name[FU_MAX_NAME + 16];
            snprintf(name, sizeof name, "%.*s.s%d", FU_MAX_NAME - 6, ov->name, k);
            yin[k] = fu_reshape(d, in[k], yrank, shapes[k], name);
        }
    char name[FU_MAX_NAME + 8];
    snprintf(name, sizeof name, "%.*s.s", FU_MAX_NAME - 3, ov->name);
    fu_tensor t = fu_add_op(d, n->op, n->ninputs, yin, &n->attrs, name);
    return fu_reshape(d, t, ov->rank, ov->shape, ov->name);
}

/* A reshape of a cast or unary op of a fusion input (`reshape(cast(x))`, a group norm's f32 view
 * of a bf16 input): the op of the input's reshape, which is the same elements. The row scheduler
 * then sees an input read only through a view of its rows' shape (k_reduction.c,
 * is_row_view_input) and keeps it between passes. -1 where n is no such reshape. */
static fu_tensor reshape_of_elementwise_input(fu_fusion *d, const fu_fusion *f, const fu_node *n, const fu_tensor *in)
{
    if (n->op != FU_OP_RESHAPE) return -1;
    const fu_node *u = fu_producer(d, in[0]);
    if (!u || u->ninputs != 1 || (fu_op_kind_of(u->op) != FU_KIND_UNARY && fu_op_kind_of(u->op) != FU_KIND_CAST) ||
        fu_producer(d, u->inputs[0]) != NULL)
        return -1;
    const fu_value *ov = fu_val(f, n->output);
    const fu_op op = u->op;
    const fu_attrs attrs = u->attrs;
    const fu_tensor x = u->inputs[0]; /* (d's nodes move as the rewrite adds to d) */
    char name[FU_MAX_NAME + 8];
    snprintf(name, sizeof name, "%.*s.v", FU_MAX_NAME - 3, ov->name);
    fu_tensor view = fu_reshape(d, x, ov->rank, ov->shape, name);
    return fu_add_op(d, op, 1, &view, &attrs, ov->name);
}

/* Degenerate shapes, rewritten so that every scheduler sees only reductions
 * over axes of extent > 1 and non-empty tensors (issue 19 item 1):
 *   - an op whose output has no elements: full(shape, 0) (nothing to compute;
 *     the executor launches no kernel for it); a scatter of an empty index
 *     its base;
 *   - a reduction over an axis of extent 0: full(shape, identity), the values
 *     the interpreter gives (sum 0, max -inf, min inf, mean NaN);
 *   - a view that keeps every element where it is (is_plain_view): a reshape
 *     of what its input views, or its input where it changes nothing;
 *   - a reduction whose reduced axes all have extent 1: a reshape of its
 *     input; one whose kept axes all have extent 1: a reduction over every
 *     axis, reshaped; reduced axes of extent 1 beside others are dropped
 *     from a reduction that keeps some axes.
 * Returns the tensor of d standing for n's output, or -1 to copy n as it is. */
static fu_tensor canonical_op(fu_fusion *d, const fu_fusion *f, const fu_node *n, const fu_tensor *in,
                              const fu_plan_options *opts, int *unroll, const bool *feeds)
{
    const fu_value *ov = fu_val(f, n->output);
    const char *name = ov->name;
    if (fu_op_kind_of(n->op) == FU_KIND_SCATTER && (ov->dtype == FU_BF16 || ov->dtype == FU_F16) &&
        fu_scatter_is_atomic(f, n, opts) && fu_tensor_numel(d, in[1]) > 0)
        return atomic_in_f32(d, n, in, name);
    if (fu_shape_numel(ov->rank, ov->shape) == 0) return fu_full(d, ov->rank, ov->shape, 0.0, ov->dtype, name);
    /* a scatter of nothing is its base (under the output's name where it is one: the plan's
     * outputs keep the fusion's names) */
    if (fu_op_kind_of(n->op) == FU_KIND_SCATTER && fu_tensor_numel(d, in[1]) == 0 && fu_val(d, in[0])->dtype == ov->dtype)
        return is_output(f, n->output) ? fu_reshape(d, in[0], ov->rank, ov->shape, name) : in[0];
    fu_tensor view = plain_view(d, f, n, in[0]);
    if (view >= 0) return view;
    if (REGROUP_ELEMENTWISE) {
        fu_tensor pulled = reshape_of_elementwise_input(d, f, n, in);
        if (pulled >= 0) return pulled;
    }
    if (fu_op_kind_of(n->op) != FU_KIND_REDUCE) return REGROUP_ELEMENTWISE ? elementwise_of_reshape(d, f, n, in, feeds) : -1;
    fu_tensor unpermuted = reduce_of_permute(d, f, n, in[0]);
    if (unpermuted >= 0) return unpermuted;
    const fu_value *xv = fu_val(d, in[0]);
    bool reduced[FU_MAX_RANK];
    fu_reduced_axes(&n->attrs, xv->rank, reduced);
    int keep[FU_MAX_RANK], nkeep = 0, nreduced = 0;
    bool empty = false;
    for (int a = 0; a < xv->rank; a++) {
        if (!reduced[a]) continue;
        nreduced++;
        empty |= xv->shape[a] == 0;
        if (xv->shape[a] != 1) keep[nkeep++] = a;
    }
    bool is_float = ov->dtype == FU_F32 || ov->dtype == FU_F16 || ov->dtype == FU_BF16 || ov->dtype == FU_F64;
    if (empty && (is_float || n->op == FU_OP_SUM)) {
        double v = n->op == FU_OP_SUM ? 0.0 : n->op == FU_OP_RMAX ? -INFINITY : n->op == FU_OP_RMIN ? INFINITY : NAN;
        return fu_full(d, ov->rank, ov->shape, v, ov->dtype, name);
    }
    if (empty) return -1;
    if (nkeep == 0) return fu_reshape(d, in[0], ov->rank, ov->shape, name);
    fu_tensor unrolled = *unroll >= 0 ? unroll_small_reduction(d, n, in[0], keep, nkeep, ov) : -1;
    if (unrolled >= 0) {
        ++*unroll;
        return unrolled;
    }
    char part[FU_MAX_NAME + 8];
    snprintf(part, sizeof part, "%.*s.r", FU_MAX_NAME - 3, name);
    /* one whose kept axes all have extent 1 is a reduction over every axis
     * (a grid reduction of the rows), reshaped to its shape */
    bool kept_units = true;
    for (int a = 0; a < xv->rank; a++) kept_units &= reduced[a] || xv->shape[a] == 1;
    if (kept_units && nreduced < xv->rank) {
        int all[FU_MAX_RANK];
        for (int a = 0; a < xv->rank; a++) all[a] = a;
        fu_tensor r = fu_reduce(d, n->op, in[0], xv->rank, all, false, part);
        return fu_reshape(d, r, ov->rank, ov->shape, name);
    }
    /* a reduction over every axis stays one */
    if (nkeep == nreduced || (nkeep > 0 && nreduced == xv->rank)) return -1;
    fu_tensor r = fu_reduce(d, n->op, in[0], nkeep, keep, true, part);
    return fu_reshape(d, r, ov->rank, ov->shape, name);
}

/* Common-subexpression and dead-op elimination into a new fusion. unroll: -1 keeps small
 * reductions, else counts those unrolled. */
static fu_status simplify(const fu_fusion *f, const fu_plan_options *opts, fu_fusion **out, int *rewrites, int *unroll,
                          fu_error *err)
{
    *rewrites = 0;
    bool *live = fu_calloc((size_t)f->nvalues, sizeof *live);
    fu_tensor *map = fu_calloc((size_t)f->nvalues, sizeof *map);
    fu_fusion *d = fu_fusion_new(f->name);
    if (!live || !map || !d) {
        fu_free(live);
        fu_free(map);
        fu_fusion_free(d);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory simplifying '%s'", f->name);
    }
    bool *feeds = fu_calloc((size_t)f->nvalues + 1, sizeof *feeds); /* (NULL: no rewrite needs it) */
    if (feeds) find_feeds_only_outputs(f, feeds);
    for (int i = 0; i < f->noutputs; i++) live[f->outputs[i]] = true;
    for (int i = f->nnodes - 1; i >= 0; i--)
        if (live[f->nodes[i].output])
            for (int k = 0; k < f->nodes[i].ninputs; k++) live[f->nodes[i].inputs[k]] = true;
    for (int i = 0; i < f->ninputs; i++) {
        const fu_value *v = fu_val(f, f->inputs[i]);
        map[f->inputs[i]] = fu_input_strided(d, v->name, v->dtype, v->rank, v->shape, v->strides);
    }
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!live[n->output]) continue;
        fu_tensor in[FU_MAX_OP_INPUTS];
        for (int k = 0; k < n->ninputs; k++) in[k] = map[n->inputs[k]];
        fu_fusion_set_location(d, NULL, n->line, n->column);
        fu_tensor canon = canonical_op(d, f, n, in, opts, unroll, feeds);
        if (canon >= 0) {
            map[n->output] = canon;
            *rewrites += n->op != FU_OP_FULL;
            continue;
        }
        fu_tensor found = -1;
        if (!is_output(f, n->output))
            for (int j = 0; j < d->nnodes && found < 0; j++) {
                const fu_node *m = &d->nodes[j];
                if (m->op != n->op || m->ninputs != n->ninputs || !same_attrs(n->op, &m->attrs, &n->attrs)) continue;
                bool same = true;
                for (int k = 0; k < n->ninputs; k++) same &= m->inputs[k] == in[k];
                if (same) found = m->output;
            }
        if (found >= 0) {
            map[n->output] = found;
            continue;
        }
        fu_fusion_set_location(d, NULL, n->line, n->column);
        map[n->output] = fu_add_op(d, n->op, n->ninputs, in, &n->attrs, fu_val(f, n->output)->name);
    }
    for (int i = 0; i < f->noutputs; i++) fu_output(d, map[f->outputs[i]]);
    fu_free(live);
    fu_free(map);
    fu_free(feeds);
    fu_status s = fu_fusion_verify(d, err);
    if (s) {
        fu_fusion_free(d);
        return s;
    }
    *out = d;
    return FU_OK;
}

/* ------------------------------------------------------------ plan building */

typedef struct seg_ctx {
    fu_plan *plan;
    bool *all_materialized; /* per tensor, all true: what a probe may read */
    bool *replicated;       /* per node, once split: a constant each group computes itself (or NULL) */
    const fu_plan_options *opts;
    fu_error *err;
} seg_ctx;

static fu_status add_kernel(seg_ctx *s, const fu_kernel_plan *kp)
{
    fu_plan *p = s->plan;
    fu_kernel_plan *k = fu_realloc(p->kernels, (size_t)(p->nkernels + 1) * sizeof *k);
    if (!k) return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory planning '%s'", p->fusion->name);
    p->kernels = k;
    p->kernels[p->nkernels++] = *kp;
    return FU_OK;
}

void fu_kernel_plan_clear(fu_kernel_plan *kp)
{
    fu_free(kp->ops);
    fu_free(kp->params);
    fu_free(kp->params_json);
    fu_free(kp->source);
    memset(kp, 0, sizeof *kp);
}

/* Outputs of a group: tensors it produces that are fusion outputs or are read
 * by ops outside it. */
static int group_outputs(const fu_fusion *f, const bool *in_group, const bool *replicated, fu_tensor *outs)
{
    int n = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (!in_group[i] || (replicated && replicated[i])) continue;
        fu_tensor t = f->nodes[i].output;
        bool needed = is_output(f, t);
        for (int j = 0; j < f->nnodes && !needed; j++) {
            if (in_group[j]) continue;
            for (int k = 0; k < f->nodes[j].ninputs; k++) needed |= f->nodes[j].inputs[k] == t;
        }
        if (needed) outs[n++] = t;
    }
    return n;
}

/* Whether node i is the base of an atomic scatter that must be in memory: the scatter kernel
 * adds onto a copy of it made before the launch, or onto zeros (a full of 0, which it needs not
 * read), and cannot compute it itself. */
static bool atomic_base_in_memory(const fu_fusion *f, const fu_plan_options *o, int i)
{
    const fu_node *n = &f->nodes[i];
    if (n->op == FU_OP_FULL && n->attrs.value == 0.0) return false;
    for (int j = 0; j < f->nnodes; j++) {
        const fu_node *s = &f->nodes[j];
        if (fu_op_kind_of(s->op) == FU_KIND_SCATTER && s->inputs[0] == n->output && fu_scatter_is_atomic(f, s, o))
            return true;
    }
    return false;
}

/* Ops without operands (full, iota) that no output names: once a fusion is
 * split, each group computes its own copy of those it reads instead of
 * reading them from another kernel (a shared constant would otherwise be a
 * kernel of its own, or tie two groups together); not an atomic scatter's base
 * of other values than 0, which that scatter reads from memory. */
static void mark_replicated(const fu_fusion *f, const fu_plan_options *o, const bool *members, bool *replicated)
{
    for (int i = 0; i < f->nnodes; i++)
        replicated[i] = members[i] && f->nodes[i].ninputs == 0 && !is_output(f, f->nodes[i].output) &&
                        !atomic_base_in_memory(f, o, i);
}

/* Offers a group to the schedulers. Returns 1 when taken, 0 when not (with
 * the reasons in why), -1 on error. With commit, the kernel joins the plan
 * and its outputs are materialized; without (a probe of the merging
 * segmenter), every tensor the group reads from outside counts as in memory,
 * as it will be once the groups before it are planned. */
static int offer_group(seg_ctx *s, const bool *in_group, bool commit, char *why, size_t nwhy)
{
    fu_plan *p = s->plan;
    const fu_fusion *f = p->fusion;
    fu_tensor *outs = fu_malloc((size_t)f->nvalues * sizeof *outs);
    if (!outs) {
        fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
        return -1;
    }
    /* with replicated constants: the group's own copies of those it reads */
    bool *grp = s->replicated ? fu_malloc((size_t)f->nnodes + 1) : NULL;
    if (s->replicated && !grp) {
        fu_free(outs);
        fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
        return -1;
    }
    if (grp) {
        memcpy(grp, in_group, (size_t)f->nnodes);
        for (int i = 0; i < f->nnodes; i++)
            for (int k = 0; in_group[i] && k < f->nodes[i].ninputs; k++) {
                int q = f->values[f->nodes[i].inputs[k]].producer;
                if (q >= 0 && s->replicated[q]) grp[q] = true;
            }
        in_group = grp;
    }
    fu_group g = {f, s->opts, in_group, commit ? p->materialized : s->all_materialized, outs,
                  group_outputs(f, in_group, s->replicated, outs), p->nkernels};
    fu_kernel_plan kp;
    memset(&kp, 0, sizeof kp);
    bool ok = fu_schedule_group(&g, &kp, why, nwhy);
    if (ok && commit) {
        for (int i = 0; i < g.noutputs; i++) {
            p->materialized[outs[i]] = true;
            if (p->alias_of[outs[i]] >= 0) p->materialized[p->alias_of[outs[i]]] = true;
        }
        if (add_kernel(s, &kp)) {
            fu_kernel_plan_clear(&kp);
            fu_free(outs);
            fu_free(grp);
            return -1;
        }
    } else {
        fu_kernel_plan_clear(&kp);
    }
    fu_free(outs);
    fu_free(grp);
    return ok ? 1 : 0;
}

static int probe_group(void *ctx, const bool *in_group, char *why, size_t nwhy)
{
    return offer_group(ctx, in_group, false, why, nwhy);
}

static bool debug_level(int level)
{
    const char *debug = getenv("FUSER_DEBUG");
    return debug && atoi(debug) >= level;
}

/* Splits `members` (nodes) into levels separated by ops for which
 * cut(node) holds: an op reading such an op's output runs one level later. */
static int levels_by(const fu_fusion *f, const bool *members, bool (*cut)(const fu_node *), int *level)
{
    int max = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (!members[i]) continue;
        int l = 0;
        const fu_node *n = &f->nodes[i];
        for (int k = 0; k < n->ninputs; k++) {
            int p = f->values[n->inputs[k]].producer;
            if (p < 0 || !members[p]) continue;
            int lp = level[p] + (cut(&f->nodes[p]) ? 1 : 0);
            if (lp > l) l = lp;
        }
        level[i] = l;
        if (l > max) max = l;
    }
    return max;
}

static bool cut_segment_set(const fu_node *n) { return n->op == FU_OP_SEGMENT_SET; }

/* Last resort: one kernel per op. Every scheduler takes a single op. */
static fu_status one_op_per_kernel(seg_ctx *s, const bool *members)
{
    const fu_fusion *f = s->plan->fusion;
    bool *one = fu_calloc((size_t)f->nnodes + 1, sizeof *one);
    if (!one) return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    char why[512] = "";
    for (int i = 0; i < f->nnodes; i++) {
        if (!members[i] || (s->replicated && s->replicated[i])) continue;
        memset(one, 0, (size_t)f->nnodes * sizeof *one);
        one[i] = true;
        int r = offer_group(s, one, true, why, sizeof why);
        if (r < 0) break;
        if (r == 0) {
            fu_free(one);
            return fu_error_set(s->err, FU_ERR_UNSUPPORTED, "op '%s' -> '%s' cannot be scheduled: %s",
                                fu_op_name(f->nodes[i].op), fu_val(f, f->nodes[i].output)->name, why);
        }
    }
    fu_free(one);
    return s->err->status;
}


/* A fusion output that reshapes a tensor computed here (not itself an output)
 * and that no op reads needs no kernel of its own: the tensor is written into the output's buffer
 * (a reshape of a dense tensor is the same bytes). Those reshapes leave the
 * members; the tensor becomes the output of whatever group computes it. */
static void alias_output_reshapes(fu_plan *p, bool *members)
{
    const fu_fusion *f = p->fusion;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!members[i] || n->op != FU_OP_RESHAPE || !is_output(f, n->output) || is_read(f, n->output)) continue;
        fu_tensor t = n->inputs[0];
        int producer = f->values[t].producer;
        if (producer < 0 || !members[producer] || is_output(f, t) || p->alias_of[t] >= 0) continue;
        p->alias_of[t] = n->output;
        members[i] = false;
    }
}

/* The members as one kernel if a scheduler takes them whole, else the groups
 * of the merging segmenter (merge.c), planned in their topological order. */
static fu_status schedule_members(seg_ctx *s, const bool *members)
{
    const fu_fusion *f = s->plan->fusion;
    char why[512] = "";
    int r = offer_group(s, members, true, why, sizeof why);
    if (r < 0) return s->err->status;
    if (r == 1) return FU_OK;
    /* FUSER_DEBUG=1 says why a group had to be split (the debug ladder's first rung). */
    bool debug = debug_level(1);
    if (debug) fprintf(stderr, "fuser: splitting '%s': %s\n", f->name, why);
    int *group_of = fu_malloc(((size_t)f->nnodes + 1) * sizeof *group_of);
    bool *sub = fu_calloc((size_t)f->nnodes + 1, sizeof *sub);
    bool *rest = fu_malloc((size_t)f->nnodes + 1);
    if (!group_of || !sub || !rest) {
        fu_free(group_of);
        fu_free(sub);
        fu_free(rest);
        return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    }
    bool *replicated = fu_calloc((size_t)f->nnodes + 1, 1);
    if (!replicated) {
        fu_free(group_of);
        fu_free(sub);
        fu_free(rest);
        return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    }
    mark_replicated(f, s->opts, members, replicated);
    for (int i = 0; i < f->nnodes; i++) rest[i] = members[i] && !replicated[i];
    alias_output_reshapes(s->plan, rest);
    s->replicated = replicated;
    int ngroups = fu_merge_groups(f, rest, probe_group, s, group_of, debug, s->err);
    fu_free(rest);
    fu_status st = ngroups < 0 ? s->err->status : FU_OK;
    for (int g = 0; g < ngroups && st == FU_OK; g++) {
        for (int i = 0; i < f->nnodes; i++) sub[i] = group_of[i] == g;
        r = offer_group(s, sub, true, why, sizeof why);
        if (r < 0) st = s->err->status;
        else if (r == 0) st = one_op_per_kernel(s, sub); /* a probe took it: not expected */
    }
    s->replicated = NULL;
    fu_free(replicated);
    fu_free(group_of);
    fu_free(sub);
    return st;
}

/* segment_set levels, each scheduled as members. */
static fu_status schedule_levels(seg_ctx *s, const bool *members)
{
    const fu_fusion *f = s->plan->fusion;
    int *level = fu_calloc((size_t)f->nnodes + 1, sizeof *level);
    bool *sub = fu_calloc((size_t)f->nnodes + 1, sizeof *sub);
    fu_status st = FU_OK;
    if (!level || !sub) st = fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    int max = st ? -1 : levels_by(f, members, cut_segment_set, level);
    for (int l = 0; l <= max && st == FU_OK; l++) {
        bool any = false;
        for (int i = 0; i < f->nnodes; i++) {
            sub[i] = members[i] && level[i] == l;
            any |= sub[i];
        }
        if (any) st = schedule_members(s, sub);
    }
    fu_free(level);
    fu_free(sub);
    return st;
}

static fu_status plan_fusion(seg_ctx *s)
{
    fu_plan *p = s->plan;
    const fu_fusion *f = p->fusion;
    bool *all = fu_calloc((size_t)f->nnodes + 1, sizeof *all);
    if (!all) return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < f->nnodes; i++) all[i] = p->copy_of[f->nodes[i].output] < 0; /* copies need no kernel */
    fu_status st = schedule_levels(s, all);
    fu_free(all);
    return st;
}

/* Kernels whose outputs all have no elements (an empty tensor's ops are constants,
 * canonical_op) have nothing to do: dropped, neither compiled nor launched, so that a
 * plan's kernels are the launches it makes (lower_bound counts none for them either). */
static void drop_empty_kernels(fu_plan *p)
{
    int n = 0;
    for (int i = 0; i < p->nkernels; i++) {
        fu_kernel_plan *kp = &p->kernels[i];
        bool writes = false;
        for (int j = 0; j < kp->nparams && !writes; j++)
            writes = kp->params[j].is_output && fu_tensor_numel(p->fusion, kp->params[j].tensor) > 0;
        if (!writes) {
            if (getenv("FUSER_DEBUG"))
                fprintf(stderr, "fuser: '%s': kernel '%s' writes only empty tensors: dropped\n", p->fusion->name, kp->name);
            fu_kernel_plan_clear(kp);
            continue;
        }
        if (n != i) p->kernels[n] = *kp;
        n++;
    }
    p->nkernels = n;
}

/* The plan of f with its small reductions unrolled (unroll 0: the count is left in *unroll)
 * or kept (unroll -1). */
static fu_status plan_once(const fu_fusion *f, const fu_plan_options *opts, int *unroll, fu_plan **out, fu_error *err)
{
    *out = NULL;
    fu_fusion *dec = NULL, *simple = NULL;
    fu_status st = fu_fusion_decompose(f, &dec, err);
    if (st) return st;
    int rewrites = 0;
    st = simplify(dec, opts, &simple, &rewrites, unroll, err);
    fu_fusion_free(dec);
    if (st) return st;
    if (rewrites) { /* again: what the rewrites left dead goes */
        fu_fusion *again = NULL;
        st = simplify(simple, opts, &again, &rewrites, unroll, err);
        fu_fusion_free(simple);
        if (st) return st;
        simple = again;
    }
    fu_plan *p = fu_calloc(1, sizeof *p);
    if (!p || !(p->materialized = fu_calloc((size_t)simple->nvalues, sizeof(bool))) ||
        !(p->alias_of = fu_malloc(((size_t)simple->nvalues + 1) * sizeof *p->alias_of)) ||
        !(p->copy_of = fu_malloc(((size_t)simple->nvalues + 1) * sizeof *p->copy_of))) {
        if (p) fu_free(p->materialized);
        if (p) fu_free(p->alias_of);
        fu_free(p);
        fu_fusion_free(simple);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory planning '%s'", f->name);
    }
    p->fusion = simple;
    for (int t = 0; t < simple->nvalues; t++) p->alias_of[t] = p->copy_of[t] = -1;
    p->lower_bound = fu_kernels_lower_bound(simple);
    for (int i = 0; i < simple->ninputs; i++) p->materialized[simple->inputs[i]] = true;
    for (int i = 0; i < simple->noutputs; i++)
        if (simple->values[simple->outputs[i]].producer < 0) p->ncopies++;
    for (int i = 0; i < simple->nnodes; i++)
        if (fu_output_is_input_view(simple, &simple->nodes[i])) {
            p->copy_of[simple->nodes[i].output] = simple->nodes[i].inputs[0];
            p->ncopies++;
        }
    err->status = FU_OK; /* schedulers report through err; start clean */
    err->message[0] = '\0';
    seg_ctx s = {p, fu_malloc((size_t)simple->nvalues + 1), NULL, opts, err};
    if (!s.all_materialized) st = fu_error_set(err, FU_ERR_NOMEM, "out of memory planning '%s'", f->name);
    else {
        memset(s.all_materialized, 1, (size_t)simple->nvalues + 1);
        st = plan_fusion(&s);
    }
    fu_free(s.all_materialized);
    if (st == FU_OK) drop_empty_kernels(p);
    if (st == FU_OK) {
        p->intermediates = fu_malloc((size_t)simple->nvalues * sizeof *p->intermediates);
        if (!p->intermediates) st = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
        for (int t = 0; st == FU_OK && t < simple->nvalues; t++)
            if (p->materialized[t] && simple->values[t].input_index < 0 && !is_output(simple, t) && p->alias_of[t] < 0)
                p->intermediates[p->nintermediates++] = t;
    }
    if (st) {
        fu_plan_free(p);
        return st;
    }
    *out = p;
    return FU_OK;
}

fu_status fu_plan_build(const fu_fusion *f, const fu_plan_options *opts, fu_plan **out, fu_error *err)
{
    fu_error local;
    if (!err) err = &local; /* the segmenter reports through err internally */
    *out = NULL;
    fu_plan_options defaults;
    if (!opts) {
        fu_plan_options_default(&defaults);
        opts = &defaults;
    }
    /* Small reductions kept (the row and outer schedulers are measured on them), unless the
     * plan that unrolls them needs fewer kernels: each launch saved is ~2.6 us of a small
     * fusion's time (docs/perf.md v28). fz_7_135's max over 4 then a log-softmax over the
     * other axis: 2 kernels kept, 1 unrolled. */
    int unrolled = 0, kept = -1;
    fu_plan *u = NULL, *k = NULL;
    fu_error scratch = {0};
    fu_status su = plan_once(f, opts, &unrolled, &u, &scratch);
    if (unrolled == 0) { /* nothing to unroll: the plan */
        if (su != FU_OK) *err = scratch;
        *out = u;
        return su;
    }
    fu_status sk = plan_once(f, opts, &kept, &k, err);
    if (su == FU_OK && (sk != FU_OK || u->nkernels < k->nkernels)) {
        if (getenv("FUSER_DEBUG"))
            fprintf(stderr, "fuser: '%s': %d small reduction%s unrolled: %d kernel%s (kept: %d)\n", f->name, unrolled,
                    unrolled == 1 ? "" : "s", u->nkernels, u->nkernels == 1 ? "" : "s", sk == FU_OK ? k->nkernels : -1);
        fu_plan_free(k);
        err->status = FU_OK;
        err->message[0] = '\0';
        *out = u;
        return FU_OK;
    }
    fu_plan_free(u);
    *out = k;
    return sk;
}

void fu_plan_free(fu_plan *p)
{
    if (!p) return;
    for (int i = 0; i < p->nkernels; i++) fu_kernel_plan_clear(&p->kernels[i]);
    fu_free(p->kernels);
    fu_free(p->materialized);
    fu_free(p->alias_of);
    fu_free(p->copy_of);
    fu_free(p->intermediates);
    fu_fusion_free(p->fusion);
    fu_free(p);
}

/* ------------------------------------------------------------ printing */

char *fu_plan_json(const fu_plan *p, char *const *kernel_extra, const char *top_extra)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    const fu_fusion *f = p->fusion;
    fu_sb_puts(&sb, "{\"fusion\": ");
    fu_sb_json_string(&sb, f->name);
    fu_sb_printf(&sb, ", \"segments\": %d, \"copies\": %d, \"lower_bound\": %d, \"kernels\": [", p->nkernels, p->ncopies,
                 p->lower_bound);
    for (int i = 0; i < p->nkernels; i++) {
        const fu_kernel_plan *k = &p->kernels[i];
        fu_sb_puts(&sb, i ? ", {\"name\": " : "{\"name\": ");
        fu_sb_json_string(&sb, k->name);
        fu_sb_printf(&sb, ", \"scheduler\": \"%s\", \"ops\": [", fu_sched_name(k->sched));
        for (int j = 0; j < k->nops; j++) {
            const fu_node *n = &f->nodes[k->ops[j]];
            fu_sb_puts(&sb, j ? ", " : "");
            char op[160];
            snprintf(op, sizeof op, "%s = %s", f->values[n->output].name, fu_op_name(n->op));
            fu_sb_json_string(&sb, op);
        }
        fu_sb_printf(&sb, "], \"grid\": [%u, 1, 1], \"block\": [%u, 1, 1], \"shared_bytes\": %zu, "
                          "\"workspace_bytes\": %zu, \"memset_before\": %s, \"config\": ",
                     k->grid, k->block, k->shared_bytes, k->workspace_bytes,
                     k->zero_before >= 0 || k->copy_before >= 0 ? "true" : "false");
        fu_sb_json_string(&sb, k->config);
        fu_sb_printf(&sb, ", \"params\": %s", k->params_json ? k->params_json : "null");
        if (kernel_extra && kernel_extra[i]) fu_sb_puts(&sb, kernel_extra[i]);
        fu_sb_puts(&sb, "}");
    }
    fu_sb_puts(&sb, "]");
    if (top_extra) fu_sb_puts(&sb, top_extra);
    fu_sb_puts(&sb, "}");
    return fu_sb_take(&sb);
}

char *fu_plan_text(const fu_plan *p)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    const fu_fusion *f = p->fusion;
    fu_sb_printf(&sb, "fusion '%s': %d kernel%s\n", f->name, p->nkernels, p->nkernels == 1 ? "" : "s");
    for (int i = 0; i < p->nkernels; i++) {
        const fu_kernel_plan *k = &p->kernels[i];
        fu_sb_printf(&sb, "  kernel %d: %s  scheduler=%s  grid=%u block=%u shared=%zu%s\n", i, k->name,
                     fu_sched_name(k->sched), k->grid, k->block, k->shared_bytes,
                     k->zero_before >= 0 ? "  (output zeroed first)" : k->copy_before >= 0 ? "  (base copied first)" : "");
        fu_sb_printf(&sb, "    %s\n    ops:", k->config);
        for (int j = 0; j < k->nops; j++)
            fu_sb_printf(&sb, " %s=%s", f->values[f->nodes[k->ops[j]].output].name, fu_op_name(f->nodes[k->ops[j]].op));
        fu_sb_puts(&sb, "\n    writes:");
        for (int j = 0; j < k->nparams; j++)
            if (k->params[j].is_output) {
                fu_tensor t = k->params[j].tensor;
                fu_sb_printf(&sb, " %s", f->values[t].name);
                if (p->alias_of[t] >= 0) fu_sb_printf(&sb, " (as '%s')", f->values[p->alias_of[t]].name);
            }
        fu_sb_puts(&sb, "\n");
    }
    for (fu_tensor t = 0; t < f->nvalues; t++)
        if (p->copy_of[t] >= 0)
            fu_sb_printf(&sb, "  output '%s': input '%s' under another shape: a view of it (no kernel; a copy where the "
                         "caller gives the output its own buffer)\n", f->values[t].name,
                         f->values[p->copy_of[t]].name);
    if (p->nkernels > p->lower_bound)
        fu_sb_printf(&sb, "  (the math forces at least %d kernel%s)\n", p->lower_bound, p->lower_bound == 1 ? "" : "s");
    return fu_sb_take(&sb);
}
