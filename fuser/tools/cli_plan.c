/*
 * cli_plan.c -- `fuser plan` and `fuser codegen`, and the runtime and plan
 * options that they share with `fuser run --device gpu`.
 *
 * plan: builds the plan (the device's SM count, else 132), compiles every
 * kernel through the runtime and its disk cache (fu_exec_prepare), and prints
 * fu_plan_text followed by the compile report, or with --json fu_plan_json
 * with the compile report as extra members: per kernel "compile_ms", "cache_hit",
 * "registers", "local_bytes" (null without a device), and at the top
 * "ready_ms", "nvrtc_calls", "cache_hits", "device", "arch", "sm_count",
 * "scatter", "compiled". Everything is written only when all of it succeeded.
 *
 * codegen: the same plan, then each kernel's CUDA C after a
 * "// ==== kernel I: NAME ====" line.
 */
#include <string.h>

#include "cli.h"
#include "exec.h"
#include "util.h"

/* ------------------------------------------------------------ shared with run */

fu_status cli_open_runtime(fu_runtime **rt, fu_error *err)
{
    *rt = NULL;
    fu_status s = fu_runtime_open(NULL, rt, err);
    if (s) *rt = NULL;
    return s;
}

void cli_plan_options(const cli_options *o, const fu_runtime *rt, fu_plan_options *po)
{
    fu_plan_options_for_device(rt, po);
    po->scatter = o->scatter;
}

static const char *scatter_name(fu_scatter_mode m) { return m == FU_SCATTER_ATOMIC ? "atomic" : "deterministic"; }

/* ------------------------------------------------------------ loading and planning */

typedef struct plan_job {
    fu_program *prog;
    fu_fusion *f;
    fu_runtime *rt;
    fu_plan_options po;
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
    cli_plan_options(o, j->rt, &j->po);
    s = fu_plan_build(j->f, &j->po, &j->plan, err);
    if (s) j->plan = NULL;
    return s;
}

/* ------------------------------------------------------------ JSON */

static char *plan_json(const plan_job *j)
{
    const fu_plan *p = j->plan;
    char **extra = fu_calloc((size_t)p->nkernels + 1, sizeof *extra);
    char *out = NULL;
    bool ok = extra != NULL;
    for (int i = 0; ok && i < p->nkernels; i++) {
        fu_strbuf sb;
        fu_sb_init(&sb);
        const fu_exec_kernel_info *ki = j->x ? fu_exec_kernel(j->x, i) : NULL;
        if (ki)
            fu_sb_printf(&sb, ", \"compile_ms\": %.3f, \"cache_hit\": %s", ki->compile_ms,
                         ki->cache_hit ? "true" : "false");
        else
            fu_sb_puts(&sb, ", \"compile_ms\": null, \"cache_hit\": null");
        if (ki && ki->attrs_valid)
            fu_sb_printf(&sb, ", \"registers\": %d, \"local_bytes\": %d", ki->attrs.num_regs, ki->attrs.local_bytes);
        else
            fu_sb_puts(&sb, ", \"registers\": null, \"local_bytes\": null");
        ok = (extra[i] = fu_sb_take(&sb)) != NULL;
    }
    if (ok) {
        fu_runtime_stats st;
        fu_runtime_get_stats(j->rt, &st);
        fu_strbuf sb;
        fu_sb_init(&sb);
        fu_sb_puts(&sb, ", \"device\": ");
        fu_sb_json_string(&sb, fu_runtime_describe(j->rt));
        fu_sb_puts(&sb, ", \"arch\": ");
        fu_sb_json_string(&sb, fu_runtime_arch(j->rt));
        fu_sb_printf(&sb, ", \"sm_count\": %d, \"scatter\": \"%s\", \"compiled\": %s", j->po.sm_count,
                     scatter_name(j->po.scatter), j->x ? "true" : "false");
        if (j->x) fu_sb_printf(&sb, ", \"ready_ms\": %.3f", fu_exec_prepare_ms(j->x));
        else fu_sb_puts(&sb, ", \"ready_ms\": null");
        fu_sb_printf(&sb, ", \"nvrtc_calls\": %lld, \"cache_hits\": %lld", (long long)st.nvrtc_calls,
                     (long long)st.cache_hits);
        char *top = fu_sb_take(&sb);
        if (top) out = fu_plan_json(p, extra, top);
        fu_free(top);
    }
    for (int i = 0; extra && i < p->nkernels; i++) fu_free(extra[i]);
    fu_free(extra);
    return out;
}

/* ------------------------------------------------------------ text */

static char *plan_text(const plan_job *j)
{
    const fu_plan *p = j->plan;
    char *base = fu_plan_text(p);
    if (!base) return NULL;
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_puts(&sb, base);
    fu_free(base);
    fu_sb_printf(&sb, "device: %s\n", fu_runtime_describe(j->rt));
    fu_sb_printf(&sb, "planned for %d SMs, scatter %s\n", j->po.sm_count, scatter_name(j->po.scatter));
    if (!j->x) {
        fu_sb_puts(&sb, "not compiled: NVRTC is not available\n");
        return fu_sb_take(&sb);
    }
    const char *cache = fu_runtime_cache_dir(j->rt);
    fu_sb_printf(&sb, "compiled for %s (cache: %s):\n", fu_runtime_arch(j->rt), cache[0] ? cache : "off");
    for (int i = 0; i < p->nkernels; i++) {
        const fu_exec_kernel_info *ki = fu_exec_kernel(j->x, i);
        fu_sb_printf(&sb, "  kernel %d %s: ", i, p->kernels[i].name);
        if (ki->cache_hit) fu_sb_puts(&sb, "cache hit");
        else fu_sb_printf(&sb, "NVRTC %.1f ms", ki->compile_ms);
        if (ki->attrs_valid)
            fu_sb_printf(&sb, ", %d registers, %d local (spill) bytes per thread", ki->attrs.num_regs,
                         ki->attrs.local_bytes);
        fu_sb_puts(&sb, "\n");
    }
    fu_runtime_stats st;
    fu_runtime_get_stats(j->rt, &st);
    fu_sb_printf(&sb, "ready to launch in %.1f ms: %lld NVRTC call%s, %lld cache hit%s\n", fu_exec_prepare_ms(j->x),
                 (long long)st.nvrtc_calls, st.nvrtc_calls == 1 ? "" : "s", (long long)st.cache_hits,
                 st.cache_hits == 1 ? "" : "s");
    return fu_sb_take(&sb);
}

/* ------------------------------------------------------------ commands */

static fu_status put_text(char *text, fu_error *err)
{
    if (!text) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    size_t n = strlen(text);
    fputs(text, stdout);
    if (n == 0 || text[n - 1] != '\n') putchar('\n');
    fu_free(text);
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
        fu_strbuf sb;
        fu_sb_init(&sb);
        for (int i = 0; i < j.plan->nkernels; i++) {
            const fu_kernel_plan *kp = &j.plan->kernels[i];
            size_t n = kp->source ? strlen(kp->source) : 0;
            fu_sb_printf(&sb, "%s// ==== kernel %d: %s ====\n", i ? "\n" : "", i, kp->name);
            fu_sb_puts(&sb, kp->source ? kp->source : "");
            if (n == 0 || kp->source[n - 1] != '\n') fu_sb_puts(&sb, "\n");
        }
        s = put_text(fu_sb_take(&sb), err);
    }
    job_free(&j);
    return s;
}
