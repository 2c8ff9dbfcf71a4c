/*
 * decompose.c -- expands composites into primitives, so that the GPU
 * schedulers only ever see primitives: a cross entropy written by hand gets
 * the same treatment as the composite.
 *
 * Low-precision (f16/bf16) composites are computed in f32 (an explicit cast
 * in, a cast out), as PyTorch does, and the interpreter evaluates the
 * composites whole in double, so decomposition is checked against it.
 * Every row-wise tensor keeps its reduced axis as extent 1 ([N, 1]) so that
 * NumPy broadcasting against [N, C] lines up rows.
 */
#include <stdio.h>
#include <string.h>

#include "ir.h"

typedef struct dctx {
    const fu_fusion *src;
    fu_fusion *dst;
    fu_tensor *map; /* src tensor -> dst tensor */
    const char *base; /* output name of the composite being expanded */
    int counter;
    /* a small ring of name buffers: one builder call may take several names */
    char names[8][FU_MAX_NAME];
} dctx;

/* A fresh helper name derived from the composite's output ("loss.lse"). The
 * dot cannot appear in names written in the text format, so these never clash. */
static const char *helper_name(dctx *c, const char *what)
{
    char *buf = c->names[c->counter % 8];
    snprintf(buf, FU_MAX_NAME, "%.40s.%s%d", c->base, what, c->counter);
    c->counter++;
    return buf;
}

#define HN(what) helper_name(c, what)

static fu_tensor scalar(dctx *c, double v, fu_dtype dt)
{
    return fu_full(c->dst, 0, NULL, v, dt, HN("c"));
}

static fu_tensor to_f32(dctx *c, fu_tensor x)
{
    fu_dtype dt = fu_tensor_dtype(c->dst, x);
    if (dt == FU_F32 || dt == FU_F64) return x;
    return fu_cast(c->dst, x, FU_F32, HN("f32"));
}

/* Casts back to the composite's dtype under its own name when needed. */
static fu_tensor finish(dctx *c, fu_tensor v, fu_dtype want, const char *name)
{
    if (fu_tensor_dtype(c->dst, v) != want) return fu_cast(c->dst, v, want, name);
    /* Rename by a no-op: segment_set is a value no-op the segmenter may
     * ignore inside one segment; a reshape to the same shape is clearer. */
    return fu_reshape(c->dst, v, fu_tensor_rank(c->dst, v), fu_tensor_shape(c->dst, v), name);
}

/* Row statistics of x [N, C] along axis: max m and log-sum-exp, keepdim. */
static fu_tensor logsumexp(dctx *c, fu_tensor xf, int axis, fu_tensor *m_out)
{
    fu_fusion *d = c->dst;
    fu_tensor m = fu_reduce(d, FU_OP_RMAX, xf, 1, &axis, true, HN("max"));
    fu_tensor e = fu_unary(d, FU_OP_EXP, fu_binary(d, FU_OP_SUB, xf, m, HN("shift")), HN("exp"));
    fu_tensor s = fu_reduce(d, FU_OP_SUM, e, 1, &axis, true, HN("sumexp"));
    if (m_out) *m_out = m;
    return fu_binary(d, FU_OP_ADD, fu_unary(d, FU_OP_LOG, s, HN("logsum")), m, HN("lse"));
}

static fu_tensor expand_softmax(dctx *c, const fu_node *n, const char *name)
{
    fu_fusion *d = c->dst;
    fu_tensor x = c->map[n->inputs[0]];
    fu_tensor xf = to_f32(c, x);
    fu_tensor lse = logsumexp(c, xf, n->attrs.axis, NULL);
    fu_tensor lsm = fu_binary(d, FU_OP_SUB, xf, lse, HN("lsm"));
    fu_tensor y = n->op == FU_OP_SOFTMAX ? fu_unary(d, FU_OP_EXP, lsm, HN("sm")) : lsm;
    return finish(c, y, fu_tensor_dtype(d, x), name);
}

/* Shared by cross_entropy and its backward: the row mask and a target that is
 * safe to gather with (ignored rows point at class 0). */
static void ce_target(dctx *c, fu_tensor t, int64_t n, int64_t ignore, fu_tensor *valid, fu_tensor *tsafe)
{
    fu_fusion *d = c->dst;
    int64_t col[2] = {n, 1};
    fu_dtype tdt = fu_tensor_dtype(d, t);
    fu_tensor t2 = fu_reshape(d, t, 2, col, HN("target"));
    *valid = fu_binary(d, FU_OP_NE, t2, scalar(c, (double)ignore, tdt), HN("valid"));
    *tsafe = fu_where(d, *valid, t2, scalar(c, 0, tdt), HN("tsafe"));
}

