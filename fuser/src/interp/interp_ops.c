/*
 * interp_ops.c -- the interpreter's primitive ops: pointwise (NumPy
 * broadcasting), cast, broadcast, reductions, reshape/permute/slice, full,
 * iota, gathers and scatters.
 *
 * Float tensors are computed in double, integer and bool ones in int64
 * (exact; i32 results wrap as on the GPU), so an op has a float and an
 * integer loop; ops that only move values copy 8-byte elements whatever they
 * hold. Strided walks go through nd_iter, which merges axes that can be walked as
 * one and hands out whole innermost rows, so each op's switch sits outside a
 * tight loop and no element costs a division.
 */
#include <math.h>
#include <string.h>

#include "interp.h"

/* ------------------------------------------------------------ nd_iter */

#define ND_MAX_OPS 4

typedef struct nd_iter {
    int nops, rank;      /* outer axes; the innermost one is walked by the caller */
    int64_t rows, inner; /* rows of `inner` elements */
    int64_t shape[FU_MAX_RANK], idx[FU_MAX_RANK];
    int64_t st[ND_MAX_OPS][FU_MAX_RANK];
    int64_t inner_st[ND_MAX_OPS];
    int64_t off[ND_MAX_OPS]; /* element offset of the current row in each operand */
} nd_iter;

/* Walks `shape` with nops operands whose strides (elements) are st[k]. */
static void nd_init(nd_iter *it, int rank, const int64_t *shape, int nops, int64_t (*st)[FU_MAX_RANK])
{
    int64_t sh[FU_MAX_RANK], s[ND_MAX_OPS][FU_MAX_RANK];
    int r = 0;
    bool empty = false;
    memset(it, 0, sizeof *it);
    it->nops = nops;
    for (int d = 0; d < rank; d++) {
        if (shape[d] == 0) empty = true;
        if (shape[d] == 1) continue; /* never moves */
        bool merge = r > 0;
        for (int k = 0; merge && k < nops; k++) merge = s[k][r - 1] == st[k][d] * shape[d];
        if (merge) {
            sh[r - 1] *= shape[d];
            for (int k = 0; k < nops; k++) s[k][r - 1] = st[k][d];
        } else {
            sh[r] = shape[d];
            for (int k = 0; k < nops; k++) s[k][r] = st[k][d];
            r++;
        }
    }
    if (empty) return; /* rows = 0 */
    if (r == 0) {
        it->rows = it->inner = 1;
        return;
    }
    it->inner = sh[r - 1];
    for (int k = 0; k < nops; k++) it->inner_st[k] = s[k][r - 1];
    it->rank = r - 1;
    it->rows = 1;
    for (int d = 0; d < it->rank; d++) {
        it->shape[d] = sh[d];
        it->rows *= sh[d];
        for (int k = 0; k < nops; k++) it->st[k][d] = s[k][d];
    }
}

static void nd_next(nd_iter *it)
{
    for (int d = it->rank - 1; d >= 0; d--) {
        for (int k = 0; k < it->nops; k++) it->off[k] += it->st[k][d];
        if (++it->idx[d] < it->shape[d]) return;
        for (int k = 0; k < it->nops; k++) it->off[k] -= it->st[k][d] * it->shape[d];
        it->idx[d] = 0;
    }
}

/* Moves the walk to row `row` of its rows: the index and every operand's offset (a chunk of
 * rows on another thread starts there). */
static void nd_seek(nd_iter *it, int64_t row)
{
    for (int k = 0; k < it->nops; k++) it->off[k] = 0;
    for (int d = it->rank - 1; d >= 0; d--) {
        it->idx[d] = row % it->shape[d];
        row /= it->shape[d];
        for (int k = 0; k < it->nops; k++) it->off[k] += it->idx[d] * it->st[k][d];
    }
}

static void contiguous(const fu_value *v, int64_t *st) { fu_shape_contiguous_strides(v->rank, v->shape, st); }

/* Strides that read v broadcast (NumPy rules: trailing axes line up) to an
 * output of rank r. */
static void bcast_strides(int r, const fu_value *v, int64_t *st)
{
    int64_t vs[FU_MAX_RANK];
    contiguous(v, vs);
    for (int i = 0; i < r; i++) {
        int iv = i - (r - v->rank);
        st[i] = iv < 0 || v->shape[iv] == 1 ? 0 : vs[iv];
    }
}

typedef struct copy_job {
    nd_iter w;
    void *dst;
    const void *src;
} copy_job;

