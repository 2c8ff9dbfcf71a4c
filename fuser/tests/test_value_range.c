/*
 * test_value_range.c -- fu_value_range is sound: on the generator's random
 * fusions (fuser-fuzz, seed 11) and on their decompositions (what the
 * schedulers see), every value the interpreter computes lies in the interval
 * of its tensor. Every tensor is made an output, so the interpreter returns
 * them all; the inputs are drawn twice, normal(0, 1) and those values times
 * 1000 (far out on tanh, sigmoid and exp). NaN is outside every interval by
 * definition and skipped. The test also counts the tensors that had a finite
 * interval, and fails if there are none (it would then check nothing). The
 * interpreter rounds each op exactly, so the 2^-8 widening for the kernels'
 * approximations is not what makes this pass (halving tanh's interval fails
 * 1684 checks; dropping the widening fails none); the GPU tests run the
 * kernels that use the bounds (test_reduce_gpu: bounded_lse, softcap).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fuzzgen.h"
#include "ir.h"
#include "range.h"

#define FUSIONS 300

typedef struct tally {
    long long tensors, bounded, values;
} tally;

/* f with every tensor that is not an input also an output. */
static fu_fusion *all_outputs(const fu_fusion *f)
{
    fu_fusion *g = fu_fusion_clone(f);
    if (!g) return NULL;
    bool *is_out = calloc((size_t)g->nvalues, sizeof *is_out);
    if (!is_out) {
        fu_fusion_free(g);
        return NULL;
    }
    for (int i = 0; i < g->noutputs; i++) is_out[g->outputs[i]] = true;
    for (int v = 0; v < g->nvalues; v++)
        if (!is_out[v] && g->values[v].producer >= 0) fu_output(g, v);
    free(is_out);
    return g;
}

/* Runs g on inputs (scaled by `scale` where floating) and checks every output's values. */
static void check_values(const fu_fusion *g, uint64_t seed, double scale, tally *t)
{
    int nin = fu_fusion_num_inputs(g), nout = fu_fusion_num_outputs(g);
    fu_host_tensor *in = calloc((size_t)nin + 1, sizeof *in), *out = calloc((size_t)nout + 1, sizeof *out);
    fu_error err = {0};
    CHECK(in && out);
    if (!in || !out || fu_random_inputs(g, seed, in, &err) != FU_OK) {
        fprintf(stderr, "%s: inputs: %s\n", fu_fusion_name(g), err.message);
        CHECK(false);
        free(in);
        free(out);
        return;
    }
    for (int i = 0; i < nin; i++) {
        if (!fu_dtype_is_float(in[i].dtype) || scale == 1.0) continue;
        int64_t n = fu_shape_numel(in[i].rank, in[i].shape);
        for (int64_t k = 0; k < n; k++) fu_host_tensor_set(&in[i], k, fu_host_tensor_get(&in[i], k) * scale);
    }
    if (fu_interp_run(g, in, out, &err) == FU_OK) { /* (a fusion the interpreter refuses: fuser-fuzz's business) */
        for (int o = 0; o < nout; o++) {
            fu_tensor id = fu_fusion_output(g, o);
            double lo, hi;
            t->tensors++;
            if (!fu_value_range(g, id, &lo, &hi)) continue;
            t->bounded++;
            int64_t n = fu_shape_numel(out[o].rank, out[o].shape);
            for (int64_t k = 0; k < n; k++) {
                double v = fu_host_tensor_get(&out[o], k);
                if (isnan(v)) continue;
                t->values++;
                if (v >= lo && v <= hi) continue;
                fprintf(stderr, "%s: tensor '%s' (%s) element %lld = %.17g is outside [%.17g, %.17g] (inputs x %g)\n",
                        fu_fusion_name(g), fu_tensor_name(g, id), fu_op_name(fu_producer(g, id)->op), (long long)k, v, lo, hi,
                        scale);
                CHECK(false);
                break;
            }
        }
        for (int o = 0; o < nout; o++) fu_host_tensor_free(&out[o]);
    }
    for (int i = 0; i < nin; i++) fu_host_tensor_free(&in[i]);
    free(in);
    free(out);
}

int main(void)
{
    tally t = {0};
    for (int i = 0; i < FUSIONS; i++) {
        fu_fusion *f = fz_generate(11, i);
        CHECK(f != NULL);
        if (!f) continue;
        fu_fusion *d = NULL;
        fu_error err = {0};
        if (fu_fusion_decompose(f, &d, &err) != FU_OK) {
            fprintf(stderr, "%s: decompose: %s\n", fu_fusion_name(f), err.message);
            CHECK(false);
        }
        const fu_fusion *forms[2] = {f, d};
        for (int k = 0; k < 2; k++) {
            if (!forms[k]) continue;
            fu_fusion *g = all_outputs(forms[k]);
            CHECK(g != NULL);
            if (!g) continue;
            check_values(g, 1000 + (uint64_t)i, 1.0, &t);
            check_values(g, 2000 + (uint64_t)i, 1000.0, &t);
            fu_fusion_free(g);
        }
        fu_fusion_free(d);
        fu_fusion_free(f);
    }
    CHECK(t.bounded > 0 && t.values > 0);
    printf("value ranges: %d fusions and their decompositions, %lld tensors, %lld with finite bounds, "
           "%lld values inside them\n", FUSIONS, t.tensors, t.bounded, t.values);
    return check_finish("test_value_range");
}
