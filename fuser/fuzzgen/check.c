/*
 * check.c -- runs generated fusions through the planner, the interpreter and
 * NVRTC or the GPU (see fuzzgen.h).
 *
 * Compile checks batch the kernels of many fusions into one NVRTC program
 * (the prelude once, then each kernel after its "end of prelude" line; the
 * kernel names are unique per fusion), so a few hundred fusions compile in
 * seconds; a batch that fails is compiled kernel by kernel to name the
 * culprit.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"
#include "fuzzgen.h"
#include "plan.h"
#include "runtime.h"

#define BATCH_KERNELS 48
static const char prelude_end[] = "// ---- end of prelude ----\n";

typedef struct batch {
    fu_strbuf sb;
    int nkernels;
    const char *names[BATCH_KERNELS];  /* fusion names, for messages */
    char *sources[BATCH_KERNELS];      /* each kernel whole, to find a culprit */
} batch;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void batch_reset(batch *b)
{
    for (int i = 0; i < b->nkernels; i++) free(b->sources[i]);
    fu_sb_free(&b->sb);
    memset(b, 0, sizeof *b);
    fu_sb_init(&b->sb);
}

static int compile_one(fu_runtime *rt, const char *src, const char *name, fu_error *err)
{
    fu_module *m = NULL;
    fu_status s = fu_runtime_compile(rt, src, name, NULL, 0, &m, NULL, err);
    fu_module_free(m);
    return s == FU_OK;
}

static void batch_flush(batch *b, fu_runtime *rt, FILE *log, fz_report *rep)
{
    if (b->nkernels == 0) return;
    fu_error err;
    char *src = fu_sb_take(&b->sb);
    bool ok = src && compile_one(rt, src, "fuzz batch", &err);
    fu_free(src);
    fu_sb_init(&b->sb);
    for (int i = 0; !ok && i < b->nkernels; i++) {
        if (compile_one(rt, b->sources[i], b->names[i], &err)) continue;
        fprintf(log, "%s: a kernel does not compile: %.600s\n", b->names[i], err.message);
        rep->compile_failures++;
        rep->failures++;
    }
    batch_reset(b);
}

static void batch_add(batch *b, const char *fusion_name, const char *source, fu_runtime *rt, FILE *log, fz_report *rep)
{
    const char *body = strstr(source, prelude_end);
    if (b->nkernels == 0 || !body) fu_sb_puts(&b->sb, source);
    else fu_sb_puts(&b->sb, body + sizeof prelude_end - 1);
    b->names[b->nkernels] = fusion_name;
    b->sources[b->nkernels++] = strdup(source);
    if (b->nkernels == BATCH_KERNELS) batch_flush(b, rt, log, rep);
}

double fz_difference(const fu_host_tensor *gpu, const fu_host_tensor *cpu) { return fu_host_max_rel_error(gpu, cpu); }

double fz_tolerance(fu_dtype dt)
{
    if (!fu_dtype_is_float(dt)) return 0.0;
    return dt == FU_F32 || dt == FU_F64 ? 1e-5 : 5e-2;
}

static void free_tensors(fu_host_tensor *t, int n)
{
    for (int i = 0; t && i < n; i++) fu_host_tensor_free(&t[i]);
    free(t);
}

/* The draws each fusion is checked with: its seeded normal(0, 1) inputs, then the same
 * with the float inputs scaled by 1/32. One draw can hide a wrong number where large values saturate: a bf16 sum
 * of 1785 normals through tanh twice hid an unrounded sum (fz_7_120, session 13). */
static const struct {
    double scale;
    const char *name;
} draws[] = {{1.0, "normal(0, 1) inputs"}, {1.0 / 32, "inputs scaled by 1/32"}};

static void scale_float_inputs(fu_host_tensor *in, int n, double scale)
{
    for (int i = 0; i < n && scale != 1.0; i++) {
        if (!fu_dtype_is_float(in[i].dtype)) continue;
        int64_t numel = fu_host_tensor_numel(&in[i]);
        for (int64_t e = 0; e < numel; e++) fu_host_tensor_set(&in[i], e, fu_host_tensor_get(&in[i], e) * scale);
    }
}

/* False where the fusion the planner made of f (degenerate and small reductions rewritten,
 * common ops merged, dead ops dropped: what the kernels compute) interprets to values other
 * than f decomposed, within the GPU's tolerances (reported). Against the decomposed fusion,
 * not f: a composite's decomposition rounds where the interpreter's composite does not (a
 * mean's f32 sum before its division), which the GPU check judges; here only the planner's
 * rewrites are. Needs no GPU. */