/* Rows [begin, end) of a strided copy's walk. */
static bool copy_chunk(void *ctx, int64_t begin, int64_t end)
{
    const copy_job *j = ctx;
    nd_iter w = j->w;
    nd_seek(&w, begin);
    const size_t E = sizeof(double);
    for (int64_t r = begin; r < end; r++, nd_next(&w)) {
        unsigned char *o = (unsigned char *)j->dst + (size_t)w.off[0] * E;
        const unsigned char *a = (const unsigned char *)j->src + (size_t)w.off[1] * E;
        int64_t so = w.inner_st[0], sa = w.inner_st[1];
        if (so == 1 && sa == 1) memcpy(o, a, (size_t)w.inner * E);
        else
            for (int64_t k = 0; k < w.inner; k++) memcpy(o + (size_t)(k * so) * E, a + (size_t)(k * sa) * E, E);
    }
    return true;
}

/* Copies a strided walk of src (strides sst over shape, in elements) into
 * contiguous dst, on every core. Elements are 8 bytes of either kind, moved as bytes. */
static void strided_copy(void *dst, const void *src, int rank, const int64_t *shape, const int64_t *sst)
{
    int64_t st[2][FU_MAX_RANK];
    fu_shape_contiguous_strides(rank, shape, st[0]);
    memcpy(st[1], sst, (size_t)rank * sizeof *sst);
    copy_job j = {.dst = dst, .src = src};
    nd_init(&j.w, rank, shape, 2, st);
    fu_parallel_chunks(j.w.rows, j.w.rows * j.w.inner, copy_chunk, &j);
}

/* Wrapping int64 arithmetic (two's complement, as the GPU computes), without
 * the undefined behaviour of signed overflow in C. */
static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* A double as a value of integer dtype dt, as fu_round_to_dtype rounds it
 * (truncated, saturated, NaN as 0; bool: nonzero is 1), never an undefined
 * conversion. */
static int64_t double_to_int(double v, fu_dtype dt)
{
    if (dt == FU_BOOL) return v != 0.0;
    if (dt == FU_I64) return fu_f64_to_i64(v);
    return (int64_t)fu_round_to_dtype(v, dt); /* i32: within range once rounded */
}

/* ------------------------------------------------------------ pointwise */

static void unary_span(fu_op op, const double *restrict a, double *restrict o, int64_t n)
{
#define U(expr)                                                  \
    for (int64_t j = 0; j < n; j++) { double x = a[j]; o[j] = (expr); } \
    break
    switch (op) {
    case FU_OP_NEG: U(-x);
    case FU_OP_ABS: U(fabs(x));
    case FU_OP_EXP: U(exp(x));
    case FU_OP_LOG: U(log(x));
    case FU_OP_LOG1P: U(log1p(x));
    case FU_OP_SQRT: U(sqrt(x));
    case FU_OP_RSQRT: U(1.0 / sqrt(x));
    case FU_OP_TANH: U(tanh(x));
    case FU_OP_SIGMOID: U(1.0 / (1.0 + exp(-x)));
    case FU_OP_RECIPROCAL: U(1.0 / x);
    case FU_OP_LOGICAL_NOT: U(x == 0.0 ? 1.0 : 0.0);
    default: FU_ASSERT(!"unary op");
    }
#undef U
}

/* The loop of a binary span: x and y (of type T) from a and b at strides sa
 * and sb, o[j * so] = expr, for j < n; then the case's break. */
#define SPAN(T, expr)                                                    \
    for (int64_t j = 0; j < n; j++) {                                    \
        T x = a[j * sa], y = b[j * sb];                                  \
        o[j * so] = (expr);                                              \
    }                                                                    \
    break

static void binary_span(fu_op op, const double *a, int64_t sa, const double *b, int64_t sb,
                        double *restrict o, int64_t so, int64_t n)
{
    switch (op) {
    case FU_OP_ADD: SPAN(double, x + y);
    case FU_OP_SUB: SPAN(double, x - y);
    case FU_OP_MUL: SPAN(double, x * y);
    case FU_OP_DIV: SPAN(double, x / y);
    /* torch.maximum / minimum propagate NaN */
    case FU_OP_MAX: SPAN(double, isnan(x) || isnan(y) ? NAN : x > y ? x : y);
    case FU_OP_MIN: SPAN(double, isnan(x) || isnan(y) ? NAN : x < y ? x : y);
    case FU_OP_POW: SPAN(double, pow(x, y));
    default: FU_ASSERT(!"float binary op"); /* comparisons: compare_span */
    }
}

static void unary_ispan(fu_op op, const int64_t *restrict a, int64_t *restrict o, int64_t n)
{
    switch (op) {
    case FU_OP_NEG:
        for (int64_t j = 0; j < n; j++) o[j] = wrap_sub(0, a[j]);
        break;
    case FU_OP_ABS:
        for (int64_t j = 0; j < n; j++) o[j] = a[j] < 0 ? wrap_sub(0, a[j]) : a[j];
        break;
    case FU_OP_LOGICAL_NOT:
        for (int64_t j = 0; j < n; j++) o[j] = a[j] == 0;
        break;
    default: FU_ASSERT(!"integer unary op");
    }
}

