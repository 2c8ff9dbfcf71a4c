/*
 * range.c -- the interval of a tensor's values (fu_value_range).
 *
 * One walk over the ops in their (topological) order gives every tensor an
 * interval [lo, hi] that holds all of its values that are not NaN. NaN
 * itself is left out: an op that produces NaN where the interpreter does
 * (0 * inf, log of a negative) is not bounded by it, and the one consumer,
 * the row scheduler's log-sum-exp, propagates NaN on its own (its max does).
 * A cast of NaN to an integer is 0, a value, so such casts include 0.
 *
 * The rules are the monotone images of the ops (tanh, sigmoid, exp, log,
 * ...), interval arithmetic for add/sub/mul/div and max/min, unions for
 * where, and the element count for sums. Float results are widened by 2^-8
 * of their magnitude and then rounded to their dtype: that covers the
 * rounding of every op (half an ulp is at most 2^-9 relative for bf16), the
 * kernels' approximations (tanh.approx: 2^-10.9), overflow to inf (f16) and
 * the flush of subnormals to zero.
 */
#include <math.h>
#include <stdlib.h>

#include "range.h"

typedef struct interval {
    double lo, hi;
} interval;

static const interval UNBOUNDED = {-INFINITY, INFINITY};

static interval iv(double lo, double hi)
{
    interval r = {isnan(lo) ? -INFINITY : lo, isnan(hi) ? INFINITY : hi};
    return r;
}

static interval iv_union(interval a, interval b) { return iv(fmin(a.lo, b.lo), fmax(a.hi, b.hi)); }

/* min and max of the four corner values of a op b; a NaN corner (0 * inf,
 * inf / inf, inf - inf) makes the result unbounded. */
static interval corners(interval a, interval b, double (*op)(double, double))
{
    double c[4] = {op(a.lo, b.lo), op(a.lo, b.hi), op(a.hi, b.lo), op(a.hi, b.hi)};
    interval r = {c[0], c[0]};
    for (int i = 0; i < 4; i++) {
        if (isnan(c[i])) return UNBOUNDED;
        r.lo = fmin(r.lo, c[i]);
        r.hi = fmax(r.hi, c[i]);
    }
    return r;
}

static double add_d(double a, double b) { return a + b; }
static double sub_d(double a, double b) { return a - b; }
static double mul_d(double a, double b) { return a * b; }
static double div_d(double a, double b) { return a / b; }

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The range of an integer or bool dtype. */
static interval dtype_range(fu_dtype t)
{
    switch (t) {
    case FU_BOOL: return iv(0, 1);
    case FU_I32: return iv(-2147483648.0, 2147483647.0);
    case FU_I64: return iv(-0x1p63, 0x1p63);
    default: return UNBOUNDED;
    }
}

/* What an op's result of dtype t holds, given the exact interval r. */
static interval settle(interval r, fu_dtype t)
{
    if (!fu_dtype_is_float(t)) {
        interval d = dtype_range(t);
        if (r.lo < d.lo || r.hi > d.hi) return d; /* may wrap around */
        return iv(fu_round_to_dtype(r.lo, t), fu_round_to_dtype(r.hi, t));
    }
    if (t == FU_F64) return r;
    double lo = r.lo - fabs(r.lo) * 0x1p-8, hi = r.hi + fabs(r.hi) * 0x1p-8;
    if (lo > 0 && lo < 0x1p-125) lo = 0; /* flushed to zero */
    if (hi < 0 && hi > -0x1p-125) hi = 0;
    return iv(fu_round_to_dtype(lo, t), fu_round_to_dtype(hi, t));
}

static interval unary(fu_op op, interval a)
{
    switch (op) {
    case FU_OP_NEG: return iv(-a.hi, -a.lo);
    case FU_OP_ABS:
        if (a.lo >= 0) return a;
        if (a.hi <= 0) return iv(-a.hi, -a.lo);
        return iv(0, fmax(-a.lo, a.hi));
    case FU_OP_EXP: return iv(exp(a.lo), exp(a.hi));
    case FU_OP_LOG: return iv(log(fmax(a.lo, 0)), log(fmax(a.hi, 0)));
    case FU_OP_LOG1P: return iv(log1p(fmax(a.lo, -1)), log1p(fmax(a.hi, -1)));
    case FU_OP_SQRT: return iv(sqrt(fmax(a.lo, 0)), sqrt(fmax(a.hi, 0)));
    case FU_OP_RSQRT: return a.lo > 0 ? iv(1 / sqrt(a.hi), 1 / sqrt(a.lo)) : iv(0, INFINITY);
    case FU_OP_TANH: return iv(tanh(a.lo), tanh(a.hi));
    case FU_OP_SIGMOID: return iv(sigmoid_d(a.lo), sigmoid_d(a.hi));
    case FU_OP_RECIPROCAL: return a.lo > 0 || a.hi < 0 ? iv(1 / a.hi, 1 / a.lo) : UNBOUNDED;
    case FU_OP_LOGICAL_NOT: return iv(0, 1);
    default: return UNBOUNDED;
    }
}

