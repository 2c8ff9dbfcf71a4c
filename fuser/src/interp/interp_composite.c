/*
 * interp_composite.c -- the composites, evaluated whole in double precision
 * with PyTorch's semantics: softmax, log_softmax, cross_entropy (+ backward),
 * embedding (+ backward).
 *
 * They work one row at a time with direct loops. A big float operand that is
 * a fusion input is read row by row from the caller's tensor (interp_row), so
 * cross entropy over [8192, 32768] never widens its logits to double as a whole.
 */
#include <math.h>
#include <string.h>

#include "interp.h"

static double row_max(const double *x, int64_t n)
{
    double m = -INFINITY;
    for (int64_t c = 0; c < n; c++)
        if (x[c] > m) m = x[c];
    return m; /* a NaN is not picked, but it still poisons the exp sum below */
}

/* ------------------------------------------------------------ softmax, log_softmax */

/* y = softmax(x) or log_softmax(x) of one contiguous row, max-subtracted. */
static void softmax_row(bool log_form, const double *x, double *y, int64_t n)
{
    double m = row_max(x, n), s = 0.0;
    if (log_form) {
        for (int64_t c = 0; c < n; c++) s += exp(x[c] - m);
        double lse = m + log(s);
        for (int64_t c = 0; c < n; c++) y[c] = x[c] - lse;
    } else {
        for (int64_t c = 0; c < n; c++) s += (y[c] = exp(x[c] - m));
        double inv = 1.0 / s;
        for (int64_t c = 0; c < n; c++) y[c] *= inv;
    }
}

/* The rows of a softmax: row r is rows r / inner (outer index) and r % inner (the position
 * after the axis); contiguous when inner is 1. */
typedef struct softmax_job {
    interp *it;
    fu_tensor x;
    const double *xv; /* the whole input, when the rows are strided */
    double *o;
    int64_t len, inner;
    bool log_form;
    fu_dtype dt;
} softmax_job;

static bool softmax_chunk(void *ctx, int64_t begin, int64_t end)
{
    const softmax_job *j = ctx;
    const int64_t len = j->len;
    double *scratch = fu_malloc((size_t)(j->inner == 1 ? len : 2 * len) * sizeof *scratch);
    if (!scratch) return false;
    for (int64_t r = begin; r < end; r++) {
        if (j->inner == 1) { /* the axis is innermost: rows are contiguous */
            const double *x = interp_row(j->it, j->x, r * len, len, scratch);
            softmax_row(j->log_form, x, j->o + r * len, len);
            interp_round(j->o + r * len, len, j->dt);
            continue;
        }
        /* strided: gather the row into scratch, compute, scatter back */
        const int64_t base = r / j->inner * len * j->inner + r % j->inner;
        double *row = scratch, *res = scratch + len;
        for (int64_t c = 0; c < len; c++) row[c] = j->xv[base + c * j->inner];
        softmax_row(j->log_form, row, res, len);
        interp_round(res, len, j->dt);
        for (int64_t c = 0; c < len; c++) j->o[base + c * j->inner] = res[c];
    }
    fu_free(scratch);
    return true;
}

static fu_status exec_softmax(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]];
    int64_t outer, len, inner;
    interp_axis_split(xv, n->attrs.axis, &outer, &len, &inner);
    softmax_job j = {it, n->inputs[0], NULL, NULL, len, inner, n->op == FU_OP_LOG_SOFTMAX, xv->dtype};
    if (inner != 1 && !(j.xv = interp_vals(it, n->inputs[0]))) return interp_nomem(it);
    if (!(j.o = interp_new_output(it, n))) return interp_nomem(it);
    if (!fu_parallel_chunks(outer * inner, outer * inner * len, softmax_chunk, &j)) return interp_rows_nomem(it, n, len);
    return FU_OK;
}

/* ------------------------------------------------------------ cross entropy */

/*
 * torch.nn.functional.cross_entropy without weights, per non-ignored row i
 * with target t:  lse = logsumexp(x_i),  nll = lse - x_it,
 * smooth = -sum_c log_softmax(x_i)_c / C = lse - mean_c(x_ic),
 * loss_i = (1 - eps) * nll + eps * smooth. Ignored rows give 0 and are not
 * counted; mean = sum / count (0/0 = NaN when every row is ignored, as torch).
 */
typedef struct cross_entropy_job {
    interp *it;
    const fu_node *n;
    const int64_t *tgt;
    const double *g; /* the backward's incoming gradient */
    double *o;       /* the forward's per-row losses, or the backward's gradient */
    int64_t C, count;
} cross_entropy_job;

