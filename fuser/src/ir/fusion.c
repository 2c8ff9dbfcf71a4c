/* fusion.c -- building fusions: tensors, ops, shape and dtype inference,
 * the verifier, and introspection. */
#include <stdio.h>
#include <string.h>

#include "ir.h"

/* ------------------------------------------------------------ shapes */

int64_t fu_shape_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

bool fu_shape_extent_product(int rank, const int64_t *shape, int64_t *out)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        if (shape[i] != 0 && __builtin_mul_overflow(n, shape[i], &n)) return false;
    *out = n;
    return true;
}

bool fu_shape_fits(int rank, const int64_t *shape, const int64_t *strides, fu_dtype dtype, char *why, size_t n)
{
    int64_t elems, last = 0, bytes;
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0) {
            snprintf(why, n, "axis %d has negative extent %lld", i, (long long)shape[i]);
            return false;
        }
    if (!fu_shape_extent_product(rank, shape, &elems)) {
        snprintf(why, n, "the product of its extents does not fit in int64");
        return false;
    }
    /* The farthest element a strided input reaches; contiguous: elems - 1. */
    if (strides) {
        for (int i = 0; i < rank; i++) {
            int64_t step;
            if (shape[i] <= 1) continue;
            if (__builtin_mul_overflow(strides[i], shape[i] - 1, &step) || __builtin_add_overflow(last, step, &last)) {
                snprintf(why, n, "its strides reach past int64");
                return false;
            }
        }
        if (last >= elems) elems = last + 1;
    }
    if (__builtin_mul_overflow(elems, (int64_t)fu_dtype_size(dtype), &bytes) || bytes > FU_MAX_TENSOR_BYTES) {
        snprintf(why, n, "it spans %lld elements of %zu bytes, more than the %lld bytes a host or GPU can address",
                 (long long)elems, fu_dtype_size(dtype), (long long)FU_MAX_TENSOR_BYTES);
        return false;
    }
    return true;
}

void fu_shape_contiguous_strides(int rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i];
    }
}

bool fu_shape_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = ra - r + i, ib = rb - r + i;
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out[i] = da == 1 ? db : da;
    }
    *rout = r;
    return true;
}

const char *fu_shape_str(int rank, const int64_t *shape, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

/* ------------------------------------------------------------ fusion objects */

fu_fusion *fu_fusion_new(const char *name)
{
    fu_fusion *f = fu_calloc(1, sizeof *f);
    if (!f) return NULL;
    snprintf(f->name, sizeof f->name, "%s", name ? name : "fusion");
    return f;
}

void fu_fusion_free(fu_fusion *f)
{
    if (!f) return;
    fu_free(f->values);
    fu_free(f->nodes);
    fu_free(f->inputs);
    fu_free(f->outputs);
    fu_free(f);
}

static void *dup_array(const void *src, int n, size_t size)
{
    void *d = fu_malloc((size_t)(n ? n : 1) * size);
    if (d && n) memcpy(d, src, (size_t)n * size);
    return d;
}

fu_fusion *fu_fusion_clone(const fu_fusion *f)
{
    fu_fusion *c = fu_calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = *f;
    c->values = dup_array(f->values, f->nvalues, sizeof *f->values);
    c->nodes = dup_array(f->nodes, f->nnodes, sizeof *f->nodes);
    c->inputs = dup_array(f->inputs, f->ninputs, sizeof *f->inputs);
    c->outputs = dup_array(f->outputs, f->noutputs, sizeof *f->outputs);
    c->cap_values = f->nvalues;
    c->cap_nodes = f->nnodes;
    c->cap_inputs = f->ninputs;
    c->cap_outputs = f->noutputs;
    if (!c->values || !c->nodes || !c->inputs || !c->outputs) {
        fu_fusion_free(c);
        return NULL;
    }
    return c;
}

const char *fu_fusion_name(const fu_fusion *f) { return f->name; }

void fu_fusion_set_location(fu_fusion *f, const char *file, int line, int column)
{
    if (file) snprintf(f->file, sizeof f->file, "%s", file);
    f->cur_line = line;
    f->cur_column = column;
}

/* ------------------------------------------------------------ errors */

fu_status fu_error_locate(fu_error *dst, const fu_error *e, const fu_fusion *f, int line, int col)
{
    if (line > 0) return fu_error_set_at(dst, e->status, f->file[0] ? f->file : NULL, line, col, "%s", e->message);
    if (dst) *dst = *e;
    return e->status;
}

/* err = "op 'OP' -> 'OUT': <message>", the message cut at 767 characters. */
static fu_status op_verror(fu_error *err, fu_status s, fu_op op, const char *out, const char *fmt, va_list ap)
{
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return fu_error_set(err, s, "op '%s' -> '%s': %s", fu_op_name(op), out, msg);
}

fu_status fu_node_verror(const fu_fusion *f, const fu_node *n, fu_error *err, fu_status s, const char *fmt,
                         va_list ap)
{
    fu_error e; /* short enough never to be cut: names are under FU_MAX_NAME */
    op_verror(&e, s, n->op, f->values[n->output].name, fmt, ap);
    return fu_error_locate(err, &e, f, n->line, n->column);
}

fu_status fu_node_error(const fu_fusion *f, const fu_node *n, fu_error *err, fu_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fu_node_verror(f, n, err, s, fmt, ap);
    va_end(ap);
    return s;
}

/* Records the first builder error, prefixed with the current source location. */
static void record_error(fu_fusion *f, const fu_error *e)
{
    if (f->first_error.status == FU_OK) fu_error_locate(&f->first_error, e, f, f->cur_line, f->cur_column);
}

static fu_tensor find_name(const fu_fusion *f, const char *name)
{
    for (int i = 0; i < f->nvalues; i++)
        if (strcmp(f->values[i].name, name) == 0) return i;
    return -1;
}

static fu_tensor new_value(fu_fusion *f, const char *name, fu_dtype dtype, int rank,
                           const int64_t *shape, const int64_t *strides, int producer)
{
    fu_error e;
    char auto_name[FU_MAX_NAME];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "t%d", f->nvalues);
        for (int k = 0; find_name(f, auto_name) >= 0; k++)
            snprintf(auto_name, sizeof auto_name, "t%d_%d", f->nvalues, k);
        name = auto_name;
    }
    if (strlen(name) >= FU_MAX_NAME) {
        fu_error_set(&e, FU_ERR_VERIFY, "tensor name '%.40s...' is longer than %d characters", name,
                     FU_MAX_NAME - 1);
        record_error(f, &e);
        return -1;
    }
    if (find_name(f, name) >= 0) {
        fu_error_set(&e, FU_ERR_VERIFY, "tensor '%s' is defined twice", name);
        record_error(f, &e);
        return -1;
    }
    char why[192], sh[192];
    if (!fu_shape_fits(rank, shape, strides, dtype, why, sizeof why)) {
        fu_error_set(&e, FU_ERR_VERIFY, "tensor '%s' %s%s is too large: %s", name, fu_dtype_name(dtype),
                     fu_shape_str(rank, shape, sh, sizeof sh), why);
        record_error(f, &e);
        return -1;
    }
    if (fu_grow((void **)&f->values, &f->cap_values, f->nvalues + 1, sizeof *f->values)) {
        fu_error_set(&e, FU_ERR_NOMEM, "out of memory adding tensor '%s'", name);
        record_error(f, &e);
        return -1;
    }
    fu_value *v = &f->values[f->nvalues];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->dtype = dtype;
    v->rank = rank;
    if (rank) memcpy(v->shape, shape, (size_t)rank * sizeof *shape);
    if (strides && rank) memcpy(v->strides, strides, (size_t)rank * sizeof *strides);
    else fu_shape_contiguous_strides(rank, shape, v->strides);
    v->producer = producer;
    v->input_index = -1;
    return f->nvalues++;
}