/* Number of rows that are not ignored, in the compute dtype (a grid-wide reduction). */
static fu_tensor ce_count(dctx *c, fu_tensor valid, fu_dtype cdt)
{
    return fu_reduce(c->dst, FU_OP_SUM, fu_cast(c->dst, valid, cdt, HN("validf")), 0, NULL, false, HN("count"));
}

static fu_tensor expand_cross_entropy(dctx *c, const fu_node *n, const char *name)
{
    fu_fusion *d = c->dst;
    const fu_attrs *at = &n->attrs;
    fu_tensor x = c->map[n->inputs[0]], t = c->map[n->inputs[1]];
    int64_t N = fu_tensor_shape(d, x)[0], C = fu_tensor_shape(d, x)[1];
    int axis = 1;
    fu_tensor xf = to_f32(c, x), valid, tsafe, loss;
    fu_dtype cdt = fu_tensor_dtype(d, xf); /* f32, or f64 for f64 logits */
    if (C == 0) {
        ce_target(c, t, N, at->ignore_index, &valid, &tsafe);
        /* No class: a row not ignored has no valid target, which a gather must still report (as
         * the interpreter does), and the rows ignored lose 0. The gather: index 1 into one zero
         * for a row not ignored (out of range), 0 for an ignored one. */
        int64_t one = 1;
        fu_tensor zero = fu_full(d, 1, &one, 0.0, cdt, HN("no_class"));
        loss = fu_take(d, zero, fu_cast(d, valid, FU_I64, HN("needs_class")), 0, HN("nll"));
    } else {
        fu_tensor lse = logsumexp(c, xf, axis, NULL);
        ce_target(c, t, N, at->ignore_index, &valid, &tsafe);
        fu_tensor picked = fu_take_along_axis(d, xf, tsafe, axis, HN("picked"));
        loss = fu_binary(d, FU_OP_SUB, lse, picked, HN("nll"));
        if (at->label_smoothing > 0.0) {
            /* -sum_c log_softmax_c = C * lse - sum_c x_c */
            fu_tensor sumx = fu_reduce(d, FU_OP_SUM, xf, 1, &axis, true, HN("sumx"));
            fu_tensor smooth = fu_binary(d, FU_OP_SUB,
                                         fu_binary(d, FU_OP_MUL, lse, scalar(c, (double)C, cdt), HN("clse")), sumx,
                                         HN("smooth"));
            loss = fu_binary(d, FU_OP_ADD,
                             fu_binary(d, FU_OP_MUL, loss, scalar(c, 1.0 - at->label_smoothing, cdt), HN("a")),
                             fu_binary(d, FU_OP_MUL, smooth, scalar(c, at->label_smoothing / (double)C, cdt), HN("b")),
                             HN("smoothed"));
        }
    }
    loss = fu_where(d, valid, loss, scalar(c, 0.0, cdt), HN("rowloss"));
    fu_tensor out;
    if (at->reduction == FU_REDUCTION_NONE) {
        out = fu_reshape(d, loss, 1, &N, HN("rows"));
    } else {
        out = fu_reduce(d, FU_OP_SUM, loss, 0, NULL, false, HN("total"));
        if (at->reduction == FU_REDUCTION_MEAN)
            out = fu_binary(d, FU_OP_DIV, out, ce_count(c, valid, cdt), HN("mean"));
    }
    return finish(c, out, fu_tensor_dtype(d, x), name);
}

