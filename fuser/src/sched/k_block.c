/*
 * k_block.c -- the one-block scheduler: a small group in one block, whatever
 * axes its reductions take.
 *
 * A small group (its reductions read at most FU_BLOCK_MAX_WORK elements
 * together, or FU_BLOCK_GRID_STEP_WORK where the reduction scheduler's plan
 * needs a grid-wide step; an output has at most FU_BLOCK_MAX_ELEMS) runs as
 * one block of up to 1024 threads. Each reduction, in the order of the fusion,
 * is a stage: the block computes every element of its result (tpo threads an
 * element, each over every tpo-th reduced element, then combined by shuffles
 * and, past a warp, through shared memory in warp order: the same bits every
 * run), keeps the result in shared memory, and waits at a barrier. Then the
 * block writes each output by a loop over its elements. Values read from a
 * stage come from shared memory at any index, so a reduction over other axes
 * than the last one, a row value read at another row, or a full reduction read
 * at full size need no grid-wide step: what splits such a fusion into several
 * kernels elsewhere (the grid-wide values of bound.c) is one block's barrier
 * here.
 * A scatter of floats (index_add, scatter_add) is a stage too: its sources'
 * values and checked indices are computed once into shared memory, then a
 * thread an element of its result starts from the base and adds every source
 * whose index names it, in source order (the interpreter's order; no atomics),
 * so a reduction before it, after it or of it needs no kernel boundary either.
 * At these sizes a launch costs more than the work (a few microseconds on the
 * H200 against a few hundred nanoseconds of loads), so one launch is the
 * point. torch.compile runs such fusions as one kernel of one block too. The
 * work limit is one SM's: past ~8K elements read by the reductions (each
 * element's math done again by every stage that reads it) one block ran
 * slower than several kernels over the whole GPU (H100, docs/perf.md v27:
 * 11 of the 16 generated fusions above it, 2 of the 29 under it).
 *
 * It comes last in the registry: a group the other schedulers take in one
 * kernel stays theirs, except a grid reduction of a group this one takes
 * (k_reduction.c refuses it: the last-block step costs more than a barrier).
 * fu_block_heuristics makes the decisions into a block_params (text in
 * kp->config, JSON in kp->params_json); fu_block_emit writes the kernel from
 * that struct alone.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "reduce_common.h"

#define BLOCK_MAX_THREADS 1024
#define BLOCK_MAX_STAGES 32
#define BLOCK_STAGE_BYTES (32 * 1024) /* the stages' results in static shared memory (48 KiB at most) */

typedef struct block_stage {
    int node;
    fu_tensor out, in; /* a scatter's in: its source */
    fu_op op;
    fu_dtype acc_dt; /* the result's dtype; accumulated in its compute type */
    int rank;        /* the input's shape and the axes reduced (a scatter: the result's shape) */
    int64_t D[FU_MAX_RANK];
    bool reduced[FU_MAX_RANK];
    int64_t O, K;   /* elements of the result, reduced elements (a scatter: sources) each */
    int tpo;        /* threads an element (a power of two; a scatter: 1) */
    /* a scatter: its sources' values (nsrc: the source's elements for an index_add, the
     * index's for a scatter_add) and checked indices (nidx: K, or nsrc), each computed once
     * into fu_stage, at these byte offsets, before the result's elements read them */
    int64_t nsrc, nidx, src_offset, idx_offset;
    int64_t passes; /* rounds of the block over the result's elements */
    int64_t offset; /* bytes into fu_stage */
} block_stage;

/* The one-block scheduler's decisions. */
typedef struct block_params {
    int threads;
    int nstage;
    block_stage st[BLOCK_MAX_STAGES];
    int64_t stage_bytes;
} block_params;

/* fu_block_emit's state. */
typedef struct block_emit {
    const block_params *p;
    const fu_fusion *f;
    fu_kernel_writer *w;
    int done;      /* stages complete (readable) */
    char name[32]; /* the variable block_lookup_register returns (the caller's memo copies it) */
} block_emit;

/* Whether op's result is a stage: a reduction, or a scatter. */
static bool is_stage_op(fu_op op)
{
    fu_op_kind k = fu_op_kind_of(op);
    return k == FU_KIND_REDUCE || k == FU_KIND_SCATTER;
}

/* A scatter's source domain: the source's shape (index_add) or the index's (scatter_add). */
static const fu_value *source_domain(const fu_fusion *f, const fu_node *s)
{
    return fu_val(f, s->inputs[s->op == FU_OP_INDEX_ADD ? 2 : 1]);
}

/* Sources along the axis each element of scatter s's result looks at: the whole index of
 * an index_add (a vector), the index's extent along the axis of a scatter_add; none where
 * the index is empty. */