fu_tensor fu_input_strided(fu_fusion *f, const char *name, fu_dtype dtype, int rank,
                           const int64_t *shape, const int64_t *strides)
{
    fu_error e;
    if (f->first_error.status != FU_OK) return -1;
    if ((unsigned)dtype >= FU_DTYPE_COUNT) {
        fu_error_set(&e, FU_ERR_VERIFY, "input '%s': unknown dtype %d", name ? name : "?", (int)dtype);
        record_error(f, &e);
        return -1;
    }
    if (rank < 0 || rank > FU_MAX_RANK) {
        fu_error_set(&e, FU_ERR_VERIFY, "input '%s': rank %d is outside 0..%d", name ? name : "?", rank,
                     FU_MAX_RANK);
        record_error(f, &e);
        return -1;
    }
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0 || (strides && strides[i] < 0)) {
            fu_error_set(&e, FU_ERR_VERIFY, "input '%s': axis %d has negative %s %lld",
                         name ? name : "?", i, shape[i] < 0 ? "extent" : "stride",
                         (long long)(shape[i] < 0 ? shape[i] : strides[i]));
            record_error(f, &e);
            return -1;
        }
    fu_tensor t = new_value(f, name, dtype, rank, shape, strides, -1);
    if (t < 0) return -1;
    if (fu_grow((void **)&f->inputs, &f->cap_inputs, f->ninputs + 1, sizeof *f->inputs)) {
        fu_error_set(&e, FU_ERR_NOMEM, "out of memory adding input '%s'", name);
        record_error(f, &e);
        return -1;
    }
    f->values[t].input_index = f->ninputs;
    f->inputs[f->ninputs++] = t;
    return t;
}

fu_tensor fu_input(fu_fusion *f, const char *name, fu_dtype dtype, int rank, const int64_t *shape)
{
    return fu_input_strided(f, name, dtype, rank, shape, NULL);
}

void fu_output(fu_fusion *f, fu_tensor t)
{
    fu_error e;
    if (f->first_error.status != FU_OK) return;
    if (!fu_tensor_valid(f, t)) {
        fu_error_set(&e, FU_ERR_VERIFY, "output: tensor id %d does not exist", t);
        record_error(f, &e);
        return;
    }
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i] == t) {
            fu_error_set(&e, FU_ERR_VERIFY, "output: tensor '%s' is listed twice", f->values[t].name);
            record_error(f, &e);
            return;
        }
    if (fu_grow((void **)&f->outputs, &f->cap_outputs, f->noutputs + 1, sizeof *f->outputs)) {
        fu_error_set(&e, FU_ERR_NOMEM, "out of memory adding output");
        record_error(f, &e);
        return;
    }
    f->outputs[f->noutputs++] = t;
}

/* ------------------------------------------------------------ inference */

typedef struct infer_ctx {
    const fu_fusion *f;
    const fu_node *node;
    const char *out_name;
    fu_error *err;
} infer_ctx;