typedef struct unary_job {
    fu_op op;
    const double *a;
    double *o;
} unary_job;

static bool unary_chunk(void *ctx, int64_t begin, int64_t end)
{
    const unary_job *j = ctx;
    unary_span(j->op, j->a + begin, j->o + begin, end - begin);
    return true;
}

static fu_status exec_unary(interp *it, const fu_node *n)
{
    fu_dtype dt = it->f->values[n->output].dtype;
    int64_t cnt = interp_numel(it, n->output);
    if (interp_is_int(dt)) {
        const int64_t *a = interp_ivals(it, n->inputs[0]);
        int64_t *o = a ? interp_new_ioutput(it, n) : NULL;
        if (!o) return interp_nomem(it);
        unary_ispan(n->op, a, o, cnt);
        interp_iround(o, cnt, dt);
        return FU_OK;
    }
    const double *a = interp_vals(it, n->inputs[0]);
    double *o = a ? interp_new_output(it, n) : NULL;
    if (!o) return interp_nomem(it);
    unary_job j = {n->op, a, o};
    fu_parallel_chunks(cnt, cnt, unary_chunk, &j);
    interp_round(o, cnt, dt);
    return FU_OK;
}

/* Comparisons of doubles into bool (int64 0/1). */
static void compare_span(fu_op op, const double *a, int64_t sa, const double *b, int64_t sb, int64_t *restrict o,
                         int64_t so, int64_t n)
{
    switch (op) {
    case FU_OP_EQ: SPAN(double, x == y);
    case FU_OP_NE: SPAN(double, x != y);
    case FU_OP_LT: SPAN(double, x < y);
    case FU_OP_LE: SPAN(double, x <= y);
    case FU_OP_GT: SPAN(double, x > y);
    case FU_OP_GE: SPAN(double, x >= y);
    default: FU_ASSERT(!"comparison op");
    }
}

/* Integer and bool binary ops, exact (wrapping like the GPU's arithmetic). */
static void binary_ispan(fu_op op, const int64_t *a, int64_t sa, const int64_t *b, int64_t sb, int64_t *restrict o,
                         int64_t so, int64_t n)
{
    switch (op) {
    case FU_OP_ADD: SPAN(int64_t, wrap_add(x, y));
    case FU_OP_SUB: SPAN(int64_t, wrap_sub(x, y));
    case FU_OP_MUL: SPAN(int64_t, wrap_mul(x, y));
    case FU_OP_MAX: SPAN(int64_t, x > y ? x : y);
    case FU_OP_MIN: SPAN(int64_t, x < y ? x : y);
    case FU_OP_EQ: SPAN(int64_t, x == y);
    case FU_OP_NE: SPAN(int64_t, x != y);
    case FU_OP_LT: SPAN(int64_t, x < y);
    case FU_OP_LE: SPAN(int64_t, x <= y);
    case FU_OP_GT: SPAN(int64_t, x > y);
    case FU_OP_GE: SPAN(int64_t, x >= y);
    case FU_OP_LOGICAL_AND: SPAN(int64_t, x != 0 && y != 0);
    case FU_OP_LOGICAL_OR: SPAN(int64_t, x != 0 || y != 0);
    default: FU_ASSERT(!"integer binary op");
    }
}
#undef SPAN

/* A walk's rows on one thread: the walk is copied and moved to the chunk's first row. */
typedef struct walk_job {
    const fu_node *n;
    nd_iter w;
    const void *in[3];
    void *o;
    bool int_in, int_out; /* binary: integer operands; a float comparison */
} walk_job;

static bool binary_chunk(void *ctx, int64_t begin, int64_t end)
{
    const walk_job *j = ctx;
    nd_iter w = j->w;
    nd_seek(&w, begin);
    const void *a = j->in[0], *b = j->in[1];
    for (int64_t r = begin; r < end; r++, nd_next(&w)) {
        int64_t sa = w.inner_st[1], sb = w.inner_st[2], so = w.inner_st[0];
        if (j->int_in)
            binary_ispan(j->n->op, (const int64_t *)a + w.off[1], sa, (const int64_t *)b + w.off[2], sb,
                         (int64_t *)j->o + w.off[0], so, w.inner);
        else if (j->int_out) /* a comparison of floats */
            compare_span(j->n->op, (const double *)a + w.off[1], sa, (const double *)b + w.off[2], sb,
                         (int64_t *)j->o + w.off[0], so, w.inner);
        else
            binary_span(j->n->op, (const double *)a + w.off[1], sa, (const double *)b + w.off[2], sb,
                        (double *)j->o + w.off[0], so, w.inner);
    }
    return true;
}