static int64_t scatter_sources(const fu_fusion *f, const fu_node *s)
{
    const fu_value *ix = fu_val(f, s->inputs[1]);
    if (fu_shape_numel(ix->rank, ix->shape) == 0) return 0;
    return s->op == FU_OP_INDEX_ADD ? ix->shape[0] : ix->shape[s->attrs.axis];
}

int64_t fu_block_scatter_work(const fu_fusion *f, const fu_node *s)
{
    if (fu_op_kind_of(s->op) != FU_KIND_SCATTER || !fu_dtype_is_float(fu_val(f, s->output)->dtype)) return -1;
    const fu_value *d = source_domain(f, s);
    return fu_shape_numel(d->rank, d->shape) + fu_tensor_numel(f, s->output) * scatter_sources(f, s);
}

/* Bytes of a stage's element: its dtype's compute type (cg_compute_type). */
static int64_t acc_bytes(fu_dtype dt) { return dt == FU_F64 || dt == FU_I32 || dt == FU_I64 ? 8 : 4; }

/* n elements of b bytes, rounded up to 16 bytes. */
static int64_t round16(int64_t n, int64_t b) { return (n * b + 15) / 16 * 16; }

/* A scatter stage's sources (the source domain's elements) and indices (an index_add's
 * index, or one a source). */
static void scatter_counts(const fu_fusion *f, const fu_node *s, int64_t *nsrc, int64_t *nidx)
{
    const fu_value *d = source_domain(f, s);
    *nsrc = fu_shape_numel(d->rank, d->shape);
    *nidx = s->op == FU_OP_INDEX_ADD ? fu_tensor_numel(f, s->inputs[1]) : *nsrc;
}

/* The bytes a scatter stage keeps beside its result: its sources' values in the result's
 * compute type and their indices as ints. */
static int64_t scatter_bytes(const fu_fusion *f, const fu_node *s)
{
    int64_t nsrc, nidx;
    scatter_counts(f, s, &nsrc, &nidx);
    return round16(nsrc, acc_bytes(fu_val(f, s->output)->dtype)) + round16(nidx, 4);
}

/* A stage's bytes in fu_stage: its elements, rounded up to 16 bytes (16 where it has none). */
static int64_t stage_bytes(const fu_fusion *f, fu_tensor out)
{
    int64_t b = (fu_tensor_numel(f, out) * acc_bytes(fu_val(f, out)->dtype) + 15) / 16 * 16;
    return b > 0 ? b : 16;
}

static int64_t next_pow2(int64_t n)
{
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
}

/* Issue slots an element of op's result costs, roughly: a transcendental or a division
 * several, a view or a constant none. */
static int op_slots(fu_op op)
{
    switch (op) {
    case FU_OP_EXP: case FU_OP_LOG: case FU_OP_LOG1P: case FU_OP_TANH: case FU_OP_SIGMOID:
    case FU_OP_SQRT: case FU_OP_RSQRT: case FU_OP_RECIPROCAL: case FU_OP_DIV: case FU_OP_POW:
        return 4;
    default: break;
    }
    switch (fu_op_kind_of(op)) {
    case FU_KIND_UNARY: case FU_KIND_BINARY: case FU_KIND_WHERE: case FU_KIND_CAST: case FU_KIND_REDUCE:
        return 1;
    case FU_KIND_GATHER:
        return 2;
    default:
        return 0;
    }
}

/* The slots an element of t costs in the block: 2 (its index, its store) and every op of its
 * cone in the group, down to the group's inputs (a load each) and the stages it reads (a
 * shared-memory read each). seen and stack: f->nnodes ints each; stamp: a fresh mark. */
static int64_t element_slots(const fu_fusion *f, const bool *in_group, fu_tensor t, int *seen, int *stack, int stamp)
{
    int64_t slots = 2;
    int top = 0;
    int p = f->values[t].producer;
    if (p < 0 || !in_group[p]) return slots + 1;
    seen[p] = stamp;
    stack[top++] = p;
    while (top > 0) {
        const fu_node *n = &f->nodes[stack[--top]];
        slots += op_slots(n->op);
        if (is_stage_op(n->op)) continue; /* read from its stage */
        for (int k = 0; k < n->ninputs; k++) {
            int q = f->values[n->inputs[k]].producer;
            if (q < 0 || !in_group[q]) {
                slots++; /* a load */
                continue;
            }
            if (seen[q] == stamp) continue;
            seen[q] = stamp;
            stack[top++] = q;
        }
    }
    return slots;
}

/* The issue slots of the whole block: every stage's reduced elements and every output's
 * elements, each at its element_slots (a stage computes its input's cone again). */