/* The rows' losses into o[i] (0 for an ignored row), in double. */
static bool cross_entropy_chunk(void *ctx, int64_t begin, int64_t end)
{
    const cross_entropy_job *j = ctx;
    const int64_t C = j->C, ignore = j->n->attrs.ignore_index;
    const double eps = j->n->attrs.label_smoothing;
    double *scratch = fu_malloc((size_t)C * sizeof *scratch);
    if (!scratch) return false;
    for (int64_t i = begin; i < end; i++) {
        double loss = 0.0;
        if (j->tgt[i] != ignore) {
            const double *x = interp_row(j->it, j->n->inputs[0], i * C, C, scratch);
            double m = row_max(x, C), se = 0.0, sx = 0.0;
            if (eps != 0.0)
                for (int64_t c = 0; c < C; c++) {
                    se += exp(x[c] - m);
                    sx += x[c];
                }
            else
                for (int64_t c = 0; c < C; c++) se += exp(x[c] - m);
            double lse = m + log(se);
            double nll = lse - x[j->tgt[i]];
            loss = eps != 0.0 ? (1.0 - eps) * nll + eps * (lse - sx / (double)C) : nll;
        }
        j->o[i] = loss;
    }
    fu_free(scratch);
    return true;
}

static fu_status exec_cross_entropy(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]];
    const fu_attrs *at = &n->attrs;
    int64_t rows = xv->shape[0], C = xv->shape[1];
    const int64_t *tgt = interp_ivals(it, n->inputs[1]);
    if (!tgt) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], tgt, rows, C, true, at->ignore_index);
    if (s) return s;
    double *o = interp_new_output(it, n);
    /* reduction none: the losses go straight into the output; else into scratch, summed here */
    double *loss = o && at->reduction != FU_REDUCTION_NONE ? interp_scratch_new(it, rows, "cross_entropy") : o;
    if (!loss) return interp_nomem(it);
    cross_entropy_job j = {it, n, tgt, NULL, loss, C, 0};
    bool ok = fu_parallel_chunks(rows, rows * C, cross_entropy_chunk, &j);
    if (ok && at->reduction == FU_REDUCTION_NONE) {
        for (int64_t i = 0; i < rows; i++) o[i] = fu_round_to_dtype(o[i], xv->dtype);
    } else if (ok) {
        /* the sum in row order, one thread: the same bits however the rows were split */
        double total = 0.0;
        int64_t count = 0;
        for (int64_t i = 0; i < rows; i++) {
            total += loss[i];
            count += tgt[i] != at->ignore_index;
        }
        o[0] = fu_round_to_dtype(at->reduction == FU_REDUCTION_MEAN ? total / (double)count : total, xv->dtype);
    }
    if (loss != o) fu_free(loss);
    return ok ? FU_OK : interp_rows_nomem(it, n, C);
}

/* d loss / d logits: for a non-ignored row, g_i * (softmax_ic - (1-eps)[c == t_i] - eps/C)
 * with g_i = grad/count (mean), grad (sum) or grad[i] (none); ignored rows are 0. */
/* The rows of the gradient; an ignored row stays 0. */
static bool cross_entropy_bwd_chunk(void *ctx, int64_t begin, int64_t end)
{
    const cross_entropy_job *j = ctx;
    const fu_attrs *at = &j->n->attrs;
    const int64_t C = j->C;
    const double eps = at->label_smoothing;
    const fu_dtype dt = j->it->f->values[j->n->inputs[0]].dtype;
    double *scratch = fu_malloc((size_t)C * sizeof *scratch);
    if (!scratch) return false;
    for (int64_t i = begin; i < end; i++) {
        if (j->tgt[i] == at->ignore_index) continue;
        double gi = at->reduction == FU_REDUCTION_NONE ? j->g[i]
                    : at->reduction == FU_REDUCTION_MEAN ? j->g[0] / (double)j->count
                                                         : j->g[0];
        const double *x = interp_row(j->it, j->n->inputs[0], i * C, C, scratch);
        double *y = j->o + i * C;
        double m = row_max(x, C), se = 0.0;
        for (int64_t c = 0; c < C; c++) se += (y[c] = exp(x[c] - m));
        double scale = gi / se, off = gi * eps / (double)C;
        for (int64_t c = 0; c < C; c++) y[c] = y[c] * scale - off;
        y[j->tgt[i]] -= gi * (1.0 - eps);
        interp_round(y, C, dt);
    }
    fu_free(scratch);
    return true;
}

static fu_status exec_cross_entropy_bwd(interp *it, const fu_node *n)
{
    const fu_value *xv = &it->f->values[n->inputs[0]];
    const fu_attrs *at = &n->attrs;
    int64_t rows = xv->shape[0], C = xv->shape[1];
    const int64_t *tgt = interp_ivals(it, n->inputs[1]);
    const double *g = tgt ? interp_vals(it, n->inputs[2]) : NULL;
    if (!g) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], tgt, rows, C, true, at->ignore_index);
    if (s) return s;
    double *o = interp_new_output(it, n); /* zeroed: ignored rows stay 0 */
    if (!o) return interp_nomem(it);
    cross_entropy_job j = {it, n, tgt, g, o, C, 0};
    for (int64_t i = 0; i < rows; i++) j.count += tgt[i] != at->ignore_index;
    if (!fu_parallel_chunks(rows, rows * C, cross_entropy_bwd_chunk, &j)) return interp_rows_nomem(it, n, C);
    return FU_OK;
}

