/*
 * cli_plan.c -- `fuser plan` and `fuser codegen`, and the runtime that they
 * share with `fuser run --device gpu`.
 *
 * plan: builds the plan (fu_plan_for_device: the device's SM count, else
 * 132), compiles every kernel through the runtime and its disk cache
 * (fu_exec_prepare), and prints
 * fu_plan_text followed by the compile report, or with --json fu_plan_json
 * with the compile report as extra members: per kernel "compile_ms", "cache_hit",
 * "registers", "local_bytes" (null without a device), and at the top
 * "ready_ms", "nvrtc_calls", "cache_hits", "device", "arch", "sm_count",
 * "scatter", "compiled". Everything is written only when all of it succeeded.
 *
 * codegen: the same plan, then each kernel's CUDA C after a
 * "// ==== kernel I: NAME ====" line.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ------------------------------------------------------------ shared with run */

fu_status cli_open_runtime(fu_runtime **rt, fu_error *err)
{
    *rt = NULL;
    fu_status s = fu_runtime_open(NULL, rt, err);
    if (s) *rt = NULL;
    return s;
}

static const char *scatter_name(fu_scatter_mode m) { return m == FU_SCATTER_ATOMIC ? "atomic" : "deterministic"; }

/* ------------------------------------------------------------ text in memory */

/* A text composed with fprintf into memory (open_memstream), so that nothing
 * is printed unless all of it was composed. */
typedef struct text_buf {
    FILE *fp;
    char *data;
    size_t len;
    bool failed; /* out of memory outside fp */
} text_buf;

static bool text_open(text_buf *t)
{
    t->data = NULL;
    t->len = 0;
    t->failed = false;
    t->fp = open_memstream(&t->data, &t->len);
    return t->fp != NULL;
}

/* The text (malloc'd), or NULL if any write failed. */
static char *text_take(text_buf *t)
{
    if (!t->fp) return NULL;
    bool failed = t->failed || ferror(t->fp) != 0;
    if (fclose(t->fp) != 0) failed = true;
    t->fp = NULL;
    if (failed) {
        free(t->data);
        t->data = NULL;
    }
    return t->data;
}

/* s as a JSON string (fu_json_quote). */
static void put_json_string(text_buf *t, const char *s)
{
    char *q = fu_json_quote(s);
    if (q) fputs(q, t->fp);
    else t->failed = true;
    free(q);
}

/* ------------------------------------------------------------ loading and planning */

typedef struct plan_job {
    fu_program *prog;
    fu_fusion *f;
    fu_runtime *rt;
    fu_scatter_mode scatter;
    int sm_count; /* what the plan was made for */
    fu_plan *plan;
    fu_executable *x; /* NULL when not compiled */
} plan_job;

static void job_free(plan_job *j)
{
    fu_exec_free(j->x);
    fu_plan_free(j->plan);
    if (j->rt) fu_runtime_close(j->rt);
    if (j->f) fu_fusion_free(j->f);
    if (j->prog) fu_program_free(j->prog);
    memset(j, 0, sizeof *j);
}

static fu_status job_plan(const cli_options *o, plan_job *j, fu_error *err)
{
    memset(j, 0, sizeof *j);
    fu_status s = cli_load(o, true, &j->prog, &j->f, err);
    if (!s) s = cli_open_runtime(&j->rt, err);
    if (s) return s;
    j->scatter = o->scatter;
    j->sm_count = fu_plan_device_sm_count(j->rt);
    s = fu_plan_for_device(j->f, j->rt, j->scatter, &j->plan, err);
    if (s) j->plan = NULL;
    return s;
}

/* ------------------------------------------------------------ JSON */

/* Kernel i's compile report, as extra members of its JSON object. */
static char *kernel_json_extra(const plan_job *j, int i)
{
    text_buf t;
    if (!text_open(&t)) return NULL;
    const fu_exec_kernel_info *ki = j->x ? fu_exec_kernel(j->x, i) : NULL;
    if (ki)
        fprintf(t.fp, ", \"compile_ms\": %.3f, \"cache_hit\": %s", ki->compile_ms, ki->cache_hit ? "true" : "false");
    else
        fputs(", \"compile_ms\": null, \"cache_hit\": null", t.fp);
    if (ki && ki->attrs_valid)
        fprintf(t.fp, ", \"registers\": %d, \"local_bytes\": %d", ki->attrs.num_regs, ki->attrs.local_bytes);
    else
        fputs(", \"registers\": null, \"local_bytes\": null", t.fp);
    return text_take(&t);
}