static fu_status fail(const infer_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The op's output has no tensor yet while it is being built: out_name names it. */
static fu_status fail(const infer_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    op_verror(c->err, FU_ERR_VERIFY, c->node->op, c->out_name, fmt, ap);
    va_end(ap);
    return FU_ERR_VERIFY;
}

static const fu_value *operand(const infer_ctx *c, int i) { return &c->f->values[c->node->inputs[i]]; }

static const char *shp(const fu_value *v, char *buf, size_t n) { return fu_shape_str(v->rank, v->shape, buf, n); }

static fu_status check_axis(const infer_ctx *c, int axis, int rank, const char *what)
{
    if (axis < 0 || axis >= rank)
        return fail(c, "%s %d is out of range for rank %d", what, axis, rank);
    return FU_OK;
}

static fu_status require_float(const infer_ctx *c, int i)
{
    const fu_value *v = operand(c, i);
    if (!fu_dtype_is_float(v->dtype))
        return fail(c, "operand '%s' has dtype %s; a floating-point dtype is needed", v->name,
                    fu_dtype_name(v->dtype));
    return FU_OK;
}

static fu_status require_int(const infer_ctx *c, int i, const char *role)
{
    const fu_value *v = operand(c, i);
    if (!fu_dtype_is_int(v->dtype))
        return fail(c, "%s '%s' has dtype %s; an integer dtype (i32 or i64) is needed", role, v->name,
                    fu_dtype_name(v->dtype));
    return FU_OK;
}

static fu_status require_same_dtype(const infer_ctx *c, int i, int j)
{
    const fu_value *a = operand(c, i), *b = operand(c, j);
    if (a->dtype != b->dtype)
        return fail(c, "dtype mismatch: '%s' is %s but '%s' is %s (insert a cast)", a->name,
                    fu_dtype_name(a->dtype), b->name, fu_dtype_name(b->dtype));
    return FU_OK;
}

static bool is_math_unary(fu_op op)
{
    return op == FU_OP_EXP || op == FU_OP_LOG || op == FU_OP_LOG1P || op == FU_OP_SQRT ||
           op == FU_OP_RSQRT || op == FU_OP_TANH || op == FU_OP_SIGMOID || op == FU_OP_RECIPROCAL;
}

static bool is_compare(fu_op op)
{
    return op == FU_OP_EQ || op == FU_OP_NE || op == FU_OP_LT || op == FU_OP_LE || op == FU_OP_GT ||
           op == FU_OP_GE;
}

static fu_status infer_broadcast2(const infer_ctx *c, const fu_value *a, const fu_value *b, int *rank,
                                  int64_t *shape)
{
    char sa[128], sb[128];
    if (!fu_shape_broadcast(a->rank, a->shape, b->rank, b->shape, rank, shape))
        return fail(c, "shapes %s of '%s' and %s of '%s' do not broadcast", shp(a, sa, sizeof sa),
                    a->name, shp(b, sb, sizeof sb), b->name);
    return FU_OK;
}

fu_status fu_infer(const fu_fusion *f, const fu_node *node, const char *out_name, fu_dtype *dtype,
                   int *rank, int64_t *shape, fu_error *err)
{
    infer_ctx c = {f, node, out_name, err};
    const fu_attrs *at = &node->attrs;
    fu_op op = node->op;
    char s1[128], s2[128];

    if (node->ninputs != fu_op_arity(op))
        return fail(&c, "takes %d tensor operand(s), got %d", fu_op_arity(op), node->ninputs);
    for (int i = 0; i < node->ninputs; i++)
        if (!fu_tensor_valid(f, node->inputs[i]))
            return fail(&c, "operand %d (tensor id %d) does not exist", i, node->inputs[i]);

    const fu_value *x = node->ninputs > 0 ? operand(&c, 0) : NULL;
    fu_status s;
    switch (fu_op_kind_of(op)) {
    case FU_KIND_UNARY:
        if (op == FU_OP_LOGICAL_NOT) {
            if (x->dtype != FU_BOOL) return fail(&c, "operand '%s' has dtype %s; bool is needed", x->name, fu_dtype_name(x->dtype));
        } else if (is_math_unary(op)) {
            if ((s = require_float(&c, 0))) return s;
        } else if (x->dtype == FU_BOOL) {
            return fail(&c, "operand '%s' is bool; a numeric dtype is needed", x->name);
        }
        *dtype = x->dtype;
        *rank = x->rank;
        memcpy(shape, x->shape, sizeof x->shape);
        return FU_OK;

    case FU_KIND_BINARY: {
        const fu_value *b = operand(&c, 1);
        if ((s = require_same_dtype(&c, 0, 1))) return s;
        if ((s = infer_broadcast2(&c, x, b, rank, shape))) return s;
        if (op == FU_OP_LOGICAL_AND || op == FU_OP_LOGICAL_OR) {
            if (x->dtype != FU_BOOL) return fail(&c, "operands are %s; bool is needed", fu_dtype_name(x->dtype));
            *dtype = FU_BOOL;
        } else if (is_compare(op)) {
            *dtype = FU_BOOL;
        } else {
            if (x->dtype == FU_BOOL) return fail(&c, "operands are bool; a numeric dtype is needed");
            if ((op == FU_OP_DIV || op == FU_OP_POW) && (s = require_float(&c, 0))) return s;
            *dtype = x->dtype;
        }
        return FU_OK;
    }
    case FU_KIND_WHERE: {
        const fu_value *a = operand(&c, 1), *b = operand(&c, 2);
        int r1;
        int64_t sh1[FU_MAX_RANK];
        if (x->dtype != FU_BOOL) return fail(&c, "condition '%s' has dtype %s; bool is needed", x->name, fu_dtype_name(x->dtype));
        if ((s = require_same_dtype(&c, 1, 2))) return s;
        if ((s = infer_broadcast2(&c, x, a, &r1, sh1))) return s;
        fu_value tmp = *a;
        tmp.rank = r1;
        memcpy(tmp.shape, sh1, sizeof sh1);
        snprintf(tmp.name, sizeof tmp.name, "%s", a->name);
        if ((s = infer_broadcast2(&c, &tmp, b, rank, shape))) return s;
        *dtype = a->dtype;
        return FU_OK;
    }
    case FU_KIND_CAST:
        if ((unsigned)at->dtype >= FU_DTYPE_COUNT) return fail(&c, "unknown target dtype %d", (int)at->dtype);
        *dtype = at->dtype;
        *rank = x->rank;
        memcpy(shape, x->shape, sizeof x->shape);
        return FU_OK;

    case FU_KIND_BROADCAST:
        if (at->rank < x->rank || at->rank > FU_MAX_RANK)
            return fail(&c, "cannot broadcast '%s' %s to rank %d", x->name, shp(x, s1, sizeof s1), at->rank);
        for (int i = 0; i < x->rank; i++) {
            int o = at->rank - x->rank + i;
            if (at->shape[o] < 0) return fail(&c, "target extent %lld of axis %d is negative", (long long)at->shape[o], o);
            if (x->shape[i] != 1 && x->shape[i] != at->shape[o])
                return fail(&c, "cannot broadcast '%s' %s to %s: axis %d has extent %lld, not 1 or %lld",
                            x->name, shp(x, s1, sizeof s1), fu_shape_str(at->rank, at->shape, s2, sizeof s2),
                            i, (long long)x->shape[i], (long long)at->shape[o]);
        }
        *dtype = x->dtype;
        *rank = at->rank;
        memcpy(shape, at->shape, sizeof at->shape);
        return FU_OK;

    case FU_KIND_REDUCE: {
        if (x->dtype == FU_BOOL) return fail(&c, "operand '%s' is bool; a numeric dtype is needed", x->name);
        if (op == FU_OP_MEAN && (s = require_float(&c, 0))) return s;
        if (at->naxes < 0 || at->naxes > x->rank) return fail(&c, "%d axes given for rank %d", at->naxes, x->rank);
        for (int i = 0; i < at->naxes; i++) {
            if ((s = check_axis(&c, at->axes[i], x->rank, "axis"))) return s;
            for (int k = 0; k < i; k++)
                if (at->axes[k] == at->axes[i]) return fail(&c, "axis %d is listed twice", at->axes[i]);
        }
        bool reduced[FU_MAX_RANK];
        fu_reduced_axes(at, x->rank, reduced);
        *rank = 0;
        for (int i = 0; i < x->rank; i++) {
            if (!reduced[i]) shape[(*rank)++] = x->shape[i];
            else if (at->keepdim) shape[(*rank)++] = 1;
            if ((op == FU_OP_RMAX || op == FU_OP_RMIN) && reduced[i] && x->shape[i] == 0)
                return fail(&c, "%s over axis %d of extent 0 has no identity", fu_op_name(op), i);
        }
        *dtype = x->dtype;
        return FU_OK;
    }
    case FU_KIND_RESHAPE: {
        int64_t known = 1;
        int infer_at = -1;
        if (at->rank < 0 || at->rank > FU_MAX_RANK) return fail(&c, "rank %d is outside 0..%d", at->rank, FU_MAX_RANK);
        for (int i = 0; i < at->rank; i++) {
            if (at->shape[i] == -1) {
                if (infer_at >= 0) return fail(&c, "more than one extent is -1");
                infer_at = i;
            } else if (at->shape[i] < 0) {
                return fail(&c, "extent %lld of axis %d is negative", (long long)at->shape[i], i);
            } else if (__builtin_mul_overflow(known, at->shape[i], &known)) {
                return fail(&c, "the product of the target extents does not fit in int64");
            }
        }
        int64_t n = fu_shape_numel(x->rank, x->shape);
        memcpy(shape, at->shape, sizeof at->shape);
        if (infer_at >= 0) {
            if (known == 0 || n % known)
                return fail(&c, "cannot infer the -1 extent: %lld elements of '%s' are not a multiple of %lld",
                            (long long)n, x->name, (long long)known);
            shape[infer_at] = n / known;
            known *= shape[infer_at];
        }
        if (known != n)
            return fail(&c, "cannot reshape '%s' %s (%lld elements) to %s (%lld elements)", x->name,
                        shp(x, s1, sizeof s1), (long long)n, fu_shape_str(at->rank, shape, s2, sizeof s2),
                        (long long)known);
        *dtype = x->dtype;
        *rank = at->rank;
        return FU_OK;
    }
    case FU_KIND_PERMUTE: {
        bool seen[FU_MAX_RANK] = {false};
        for (int i = 0; i < x->rank; i++) {
            if ((s = check_axis(&c, at->perm[i], x->rank, "permutation entry"))) return s;
            if (seen[at->perm[i]]) return fail(&c, "permutation lists axis %d twice", at->perm[i]);
            seen[at->perm[i]] = true;
            shape[i] = x->shape[at->perm[i]];
        }
        *dtype = x->dtype;
        *rank = x->rank;
        return FU_OK;
    }
    case FU_KIND_SLICE:
        for (int i = 0; i < x->rank; i++) {
            int64_t lo = at->start[i], hi = at->stop[i], st = at->step[i];
            if (st < 1) return fail(&c, "step %lld of axis %d must be >= 1", (long long)st, i);
            if (lo < 0 || hi > x->shape[i] || lo > hi)
                return fail(&c, "slice [%lld:%lld] of axis %d is out of bounds for '%s' %s", (long long)lo,
                            (long long)hi, i, x->name, shp(x, s1, sizeof s1));
            shape[i] = hi == lo ? 0 : (hi - lo - 1) / st + 1; /* hi - lo + st - 1 can overflow */
        }
        *dtype = x->dtype;
        *rank = x->rank;
        return FU_OK;

    case FU_KIND_FULL:
    case FU_KIND_IOTA:
        if (at->rank < 0 || at->rank > FU_MAX_RANK) return fail(&c, "rank %d is outside 0..%d", at->rank, FU_MAX_RANK);
        if ((unsigned)at->dtype >= FU_DTYPE_COUNT) return fail(&c, "unknown dtype %d", (int)at->dtype);
        for (int i = 0; i < at->rank; i++)
            if (at->shape[i] < 0) return fail(&c, "extent %lld of axis %d is negative", (long long)at->shape[i], i);
        if (op == FU_OP_IOTA) {
            if ((s = check_axis(&c, at->axis, at->rank, "axis"))) return s;
            if (at->dtype == FU_BOOL) return fail(&c, "iota cannot be bool");
        }
        *dtype = at->dtype;
        *rank = at->rank;
        memcpy(shape, at->shape, sizeof at->shape);
        return FU_OK;

    case FU_KIND_GATHER: {
        const fu_value *idx = operand(&c, 1);
        if ((s = require_int(&c, 1, "index"))) return s;
        if ((s = check_axis(&c, at->axis, x->rank, "axis"))) return s;
        *dtype = x->dtype;
        if (op == FU_OP_INDEX_SELECT) {
            if (idx->rank != 1) return fail(&c, "index '%s' must be 1-D, got %s", idx->name, shp(idx, s1, sizeof s1));
            *rank = x->rank;
            memcpy(shape, x->shape, sizeof x->shape);
            shape[at->axis] = idx->shape[0];
        } else if (op == FU_OP_TAKE) {
            if (x->rank - 1 + idx->rank > FU_MAX_RANK)
                return fail(&c, "result rank %d exceeds %d", x->rank - 1 + idx->rank, FU_MAX_RANK);
            *rank = 0;
            for (int i = 0; i < at->axis; i++) shape[(*rank)++] = x->shape[i];
            for (int i = 0; i < idx->rank; i++) shape[(*rank)++] = idx->shape[i];
            for (int i = at->axis + 1; i < x->rank; i++) shape[(*rank)++] = x->shape[i];
        } else { /* take_along_axis: torch.gather */
            if (idx->rank != x->rank)
                return fail(&c, "index '%s' has rank %d but '%s' has rank %d", idx->name, idx->rank, x->name, x->rank);
            for (int i = 0; i < x->rank; i++)
                if (i != at->axis && idx->shape[i] > x->shape[i])
                    return fail(&c, "index '%s' %s is larger than '%s' %s on axis %d", idx->name,
                                shp(idx, s1, sizeof s1), x->name, shp(x, s2, sizeof s2), i);
            *rank = idx->rank;
            memcpy(shape, idx->shape, sizeof idx->shape);
        }
        return FU_OK;
    }
    case FU_KIND_SCATTER: {
        const fu_value *idx = operand(&c, 1), *src = operand(&c, 2);
        if ((s = require_int(&c, 1, "index"))) return s;
        if ((s = check_axis(&c, at->axis, x->rank, "axis"))) return s;
        if (x->dtype == FU_BOOL) return fail(&c, "'%s' is bool; a numeric dtype is needed", x->name);
        if ((s = require_same_dtype(&c, 0, 2))) return s;
        if (op == FU_OP_INDEX_ADD) {
            if (idx->rank != 1) return fail(&c, "index '%s' must be 1-D, got %s", idx->name, shp(idx, s1, sizeof s1));
            bool ok = src->rank == x->rank;
            for (int i = 0; ok && i < x->rank; i++)
                ok = src->shape[i] == (i == at->axis ? idx->shape[0] : x->shape[i]);
            if (!ok)
                return fail(&c, "source '%s' %s must match '%s' %s except on axis %d, where it must be %lld",
                            src->name, shp(src, s1, sizeof s1), x->name, shp(x, s2, sizeof s2), at->axis,
                            (long long)idx->shape[0]);
        } else {
            if (idx->rank != x->rank || src->rank != x->rank)
                return fail(&c, "'%s', index '%s' and source '%s' must have the same rank", x->name, idx->name, src->name);
            for (int i = 0; i < x->rank; i++)
                if (idx->shape[i] > src->shape[i] || (i != at->axis && idx->shape[i] > x->shape[i]))
                    return fail(&c, "index '%s' %s is larger than source '%s' %s or '%s' on axis %d", idx->name,
                                shp(idx, s1, sizeof s1), src->name, shp(src, s2, sizeof s2), x->name, i);
        }
        *dtype = x->dtype;
        *rank = x->rank;
        memcpy(shape, x->shape, sizeof x->shape);
        return FU_OK;
    }
    case FU_KIND_COMPOSITE:
        switch (op) {
        case FU_OP_SOFTMAX:
        case FU_OP_LOG_SOFTMAX:
            if ((s = require_float(&c, 0))) return s;
            if ((s = check_axis(&c, at->axis, x->rank, "axis"))) return s;
            *dtype = x->dtype;
            *rank = x->rank;
            memcpy(shape, x->shape, sizeof x->shape);
            return FU_OK;
        case FU_OP_CROSS_ENTROPY:
        case FU_OP_CROSS_ENTROPY_BWD: {
            const fu_value *t = operand(&c, 1);
            if ((s = require_float(&c, 0))) return s;
            if ((s = require_int(&c, 1, "target"))) return s;
            if (x->rank != 2) return fail(&c, "logits '%s' must be [N, C], got %s", x->name, shp(x, s1, sizeof s1));
            if (t->rank != 1 || t->shape[0] != x->shape[0])
                return fail(&c, "target '%s' must be [%lld] to match logits '%s' %s, got %s", t->name,
                            (long long)x->shape[0], x->name, shp(x, s1, sizeof s1), shp(t, s2, sizeof s2));
            if ((unsigned)at->reduction > FU_REDUCTION_SUM) return fail(&c, "unknown reduction %d", (int)at->reduction);
            if (!(at->label_smoothing >= 0.0 && at->label_smoothing <= 1.0))
                return fail(&c, "label_smoothing %g must be in [0, 1]", at->label_smoothing);
            *dtype = x->dtype;
            if (op == FU_OP_CROSS_ENTROPY) {
                *rank = at->reduction == FU_REDUCTION_NONE ? 1 : 0;
                shape[0] = x->shape[0];
            } else {
                const fu_value *g = operand(&c, 2);
                int want = at->reduction == FU_REDUCTION_NONE ? 1 : 0;
                if ((s = require_same_dtype(&c, 0, 2))) return s;
                if (g->rank != want || (want && g->shape[0] != x->shape[0]))
                    return fail(&c, "grad_loss '%s' must be %s for reduction=%s, got %s", g->name,
                                want ? fu_shape_str(1, x->shape, s1, sizeof s1) : "[]",
                                fu_reduction_name(at->reduction), shp(g, s2, sizeof s2));
                *rank = 2;
                memcpy(shape, x->shape, sizeof x->shape);
            }
            return FU_OK;
        }
        case FU_OP_EMBEDDING: {
            const fu_value *ids = operand(&c, 1);
            if ((s = require_int(&c, 1, "ids"))) return s;
            if (x->rank != 2) return fail(&c, "weight '%s' must be [V, D], got %s", x->name, shp(x, s1, sizeof s1));
            if (ids->rank + 1 > FU_MAX_RANK) return fail(&c, "ids '%s' has too many axes", ids->name);
            if (at->padding_idx >= x->shape[0])
                return fail(&c, "padding_idx %lld is out of range for %lld rows", (long long)at->padding_idx,
                            (long long)x->shape[0]);
            *dtype = x->dtype;
            *rank = ids->rank + 1;
            memcpy(shape, ids->shape, (size_t)ids->rank * sizeof *shape);
            shape[ids->rank] = x->shape[1];
            return FU_OK;
        }
        case FU_OP_EMBEDDING_BWD: {
            const fu_value *ids = operand(&c, 1);
            if ((s = require_float(&c, 0))) return s;
            if ((s = require_int(&c, 1, "ids"))) return s;
            bool ok = x->rank == ids->rank + 1;
            for (int i = 0; ok && i < ids->rank; i++) ok = x->shape[i] == ids->shape[i];
            if (!ok)
                return fail(&c, "grad '%s' %s must be ids '%s' %s plus a trailing hidden axis", x->name,
                            shp(x, s1, sizeof s1), ids->name, shp(ids, s2, sizeof s2));
            if (at->num_weights < 1) return fail(&c, "num_weights %lld must be >= 1", (long long)at->num_weights);
            if (at->padding_idx >= at->num_weights)
                return fail(&c, "padding_idx %lld is out of range for %lld rows", (long long)at->padding_idx,
                            (long long)at->num_weights);
            *dtype = x->dtype;
            *rank = 2;
            shape[0] = at->num_weights;
            shape[1] = x->shape[x->rank - 1];
            return FU_OK;
        }
        default: break;
        }
        break;
    case FU_KIND_HINT:
        *dtype = x->dtype;
        *rank = x->rank;
        memcpy(shape, x->shape, sizeof x->shape);
        return FU_OK;
    }
    return fail(&c, "no shape rule for this op");
}

/* ------------------------------------------------------------ builder */

fu_tensor fu_add_op(fu_fusion *f, fu_op op, int ninputs, const fu_tensor *inputs,
                    const fu_attrs *attrs, const char *name)
{
    fu_error e;
    if (f->first_error.status != FU_OK) return -1;
    if ((unsigned)op >= FU_OP_COUNT || ninputs < 0 || ninputs > FU_MAX_OP_INPUTS) {
        fu_error_set(&e, FU_ERR_ARG, "op %d with %d operands is not a valid op", (int)op, ninputs);
        record_error(f, &e);
        return -1;
    }
    fu_node node;
    memset(&node, 0, sizeof node);
    node.op = op;
    node.ninputs = ninputs;
    for (int i = 0; i < ninputs; i++) node.inputs[i] = inputs[i];
    if (attrs) node.attrs = *attrs;
    node.line = f->cur_line;
    node.column = f->cur_column;

    char auto_name[FU_MAX_NAME];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "t%d", f->nvalues);
    }
    fu_dtype dt;
    int rank;
    int64_t shape[FU_MAX_RANK] = {0};
    if (fu_infer(f, &node, name ? name : auto_name, &dt, &rank, shape, &e) != FU_OK) {
        record_error(f, &e);
        return -1;
    }
    if (fu_grow((void **)&f->nodes, &f->cap_nodes, f->nnodes + 1, sizeof *f->nodes)) {
        fu_error_set(&e, FU_ERR_NOMEM, "out of memory adding op '%s'", fu_op_name(op));
        record_error(f, &e);
        return -1;
    }
    fu_tensor t = new_value(f, name, dt, rank, shape, NULL, f->nnodes);
    if (t < 0) return -1;
    node.output = t;
    f->nodes[f->nnodes++] = node;
    return t;
}

