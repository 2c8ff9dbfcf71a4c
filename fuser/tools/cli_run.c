/*
 * cli_run.c -- `fuser run`: bind inputs (random, or read from .npy), run on
 * the chosen device, print a summary line per output, write --output files.
 * On the GPU (fu_exec_run_for_device), --check also runs the interpreter on the
 * same inputs and prints how far apart the two are, per output.
 *
 * Nothing is written for a failed run: --output names are checked before
 * running, and the outputs are written all or none (fu_npy_write_many: each
 * to a temporary beside it, renamed into place only when all are written; on
 * any failure every existing file is as it was).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* ------------------------------------------------------------ names */

/* "a, b, c": the names of the fusion's inputs (or outputs), for messages. */
static void list_names(const fu_fusion *f, bool outputs, char *buf, size_t cap)
{
    int n = outputs ? fu_fusion_num_outputs(f) : fu_fusion_num_inputs(f);
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < cap; i++) {
        fu_tensor t = outputs ? fu_fusion_output(f, i) : fu_fusion_input(f, i);
        int w = snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", fu_tensor_name(f, t));
        if (w < 0) break;
        k += (size_t)w;
    }
}

/* Position of the input (or output) called name, or -1. */
static int find_position(const fu_fusion *f, bool outputs, const char *name)
{
    int n = outputs ? fu_fusion_num_outputs(f) : fu_fusion_num_inputs(f);
    for (int i = 0; i < n; i++) {
        fu_tensor t = outputs ? fu_fusion_output(f, i) : fu_fusion_input(f, i);
        if (strcmp(fu_tensor_name(f, t), name) == 0) return i;
    }
    return -1;
}

/* Every --input must name an input of the fusion, every --output an output or an input (the
 * input as the run had it: random or read, to rerun the same values elsewhere). */
static fu_status check_bindings(const cli_options *o, const fu_fusion *f, fu_error *err)
{
    char names[512];
    for (int i = 0; i < o->ninputs; i++)
        if (find_position(f, false, o->inputs[i].name) < 0) {
            list_names(f, false, names, sizeof names);
            return fu_error_set(err, FU_ERR_ARG, "--input %s: fusion '%s' has no input named '%s' (inputs: %s)",
                                o->inputs[i].name, fu_fusion_name(f), o->inputs[i].name, names);
        }
    for (int i = 0; i < o->noutputs; i++)
        if (find_position(f, true, o->outputs[i].name) < 0 && find_position(f, false, o->outputs[i].name) < 0) {
            char inputs[512];
            list_names(f, true, names, sizeof names);
            list_names(f, false, inputs, sizeof inputs);
            return fu_error_set(err, FU_ERR_ARG,
                                "--output %s: fusion '%s' has no output or input named '%s' (outputs: %s; inputs: %s)",
                                o->outputs[i].name, fu_fusion_name(f), o->outputs[i].name, names, inputs);
        }
    return FU_OK;
}

/* ------------------------------------------------------------ inputs */