static int64_t block_slots(const fu_fusion *f, const bool *in_group, const fu_tensor *outputs, int noutputs)
{
    int *seen = fu_calloc((size_t)f->nnodes + 1, sizeof *seen), *stack = fu_calloc((size_t)f->nnodes + 1, sizeof *stack);
    if (!seen || !stack) {
        fu_free(seen);
        fu_free(stack);
        return INT64_MAX;
    }
    int64_t total = 0;
    int stamp = 0;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!in_group[i]) continue;
        if (fu_op_kind_of(n->op) == FU_KIND_REDUCE)
            total += fu_tensor_numel(f, n->inputs[0]) * element_slots(f, in_group, n->inputs[0], seen, stack, ++stamp);
        if (fu_op_kind_of(n->op) != FU_KIND_SCATTER) continue;
        /* each source's value and index once, the base once an element, and an element's
         * every source: two shared-memory reads, a compare and an add */
        int64_t base = element_slots(f, in_group, n->inputs[0], seen, stack, ++stamp);
        int64_t index = element_slots(f, in_group, n->inputs[1], seen, stack, ++stamp);
        int64_t source = element_slots(f, in_group, n->inputs[2], seen, stack, ++stamp);
        const fu_value *d = source_domain(f, n);
        int64_t out = fu_tensor_numel(f, n->output);
        total += fu_shape_numel(d->rank, d->shape) * (index + source) + out * base + out * scatter_sources(f, n) * 4;
    }
    for (int k = 0; k < noutputs; k++)
        total += fu_tensor_numel(f, outputs[k]) * element_slots(f, in_group, outputs[k], seen, stack, ++stamp);
    fu_free(seen);
    fu_free(stack);
    return total;
}

bool fu_block_fits(const fu_fusion *f, const bool *in_group, const fu_tensor *outputs, int noutputs, int64_t max_work,
                   char *why, size_t nwhy)
{
    int nstage = 0;
    int64_t bytes = 0, work = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (!in_group[i]) continue;
        const fu_node *n = &f->nodes[i];
        fu_op_kind k = fu_op_kind_of(n->op);
        if (n->op == FU_OP_SEGMENT_SET || (k == FU_KIND_SCATTER && fu_block_scatter_work(f, n) < 0)) {
            snprintf(why, nwhy, "one block: '%s' is a %s%s", fu_val(f, n->output)->name, fu_op_name(n->op),
                     k == FU_KIND_SCATTER ? " of integers" : "");
            return false;
        }
        if (!is_stage_op(n->op)) continue;
        if (k == FU_KIND_REDUCE && n->op != FU_OP_SUM && n->op != FU_OP_RMAX && n->op != FU_OP_RMIN) {
            snprintf(why, nwhy, "one block: '%s' is not a sum, max or min", fu_val(f, n->output)->name);
            return false;
        }
        work += k == FU_KIND_SCATTER ? fu_block_scatter_work(f, n) : fu_tensor_numel(f, n->inputs[0]);
        if (work > max_work) {
            snprintf(why, nwhy, "one block: the stages up to '%s' read %lld elements (more than %lld)",
                     fu_val(f, n->output)->name, (long long)work, (long long)max_work);
            return false;
        }
        if (++nstage > BLOCK_MAX_STAGES) {
            snprintf(why, nwhy, "one block: more than %d stages", BLOCK_MAX_STAGES);
            return false;
        }
        bytes += stage_bytes(f, n->output) + (k == FU_KIND_SCATTER ? scatter_bytes(f, n) : 0);
        if (bytes > BLOCK_STAGE_BYTES) {
            snprintf(why, nwhy, "one block: the stages' results take more than %d bytes", BLOCK_STAGE_BYTES);
            return false;
        }
    }
    for (int k = 0; k < noutputs; k++) {
        int64_t n = fu_tensor_numel(f, outputs[k]);
        if (n > FU_BLOCK_MAX_ELEMS) {
            snprintf(why, nwhy, "one block: output '%s' has %lld elements (more than %d)", fu_val(f, outputs[k])->name,
                     (long long)n, FU_BLOCK_MAX_ELEMS);
            return false;
        }
    }
    int64_t slots = block_slots(f, in_group, outputs, noutputs);
    if (slots > FU_BLOCK_MAX_SLOTS) {
        snprintf(why, nwhy, "one block: its elements take ~%lld issue slots (more than %d)", (long long)slots,
                 FU_BLOCK_MAX_SLOTS);
        return false;
    }
    return true;
}