/* Normalizes negative axes (Python style) so that builders accept -1. */
static int norm_axis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }
static int rank_of(const fu_fusion *f, fu_tensor t) { return fu_tensor_valid(f, t) ? f->values[t].rank : 0; }

fu_tensor fu_unary(fu_fusion *f, fu_op op, fu_tensor x, const char *name)
{
    return fu_add_op(f, op, 1, &x, NULL, name);
}

fu_tensor fu_binary(fu_fusion *f, fu_op op, fu_tensor a, fu_tensor b, const char *name)
{
    fu_tensor in[2] = {a, b};
    return fu_add_op(f, op, 2, in, NULL, name);
}

fu_tensor fu_where(fu_fusion *f, fu_tensor cond, fu_tensor a, fu_tensor b, const char *name)
{
    fu_tensor in[3] = {cond, a, b};
    return fu_add_op(f, FU_OP_WHERE, 3, in, NULL, name);
}

fu_tensor fu_cast(fu_fusion *f, fu_tensor x, fu_dtype dtype, const char *name)
{
    fu_attrs at = {0};
    at.dtype = dtype;
    return fu_add_op(f, FU_OP_CAST, 1, &x, &at, name);
}

static void set_shape(fu_attrs *at, int rank, const int64_t *shape)
{
    at->rank = rank;
    for (int i = 0; i < rank && i < FU_MAX_RANK; i++) at->shape[i] = shape[i];
}