static bool same_shape(const fu_host_tensor *t, int rank, const int64_t *shape)
{
    if (t->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (t->shape[i] != shape[i]) return false;
    return true;
}

/* Reads one --input file into *dst, checked against the declared input. */
static fu_status load_input(const cli_binding *b, const fu_fusion *f, fu_tensor in, fu_host_tensor *dst,
                            fu_error *err)
{
    fu_host_tensor file;
    fu_status s = fu_npy_read(b->path, &file, err);
    if (s) return s;
    int rank = fu_tensor_rank(f, in);
    const int64_t *shape = fu_tensor_shape(f, in);
    if (!same_shape(&file, rank, shape)) {
        char got[256], want[256];
        s = fu_error_set(err, FU_ERR_ARG, "--input %s=%s: the file has shape %s, input '%s' is declared %s",
                         b->name, b->path, fu_shape_str(file.rank, file.shape, got, sizeof got), b->name,
                         fu_shape_str(rank, shape, want, sizeof want));
    } else {
        char what[1100];
        snprintf(what, sizeof what, "--input %s=%s (input '%s' is %s)", b->name, b->path, b->name,
                 fu_dtype_name(fu_tensor_dtype(f, in)));
        s = fu_host_tensor_convert(&file, fu_tensor_dtype(f, in), dst, what, err);
    }
    fu_host_tensor_free(&file);
    return s;
}

static void free_tensors(fu_host_tensor *t, int n)
{
    if (!t) return;
    for (int i = 0; i < n; i++) fu_host_tensor_free(&t[i]);
    free(t);
}

/* Random inputs from the seed, with the given files replacing theirs. */
static fu_status bind_inputs(const cli_options *o, const fu_fusion *f, fu_host_tensor **out, fu_error *err)
{
    int n = fu_fusion_num_inputs(f);
    fu_host_tensor *in = calloc((size_t)(n ? n : 1), sizeof *in);
    if (!in) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    fu_status s = fu_random_inputs(f, o->seed, in, err);
    if (s) {
        free(in);
        return s;
    }
    for (int i = 0; i < o->ninputs && !s; i++) {
        int pos = find_position(f, false, o->inputs[i].name);
        fu_host_tensor loaded;
        s = load_input(&o->inputs[i], f, fu_fusion_input(f, pos), &loaded, err);
        if (!s) {
            fu_host_tensor_free(&in[pos]);
            in[pos] = loaded;
        }
    }
    if (s) {
        free_tensors(in, n);
        return s;
    }
    *out = in;
    return FU_OK;
}

/* ------------------------------------------------------------ device */

/* The fuser's kernels on the GPU; FU_ERR_NO_DEVICE where there is none. */
static fu_status run_on_gpu(const cli_options *o, const fu_fusion *f, const fu_host_tensor *inputs,
                            fu_host_tensor *outputs, fu_error *err)
{
    fu_runtime *rt;
    fu_status s = cli_open_runtime(&rt, err);
    if (s) return s;
    if (!fu_runtime_has_device(rt)) {
        s = fu_error_set(err, FU_ERR_NO_DEVICE, "--device gpu: %s", fu_runtime_describe(rt));
    } else {
        s = fu_exec_run_for_device(rt, f, o->scatter, inputs, outputs, err);
    }
    fu_runtime_close(rt);
    return s;
}

/* The one place that picks the executor. */
static fu_status run_on_device(const cli_options *o, const fu_fusion *f, const fu_host_tensor *inputs,
                               fu_host_tensor *outputs, fu_error *err)
{
    switch (o->device) {
    case CLI_DEVICE_CPU: return fu_interp_run(f, inputs, outputs, err);
    case CLI_DEVICE_GPU: return run_on_gpu(o, f, inputs, outputs, err);
    }
    return fu_error_set(err, FU_ERR_ARG, "unknown device");
}

/* ------------------------------------------------------------ --check */

/* The interpreter's outputs for the same inputs (nout of them, allocated). */
static fu_status reference_outputs(const fu_fusion *f, const fu_host_tensor *in, fu_host_tensor **ref, fu_error *err)
{
    int nout = fu_fusion_num_outputs(f);
    *ref = calloc((size_t)(nout ? nout : 1), sizeof **ref);
    if (!*ref) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    fu_error ierr;
    if (fu_interp_run(f, in, *ref, &ierr)) {
        free(*ref);
        *ref = NULL;
        return fu_error_set(err, ierr.status, "--check: the interpreter failed where the GPU did not: %s",
                            ierr.message);
    }
    return FU_OK;
}

/* Element i of an integer or bool tensor, exactly. */
static int64_t int_at(const fu_host_tensor *h, int64_t i)
{
    switch (h->dtype) {
    case FU_I32: return ((const int32_t *)h->data)[i];
    case FU_I64: return ((const int64_t *)h->data)[i];
    default: return ((const uint8_t *)h->data)[i];
    }
}

/* "NAME: max_rel_error=E" (max|gpu - cpu| / max|cpu|; max|gpu - cpu| when the
 * reference is all zero; inf where only one of them is NaN) for floats,
 * "NAME: mismatches=N" for integers and bool. */
static void print_check(const fu_fusion *f, fu_tensor t, const fu_host_tensor *gpu, const fu_host_tensor *cpu)
{
    int64_t n = fu_host_tensor_numel(cpu);
    const char *name = fu_tensor_name(f, t);
    if (!fu_dtype_is_float(cpu->dtype)) { /* exactly, not through double: 2^53 + 1 is not 2^53 */
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) bad += int_at(gpu, i) != int_at(cpu, i);
        printf("%s: mismatches=%lld\n", name, (long long)bad);
        return;
    }
    double maxdiff = 0.0, maxref = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double g = fu_host_tensor_get(gpu, i), c = fu_host_tensor_get(cpu, i);
        double d;
        if (isnan(g) || isnan(c)) d = isnan(g) && isnan(c) ? 0.0 : INFINITY;
        else if (isinf(g) || isinf(c)) d = g == c ? 0.0 : INFINITY;
        else d = fabs(g - c);
        if (d > maxdiff) maxdiff = d;
        if (isfinite(c) && fabs(c) > maxref) maxref = fabs(c);
    }
    printf("%s: max_rel_error=%.3g\n", name, maxref > 0.0 ? maxdiff / maxref : maxdiff);
}