static bool check_rewrite(const fu_fusion *f, const fu_fusion *dec, const fu_fusion *planned, const fu_host_tensor *in,
                          const char *draw, FILE *log, fz_report *rep)
{
    int nout = fu_fusion_num_outputs(f);
    fu_host_tensor *out = calloc((size_t)nout + 1, sizeof *out), *ref = calloc((size_t)nout + 1, sizeof *ref);
    fu_error err = {0};
    bool ran = out && ref && dec && fu_interp_run(dec, in, ref, &err) == FU_OK;
    bool planned_ran = ran && fu_fusion_num_inputs(planned) == fu_fusion_num_inputs(f) &&
                       fu_fusion_num_outputs(planned) == nout && fu_interp_run(planned, in, out, &err) == FU_OK;
    if (!planned_ran) {
        fprintf(log, "%s: the planned fusion does not interpret (%s): %s\n", fu_fusion_name(f), draw,
                !out || !ref || !dec ? "out of memory" : err.message[0] ? err.message : "other inputs or outputs");
        rep->rewrite_mismatches++;
        rep->failures++;
        free_tensors(out, 0);
        free_tensors(ref, ran ? nout : 0);
        return false;
    }
    bool ok = true;
    for (int o = 0; o < nout; o++) {
        const char *want = fu_tensor_name(f, fu_fusion_output(f, o)), *got = fu_tensor_name(planned, fu_fusion_output(planned, o));
        if (strcmp(want, got) == 0) continue; /* what a caller finds the outputs by */
        fprintf(log, "%s: output %d of the planned fusion is '%s', not '%s'\n", fu_fusion_name(f), o, got, want);
        rep->rewrite_mismatches++;
        rep->failures++;
        ok = false;
        break;
    }
    for (int o = 0; ok && o < nout; o++) {
        double d = fz_difference(&out[o], &ref[o]), tol = fz_tolerance(ref[o].dtype);
        if (d <= tol) continue;
        fprintf(log, "%s: output '%s' (%s) of the planned fusion differs from the decomposed fusion's (%s): %.3g > %.3g\n",
                fu_fusion_name(f), fu_tensor_name(f, fu_fusion_output(f, o)), fu_dtype_name(ref[o].dtype), draw, d, tol);
        rep->rewrite_mismatches++;
        rep->failures++;
        ok = false;
        break;
    }
    free_tensors(out, nout);
    free_tensors(ref, nout);
    return ok;
}

/* False where the GPU failed or differed (reported). */
static bool check_gpu(fu_runtime *rt, const fu_fusion *f, const fu_plan_options *po, const fu_host_tensor *in,
                      const fu_host_tensor *ref, const char *draw, FILE *log, fz_report *rep)
{
    int nout = fu_fusion_num_outputs(f);
    fu_host_tensor *out = calloc((size_t)nout + 1, sizeof *out);
    fu_error err;
    if (!out || fu_exec_run_host(rt, f, po, in, out, &err) != FU_OK) {
        fprintf(log, "%s: the GPU run failed (%s): %s\n", fu_fusion_name(f), draw, out ? err.message : "out of memory");
        rep->gpu_failures++;
        rep->failures++;
        free(out);
        return false;
    }
    bool ok = true;
    for (int o = 0; o < nout; o++) {
        double d = fz_difference(&out[o], &ref[o]), tol = fz_tolerance(ref[o].dtype);
        if (d <= tol) continue;
        fprintf(log, "%s: output '%s' (%s) differs from the interpreter (%s): %.3g > %.3g\n", fu_fusion_name(f),
                fu_tensor_name(f, fu_fusion_output(f, o)), fu_dtype_name(ref[o].dtype), draw, d, tol);
        rep->mismatches++;
        rep->failures++;
        ok = false;
        break;
    }
    free_tensors(out, nout);
    return ok;
}