static fu_status exec_binary(interp *it, const fu_node *n)
{
    const fu_value *ov = &it->f->values[n->output];
    bool int_in = interp_is_int(it->f->values[n->inputs[0]].dtype), int_out = interp_is_int(ov->dtype);
    const void *a = interp_raw(it, n->inputs[0]);
    const void *b = a ? interp_raw(it, n->inputs[1]) : NULL;
    void *o = b ? interp_new_raw(it, n) : NULL;
    if (!o) return interp_nomem(it);
    int64_t st[3][FU_MAX_RANK];
    fu_shape_contiguous_strides(ov->rank, ov->shape, st[0]);
    bcast_strides(ov->rank, &it->f->values[n->inputs[0]], st[1]);
    bcast_strides(ov->rank, &it->f->values[n->inputs[1]], st[2]);
    walk_job j = {n, {0}, {a, b, NULL}, o, int_in, int_out};
    nd_init(&j.w, ov->rank, ov->shape, 3, st);
    fu_parallel_chunks(j.w.rows, j.w.rows * j.w.inner, binary_chunk, &j);
    int64_t cnt = interp_numel(it, n->output);
    if (int_out) interp_iround(o, cnt, ov->dtype);
    else interp_round(o, cnt, ov->dtype);
    return FU_OK;
}

static bool where_chunk(void *ctx, int64_t begin, int64_t end)
{
    const walk_job *j = ctx;
    nd_iter w = j->w;
    nd_seek(&w, begin);
    const size_t E = sizeof(double);
    for (int64_t r = begin; r < end; r++, nd_next(&w)) {
        unsigned char *oo = (unsigned char *)j->o + (size_t)w.off[0] * E;
        const int64_t *cc = (const int64_t *)j->in[0] + w.off[1];
        const unsigned char *aa = (const unsigned char *)j->in[1] + (size_t)w.off[2] * E;
        const unsigned char *bb = (const unsigned char *)j->in[2] + (size_t)w.off[3] * E;
        int64_t so = w.inner_st[0], sc = w.inner_st[1], sa = w.inner_st[2], sb = w.inner_st[3];
        for (int64_t k = 0; k < w.inner; k++)
            memcpy(oo + (size_t)(k * so) * E, cc[k * sc] != 0 ? aa + (size_t)(k * sa) * E : bb + (size_t)(k * sb) * E, E);
    }
    return true;
}

static fu_status exec_where(interp *it, const fu_node *n)
{
    const fu_value *ov = &it->f->values[n->output];
    const int64_t *c = interp_ivals(it, n->inputs[0]);
    const void *a = c ? interp_raw(it, n->inputs[1]) : NULL;
    const void *b = a ? interp_raw(it, n->inputs[2]) : NULL;
    void *o = b ? interp_new_raw(it, n) : NULL;
    if (!o) return interp_nomem(it);
    int64_t st[4][FU_MAX_RANK];
    fu_shape_contiguous_strides(ov->rank, ov->shape, st[0]);
    for (int k = 0; k < 3; k++) bcast_strides(ov->rank, &it->f->values[n->inputs[k]], st[k + 1]);
    walk_job j = {n, {0}, {c, a, b}, o, false, false};
    nd_init(&j.w, ov->rank, ov->shape, 4, st);
    fu_parallel_chunks(j.w.rows, j.w.rows * j.w.inner, where_chunk, &j);
    return FU_OK; /* a and b already hold values of the output dtype */
}

/* True when every value of dtype `from` is held exactly as the same element
 * in dtype `to` (same kind of element, no rounding), so a cast can share its
 * operand's values. */
static bool cast_is_identity(fu_dtype from, fu_dtype to)
{
    if (from == to) return true;
    if (interp_is_int(from) != interp_is_int(to)) return false;
    if (interp_is_int(to)) return to == FU_I64 || from == FU_BOOL; /* i32 -> i64, bool -> i32/i64 */
    return to == FU_F64 || ((from == FU_F16 || from == FU_BF16) && to == FU_F32);
}