fu_tensor fu_broadcast(fu_fusion *f, fu_tensor x, int rank, const int64_t *shape, const char *name)
{
    fu_attrs at = {0};
    if (rank > FU_MAX_RANK) rank = FU_MAX_RANK + 1; /* rejected by inference */
    set_shape(&at, rank, shape);
    return fu_add_op(f, FU_OP_BROADCAST, 1, &x, &at, name);
}

fu_tensor fu_reduce(fu_fusion *f, fu_op op, fu_tensor x, int naxes, const int *axes, bool keepdim,
                    const char *name)
{
    fu_attrs at = {0};
    at.naxes = naxes > FU_MAX_RANK ? FU_MAX_RANK + 1 : naxes;
    for (int i = 0; i < naxes && i < FU_MAX_RANK; i++) at.axes[i] = norm_axis(axes[i], rank_of(f, x));
    at.keepdim = keepdim;
    return fu_add_op(f, op, 1, &x, &at, name);
}

fu_tensor fu_reshape(fu_fusion *f, fu_tensor x, int rank, const int64_t *shape, const char *name)
{
    fu_attrs at = {0};
    if (rank > FU_MAX_RANK) rank = FU_MAX_RANK + 1;
    set_shape(&at, rank, shape);
    return fu_add_op(f, FU_OP_RESHAPE, 1, &x, &at, name);
}

