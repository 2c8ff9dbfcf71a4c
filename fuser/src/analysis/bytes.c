/*
 * bytes.c -- the fewest bytes a fusion must move (fu_fusion_min_bytes), and
 * that count as a formula over a program's parameters
 * (fu_program_bytes_formula).
 *
 * The count is what one perfect kernel moves: every input read once, every
 * output written once. An input read only in part is counted by the part:
 * the data operand of a gather (index_select, take, take_along_axis,
 * embedding) by the elements the gather's result holds (the rows its index
 * selects, not the whole table), a slice by the elements it keeps; reshape,
 * permute and segment_set pass the count through; any other use (pointwise,
 * reduction, broadcast, a scatter's operands, a gather's index) reads the
 * whole tensor. An input's count is capped at its size. Scalars (rank 0:
 * a mean loss, an upstream gradient) are left out: they are negligible, and
 * the suites' formulas have always left them out.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* Elements of value v that its uses read (capped at its size). */
static int64_t touched(const fu_fusion *f, fu_tensor v, int64_t *memo)
{
    if (memo[v] >= 0) return memo[v];
    const fu_value *val = fu_val(f, v);
    int64_t numel = fu_shape_numel(val->rank, val->shape), sum = 0;
    for (int i = 0; i < f->noutputs && sum < numel; i++)
        if (f->outputs[i] == v) sum += numel;
    for (int n = val->producer + 1; n < f->nnodes && sum < numel; n++) {
        const fu_node *node = &f->nodes[n];
        for (int k = 0; k < node->ninputs && sum < numel; k++) {
            if (node->inputs[k] != v) continue;
            const fu_value *o = fu_val(f, node->output);
            switch (node->op) {
            case FU_OP_SLICE:
            case FU_OP_RESHAPE:
            case FU_OP_PERMUTE:
            case FU_OP_SEGMENT_SET:
                sum += touched(f, node->output, memo);
                break;
            case FU_OP_INDEX_SELECT:
            case FU_OP_TAKE:
            case FU_OP_TAKE_ALONG_AXIS:
            case FU_OP_EMBEDDING:
                sum += k == 0 ? fu_shape_numel(o->rank, o->shape) : numel;
                break;
            default:
                sum += numel;
                break;
            }
        }
    }
    memo[v] = sum < numel ? sum : numel;
    return memo[v];
}

/* One counted tensor: input or output number `index`, its elements and
 * element size. Returns the number of terms (inputs first, then outputs,
 * each in order; a scalar or a repeated output is a term of 0 elements so
 * that positions match across builds). NULL memo: out of memory (-1). */
typedef struct bytes_term {
    int64_t elements;
    int64_t elem_size;
} bytes_term;

static int min_bytes_terms(const fu_fusion *f, bytes_term *out)
{
    int64_t *memo = malloc(((size_t)f->nvalues + 1) * sizeof *memo);
    if (!memo) return -1;
    for (int i = 0; i < f->nvalues; i++) memo[i] = -1;
    int n = 0;
    for (int i = 0; i < f->ninputs; i++) {
        const fu_value *v = fu_val(f, f->inputs[i]);
        out[n].elem_size = (int64_t)fu_dtype_size(v->dtype);
        out[n++].elements = v->rank == 0 ? 0 : touched(f, f->inputs[i], memo);
    }
    for (int i = 0; i < f->noutputs; i++) {
        const fu_value *v = fu_val(f, f->outputs[i]);
        bool repeated = false;
        for (int k = 0; k < i; k++) repeated |= f->outputs[k] == f->outputs[i];
        out[n].elem_size = (int64_t)fu_dtype_size(v->dtype);
        out[n++].elements = v->rank == 0 || repeated ? 0 : fu_shape_numel(v->rank, v->shape);
    }
    free(memo);
    return n;
}

int64_t fu_fusion_min_bytes(const fu_fusion *f)
{
    bytes_term *t = malloc(((size_t)f->ninputs + (size_t)f->noutputs + 1) * sizeof *t);
    int n = t ? min_bytes_terms(f, t) : -1;
    int64_t total = n < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) total += t[i].elements * t[i].elem_size;
    free(t);
    return total;
}

/* ------------------------------------------------------------ the formula
 *
 * The program is built at the bound sizes, then once more with each integer
 * parameter doubled (or halved, where doubling crosses a cap) and once with the dtype parameter changed: a term whose
 * count doubles when N doubles has N in it (to the power the ratio says), a
 * term whose element size follows the dtype is counted in `elem`. The terms
 * with the same powers are added. Where a probe cannot be made (a doubled
 * size that does not verify, a count that is not a product of powers of the
 * parameters), the formula is the number itself. */