/* The device and the totals, as extra members of the top JSON object. */
static char *top_json_extra(const plan_job *j)
{
    text_buf t;
    if (!text_open(&t)) return NULL;
    fu_runtime_stats st;
    fu_runtime_get_stats(j->rt, &st);
    fputs(", \"device\": ", t.fp);
    put_json_string(&t, fu_runtime_describe(j->rt));
    fputs(", \"arch\": ", t.fp);
    put_json_string(&t, fu_runtime_arch(j->rt));
    fprintf(t.fp, ", \"sm_count\": %d, \"scatter\": \"%s\", \"compiled\": %s", j->sm_count,
            scatter_name(j->scatter), j->x ? "true" : "false");
    if (j->x) fprintf(t.fp, ", \"ready_ms\": %.3f", fu_exec_prepare_ms(j->x));
    else fputs(", \"ready_ms\": null", t.fp);
    fprintf(t.fp, ", \"nvrtc_calls\": %lld, \"cache_hits\": %lld", (long long)st.nvrtc_calls,
            (long long)st.cache_hits);
    return text_take(&t);
}

static char *plan_json(const plan_job *j)
{
    const fu_plan *p = j->plan;
    int n = fu_plan_num_kernels(p);
    char **extra = calloc((size_t)n + 1, sizeof *extra);
    char *out = NULL;
    bool ok = extra != NULL;
    for (int i = 0; ok && i < n; i++) ok = (extra[i] = kernel_json_extra(j, i)) != NULL;
    if (ok) {
        char *top = top_json_extra(j);
        if (top) out = fu_plan_json(p, extra, top);
        free(top);
    }
    for (int i = 0; extra && i < n; i++) free(extra[i]);
    free(extra);
    return out;
}

/* ------------------------------------------------------------ text */

static char *plan_text(const plan_job *j)
{
    const fu_plan *p = j->plan;
    char *base = fu_plan_text(p);
    if (!base) return NULL;
    text_buf t;
    if (!text_open(&t)) {
        free(base);
        return NULL;
    }
    fputs(base, t.fp);
    free(base);
    fprintf(t.fp, "device: %s\n", fu_runtime_describe(j->rt));
    fprintf(t.fp, "planned for %d SMs, scatter %s\n", j->sm_count, scatter_name(j->scatter));
    if (!j->x) {
        fputs("not compiled: NVRTC is not available\n", t.fp);
        return text_take(&t);
    }
    const char *cache = fu_runtime_cache_dir(j->rt);
    fprintf(t.fp, "compiled for %s (cache: %s):\n", fu_runtime_arch(j->rt), cache[0] ? cache : "off");
    for (int i = 0; i < fu_plan_num_kernels(p); i++) {
        const fu_exec_kernel_info *ki = fu_exec_kernel(j->x, i);
        fprintf(t.fp, "  kernel %d %s: ", i, fu_plan_kernel_name(p, i));
        if (ki->cache_hit) fputs("cache hit", t.fp);
        else fprintf(t.fp, "NVRTC %.1f ms", ki->compile_ms);
        if (ki->attrs_valid)
            fprintf(t.fp, ", %d registers, %d local (spill) bytes per thread", ki->attrs.num_regs,
                    ki->attrs.local_bytes);
        fputs("\n", t.fp);
    }
    fu_runtime_stats st;
    fu_runtime_get_stats(j->rt, &st);
    fprintf(t.fp, "ready to launch in %.1f ms: %lld NVRTC call%s, %lld cache hit%s\n", fu_exec_prepare_ms(j->x),
            (long long)st.nvrtc_calls, st.nvrtc_calls == 1 ? "" : "s", (long long)st.cache_hits,
            st.cache_hits == 1 ? "" : "s");
    return text_take(&t);
}

/* ------------------------------------------------------------ commands */

static fu_status put_text(char *text, fu_error *err)
{
    if (!text) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    size_t n = strlen(text);
    fputs(text, stdout);
    if (n == 0 || text[n - 1] != '\n') putchar('\n');
    free(text);
    return FU_OK;
}

fu_status cli_cmd_plan(const cli_options *o, fu_error *err)
{
    plan_job j;
    fu_status s = job_plan(o, &j, err);
    if (!s && fu_runtime_has_nvrtc(j.rt)) {
        s = fu_exec_prepare(j.rt, j.plan, &j.x, err);
        if (s) j.x = NULL;
    }
    if (!s) {
        char *text = o->json ? plan_json(&j) : plan_text(&j);
        if (!text && o->json)
            s = fu_error_set(err, FU_ERR_RUNTIME, "internal error: cannot compose the plan's JSON");
        else
            s = put_text(text, err);
    }
    job_free(&j);
    return s;
}

fu_status cli_cmd_codegen(const cli_options *o, fu_error *err)
{
    plan_job j;
    fu_status s = job_plan(o, &j, err);
    if (!s) {
        text_buf t;
        char *text = NULL;
        if (text_open(&t)) {
            for (int i = 0; i < fu_plan_num_kernels(j.plan); i++) {
                const char *source = fu_plan_kernel_source(j.plan, i);
                size_t n = source ? strlen(source) : 0;
                fprintf(t.fp, "%s// ==== kernel %d: %s ====\n", i ? "\n" : "", i, fu_plan_kernel_name(j.plan, i));
                fputs(source ? source : "", t.fp);
                if (n == 0 || source[n - 1] != '\n') fputs("\n", t.fp);
            }
            text = text_take(&t);
        }
        s = put_text(text, err);
    }
    job_free(&j);
    return s;
}