fu_tensor fu_permute(fu_fusion *f, fu_tensor x, const int *perm, const char *name)
{
    fu_attrs at = {0};
    int r = rank_of(f, x);
    for (int i = 0; i < r; i++) at.perm[i] = norm_axis(perm[i], r);
    return fu_add_op(f, FU_OP_PERMUTE, 1, &x, &at, name);
}

fu_tensor fu_slice(fu_fusion *f, fu_tensor x, const int64_t *start, const int64_t *stop,
                   const int64_t *step, const char *name)
{
    fu_attrs at = {0};
    int r = rank_of(f, x);
    for (int i = 0; i < r; i++) {
        at.start[i] = start[i];
        at.stop[i] = stop[i];
        at.step[i] = step ? step[i] : 1;
    }
    return fu_add_op(f, FU_OP_SLICE, 1, &x, &at, name);
}

fu_tensor fu_full(fu_fusion *f, int rank, const int64_t *shape, double value, fu_dtype dtype,
                  const char *name)
{
    fu_attrs at = {0};
    if (rank > FU_MAX_RANK) rank = FU_MAX_RANK + 1;
    set_shape(&at, rank, shape);
    at.value = value;
    at.dtype = dtype;
    return fu_add_op(f, FU_OP_FULL, 0, NULL, &at, name);
}