/* ------------------------------------------------------------ outputs */

static void print_summary(const fu_fusion *f, fu_tensor t, const fu_host_tensor *h)
{
    int64_t n = fu_host_tensor_numel(h);
    double sum = 0.0, absmax = 0.0;
    bool any_nan = false;
    for (int64_t i = 0; i < n; i++) {
        double v = fu_host_tensor_get(h, i);
        sum += v;
        if (isnan(v)) any_nan = true;
        else if (fabs(v) > absmax) absmax = fabs(v);
    }
    if (any_nan) absmax = NAN;
    char shape[256], first[64];
    if (n > 0 && !fu_dtype_is_float(h->dtype)) snprintf(first, sizeof first, "%lld", (long long)int_at(h, 0));
    else if (n > 0) snprintf(first, sizeof first, "%.9g", fu_host_tensor_get(h, 0));
    else snprintf(first, sizeof first, "empty");
    printf("%s: %s%s sum=%.9g absmax=%.9g first=%s\n", fu_tensor_name(f, t), fu_dtype_name(h->dtype),
           fu_shape_str(h->rank, h->shape, shape, sizeof shape), sum, absmax, first);
}

/* Writes every --output together: all of them or none (fu_npy_write_many). An output's name
 * writes the output, else an input's the input. */
static fu_status write_outputs(const cli_options *o, const fu_fusion *f, const fu_host_tensor *in,
                               const fu_host_tensor *outs, fu_error *err)
{
    int n = o->noutputs;
    const char **paths = calloc((size_t)(n ? n : 1), sizeof *paths);
    const fu_host_tensor **ts = calloc((size_t)(n ? n : 1), sizeof *ts);
    fu_status s = FU_OK;
    if (!paths || !ts) {
        s = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    } else {
        for (int i = 0; i < n; i++) {
            paths[i] = o->outputs[i].path;
            int pos = find_position(f, true, o->outputs[i].name);
            ts[i] = pos >= 0 ? &outs[pos] : &in[find_position(f, false, o->outputs[i].name)];
        }
        fu_error werr;
        if (n > 0 && fu_npy_write_many(n, paths, ts, &werr))
            s = fu_error_set(err, werr.status, "--output: %s", werr.message);
    }
    free(paths);
    free(ts);
    return s;
}

/* ------------------------------------------------------------ run */

fu_status cli_cmd_run(const cli_options *o, fu_error *err)
{
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_host_tensor *in = NULL, *out = NULL, *ref = NULL;
    int nout = 0;
    fu_status s = cli_load(o, true, &p, &f, err);
    if (!s) s = check_bindings(o, f, err);
    if (!s) s = bind_inputs(o, f, &in, err);
    if (!s) {
        nout = fu_fusion_num_outputs(f);
        out = calloc((size_t)(nout ? nout : 1), sizeof *out);
        if (!out) s = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    }
    if (!s) s = run_on_device(o, f, in, out, err);
    if (!s && o->check) s = reference_outputs(f, in, &ref, err);
    if (!s) s = write_outputs(o, f, in, out, err);
    if (!s) {
        for (int i = 0; i < nout; i++) print_summary(f, fu_fusion_output(f, i), &out[i]);
        for (int i = 0; ref && i < nout; i++) print_check(f, fu_fusion_output(f, i), &out[i], &ref[i]);
    }
    if (ref) free_tensors(ref, nout);
    if (out) free_tensors(out, nout); /* after a failed run these are all empty */
    if (in) free_tensors(in, fu_fusion_num_inputs(f));
    if (f) fu_fusion_free(f);
    if (p) fu_program_free(p);
    return s;
}