static fu_status exec_cast(interp *it, const fu_node *n)
{
    fu_dtype from = it->f->values[n->inputs[0]].dtype, to = it->f->values[n->output].dtype;
    if (cast_is_identity(from, to)) return interp_alias(it, n, n->inputs[0]);
    const void *a = interp_raw(it, n->inputs[0]);
    void *o = a ? interp_new_raw(it, n) : NULL;
    if (!o) return interp_nomem(it);
    int64_t cnt = interp_numel(it, n->output);
    bool int_from = interp_is_int(from), int_to = interp_is_int(to);
    if (int_from && int_to) { /* i64 -> i32 wraps, as the GPU's (int) does; -> bool: nonzero */
        memcpy(o, a, (size_t)cnt * sizeof(int64_t));
        interp_iround(o, cnt, to);
    } else if (int_from) {
        const int64_t *x = a;
        double *y = o;
        for (int64_t i = 0; i < cnt; i++) y[i] = (double)x[i];
        interp_round(y, cnt, to);
    } else if (int_to) {
        const double *x = a;
        int64_t *y = o;
        for (int64_t i = 0; i < cnt; i++) y[i] = double_to_int(x[i], to);
    } else {
        memcpy(o, a, (size_t)cnt * sizeof(double));
        interp_round(o, cnt, to);
    }
    return FU_OK;
}

static fu_status exec_broadcast(interp *it, const fu_node *n)
{
    const fu_value *ov = &it->f->values[n->output];
    int64_t cnt = interp_numel(it, n->output);
    /* Only extents of 1 grow, so equal sizes mean the same row-major data. */
    if (cnt > 0 && cnt == interp_numel(it, n->inputs[0])) return interp_alias(it, n, n->inputs[0]);
    const void *a = interp_raw(it, n->inputs[0]);
    void *o = a ? interp_new_raw(it, n) : NULL;
    if (!o) return interp_nomem(it);
    int64_t st[FU_MAX_RANK];
    bcast_strides(ov->rank, &it->f->values[n->inputs[0]], st);
    strided_copy(o, a, ov->rank, ov->shape, st);
    return FU_OK;
}

/* ------------------------------------------------------------ reductions */

/* Integer and bool reductions: exact, sums wrapping like the GPU's. */
static void reduce_int(fu_op op, const int64_t *a, int64_t *o, int64_t ocnt, nd_iter *w)
{
    int64_t init = op == FU_OP_RMAX ? INT64_MIN : op == FU_OP_RMIN ? INT64_MAX : 0;
    for (int64_t i = 0; i < ocnt; i++) o[i] = init;
    for (int64_t r = 0; r < w->rows; r++, nd_next(w)) {
        const int64_t *x = a + w->off[0];
        int64_t *y = o + w->off[1];
        int64_t sx = w->inner_st[0], sy = w->inner_st[1], m = w->inner;
        for (int64_t j = 0; j < m; j++) {
            int64_t v = x[j * sx], *p = &y[j * sy];
            if (op == FU_OP_SUM) *p = wrap_add(*p, v);
            else if (op == FU_OP_RMAX ? v > *p : v < *p) *p = v;
        }
    }
}

/* Rows of a float reduction's walk. Rows run in order within a chunk; chunks run apart only
 * where each row is one output's whole reduction (exec_reduce). */
static bool reduce_chunk(void *ctx, int64_t begin, int64_t end)
{
    const walk_job *job = ctx;
    nd_iter w = job->w;
    nd_seek(&w, begin);
    for (int64_t r = begin; r < end; r++, nd_next(&w)) {
        const double *x = (const double *)job->in[0] + w.off[0];
        double *y = (double *)job->o + w.off[1];
        int64_t sx = w.inner_st[0], sy = w.inner_st[1], m = w.inner;
        if (sy == 0) { /* innermost axis reduced: accumulate in a register */
            double acc = y[0];
            switch (job->n->op) {
            case FU_OP_SUM:
            case FU_OP_MEAN:
                for (int64_t j = 0; j < m; j++) acc += x[j * sx];
                break;
            /* amax / amin propagate NaN: once acc is NaN no comparison replaces it */
            case FU_OP_RMAX:
                for (int64_t j = 0; j < m; j++) if (x[j * sx] > acc || isnan(x[j * sx])) acc = isnan(acc) ? acc : x[j * sx];
                break;
            default:
                for (int64_t j = 0; j < m; j++) if (x[j * sx] < acc || isnan(x[j * sx])) acc = isnan(acc) ? acc : x[j * sx];
                break;
            }
            y[0] = acc;
        } else {
            switch (job->n->op) {
            case FU_OP_SUM:
            case FU_OP_MEAN:
                for (int64_t j = 0; j < m; j++) y[j * sy] += x[j * sx];
                break;
            case FU_OP_RMAX:
                for (int64_t j = 0; j < m; j++) {
                    double v = x[j * sx], *p = &y[j * sy];
                    if ((v > *p || isnan(v)) && !isnan(*p)) *p = v;
                }
                break;
            default:
                for (int64_t j = 0; j < m; j++) {
                    double v = x[j * sx], *p = &y[j * sy];
                    if ((v < *p || isnan(v)) && !isnan(*p)) *p = v;
                }
                break;
            }
        }
    }
    return true;
}

