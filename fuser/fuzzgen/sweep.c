/*
 * sweep.c -- every op of the text format over every dtype of each operand and
 * extents 0, 1, 3 and 1027 (fz_sweep): the fusions the verifier accepts, for
 * fz_check. The random generator (gen.c) draws the dtypes a model uses; this
 * enumerates what a user may write, so that whatever the verifier accepts
 * plans, interprets and runs (an embedding of an i64 table and a softmax over
 * an empty axis did not, before this existed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzgen.h"

/* The dtypes an operand takes, in the text format's names. */
static const char *const dtypes[] = {"f32", "bf16", "f16", "f64", "i64", "i32", "bool"};
#define NDTYPES (int)(sizeof dtypes / sizeof dtypes[0])
static const int extents[] = {0, 1, 3, 1027}; /* 1027: several blocks and vectors, and a tail */

/* One op call: its operands' declarations (D0, D1, D2 name their dtypes; S the swept extent)
 * and the statements that compute y. */
typedef struct sweep_case {
    char key[48];        /* part of the fusions' names */
    int ninputs;
    const char *inputs[3];
    char body[160];
} sweep_case;

typedef struct sweep_list {
    sweep_case *v;
    int n, cap;
} sweep_list;

static sweep_case *add_case(sweep_list *l, const char *key, int ninputs, const char *in0, const char *in1,
                            const char *in2)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        sweep_case *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        l->v = v;
        l->cap = cap;
    }
    sweep_case *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->key, sizeof c->key, "%s", key);
    c->ninputs = ninputs;
    c->inputs[0] = in0;
    c->inputs[1] = in1;
    c->inputs[2] = in2;
    return c;
}

#define CASE(l, key, n, a, b, c, ...)                                                                              \
    do {                                                                                                           \
        sweep_case *c_ = add_case(l, key, n, a, b, c);                                                             \
        if (!c_) return false;                                                                                     \
        snprintf(c_->body, sizeof c_->body, __VA_ARGS__);                                                          \
    } while (0)

static bool list_cases(sweep_list *l)
{
    static const char *const unary[] = {"neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "tanh",
                                        "sigmoid", "reciprocal", "logical_not"};
    static const char *const binary[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq",
                                         "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"};
    static const char *const reductions[] = {"sum", "max", "min", "mean"};
    static const char *const axes[] = {"[]", "[0]", "[1]"}, *const axes_key[] = {"all", "ax0", "ax1"};
    static const char *const gathers[] = {"index_select", "take", "take_along_axis"};
    static const char *const reductions_ce[] = {"none", "mean", "sum"};
    const char *x = "x: D0[S, 4]";
    char key[48];
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++) CASE(l, unary[i], 1, x, NULL, NULL, "y = %s(x)", unary[i]);
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++) {
        CASE(l, binary[i], 2, "a: D0[S, 4]", "b: D1[4]", NULL, "y = %s(a, b)", binary[i]);
        snprintf(key, sizeof key, "%s_literal", binary[i]);
        /* 2, not an identity the planner folds away; bool takes only 0 and 1 */
        CASE(l, key, 1, "a: D0[S, 4]", NULL, NULL, "y = %s(a, %d)", binary[i], strncmp(binary[i], "logical", 7) ? 2 : 1);
    }
    CASE(l, "where", 3, "c: D0[S, 4]", "a: D1[S, 4]", "b: D2[1]", "y = where(c, a, b)");
    for (int d = 0; d < NDTYPES; d++) {
        snprintf(key, sizeof key, "cast_%s", dtypes[d]);
        CASE(l, key, 1, x, NULL, NULL, "y = cast(x, dtype=%s)", dtypes[d]);
    }
    for (size_t r = 0; r < sizeof reductions / sizeof *reductions; r++)
        for (int a = 0; a < 3; a++)
            for (int keep = 0; keep < 2; keep++) {
                snprintf(key, sizeof key, "%s_%s%s", reductions[r], axes_key[a], keep ? "_keep" : "");
                CASE(l, key, 1, x, NULL, NULL, "y = %s(x, axes=%s, keepdim=%s)", reductions[r], axes[a],
                     keep ? "true" : "false");
            }
    CASE(l, "broadcast", 1, "x: D0[4]", NULL, NULL, "y = broadcast(x, shape=[S, 4])");
    CASE(l, "reshape", 1, x, NULL, NULL, "y = reshape(x, shape=[-1])");
    CASE(l, "permute", 1, x, NULL, NULL, "y = permute(x, dims=[1, 0])");
    CASE(l, "slice", 1, x, NULL, NULL, "y = slice(x, start=[0, 1], stop=[S, 4], step=[1, 2])");
    for (int g = 0; g < 3; g++)
        for (int axis = 0; axis < 2; axis++) {
            snprintf(key, sizeof key, "%s_ax%d", gathers[g], axis);
            CASE(l, key, 2, x, g == 2 ? "i: D1[S, 2]" : "i: D1[S]", NULL, "y = %s(x, i, axis=%d)", gathers[g], axis);
        }
    CASE(l, "index_add", 3, x, "i: D1[2]", "s: D2[S, 2]", "y = index_add(x, i, s, axis=1)");
    CASE(l, "scatter_add", 3, x, "i: D1[S, 2]", "s: D2[S, 2]", "y = scatter_add(x, i, s, axis=1)");
    CASE(l, "softmax_ax0", 1, x, NULL, NULL, "y = softmax(x, axis=0)");
    CASE(l, "log_softmax", 1, x, NULL, NULL, "y = log_softmax(x)");
    for (int r = 0; r < 3; r++) {
        snprintf(key, sizeof key, "cross_entropy_%s", reductions_ce[r]);
        CASE(l, key, 2, x, "t: D1[S]", NULL,
             "y = cross_entropy(x, t, reduction=%s, ignore_index=1, label_smoothing=0.1)", reductions_ce[r]);
        snprintf(key, sizeof key, "cross_entropy_backward_%s", reductions_ce[r]);
        CASE(l, key, 3, x, "t: D1[S]", r == 0 ? "g: D2[S]" : "g: D2[]",
             "y = cross_entropy_backward(x, t, g, reduction=%s)", reductions_ce[r]);
    }
    CASE(l, "embedding", 2, "w: D0[5, 4]", "i: D1[S, 2]", NULL, "y = embedding(w, i, padding_idx=-1)");
    CASE(l, "embedding_backward", 2, "g: D0[S, 2, 4]", "i: D1[S, 2]", NULL,
         "y = embedding_backward(g, i, num_weights=5, padding_idx=0)");
    CASE(l, "full", 1, x, NULL, NULL, "f = full(shape=[S, 4], value=3, dtype=D0)\ny = add(x, f)");
    CASE(l, "iota", 1, x, NULL, NULL, "f = iota(shape=[S, 4], axis=1, dtype=D0)\ny = mul(x, f)");
    CASE(l, "segment_set", 1, x, NULL, NULL, "n = neg(x)\nf = segment_set(n)\ny = neg(f)");
    return true;
}
#undef CASE