bool fu_block_can_schedule(const fu_group *g, char *why, size_t nwhy)
{
    if (fu_block_fits(g->f, g->in_group, g->outputs, g->noutputs, FU_BLOCK_MAX_WORK, why, nwhy)) return true;
    /* more work where the reduction scheduler's plan needs a grid-wide step (FU_BLOCK_GRID_STEP_WORK);
     * `why` keeps the first answer */
    char more[256];
    return FU_BLOCK_GRID_STEP_WORK > FU_BLOCK_MAX_WORK &&
           fu_block_fits(g->f, g->in_group, g->outputs, g->noutputs, FU_BLOCK_GRID_STEP_WORK, more, sizeof more) &&
           fu_reduction_grid_step(g);
}

static int stage_of(const block_params *p, fu_tensor t)
{
    for (int s = 0; s < p->nstage; s++)
        if (p->st[s].out == t) return s;
    return -1;
}

/* Threads an element: enough for every reduced element while the block covers
 * every result element in one round; one where the results alone fill it, and
 * one for a scatter (its sources in order). */
static void size_stage(block_stage *s, int threads)
{
    if (fu_op_kind_of(s->op) == FU_KIND_SCATTER) {
        s->tpo = 1;
        s->passes = (s->O + threads - 1) / threads;
        return;
    }
    int64_t per = s->O > 0 ? threads / s->O : threads;
    int64_t fit = 1;
    while (fit * 2 <= per) fit *= 2;
    int64_t want = next_pow2(s->K > 0 ? s->K : 1);
    s->tpo = (int)(want < fit ? want : fit);
    int64_t groups = threads / s->tpo;
    s->passes = (s->O + groups - 1) / groups;
}

bool fu_block_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    *params = NULL;
    block_params *p = fu_calloc(1, sizeof *p);
    if (!p) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    int64_t widest = 1; /* the largest loop: threads enough for one element each */
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i] || !is_stage_op(n->op)) continue;
        block_stage *s = &p->st[p->nstage++];
        bool scatter = fu_op_kind_of(n->op) == FU_KIND_SCATTER;
        const fu_value *x = fu_val(f, n->inputs[0]); /* a scatter's base: the result's shape */
        s->node = i;
        s->out = n->output;
        s->in = n->inputs[scatter ? 2 : 0];
        s->op = n->op;
        s->acc_dt = fu_val(f, n->output)->dtype;
        s->rank = x->rank;
        memcpy(s->D, x->shape, sizeof s->D);
        if (!scatter) fu_reduced_axes(&n->attrs, x->rank, s->reduced);
        s->O = s->K = 1;
        for (int a = 0; a < x->rank; a++) {
            if (s->reduced[a]) s->K *= x->shape[a];
            else s->O *= x->shape[a];
        }
        s->offset = p->stage_bytes;
        p->stage_bytes += stage_bytes(f, s->out);
        if (scatter) {
            s->K = scatter_sources(f, n);
            scatter_counts(f, n, &s->nsrc, &s->nidx);
            s->src_offset = p->stage_bytes;
            p->stage_bytes += round16(s->nsrc, acc_bytes(s->acc_dt));
            s->idx_offset = p->stage_bytes;
            p->stage_bytes += round16(s->nidx, 4);
        }
        int64_t work = scatter ? s->O : s->O * next_pow2(s->K > 0 ? s->K : 1);
        if (work > widest) widest = work;
    }
    for (int k = 0; k < g->noutputs; k++)
        if (fu_tensor_numel(f, g->outputs[k]) > widest) widest = fu_tensor_numel(f, g->outputs[k]);
    widest = next_pow2(widest);
    p->threads = (int)(widest < 32 ? 32 : widest > BLOCK_MAX_THREADS ? BLOCK_MAX_THREADS : widest);
    for (int s = 0; s < p->nstage; s++) size_stage(&p->st[s], p->threads);
    kp->sched = FU_SCHED_BLOCK;
    kp->grid = 1;
    kp->block = (unsigned)p->threads;
    kp->shared_bytes = 0;
    kp->workspace_bytes = 0;
    size_t n = (size_t)snprintf(kp->config, sizeof kp->config, "one block: threads=%d stages=%d stage_bytes=%lld",
                                p->threads, p->nstage, (long long)p->stage_bytes);
    for (int s = 0; s < p->nstage && n < sizeof kp->config; s++)
        n += (size_t)snprintf(kp->config + n, sizeof kp->config - n, "%s%s=%lldx%lld/%d", s ? " " : "; ",
                              fu_val(f, p->st[s].out)->name, (long long)p->st[s].O, (long long)p->st[s].K, p->st[s].tpo);
    fu_strbuf js;
    fu_sb_init(&js);
    fu_sb_printf(&js, "{\"threads\": %d, \"stage_bytes\": %lld, \"stages\": [", p->threads, (long long)p->stage_bytes);
    for (int s = 0; s < p->nstage; s++)
        fu_sb_printf(&js, "%s{\"value\": \"%s\", \"elements\": %lld, \"reduced\": %lld, \"threads_per_element\": %d, "
                          "\"passes\": %lld, \"offset\": %lld}",
                     s ? ", " : "", fu_val(f, p->st[s].out)->name, (long long)p->st[s].O, (long long)p->st[s].K,
                     p->st[s].tpo, (long long)p->st[s].passes, (long long)p->st[s].offset);
    fu_sb_puts(&js, "]}");
    kp->params_json = fu_sb_take(&js);
    *params = p;
    return true;
}