static fu_status exec_reduce(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]], *ov = &it->f->values[n->output];
    const fu_attrs *at = &n->attrs;
    bool reduced[FU_MAX_RANK];
    fu_reduced_axes(at, xv->rank, reduced);

    /* Walk the input; the output is addressed with its keepdim strides and a
     * stride of 0 on reduced axes, so many inputs land on one output. */
    int64_t kshape[FU_MAX_RANK], st[2][FU_MAX_RANK], count = 1;
    for (int i = 0; i < xv->rank; i++) {
        kshape[i] = reduced[i] ? 1 : xv->shape[i];
        if (reduced[i]) count *= xv->shape[i];
    }
    contiguous(xv, st[0]);
    fu_shape_contiguous_strides(xv->rank, kshape, st[1]);
    for (int i = 0; i < xv->rank; i++)
        if (reduced[i]) st[1][i] = 0;

    int64_t ocnt = interp_numel(it, n->output);
    nd_iter w;
    nd_init(&w, xv->rank, xv->shape, 2, st);
    if (interp_is_int(xv->dtype)) {
        const int64_t *ia = interp_ivals(it, n->inputs[0]);
        int64_t *io = ia ? interp_new_ioutput(it, n) : NULL;
        if (!io) return interp_nomem(it);
        reduce_int(n->op, ia, io, ocnt, &w);
        interp_iround(io, ocnt, ov->dtype);
        return FU_OK;
    }
    const double *a = interp_vals(it, n->inputs[0]);
    double *o = a ? interp_new_output(it, n) : NULL;
    if (!o) return interp_nomem(it);
    double init = n->op == FU_OP_RMAX ? -INFINITY : n->op == FU_OP_RMIN ? INFINITY : 0.0;
    for (int64_t i = 0; i < ocnt; i++) o[i] = init;
    walk_job j = {n, w, {a, NULL, NULL}, o, false, false};
    if (w.inner_st[1] == 0 && w.inner == count) /* a row is an output's whole reduction */
        fu_parallel_chunks(w.rows, w.rows * w.inner, reduce_chunk, &j);
    else /* outputs gather several rows, in the walk's order */
        reduce_chunk(&j, 0, w.rows);
    if (n->op == FU_OP_MEAN) /* an empty mean is 0/0 = NaN, as in torch */
        for (int64_t i = 0; i < ocnt; i++) o[i] /= (double)count;
    interp_round(o, ocnt, ov->dtype);
    return FU_OK;
}

/* ------------------------------------------------------------ shape ops */

static fu_status exec_permute(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]], *ov = &it->f->values[n->output];
    /* If the axes longer than 1 keep their order, the data does not move. */
    int last = -1;
    bool moves = false;
    for (int i = 0; i < ov->rank; i++) {
        if (ov->shape[i] == 1) continue;
        if (n->attrs.perm[i] < last) moves = true;
        last = n->attrs.perm[i];
    }
    if (!moves) return interp_alias(it, n, n->inputs[0]);
    const void *a = interp_raw(it, n->inputs[0]);
    void *o = a ? interp_new_raw(it, n) : NULL;
    if (!o) return interp_nomem(it);
    int64_t xs[FU_MAX_RANK], st[FU_MAX_RANK];
    contiguous(xv, xs);
    for (int i = 0; i < ov->rank; i++) st[i] = xs[n->attrs.perm[i]];
    strided_copy(o, a, ov->rank, ov->shape, st);
    return FU_OK;
}

static fu_status exec_slice(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]], *ov = &it->f->values[n->output];
    /* In-bounds slices keep their shape only when they take everything. */
    if (memcmp(xv->shape, ov->shape, (size_t)ov->rank * sizeof *ov->shape) == 0)
        return interp_alias(it, n, n->inputs[0]);
    const void *a = interp_raw(it, n->inputs[0]);
    void *o = a ? interp_new_raw(it, n) : NULL;
    if (!o) return interp_nomem(it);
    int64_t xs[FU_MAX_RANK], st[FU_MAX_RANK], base = 0;
    contiguous(xv, xs);
    for (int i = 0; i < xv->rank; i++) {
        st[i] = xs[i] * n->attrs.step[i];
        base += xs[i] * n->attrs.start[i];
    }
    if (interp_numel(it, n->output) > 0)
        strided_copy(o, (const unsigned char *)a + (size_t)base * sizeof(double), ov->rank, ov->shape, st);
    return FU_OK;
}