/* ------------------------------------------------------------ embedding */

typedef struct embedding_job {
    interp *it;
    const fu_node *n;
    const int64_t *ids;
    double *o;
    const int64_t *itable; /* an integer table's values (the forward), else NULL: rows copied as int64 */
    int64_t *io;           /* that forward's output */
    int64_t D, k;          /* row width; positions */
} embedding_job;

/* Rows [begin, end) of the forward's output: out[i, :] = weight[ids[i], :]. */
static bool embedding_chunk(void *ctx, int64_t begin, int64_t end)
{
    const embedding_job *j = ctx;
    if (j->itable) {
        for (int64_t i = begin; i < end; i++)
            memcpy(j->io + i * j->D, j->itable + j->ids[i] * j->D, (size_t)j->D * sizeof *j->io);
        return true;
    }
    for (int64_t i = begin; i < end; i++) {
        double *y = j->o + i * j->D;
        const double *w = interp_row(j->it, j->n->inputs[0], j->ids[i] * j->D, j->D, y); /* may convert into y */
        if (w != y) memcpy(y, w, (size_t)j->D * sizeof *y);
    }
    return true;
}

/* out[k, :] = weight[ids[k], :]; padding_idx changes only the backward. */
static fu_status exec_embedding(interp *it, const fu_node *n)
{
    const fu_value *wv = &it->f->values[n->inputs[0]];
    int64_t V = wv->shape[0], D = wv->shape[1], k = interp_numel(it, n->inputs[1]);
    const int64_t *ids = interp_ivals(it, n->inputs[1]);
    if (!ids) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], ids, k, V, false, 0);
    if (s) return s;
    embedding_job j = {.it = it, .n = n, .ids = ids, .D = D, .k = k};
    if (interp_is_int(wv->dtype)) { /* a gather of integers: the values as they are (embedding_bwd needs floats) */
        if (!(j.itable = interp_ivals(it, n->inputs[0])) || !(j.io = interp_new_ioutput(it, n))) return interp_nomem(it);
    } else if (!(j.o = interp_new_output(it, n))) {
        return interp_nomem(it);
    }
    fu_parallel_chunks(k, k * D, embedding_chunk, &j);
    return FU_OK;
}

/* Output rows [begin, end) of the backward: each sums, in index order, the grad rows of the
 * positions whose id is that row (every chunk reads all the ids: the order of each row's sum is
 * the serial one, however the rows are split). */
static bool embedding_bwd_chunk(void *ctx, int64_t begin, int64_t end)
{
    const embedding_job *j = ctx;
    const int64_t D = j->D, pad = j->n->attrs.padding_idx >= 0 ? j->n->attrs.padding_idx : -1;
    double *scratch = fu_malloc((size_t)D * sizeof *scratch);
    if (!scratch) return false;
    for (int64_t i = 0; i < j->k; i++) {
        const int64_t id = j->ids[i];
        if (id == pad || id < begin || id >= end) continue;
        const double *gr = interp_row(j->it, j->n->inputs[0], i * D, D, scratch);
        double *y = j->o + id * D;
        for (int64_t c = 0; c < D; c++) y[c] += gr[c];
    }
    fu_free(scratch);
    return true;
}

/* out[id, :] = sum of grad rows k with ids[k] == id; the padding_idx row is 0. */
static fu_status exec_embedding_bwd(interp *it, const fu_node *n)
{
    const fu_value *ov = &it->f->values[n->output];
    int64_t W = n->attrs.num_weights, D = ov->shape[1], k = interp_numel(it, n->inputs[1]);
    const int64_t *ids = interp_ivals(it, n->inputs[1]);
    if (!ids) return interp_nomem(it);
    fu_status s = interp_check_index(it, n, n->inputs[1], ids, k, W, false, 0);
    if (s) return s;
    embedding_job j = {.it = it, .n = n, .ids = ids, .o = interp_new_output(it, n), .D = D, .k = k};
    if (!j.o) return interp_nomem(it);
    if (!fu_parallel_chunks(W, k * D, embedding_bwd_chunk, &j)) return interp_rows_nomem(it, n, D);
    interp_round(j.o, W * D, ov->dtype);
    return FU_OK;
}

fu_status interp_exec_composite(interp *it, const fu_node *n)
{
    switch (n->op) {
    case FU_OP_SOFTMAX:
    case FU_OP_LOG_SOFTMAX: return exec_softmax(it, n);
    case FU_OP_CROSS_ENTROPY: return exec_cross_entropy(it, n);
    case FU_OP_CROSS_ENTROPY_BWD: return exec_cross_entropy_bwd(it, n);
    case FU_OP_EMBEDDING: return exec_embedding(it, n);
    case FU_OP_EMBEDDING_BWD: return exec_embedding_bwd(it, n);
    default: break;
    }
    return interp_op_error(it, n, FU_ERR_UNSUPPORTED, "the interpreter has no rule for this composite");
}