/* A stage's result at idx, from shared memory (complete stages only). */
static const char *block_lookup_register(cg_ctx *c, fu_tensor t, const cg_index *idx, void *user)
{
    block_emit *e = user;
    int s = stage_of(e->p, t);
    if (s < 0) return NULL;
    const fu_value *v = fu_val(e->f, t);
    if (s >= e->done) {
        cg_fail(c, "one block: '%s' is read before its stage", v->name);
        return NULL;
    }
    int64_t strides[FU_MAX_RANK];
    fu_shape_contiguous_strides(v->rank, v->shape, strides);
    cg_index off;
    cg_offset(c, v->rank, v->shape, strides, idx, &off);
    snprintf(e->name, sizeof e->name, "s%d", c->tmp++);
    const char *ct = cg_compute_type(e->p->st[s].acc_dt);
    cg_line(c, "const %s %s = ((const %s *)(fu_stage + %lld))[%s];", ct, e->name, ct, (long long)e->p->st[s].offset,
            off.expr);
    return e->name;
}

/* Declares the variables of the axes of `shape` that `pick` selects (all when
 * NULL), from the flat position `flat` over those axes; fills idx for them. */
static void axis_vars(cg_ctx *c, int rank, const int64_t *shape, const bool *pick, bool want, const char *flat,
                      const char *prefix, cg_index *idx)
{
    int64_t stride = 1;
    for (int a = rank - 1; a >= 0; a--) {
        if (pick && pick[a] != want) continue;
        char name[32]; /* a prefix of up to 15 characters and an axis number */
        snprintf(name, sizeof name, "%s%d", prefix, a);
        int var = cg_add_var(c, name);
        cg_digit_var(c, var, flat, stride, shape[a], false);
        cg_index_var(&idx[a], var, name);
        stride *= shape[a];
    }
}

/* acc over the tpo threads of an element (consecutive lanes; past a warp, the
 * warps' values through fu_part in warp order); the element's first thread
 * holds the result. Every thread of the block runs it. */
static void emit_combine(cg_ctx *c, const block_stage *s, const char *acc)
{
    const char *fn = s->op == FU_OP_SUM ? "fu_op_sum()" : s->op == FU_OP_RMAX ? "fu_op_max()" : "fu_op_min()";
    int width = s->tpo < 32 ? s->tpo : 32;
    if (width > 1)
        cg_line(c, "for (int m = %d; m > 0; m >>= 1) %s = %s(%s, __shfl_xor_sync(0xffffffffu, %s, m));", width / 2, acc,
                fn, acc, acc);
    if (s->tpo <= 32) return;
    const char *ct = cg_compute_type(s->acc_dt);
    cg_line(c, "if ((threadIdx.x & 31) == 0) ((%s *)fu_part)[threadIdx.x >> 5] = %s;", ct, acc);
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (kf == 0)");
    cg_line(c, "  for (int w = 1; w < %d; w++) %s = %s(%s, ((const %s *)fu_part)[(threadIdx.x >> 5) + w]);", s->tpo / 32,
            acc, fn, acc, ct);
    cg_line(c, "__syncthreads(); // fu_part is read");
}

/* Opens `for (pass ...)` over n elements in passes of the block, with `var` the element
 * (clamped into [0, n) as `var`c where the last pass is ragged: every thread loads, only
 * those inside store); returns whether it is ragged. The caller closes it with cg_close. */