#define MAX_TERMS 64
#define MAX_PARAMS 16

typedef struct probe {
    int nparams;
    int index[MAX_PARAMS];        /* program parameter */
    int64_t value[MAX_PARAMS];    /* bound value */
    int dtype_param;              /* -1: none */
    char dtype_value[16];
    fu_param_value ov[MAX_PARAMS + 8];
    char text[MAX_PARAMS + 8][32];
    int nov;
} probe;

/* The overrides with parameter `name` set to `value` (added when absent). */
static void set_override(probe *pr, const char *name, const char *value)
{
    for (int i = 0; i < pr->nov; i++)
        if (strcmp(pr->ov[i].name, name) == 0) {
            snprintf(pr->text[i], sizeof pr->text[i], "%s", value);
            pr->ov[i].value = pr->text[i];
            return;
        }
    if (pr->nov >= MAX_PARAMS + 8) return;
    snprintf(pr->text[pr->nov], sizeof pr->text[0], "%s", value);
    pr->ov[pr->nov].name = name;
    pr->ov[pr->nov].value = pr->text[pr->nov];
    pr->nov++;
}

static int build_terms(const fu_program *p, probe *pr, bytes_term *terms)
{
    fu_fusion *f = NULL;
    fu_error e;
    if (fu_program_build(p, pr->ov, pr->nov, &f, &e)) return -1;
    int n = f->ninputs + f->noutputs <= MAX_TERMS ? min_bytes_terms(f, terms) : -1;
    fu_fusion_free(f);
    return n;
}

static bool parse_int(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 1) return false;
    *out = v;
    return true;
}

static size_t put(char *out, size_t cap, size_t k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static size_t put(char *out, size_t cap, size_t k, const char *fmt, ...)
{
    if (k >= cap) return k;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out + k, cap - k, fmt, ap);
    va_end(ap);
    return w < 0 ? k : k + (size_t)w;
}

typedef struct monomial {
    int power[MAX_PARAMS];
    bool elem;
    double coef;
} monomial;

static int degree(const monomial *m, int np)
{
    int d = 0;
    for (int i = 0; i < np; i++) d += m->power[i];
    return d;
}