static fu_tensor expand_cross_entropy_bwd(dctx *c, const fu_node *n, const char *name)
{
    fu_fusion *d = c->dst;
    const fu_attrs *at = &n->attrs;
    fu_tensor x = c->map[n->inputs[0]], t = c->map[n->inputs[1]], g = c->map[n->inputs[2]];
    int64_t N = fu_tensor_shape(d, x)[0], C = fu_tensor_shape(d, x)[1];
    int64_t xs[2] = {N, C}; /* a copy: building ops moves the fusion's arrays */
    int64_t col[2] = {N, 1};
    fu_tensor xf = to_f32(c, x), gf = to_f32(c, g), valid, tsafe;
    fu_dtype cdt = fu_tensor_dtype(d, xf); /* f32, or f64 for f64 logits */
    fu_tensor lse = logsumexp(c, xf, 1, NULL);
    fu_tensor p = fu_unary(d, FU_OP_EXP, fu_binary(d, FU_OP_SUB, xf, lse, HN("lsm")), HN("softmax"));
    ce_target(c, t, N, at->ignore_index, &valid, &tsafe);
    fu_tensor cls = fu_iota(d, 2, xs, 1, fu_tensor_dtype(d, tsafe), HN("class"));
    /* The one-hot needs no gather, but a bad target must still be reported:
     * gathering the class index at the target is the target, bounds-checked. */
    fu_tensor checked = fu_take_along_axis(d, cls, tsafe, 1, HN("tcheck"));
    fu_tensor hot = fu_cast(d, fu_binary(d, FU_OP_EQ, cls, checked, HN("is_target")), cdt, HN("onehot"));
    fu_tensor delta = fu_binary(d, FU_OP_SUB, p, fu_binary(d, FU_OP_MUL, hot, scalar(c, 1.0 - at->label_smoothing, cdt), HN("hot")), HN("delta"));
    if (at->label_smoothing > 0.0)
        delta = fu_binary(d, FU_OP_SUB, delta, scalar(c, at->label_smoothing / (double)C, cdt), HN("delta"));
    fu_tensor coef;
    if (at->reduction == FU_REDUCTION_NONE) coef = fu_reshape(d, gf, 2, col, HN("grow"));
    else if (at->reduction == FU_REDUCTION_SUM) coef = gf;
    else coef = fu_binary(d, FU_OP_DIV, gf, ce_count(c, valid, cdt), HN("gmean"));
    fu_tensor dx = fu_where(d, valid, fu_binary(d, FU_OP_MUL, delta, coef, HN("scaled")), scalar(c, 0.0, cdt), HN("dx"));
    return finish(c, dx, fu_tensor_dtype(d, x), name);
}

static fu_tensor expand_embedding_bwd(dctx *c, const fu_node *n, const char *name)
{
    fu_fusion *d = c->dst;
    fu_tensor g = c->map[n->inputs[0]], ids = c->map[n->inputs[1]];
    int64_t M = fu_tensor_numel(d, ids), D = fu_tensor_shape(d, g)[fu_tensor_rank(d, g) - 1];
    int64_t gshape[2] = {M, D}, wshape[2] = {n->attrs.num_weights, D}, col[2] = {M, 1};
    fu_dtype dt = fu_tensor_dtype(d, g), idt = fu_tensor_dtype(d, ids);
    fu_tensor rows = fu_reshape(d, g, 2, gshape, HN("rows"));
    fu_tensor flat = fu_reshape(d, ids, 1, &M, HN("ids"));
    if (n->attrs.padding_idx >= 0) {
        /* The padding row gets no gradient: its source rows count as zero. */
        fu_tensor keep = fu_binary(d, FU_OP_NE, fu_reshape(d, ids, 2, col, HN("idcol")),
                                   scalar(c, (double)n->attrs.padding_idx, idt), HN("keep"));
        rows = fu_where(d, keep, rows, scalar(c, 0.0, dt), HN("kept"));
    }
    fu_tensor zero = fu_full(d, 2, wshape, 0.0, dt, HN("zeros"));
    return fu_index_add(d, zero, flat, rows, 0, name);
}

static fu_tensor expand_mean(dctx *c, const fu_node *n, const char *name)
{
    fu_fusion *d = c->dst;
    fu_tensor x = c->map[n->inputs[0]];
    const fu_value *xv = fu_val(c->src, n->inputs[0]);
    bool reduced[FU_MAX_RANK];
    fu_reduced_axes(&n->attrs, xv->rank, reduced);
    int64_t count = 1;
    for (int i = 0; i < xv->rank; i++)
        if (reduced[i]) count *= xv->shape[i];
    /* Summed and divided in f32 for f16/bf16 (their sums overflow and round,
     * and the count itself may not be representable: 70000 is inf in f16);
     * f32/f64 compute in place, with no casts and no rename. */
    fu_tensor xf = to_f32(c, x);
    fu_dtype cdt = fu_tensor_dtype(d, xf);
    fu_tensor s = fu_reduce(d, FU_OP_SUM, xf, n->attrs.naxes, n->attrs.axes, n->attrs.keepdim, HN("sum"));
    fu_tensor cnt = scalar(c, (double)count, cdt);
    if (cdt == xv->dtype) return fu_binary(d, FU_OP_DIV, s, cnt, name);
    return finish(c, fu_binary(d, FU_OP_DIV, s, cnt, HN("mean")), xv->dtype, name);
}