void fz_check(fu_fusion *const *fusions, int n, fz_device dev, int sms, fu_runtime *rt, FILE *log, fz_report *rep)
{
    double t0 = now_s();
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    fu_plan_options_set_sm_count(&po, sms);
    batch b;
    memset(&b, 0, sizeof b);
    fu_sb_init(&b.sb);
    /* fusion names live as long as the fusions: the batch may name them later */
    for (int i = 0; i < n; i++) {
        const fu_fusion *f = fusions[i];
        rep->fusions++;
        for (int k = 0; k < f->nnodes; k++) rep->ops_hist[f->nodes[k].op]++;
        fu_error err;
        fu_plan *p = NULL;
        if (fu_plan_build(f, &po, &p, &err) != FU_OK) {
            fprintf(log, "%s: does not plan: %s\n", fu_fusion_name(f), err.message);
            rep->unplannable++;
            rep->failures++;
            continue;
        }
        int k = p->nkernels, lb = p->lower_bound;
        rep->kernels_hist[k < 8 ? k : 8]++;
        rep->bound_hist[lb < 8 ? lb : 8]++;
        if (k < lb) {
            fprintf(log, "%s: %d kernels, under the lower bound %d\n", fu_fusion_name(f), k, lb);
            rep->below_bound++;
            rep->failures++;
        } else {
            rep->excess_hist[k - lb < 4 ? k - lb : 4]++;
            rep->above_bound += k > lb;
        }
        for (int j = 0; j < p->nkernels; j++) {
            const fu_kernel_plan *kp = &p->kernels[j];
            if ((int)kp->sched < (int)(sizeof rep->sched_hist / sizeof rep->sched_hist[0])) rep->sched_hist[kp->sched]++;
            rep->norm_kernels += strstr(kp->config, " normalization:") != NULL;
        }
        if (dev == FZ_COMPILE)
            for (int j = 0; j < p->nkernels; j++) batch_add(&b, fu_fusion_name(f), p->kernels[j].source, rt, log, rep);
        /* each draw on the interpreter, and on the GPU against it; the first failure ends the fusion's checks */
        int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
        fu_fusion *dec = NULL; /* what the planned fusion is judged against (check_rewrite) */
        if (fu_fusion_decompose(f, &dec, &err) != FU_OK) dec = NULL;
        bool ok = true;
        for (size_t d = 0; ok && d < sizeof draws / sizeof draws[0]; d++) {
            fu_host_tensor *in = calloc((size_t)nin + 1, sizeof *in), *ref = calloc((size_t)nout + 1, sizeof *ref);
            bool have_in = in && fu_random_inputs(f, (uint64_t)i + 1, in, &err) == FU_OK;
            if (have_in) scale_float_inputs(in, nin, draws[d].scale);
            bool interp_ok = have_in && ref && fu_interp_run(f, in, ref, &err) == FU_OK;
            ok = interp_ok;
            if (!interp_ok) {
                fprintf(log, "%s: the interpreter failed (%s): %s\n", fu_fusion_name(f), draws[d].name,
                        in && ref ? err.message : "out of memory");
                rep->interp_failures++;
                rep->failures++;
            } else {
                ok = check_rewrite(f, dec, p->fusion, in, draws[d].name, log, rep);
                if (ok && dev == FZ_GPU) ok = check_gpu(rt, f, &po, in, ref, draws[d].name, log, rep);
            }
            free_tensors(in, have_in ? nin : 0);
            free_tensors(ref, interp_ok ? nout : 0);
        }
        fu_fusion_free(dec);
        fu_plan_free(p);
    }
    if (dev == FZ_COMPILE) batch_flush(&b, rt, log, rep);
    batch_reset(&b);
    fu_sb_free(&b.sb);
    rep->seconds += now_s() - t0;
}

void fz_print_report(FILE *out, const fz_report *rep)
{
    fprintf(out, "fusions: %d  failures: %d (unplannable %d, interpreter %d, planned fusion %d, compile %d, gpu %d, "
                 "mismatches %d, under the bound %d)  %.1f s\n",
            rep->fusions, rep->failures, rep->unplannable, rep->interp_failures, rep->rewrite_mismatches,
            rep->compile_failures, rep->gpu_failures, rep->mismatches, rep->below_bound, rep->seconds);
    fprintf(out, "%-22s", "kernels");
    for (int i = 0; i < 9; i++) fprintf(out, " %5s%s", i == 8 ? "8+" : (char[3]){(char)('0' + i), 0}, "");
    fprintf(out, "\n%-22s", "  fusions planned to");
    for (int i = 0; i < 9; i++) fprintf(out, " %5d", rep->kernels_hist[i]);
    fprintf(out, "\n%-22s", "  lower bound");
    for (int i = 0; i < 9; i++) fprintf(out, " %5d", rep->bound_hist[i]);
    fprintf(out, "\nkernels above the bound: 0: %d  1: %d  2: %d  3: %d  4+: %d  (%d of %d at the bound)\n",
            rep->excess_hist[0], rep->excess_hist[1], rep->excess_hist[2], rep->excess_hist[3], rep->excess_hist[4],
            rep->excess_hist[0], rep->fusions);
    fprintf(out, "kernels by scheduler:");
    for (int k = 0; k < FU_SCHED_COUNT && k < (int)(sizeof rep->sched_hist / sizeof rep->sched_hist[0]); k++)
        fprintf(out, " %s=%d", fu_sched_name((fu_sched)k), rep->sched_hist[k]);
    fprintf(out, " (outer normalizations %d)\n", rep->norm_kernels);
    fprintf(out, "ops generated:");
    for (int op = 0; op < FU_OP_COUNT; op++)
        if (rep->ops_hist[op]) fprintf(out, " %s=%lld", fu_op_name((fu_op)op), rep->ops_hist[op]);
    fprintf(out, "\n");
}