fu_status fu_program_bytes_formula(const fu_program *p, const fu_param_value *bound, int nbound, char *out,
                                   size_t cap, fu_error *err)
{
    if (!cap) return fu_error_set(err, FU_ERR_ARG, "fu_program_bytes_formula: no room for the formula");
    out[0] = '\0';
    probe pr;
    memset(&pr, 0, sizeof pr);
    pr.dtype_param = -1;
    for (int i = 0; i < nbound; i++) set_override(&pr, bound[i].name, bound[i].value);
    bool symbolic = true;
    for (int i = 0; i < fu_program_num_params(p); i++) {
        const char *name = fu_program_param_name(p, i), *value = fu_program_param_default(p, i);
        for (int k = 0; k < nbound; k++)
            if (strcmp(bound[k].name, name) == 0) value = bound[k].value;
        if (fu_program_param_is_dtype(p, i)) {
            if (pr.dtype_param < 0) {
                pr.dtype_param = i;
                snprintf(pr.dtype_value, sizeof pr.dtype_value, "%s", value);
            }
            continue;
        }
        if (pr.nparams == MAX_PARAMS || !parse_int(value, &pr.value[pr.nparams])) {
            symbolic = false; /* a default written as an expression: no probe */
            continue;
        }
        pr.index[pr.nparams++] = i;
    }
    bytes_term base[MAX_TERMS], other[MAX_TERMS];
    int n = build_terms(p, &pr, base);
    if (n < 0) {
        fu_fusion *f = NULL;
        fu_status s = fu_program_build(p, pr.ov, pr.nov, &f, err);
        fu_fusion_free(f);
        return s ? s : fu_error_set(err, FU_ERR_UNSUPPORTED, "fusion '%s': more than %d inputs and outputs",
                                    fu_program_name(p), MAX_TERMS);
    }
    int64_t total = 0;
    for (int t = 0; t < n; t++) total += base[t].elements * base[t].elem_size;
    monomial m[MAX_TERMS];
    memset(m, 0, sizeof m);
    for (int k = 0; symbolic && k < pr.nparams; k++) {
        /* doubled, or halved where doubling crosses a cap (a gather of more
         * rows than its table holds) */
        bool found = false;
        for (int attempt = 0; attempt < 2 && !found; attempt++) {
            if (attempt == 1 && pr.value[k] % 2) break;
            int64_t probe_value = attempt == 0 ? 2 * pr.value[k] : pr.value[k] / 2;
            char text[32];
            const char *name = fu_program_param_name(p, pr.index[k]);
            snprintf(text, sizeof text, "%" PRId64, probe_value);
            set_override(&pr, name, text);
            int n2 = build_terms(p, &pr, other);
            snprintf(text, sizeof text, "%" PRId64, pr.value[k]);
            set_override(&pr, name, text);
            if (n2 != n) continue;
            found = true;
            for (int t = 0; t < n && found; t++) {
                if (!base[t].elements) continue;
                double r = log2((double)other[t].elements / (double)base[t].elements);
                if (attempt == 1) r = -r;
                if (!(fabs(r - nearbyint(r)) < 1e-9) || fabs(r) > 8) found = false;
                else m[t].power[k] = (int)nearbyint(r);
            }
        }
        symbolic = found;
    }
    if (symbolic && pr.dtype_param >= 0) {
        const char *name = fu_program_param_name(p, pr.dtype_param);
        set_override(&pr, name, strcmp(pr.dtype_value, "f32") == 0 ? "bf16" : "f32");
        int n2 = build_terms(p, &pr, other);
        set_override(&pr, name, pr.dtype_value);
        if (n2 != n) symbolic = false;
        for (int t = 0; t < n && symbolic; t++) m[t].elem = other[t].elem_size != base[t].elem_size;
    }
    if (!symbolic) {
        snprintf(out, cap, "%" PRId64, total);
        return FU_OK;
    }
    /* coefficients, then like terms added */
    int nm = 0;
    monomial sum[MAX_TERMS];
    for (int t = 0; t < n; t++) {
        if (!base[t].elements) continue;
        double value = 1;
        for (int k = 0; k < pr.nparams; k++) value *= pow((double)pr.value[k], m[t].power[k]);
        m[t].coef = (double)base[t].elements * (m[t].elem ? 1.0 : (double)base[t].elem_size) / value;
        int j = 0;
        for (; j < nm; j++)
            if (sum[j].elem == m[t].elem && memcmp(sum[j].power, m[t].power, sizeof m[t].power) == 0) break;
        if (j == nm) {
            sum[nm] = m[t];
            sum[nm++].coef = 0;
        }
        sum[j].coef += m[t].coef;
    }
    /* elem terms first, higher degree first; stable otherwise */
    for (int i = 1; i < nm; i++)
        for (int j = i; j > 0; j--) {
            const monomial *a = &sum[j - 1], *b = &sum[j];
            bool swap = a->elem != b->elem ? b->elem : degree(b, pr.nparams) > degree(a, pr.nparams);
            if (!swap) break;
            monomial tmp = sum[j - 1];
            sum[j - 1] = sum[j];
            sum[j] = tmp;
        }
    size_t k = 0;
    for (int i = 0; i < nm; i++) {
        const monomial *t = &sum[i];
        k = put(out, cap, k, "%s", i ? " + " : "");
        bool any = false;
        double c = t->coef;
        if (fabs(c - nearbyint(c)) > 1e-9 * fabs(c)) {
            k = put(out, cap, k, "%.6g", c);
            any = true;
        } else if (nearbyint(c) != 1) {
            k = put(out, cap, k, "%.0f", c);
            any = true;
        }
        for (int q = 0; q < pr.nparams; q++)
            for (int e = 0; e < t->power[q]; e++) {
                k = put(out, cap, k, "%s%s", any ? "*" : "", fu_program_param_name(p, pr.index[q]));
                any = true;
            }
        if (t->elem) {
            k = put(out, cap, k, "%selem", any ? "*" : "");
            any = true;
        }
        if (!any) k = put(out, cap, k, "1");
        for (int q = 0; q < pr.nparams; q++)
            for (int e = 0; e < -t->power[q]; e++) k = put(out, cap, k, "/%s", fu_program_param_name(p, pr.index[q]));
    }
    if (nm == 0) snprintf(out, cap, "0");
    if (k >= cap) snprintf(out, cap, "%" PRId64, total); /* too long to print: the number */
    return FU_OK;
}