fu_tensor fu_iota(fu_fusion *f, int rank, const int64_t *shape, int axis, fu_dtype dtype,
                  const char *name)
{
    fu_attrs at = {0};
    if (rank > FU_MAX_RANK) rank = FU_MAX_RANK + 1;
    set_shape(&at, rank, shape);
    at.axis = norm_axis(axis, rank);
    at.dtype = dtype;
    return fu_add_op(f, FU_OP_IOTA, 0, NULL, &at, name);
}

static fu_tensor gather(fu_fusion *f, fu_op op, fu_tensor x, fu_tensor index, int axis, const char *name)
{
    fu_attrs at = {0};
    at.axis = norm_axis(axis, rank_of(f, x));
    fu_tensor in[2] = {x, index};
    return fu_add_op(f, op, 2, in, &at, name);
}

fu_tensor fu_index_select(fu_fusion *f, fu_tensor x, fu_tensor index, int axis, const char *name)
{
    return gather(f, FU_OP_INDEX_SELECT, x, index, axis, name);
}
fu_tensor fu_take(fu_fusion *f, fu_tensor x, fu_tensor index, int axis, const char *name)
{
    return gather(f, FU_OP_TAKE, x, index, axis, name);
}
fu_tensor fu_take_along_axis(fu_fusion *f, fu_tensor x, fu_tensor index, int axis, const char *name)
{
    return gather(f, FU_OP_TAKE_ALONG_AXIS, x, index, axis, name);
}

static fu_tensor scatter(fu_fusion *f, fu_op op, fu_tensor x, fu_tensor index, fu_tensor src, int axis,
                         const char *name)
{
    fu_attrs at = {0};
    at.axis = norm_axis(axis, rank_of(f, x));
    fu_tensor in[3] = {x, index, src};
    return fu_add_op(f, op, 3, in, &at, name);
}

fu_tensor fu_index_add(fu_fusion *f, fu_tensor x, fu_tensor index, fu_tensor src, int axis,
                       const char *name)
{
    return scatter(f, FU_OP_INDEX_ADD, x, index, src, axis, name);
}
fu_tensor fu_scatter_add(fu_fusion *f, fu_tensor x, fu_tensor index, fu_tensor src, int axis,
                         const char *name)
{
    return scatter(f, FU_OP_SCATTER_ADD, x, index, src, axis, name);
}

fu_tensor fu_softmax(fu_fusion *f, fu_tensor x, int axis, const char *name)
{
    fu_attrs at = {0};
    at.axis = norm_axis(axis, rank_of(f, x));
    return fu_add_op(f, FU_OP_SOFTMAX, 1, &x, &at, name);
}

fu_tensor fu_log_softmax(fu_fusion *f, fu_tensor x, int axis, const char *name)
{
    fu_attrs at = {0};
    at.axis = norm_axis(axis, rank_of(f, x));
    return fu_add_op(f, FU_OP_LOG_SOFTMAX, 1, &x, &at, name);
}

fu_tensor fu_cross_entropy(fu_fusion *f, fu_tensor logits, fu_tensor target, fu_reduction reduction,
                           int64_t ignore_index, double label_smoothing, const char *name)
{
    fu_attrs at = {0};
    at.reduction = reduction;
    at.ignore_index = ignore_index;
    at.label_smoothing = label_smoothing;
    fu_tensor in[2] = {logits, target};
    return fu_add_op(f, FU_OP_CROSS_ENTROPY, 2, in, &at, name);
}

fu_tensor fu_cross_entropy_backward(fu_fusion *f, fu_tensor logits, fu_tensor target,
                                    fu_tensor grad_loss, fu_reduction reduction,
                                    int64_t ignore_index, double label_smoothing, const char *name)
{
    fu_attrs at = {0};
    at.reduction = reduction;
    at.ignore_index = ignore_index;
    at.label_smoothing = label_smoothing;
    fu_tensor in[3] = {logits, target, grad_loss};
    return fu_add_op(f, FU_OP_CROSS_ENTROPY_BWD, 3, in, &at, name);
}

fu_tensor fu_embedding(fu_fusion *f, fu_tensor weight, fu_tensor ids, int64_t padding_idx,
                       const char *name)
{
    fu_attrs at = {0};
    at.padding_idx = padding_idx < 0 ? -1 : padding_idx;
    fu_tensor in[2] = {weight, ids};
    return fu_add_op(f, FU_OP_EMBEDDING, 2, in, &at, name);
}