static bool open_passes(cg_ctx *c, int threads, int64_t n, const char *var)
{
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (%s pass = 0; pass < %lld; pass++) {", it, (long long)((n + threads - 1) / threads));
    c->indent++;
    c->scope++;
    cg_line(c, "const %s %s = pass * %d + threadIdx.x;", it, var, threads);
    const bool ragged = n % threads != 0;
    if (ragged) cg_line(c, "const %s %sc = %s < %lld ? %s : %lld;", it, var, var, (long long)n, var, (long long)(n - 1));
    return ragged;
}

/* fu_stage's element `var` of type ct at byte `offset` = value, only where var < n when the
 * passes are ragged. */
static void store_stage(cg_ctx *c, bool ragged, const char *var, int64_t n, const char *ct, int64_t offset,
                        const char *value)
{
    if (ragged) cg_line(c, "if (%s < %lld) ((%s *)(fu_stage + %lld))[%s] = %s;", var, (long long)n, ct, (long long)offset, var,
                        value);
    else cg_line(c, "((%s *)(fu_stage + %lld))[%s] = %s;", ct, (long long)offset, var, value);
}

/* A scatter stage. First its sources: a thread an element of the source domain (the source
 * of an index_add, the index of a scatter_add) computes the source's value and checks its
 * index (fu_oob) once, into fu_stage. Then a thread an element of the result starts from the
 * base and adds, in source order, every source whose index names the element's position
 * along the axis, reading both from shared memory. A scatter_add's sources of an element lie
 * at its position in the index's other axes, where the index has that position (else none). */
static void emit_scatter_stage(block_emit *e, int si)
{
    const block_params *p = e->p;
    const block_stage *s = &p->st[si];
    const fu_fusion *f = e->f;
    const fu_node *n = &f->nodes[s->node];
    const fu_value *ix = fu_val(f, n->inputs[1]), *dom = source_domain(f, n);
    const bool index_add = n->op == FU_OP_INDEX_ADD;
    const int axis = n->attrs.axis;
    cg_ctx *c = &e->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    const char *ct = cg_compute_type(s->acc_dt);
    char shape[160], prefix[16], name[32], inside[512] = "";
    int64_t strides[FU_MAX_RANK];
    fu_shape_str(s->rank, s->D, shape, sizeof shape);
    cg_line(c, "// stage %d: %s = %s into %s along axis %d: %lld elements, each its base and %lld sources in order", si,
            fu_val(f, s->out)->name, fu_op_name(s->op), shape, axis, (long long)s->O, (long long)s->K);
    e->done = si + 1;
    if (s->O == 0) return; /* no elements: nothing reads it */
    cg_index idx[FU_MAX_RANK], sidx[FU_MAX_RANK], iidx[FU_MAX_RANK];
    if (s->nsrc > 0) {
        cg_line(c, "// its %lld sources' values and checked indices, once each", (long long)s->nsrc);
        cg_open(c);
        bool ragged = open_passes(c, p->threads, s->nsrc, "u");
        c->nvars = 0;
        snprintf(prefix, sizeof prefix, "u%d_", si);
        axis_vars(c, dom->rank, dom->shape, NULL, false, ragged ? "uc" : "u", prefix, sidx);
        const char *v = cg_value(c, n->inputs[2], sidx);
        store_stage(c, ragged, "u", s->nsrc, ct, s->src_offset, v);
        if (!index_add) {
            const char *j = cg_value(c, n->inputs[1], sidx);
            cg_line(c, "const int to = (int)fu_oob.check(%s, %lld, %d, (long long)%s);", j, (long long)s->D[axis], s->node,
                    ragged ? "uc" : "u");
            store_stage(c, ragged, "u", s->nsrc, "int", s->idx_offset, "to");
        }
        cg_close(c); /* the passes */
        cg_close(c);
        if (index_add) {
            cg_open(c);
            ragged = open_passes(c, p->threads, s->nidx, "u");
            c->nvars = 0;
            snprintf(prefix, sizeof prefix, "w%d_", si);
            axis_vars(c, 1, ix->shape, NULL, false, ragged ? "uc" : "u", prefix, iidx);
            cg_line(c, "const int to = (int)fu_oob.check(%s, %lld, %d, (long long)%s);", cg_value(c, n->inputs[1], iidx),
                    (long long)s->D[axis], s->node, ragged ? "uc" : "u");
            store_stage(c, ragged, "u", s->nidx, "int", s->idx_offset, "to");
            cg_close(c); /* the passes */
            cg_close(c);
        }
        cg_line(c, "__syncthreads(); // stage %d's sources are complete", si);
    }
    cg_open(c);
    const bool ragged = open_passes(c, p->threads, s->O, "o");
    c->nvars = 0;
    snprintf(prefix, sizeof prefix, "o%d_", si);
    axis_vars(c, s->rank, s->D, NULL, false, ragged ? "oc" : "o", prefix, idx);
    cg_line(c, "%s acc = (%s)%s;", ct, ct, cg_value(c, n->inputs[0], idx));
    if (s->K > 0 && s->nsrc > 0) {
        size_t used = 0;
        for (int a = 0; a < s->rank; a++) { /* a scatter_add's other axes: the element's position in the index */
            sidx[a] = idx[a];
            if (index_add || a == axis || ix->shape[a] >= s->D[a]) continue;
            snprintf(name, sizeof name, "q%d_%d", si, a);
            cg_line(c, "const %s %s = %s%d < %lld ? %s%d : %lld;", it, name, prefix, a, (long long)ix->shape[a], prefix,
                    a, (long long)(ix->shape[a] - 1));
            cg_index_var(&sidx[a], cg_add_var(c, name), name);
            used += (size_t)snprintf(inside + used, sizeof inside - used, " && %s%d < %lld", prefix, a,
                                     (long long)ix->shape[a]);
            if (used >= sizeof inside) used = sizeof inside - 1;
        }
        snprintf(name, sizeof name, "src%d", si);
        cg_line(c, "#pragma unroll 8");
        cg_line(c, "for (%s %s = 0; %s < %lld; %s++) {", it, name, name, (long long)s->K, name);
        c->indent++;
        c->scope++;
        cg_index_var(&sidx[axis], cg_add_var(c, name), name);
        cg_index at; /* the source's position in the source domain */
        fu_shape_contiguous_strides(dom->rank, dom->shape, strides);
        cg_offset(c, dom->rank, dom->shape, strides, sidx, &at);
        cg_line(c, "const int to = ((const int *)(fu_stage + %lld))[%s];", (long long)s->idx_offset,
                index_add ? name : at.expr);
        cg_line(c, "if (to == %s%d%s) acc += ((const %s *)(fu_stage + %lld))[%s];", prefix, axis, inside, ct,
                (long long)s->src_offset, at.expr);
        cg_close(c);
    }
    fu_red_round(c, FU_OP_SUM, s->acc_dt, "acc");
    store_stage(c, ragged, "o", s->O, ct, s->offset, "acc");
    cg_close(c); /* the passes */
    cg_close(c);
    cg_line(c, "__syncthreads(); // stage %d is complete", si);
}

/* A stage: every thread runs the same unrolled loops, its loads all issued before the first
 * result is needed (a thread past the last element, or past the last reduced element of its
 * own, reads the last one again and adds the identity), then the shuffles. */
static void emit_stage(block_emit *e, int si)
{
    const block_params *p = e->p;
    const block_stage *s = &p->st[si];
    if (fu_op_kind_of(s->op) == FU_KIND_SCATTER) {
        emit_scatter_stage(e, si);
        return;
    }
    cg_ctx *c = &e->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    const char *ct = cg_compute_type(s->acc_dt);
    const char *id = fu_red_identity(s->op, s->acc_dt);
    const fu_value *out = fu_val(e->f, s->out);
    char shape[160];
    fu_shape_str(s->rank, s->D, shape, sizeof shape);
    cg_line(c, "// stage %d: %s = %s over %s: %lld elements of %lld each, %d thread%s an element", si, out->name,
            fu_op_name(s->op), shape, (long long)s->O, (long long)s->K, s->tpo, s->tpo == 1 ? "" : "s");
    e->done = si + 1;
    if (s->O == 0) return; /* no elements: nothing reads it */
    cg_open(c);
    if (s->passes > 1) { /* (only where an element takes one warp or less: no barrier inside) */
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (%s pass = 0; pass < %lld; pass++) { // every thread: the shuffles need whole warps", it,
                (long long)s->passes);
        c->indent++;
        c->scope++;
        cg_line(c, "const %s t = pass * %d + threadIdx.x;", it, p->threads);
    } else {
        cg_line(c, "const %s t = threadIdx.x;", it);
    }
    cg_line(c, "const %s o = t / %d, kf = t %% %d; // the element, the thread's first reduced element", it, s->tpo, s->tpo);
    const bool ragged_o = s->passes * (p->threads / s->tpo) != s->O, ragged_k = s->K % s->tpo != 0;
    if (ragged_o) cg_line(c, "const %s oc = o < %lld ? o : %lld;", it, (long long)s->O, (long long)(s->O - 1));
    cg_line(c, "%s acc = %s;", ct, id);
    c->nvars = 0;
    cg_index idx[FU_MAX_RANK];
    char prefix[16];
    snprintf(prefix, sizeof prefix, "o%d_", si);
    axis_vars(c, s->rank, s->D, s->reduced, false, ragged_o ? "oc" : "o", prefix, idx);
    if (s->K > 0) {
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (%s j = 0; j < %lld; j++) {", it, (long long)((s->K + s->tpo - 1) / s->tpo));
        c->indent++;
        c->scope++;
        cg_line(c, "const %s k = kf + j * %d;", it, s->tpo);
        if (ragged_k) cg_line(c, "const %s kc = k < %lld ? k : %lld;", it, (long long)s->K, (long long)(s->K - 1));
        snprintf(prefix, sizeof prefix, "k%d_", si);
        axis_vars(c, s->rank, s->D, s->reduced, true, ragged_k ? "kc" : "k", prefix, idx);
        const char *v = cg_value(c, s->in, idx);
        if (ragged_k) {
            cg_line(c, "const %s in_%d = k < %lld ? (%s)%s : %s;", ct, si, (long long)s->K, ct, v, id);
            char masked[32];
            snprintf(masked, sizeof masked, "in_%d", si);
            fu_red_combine(c, s->op, "acc", masked);
        } else {
            fu_red_combine(c, s->op, "acc", v);
        }
        cg_close(c);
    }
    emit_combine(c, s, "acc");
    fu_red_round(c, s->op, s->acc_dt, "acc");
    if (ragged_o)
        cg_line(c, "if (o < %lld && kf == 0) ((%s *)(fu_stage + %lld))[o] = acc;", (long long)s->O, ct, (long long)s->offset);
    else
        cg_line(c, "if (kf == 0) ((%s *)(fu_stage + %lld))[o] = acc;", ct, (long long)s->offset);
    if (s->passes > 1) cg_close(c);
    cg_close(c);
    cg_line(c, "__syncthreads(); // stage %d is complete", si);
}

/* Outputs of one shape share a loop (and what they compute in common). */
static void emit_outputs(block_emit *e, const fu_group *g)
{
    const block_params *p = e->p;
    const fu_fusion *f = e->f;
    cg_ctx *c = &e->w->cg;
    bool *done = fu_calloc((size_t)g->noutputs + 1, sizeof *done);
    if (!done) {
        cg_fail(c, "one block: out of memory");
        return;
    }
    for (int k = 0; k < g->noutputs; k++) {
        if (done[k]) continue;
        const fu_value *v = fu_val(f, g->outputs[k]);
        int64_t n = fu_shape_numel(v->rank, v->shape);
        if (n == 0) continue; /* nothing to write */
        char shape[160];
        fu_shape_str(v->rank, v->shape, shape, sizeof shape);
        cg_line(c, "// outputs of shape %s: %lld elements", shape, (long long)n);
        /* the last pass's spare threads compute the last element again and store nothing: no
         * branch between the passes' loads */
        bool ragged = open_passes(c, p->threads, n, "e");
        c->nvars = 0;
        cg_index idx[FU_MAX_RANK];
        axis_vars(c, v->rank, v->shape, NULL, false, ragged ? "ec" : "e", "d", idx);
        char vals[16][32];
        int nv = 0;
        fu_tensor ts[16];
        for (int j = k; j < g->noutputs && nv < 16; j++) {
            const fu_value *u = fu_val(f, g->outputs[j]);
            if (done[j] || u->rank != v->rank || memcmp(u->shape, v->shape, (size_t)v->rank * sizeof *v->shape)) continue;
            done[j] = true;
            ts[nv] = g->outputs[j];
            snprintf(vals[nv++], sizeof vals[0], "%s", cg_value(c, g->outputs[j], idx));
        }
        if (ragged) cg_line(c, "if (e < %lld) {", (long long)n);
        if (ragged) c->indent++;
        for (int j = 0; j < nv; j++) fu_kw_store(e->w, fu_kw_output(e->w, ts[j]), "e", vals[j]);
        if (ragged) c->indent--;
        if (ragged) cg_line(c, "}");
        cg_close(c);
    }
    fu_free(done);
}

bool fu_block_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const block_params *p = params;
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    if (!w) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    block_emit e = {p, g->f, w, 0, ""};
    bool ok = fu_kw_begin(w, g, kp, "one block (every reduction a stage in shared memory)", why, nwhy);
    if (ok) {
        cg_ctx *c = &w->cg;
        c->user = &e;
        c->lookup_register = block_lookup_register;
        fu_kw_signature(w, kp, (unsigned)p->threads, 1, false);
        if (p->nstage) {
            cg_line(c, "__shared__ __align__(16) unsigned char fu_stage[%lld]; // the stages' results",
                    (long long)p->stage_bytes);
            cg_line(c, "__shared__ double fu_part[32]; // a value a warp, where an element takes several warps");
        }
        for (int s = 0; s < p->nstage && !c->failed; s++) emit_stage(&e, s);
        emit_outputs(&e, g);
        cg_close(c);
        ok = fu_kw_finish(w, kp, why, nwhy);
    } else {
        fu_kw_abort(w);
    }
    fu_free(w);
    return ok;
}