/* The fusion of c with these dtypes and extent, or NULL where the verifier rejects it (or out
 * of memory: *oom). */
static fu_fusion *build_case(const sweep_case *c, const int *dt, int extent, bool *oom, fu_error *err)
{
    char name[96], text[1024];
    int len = snprintf(name, sizeof name, "sw_%s", c->key);
    for (int i = 0; i < c->ninputs; i++) len += snprintf(name + len, sizeof name - (size_t)len, "_%s", dtypes[dt[i]]);
    snprintf(name + len, sizeof name - (size_t)len, "_S%d", extent);
    len = snprintf(text, sizeof text, "fusion %s\nparam S = %d\n", name, extent);
    for (int i = 0; i < c->ninputs; i++)
        len += snprintf(text + len, sizeof text - (size_t)len, "dtype D%d = %s\n", i, dtypes[dt[i]]);
    for (int i = 0; i < c->ninputs; i++) len += snprintf(text + len, sizeof text - (size_t)len, "input %s\n", c->inputs[i]);
    snprintf(text + len, sizeof text - (size_t)len, "%s\noutput y\n", c->body);
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    if (fu_program_parse(text, name, &p, err) == FU_OK) {
        fu_status s = fu_program_build(p, NULL, 0, &f, err);
        if (s == FU_ERR_NOMEM) *oom = true;
        if (s != FU_OK) f = NULL;
    } else if (err->status == FU_ERR_NOMEM) {
        *oom = true;
    }
    fu_program_free(p);
    return f;
}

int fz_sweep(fu_fusion ***out, int *rejected, int *empty_cases, FILE *log)
{
    *out = NULL;
    *rejected = *empty_cases = 0;
    sweep_list l = {0};
    fu_fusion **fs = NULL;
    int n = 0, cap = 0;
    bool oom = !list_cases(&l);
    for (int k = 0; !oom && k < l.n; k++) {
        const sweep_case *c = &l.v[k];
        int combos = 1, accepted = 0;
        fu_error err = {0};
        for (int i = 0; i < c->ninputs; i++) combos *= NDTYPES;
        for (int m = 0; !oom && m < combos; m++) {
            int dt[3] = {m % NDTYPES, m / NDTYPES % NDTYPES, m / NDTYPES / NDTYPES};
            for (size_t e = 0; !oom && e < sizeof extents / sizeof *extents; e++) {
                fu_fusion *f = build_case(c, dt, extents[e], &oom, &err);
                accepted += f != NULL;
                if (!f) {
                    *rejected += !oom;
                    continue;
                }
                if (n == cap) {
                    cap = cap ? 2 * cap : 256;
                    fu_fusion **v = realloc(fs, (size_t)cap * sizeof *v);
                    if (!v) {
                        fu_fusion_free(f);
                        oom = true;
                        break;
                    }
                    fs = v;
                }
                fs[n++] = f;
            }
        }
        if (!oom && accepted == 0) { /* the case is wrong, or the verifier refuses what it documents */
            fprintf(log, "sweep: no dtype of %s's operands is accepted; the last combination's error: %s\n", c->key,
                    err.message);
            (*empty_cases)++;
        }
    }
    free(l.v);
    if (oom) {
        for (int i = 0; i < n; i++) fu_fusion_free(fs[i]);
        free(fs);
        return -1;
    }
    *out = fs;
    return n;
}