static fu_tensor copy_node(dctx *c, const fu_node *n, const char *name)
{
    fu_tensor in[FU_MAX_OP_INPUTS];
    for (int i = 0; i < n->ninputs; i++) in[i] = c->map[n->inputs[i]];
    return fu_add_op(c->dst, n->op, n->ninputs, in, &n->attrs, name);
}

/* A composite expands into elementwise values of its operands' and result's shapes, of up to
 * 8 bytes an element (an i64 class index beside f32 logits, an f32 copy of bf16 ones): where
 * such a value cannot be addressed, neither a host nor a GPU has the memory for the op, though
 * its operands fit. Out of memory, then, named at the op (not an invalid fusion: every fusion
 * the verifier accepts plans or runs out of memory). */
static fu_status check_expansion_fits(const fu_fusion *f, const fu_node *n, fu_error *err)
{
    for (int k = -1; k < n->ninputs; k++) {
        const fu_value *v = fu_val(f, k < 0 ? n->output : n->inputs[k]);
        char why[192], sh[192];
        if (!fu_shape_fits(v->rank, v->shape, NULL, FU_I64, why, sizeof why))
            return fu_error_set(err, FU_ERR_NOMEM,
                                "op '%s' -> '%s': its expansion holds values of the shape %s of '%s' at up to 8 "
                                "bytes an element; at 8 bytes %s",
                                fu_op_name(n->op), fu_val(f, n->output)->name,
                                fu_shape_str(v->rank, v->shape, sh, sizeof sh), v->name, why);
    }
    return FU_OK;
}

fu_status fu_fusion_decompose(const fu_fusion *f, fu_fusion **out, fu_error *err)
{
    *out = NULL;
    fu_status s = fu_fusion_verify(f, err);
    if (s) return s;
    for (int i = 0; i < f->nnodes; i++)
        if (fu_op_kind_of(f->nodes[i].op) == FU_KIND_COMPOSITE && (s = check_expansion_fits(f, &f->nodes[i], err)))
            return s;
    dctx c = {f, fu_fusion_new(f->name), fu_calloc((size_t)f->nvalues, sizeof(fu_tensor)), NULL, 0, {{0}}};
    if (!c.dst || !c.map) {
        fu_fusion_free(c.dst);
        fu_free(c.map);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory decomposing fusion '%s'", f->name);
    }
    snprintf(c.dst->file, sizeof c.dst->file, "%s", f->file);
    for (int i = 0; i < f->ninputs; i++) {
        const fu_value *v = fu_val(f, f->inputs[i]);
        c.map[f->inputs[i]] = fu_input_strided(c.dst, v->name, v->dtype, v->rank, v->shape, v->strides);
    }
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        const char *name = fu_val(f, n->output)->name;
        c.base = name;
        c.counter = 0;
        fu_fusion_set_location(c.dst, NULL, n->line, n->column);
        fu_tensor r;
        const fu_value *ov = fu_val(f, n->output);
        if (fu_op_kind_of(n->op) == FU_KIND_COMPOSITE && fu_shape_numel(ov->rank, ov->shape) == 0) {
            /* Nothing to compute, and its expansion may not exist: the statistics of a softmax
             * over an empty axis would be reductions of no elements into a non-empty result. */
            r = fu_full(c.dst, ov->rank, ov->shape, 0.0, ov->dtype, name);
        } else switch (n->op) {
        case FU_OP_SOFTMAX:
        case FU_OP_LOG_SOFTMAX: r = expand_softmax(&c, n, name); break;
        case FU_OP_CROSS_ENTROPY: r = expand_cross_entropy(&c, n, name); break;
        case FU_OP_CROSS_ENTROPY_BWD: r = expand_cross_entropy_bwd(&c, n, name); break;
        case FU_OP_EMBEDDING: r = fu_take(c.dst, c.map[n->inputs[0]], c.map[n->inputs[1]], 0, name); break;
        case FU_OP_EMBEDDING_BWD: r = expand_embedding_bwd(&c, n, name); break;
        case FU_OP_MEAN: r = expand_mean(&c, n, name); break;
        default: r = copy_node(&c, n, name); break;
        }
        c.map[n->output] = r;
        if (c.dst->first_error.status != FU_OK) break; /* reported by the verify below */
    }
    for (int i = 0; i < f->noutputs; i++) fu_output(c.dst, c.map[f->outputs[i]]);
    fu_free(c.map);
    s = fu_fusion_verify(c.dst, err);
    if (s) {
        fu_fusion_free(c.dst);
        return s;
    }
    *out = c.dst;
    return FU_OK;
}