fu_tensor fu_embedding_backward(fu_fusion *f, fu_tensor grad, fu_tensor ids, int64_t num_weights,
                                int64_t padding_idx, const char *name)
{
    fu_attrs at = {0};
    at.num_weights = num_weights;
    at.padding_idx = padding_idx < 0 ? -1 : padding_idx;
    fu_tensor in[2] = {grad, ids};
    return fu_add_op(f, FU_OP_EMBEDDING_BWD, 2, in, &at, name);
}

fu_tensor fu_segment_set(fu_fusion *f, fu_tensor x, const char *name)
{
    return fu_add_op(f, FU_OP_SEGMENT_SET, 1, &x, NULL, name);
}

/* ------------------------------------------------------------ verifier */

fu_status fu_fusion_verify(const fu_fusion *f, fu_error *err)
{
    if (f->first_error.status != FU_OK) {
        if (err) *err = f->first_error;
        return f->first_error.status;
    }
    for (int i = 0; i < f->nvalues; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(f->values[i].name, f->values[j].name) == 0)
                return fu_error_set(err, FU_ERR_VERIFY, "tensor '%s' is defined twice", f->values[i].name);
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        for (int k = 0; k < n->ninputs; k++)
            if (!fu_tensor_valid(f, n->inputs[k]) || n->inputs[k] >= n->output)
                return fu_node_error(f, n, err, FU_ERR_VERIFY, "operand %d is not defined before use", k);
        fu_dtype dt;
        int rank;
        int64_t shape[FU_MAX_RANK] = {0};
        const fu_value *out = &f->values[n->output];
        fu_error e;
        if (fu_infer(f, n, out->name, &dt, &rank, shape, &e) != FU_OK)
            return fu_error_locate(err, &e, f, n->line, n->column);
        if (dt != out->dtype || rank != out->rank || memcmp(shape, out->shape, (size_t)rank * sizeof *shape))
            return fu_node_error(f, n, err, FU_ERR_VERIFY, "recorded dtype/shape disagree with its operands");
    }
    if (f->noutputs == 0)
        return fu_error_set(err, FU_ERR_VERIFY, "fusion '%s' has no outputs", f->name);
    return FU_OK;
}

/* ------------------------------------------------------------ introspection */

int fu_fusion_num_tensors(const fu_fusion *f) { return f->nvalues; }
int fu_fusion_num_inputs(const fu_fusion *f) { return f->ninputs; }
int fu_fusion_num_outputs(const fu_fusion *f) { return f->noutputs; }
int fu_fusion_num_ops(const fu_fusion *f) { return f->nnodes; }
fu_tensor fu_fusion_input(const fu_fusion *f, int i) { return i >= 0 && i < f->ninputs ? f->inputs[i] : -1; }
fu_tensor fu_fusion_output(const fu_fusion *f, int i) { return i >= 0 && i < f->noutputs ? f->outputs[i] : -1; }
fu_tensor fu_fusion_find(const fu_fusion *f, const char *name) { return find_name(f, name); }
const char *fu_tensor_name(const fu_fusion *f, fu_tensor t) { return fu_tensor_valid(f, t) ? f->values[t].name : "?"; }
/* Accessors tolerate an invalid id (a failed builder call returns -1, and the
 * error is reported by fu_fusion_verify), so a chain of calls never reads out
 * of bounds. */
static const int64_t no_shape[FU_MAX_RANK];
fu_dtype fu_tensor_dtype(const fu_fusion *f, fu_tensor t) { return fu_tensor_valid(f, t) ? f->values[t].dtype : FU_F32; }
int fu_tensor_rank(const fu_fusion *f, fu_tensor t) { return fu_tensor_valid(f, t) ? f->values[t].rank : 0; }
const int64_t *fu_tensor_shape(const fu_fusion *f, fu_tensor t) { return fu_tensor_valid(f, t) ? f->values[t].shape : no_shape; }
int64_t fu_tensor_numel(const fu_fusion *f, fu_tensor t)
{
    return fu_tensor_valid(f, t) ? fu_shape_numel(f->values[t].rank, f->values[t].shape) : 0;
}

const fu_node *fu_producer(const fu_fusion *f, fu_tensor t)
{
    int p = f->values[t].producer;
    return p >= 0 ? &f->nodes[p] : NULL;
}

static bool is_shape_only(fu_op op)
{
    return op == FU_OP_RESHAPE || op == FU_OP_PERMUTE || op == FU_OP_SLICE || op == FU_OP_CAST ||
           op == FU_OP_BROADCAST || op == FU_OP_SEGMENT_SET;
}

int64_t fu_fusion_index_bound(const fu_fusion *f, fu_tensor input)
{
    if (!fu_tensor_valid(f, input)) return 0;
    bool *derived = fu_calloc((size_t)f->nvalues, sizeof *derived);
    if (!derived) return 0;
    derived[input] = true;
    int64_t bound = 0;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (is_shape_only(n->op) && derived[n->inputs[0]]) derived[n->output] = true;
        /* where(mask, target, 0) passes index values through (an ignore-index guard) */
        if (n->op == FU_OP_WHERE && (derived[n->inputs[1]] || derived[n->inputs[2]])) derived[n->output] = true;
        if (n->ninputs < 2 || !derived[n->inputs[1]]) continue;
        const fu_value *x = &f->values[n->inputs[0]];
        int64_t b = 0;
        switch (n->op) {
        case FU_OP_INDEX_SELECT:
        case FU_OP_TAKE:
        case FU_OP_TAKE_ALONG_AXIS:
        case FU_OP_INDEX_ADD:
        case FU_OP_SCATTER_ADD: b = x->shape[n->attrs.axis]; break;
        case FU_OP_CROSS_ENTROPY:
        case FU_OP_CROSS_ENTROPY_BWD: b = x->shape[1]; break;
        case FU_OP_EMBEDDING: b = x->shape[0]; break;
        case FU_OP_EMBEDDING_BWD: b = n->attrs.num_weights; break;
        default: break;
        }
        if (b > 0 && (bound == 0 || b < bound)) bound = b;
    }
    fu_free(derived);
    return bound;
}