static fu_status exec_full(interp *it, const fu_node *n)
{
    fu_dtype dt = it->f->values[n->output].dtype;
    int64_t cnt = interp_numel(it, n->output);
    if (interp_is_int(dt)) {
        int64_t *o = interp_new_ioutput(it, n);
        if (!o) return interp_nomem(it);
        int64_t v = double_to_int(n->attrs.value, dt);
        for (int64_t i = 0; i < cnt; i++) o[i] = v;
        return FU_OK;
    }
    double *o = interp_new_output(it, n);
    if (!o) return interp_nomem(it);
    double v = fu_round_to_dtype(n->attrs.value, dt);
    for (int64_t i = 0; i < cnt; i++) o[i] = v;
    return FU_OK;
}

static fu_status exec_iota(interp *it, const fu_node *n)
{
    const fu_value *ov = &it->f->values[n->output];
    bool is_int = interp_is_int(ov->dtype);
    void *o = interp_new_raw(it, n);
    if (!o) return interp_nomem(it);
    int axis = n->attrs.axis;
    int64_t outer, ext, inner;
    interp_axis_split(ov, axis, &outer, &ext, &inner);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t k = 0; k < ext; k++) {
            int64_t at = (a * ext + k) * inner;
            if (is_int) { /* exact; an i32 iota past 2^31 wraps like the GPU's int */
                int64_t v = ov->dtype == FU_I32 ? (int32_t)(uint32_t)(uint64_t)k : k;
                for (int64_t j = 0; j < inner; j++) ((int64_t *)o)[at + j] = v;
            } else {
                double v = fu_round_to_dtype((double)k, ov->dtype); /* f16 cannot count past 2048 */
                for (int64_t j = 0; j < inner; j++) ((double *)o)[at + j] = v;
            }
        }
    return FU_OK;
}

/* ------------------------------------------------------------ gathers and scatters */

#define ELEM sizeof(double) /* bytes of one held value, double or int64 */

/* index_select and take: out[a, k..., b] = x[a, index[k...], b] */
static fu_status exec_select(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]];
    int axis = n->attrs.axis;
    int64_t outer, ext, inner;
    interp_axis_split(xv, axis, &outer, &ext, &inner);
    int64_t k = interp_numel(it, n->inputs[1]);
    const unsigned char *x = interp_raw(it, n->inputs[0]);
    const int64_t *idx = x ? interp_ivals(it, n->inputs[1]) : NULL;
    if (!idx) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], idx, k, ext, false, 0);
    if (s) return s;
    unsigned char *o = interp_new_raw(it, n);
    if (!o) return interp_nomem(it);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < k; i++)
            memcpy(o + (size_t)((a * k + i) * inner) * ELEM, x + (size_t)((a * ext + idx[i]) * inner) * ELEM,
                   (size_t)inner * ELEM);
    return FU_OK;
}

/* take_along_axis (torch.gather): out[p] = x[p with axis replaced by index[p]] */
static fu_status exec_take_along(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]], *iv = &it->f->values[n->inputs[1]];
    int axis = n->attrs.axis;
    const unsigned char *x = interp_raw(it, n->inputs[0]);
    const int64_t *idx = x ? interp_ivals(it, n->inputs[1]) : NULL;
    if (!idx) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], idx, interp_numel(it, n->inputs[1]), xv->shape[axis],
                                     false, 0);
    if (s) return s;
    unsigned char *o = interp_new_raw(it, n);
    if (!o) return interp_nomem(it);
    int64_t st[2][FU_MAX_RANK], xs[FU_MAX_RANK];
    contiguous(iv, st[0]); /* index and output share a shape */
    contiguous(xv, xs);
    memcpy(st[1], xs, sizeof xs);
    st[1][axis] = 0; /* the axis position comes from the index */
    int64_t sa = xs[axis];
    nd_iter w;
    nd_init(&w, iv->rank, iv->shape, 2, st);
    for (int64_t r = 0; r < w.rows; r++, nd_next(&w)) {
        const int64_t *ii = idx + w.off[0];
        int64_t si = w.inner_st[0], sx = w.inner_st[1];
        for (int64_t j = 0; j < w.inner; j++)
            memcpy(o + (size_t)(w.off[0] + j * si) * ELEM, x + (size_t)(w.off[1] + j * sx + ii[j * si] * sa) * ELEM,
                   ELEM);
    }
    return FU_OK;
}

/* dst[j] += src[j] for n values of a float (double) or integer (int64) tensor. */
static void add_values(bool is_int, void *dst, int64_t di, const void *src, int64_t si, int64_t n)
{
    if (is_int) {
        int64_t *p = (int64_t *)dst + di;
        const int64_t *q = (const int64_t *)src + si;
        for (int64_t j = 0; j < n; j++) p[j] = wrap_add(p[j], q[j]);
    } else {
        double *p = (double *)dst + di;
        const double *q = (const double *)src + si;
        for (int64_t j = 0; j < n; j++) p[j] += q[j];
    }
}