static interval binary(fu_op op, interval a, interval b)
{
    switch (op) {
    case FU_OP_ADD: return corners(a, b, add_d);
    case FU_OP_SUB: return corners(a, b, sub_d);
    case FU_OP_MUL: return corners(a, b, mul_d);
    case FU_OP_DIV: return b.lo > 0 || b.hi < 0 ? corners(a, b, div_d) : UNBOUNDED;
    case FU_OP_MAX: return iv(fmax(a.lo, b.lo), fmax(a.hi, b.hi));
    case FU_OP_MIN: return iv(fmin(a.lo, b.lo), fmin(a.hi, b.hi));
    case FU_OP_EQ: case FU_OP_NE: case FU_OP_LT: case FU_OP_LE: case FU_OP_GT: case FU_OP_GE:
    case FU_OP_LOGICAL_AND: case FU_OP_LOGICAL_OR:
        return iv(0, 1);
    default: return UNBOUNDED; /* pow */
    }
}

static interval node_range(const fu_fusion *f, const fu_node *n, const interval *r)
{
    const fu_value *in = n->ninputs > 0 ? fu_val(f, n->inputs[0]) : NULL;
    const fu_value *out = fu_val(f, n->output);
    switch (fu_op_kind_of(n->op)) {
    case FU_KIND_UNARY: return unary(n->op, r[n->inputs[0]]);
    case FU_KIND_BINARY: return binary(n->op, r[n->inputs[0]], r[n->inputs[1]]);
    case FU_KIND_WHERE: return iv_union(r[n->inputs[1]], r[n->inputs[2]]);
    case FU_KIND_CAST: {
        interval a = r[n->inputs[0]];
        if (!fu_dtype_is_float(n->attrs.dtype) && fu_dtype_is_float(in->dtype)) a = iv_union(a, iv(0, 0)); /* NaN -> 0 */
        return a;
    }
    case FU_KIND_BROADCAST: case FU_KIND_RESHAPE: case FU_KIND_PERMUTE: case FU_KIND_SLICE: case FU_KIND_HINT:
    case FU_KIND_GATHER:
        return r[n->inputs[0]]; /* the data operand's values */
    case FU_KIND_FULL: return iv(n->attrs.value, n->attrs.value);
    case FU_KIND_IOTA: return iv(0, (double)(n->attrs.shape[n->attrs.axis] - 1));
    case FU_KIND_REDUCE: {
        int64_t nin = fu_shape_numel(in->rank, in->shape), nout = fu_shape_numel(out->rank, out->shape);
        double count = nout > 0 ? (double)(nin / nout) : 0;
        interval a = r[n->inputs[0]];
        if (count == 0) return n->op == FU_OP_SUM ? iv(0, 0) : UNBOUNDED; /* empty: 0, -inf, inf, NaN */
        if (n->op == FU_OP_SUM) return corners(a, iv(count, count), mul_d);
        return a; /* max, min, mean */
    }
    case FU_KIND_COMPOSITE:
        if (n->op == FU_OP_SOFTMAX) return iv(0, 1);
        if (n->op == FU_OP_LOG_SOFTMAX) return iv(-INFINITY, 0);
        if (n->op == FU_OP_EMBEDDING) return r[n->inputs[0]];
        return UNBOUNDED;
    default: return UNBOUNDED; /* scatters */
    }
}

bool fu_value_range(const fu_fusion *f, fu_tensor t, double *lo, double *hi)
{
    *lo = -INFINITY;
    *hi = INFINITY;
    if (!f || !fu_tensor_valid(f, t)) return false;
    interval *r = malloc((size_t)f->nvalues * sizeof *r);
    if (!r) return false;
    for (int v = 0; v < f->nvalues; v++) {
        const fu_value *val = fu_val(f, v);
        r[v] = val->producer < 0 ? settle(UNBOUNDED, val->dtype) : UNBOUNDED;
    }
    int last = fu_val(f, t)->producer;
    for (int i = 0; i <= last; i++) {
        const fu_node *n = &f->nodes[i];
        r[n->output] = settle(node_range(f, n, r), fu_val(f, n->output)->dtype);
    }
    *lo = r[t].lo;
    *hi = r[t].hi;
    free(r);
    return isfinite(*lo) && isfinite(*hi);
}