/* Rounds a scatter's output to its dtype. */
static void round_values(bool is_int, void *o, int64_t cnt, fu_dtype dt)
{
    if (is_int) interp_iround(o, cnt, dt);
    else interp_round(o, cnt, dt);
}

/* index_add: out = x; out[a, index[k], b] += src[a, k, b] */
static fu_status exec_index_add(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]];
    bool is_int = interp_is_int(xv->dtype);
    int axis = n->attrs.axis;
    int64_t outer, ext, inner;
    interp_axis_split(xv, axis, &outer, &ext, &inner);
    int64_t k = interp_numel(it, n->inputs[1]);
    const void *x = interp_raw(it, n->inputs[0]);
    const int64_t *idx = x ? interp_ivals(it, n->inputs[1]) : NULL;
    const void *src = idx ? interp_raw(it, n->inputs[2]) : NULL;
    if (!src) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], idx, k, ext, false, 0);
    if (s) return s;
    void *o = interp_new_raw(it, n);
    if (!o) return interp_nomem(it);
    int64_t cnt = interp_numel(it, n->output);
    memcpy(o, x, (size_t)cnt * ELEM);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < k; i++)
            add_values(is_int, o, (a * ext + idx[i]) * inner, src, (a * k + i) * inner, inner);
    round_values(is_int, o, cnt, xv->dtype);
    return FU_OK;
}

/* scatter_add (torch.scatter_add): out = x; out[p with axis = index[p]] += src[p] */
static fu_status exec_scatter_add(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]], *iv = &it->f->values[n->inputs[1]];
    bool is_int = interp_is_int(xv->dtype);
    int axis = n->attrs.axis;
    const void *x = interp_raw(it, n->inputs[0]);
    const int64_t *idx = x ? interp_ivals(it, n->inputs[1]) : NULL;
    const void *src = idx ? interp_raw(it, n->inputs[2]) : NULL;
    if (!src) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], idx, interp_numel(it, n->inputs[1]), xv->shape[axis],
                                     false, 0);
    if (s) return s;
    void *o = interp_new_raw(it, n);
    if (!o) return interp_nomem(it);
    int64_t cnt = interp_numel(it, n->output);
    memcpy(o, x, (size_t)cnt * ELEM);
    int64_t st[3][FU_MAX_RANK], xs[FU_MAX_RANK];
    contiguous(iv, st[0]);
    contiguous(&it->f->values[n->inputs[2]], st[1]);
    contiguous(xv, xs);
    memcpy(st[2], xs, sizeof xs);
    st[2][axis] = 0;
    int64_t sa = xs[axis];
    nd_iter w;
    nd_init(&w, iv->rank, iv->shape, 3, st);
    for (int64_t r = 0; r < w.rows; r++, nd_next(&w)) {
        const int64_t *ii = idx + w.off[0];
        int64_t si = w.inner_st[0], sv = w.inner_st[1], so = w.inner_st[2];
        for (int64_t j = 0; j < w.inner; j++)
            add_values(is_int, o, w.off[2] + j * so + ii[j * si] * sa, src, w.off[1] + j * sv, 1);
    }
    round_values(is_int, o, cnt, xv->dtype);
    return FU_OK;
}

/* ------------------------------------------------------------ dispatch */

fu_status interp_exec_primitive(interp *it, const fu_node *n)
{
    switch (fu_op_kind_of(n->op)) {
    case FU_KIND_UNARY: return exec_unary(it, n);
    case FU_KIND_BINARY: return exec_binary(it, n);
    case FU_KIND_WHERE: return exec_where(it, n);
    case FU_KIND_CAST: return exec_cast(it, n);
    case FU_KIND_BROADCAST: return exec_broadcast(it, n);
    case FU_KIND_REDUCE: return exec_reduce(it, n);
    case FU_KIND_RESHAPE: /* row-major data is unchanged */
    case FU_KIND_HINT: return interp_alias(it, n, n->inputs[0]);
    case FU_KIND_PERMUTE: return exec_permute(it, n);
    case FU_KIND_SLICE: return exec_slice(it, n);
    case FU_KIND_FULL: return exec_full(it, n);
    case FU_KIND_IOTA: return exec_iota(it, n);
    case FU_KIND_GATHER:
        return n->op == FU_OP_TAKE_ALONG_AXIS ? exec_take_along(it, n) : exec_select(it, n);
    case FU_KIND_SCATTER: return n->op == FU_OP_INDEX_ADD ? exec_index_add(it, n) : exec_scatter_add(it, n);
    case FU_KIND_COMPOSITE: break;
    }
    return interp_op_error(it, n, FU_ERR_UNSUPPORTED, "the interpreter has no rule for this op");
}
