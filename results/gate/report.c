/* report.c -- see report.h. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Writes s with '|' escaped and line breaks as spaces (a Markdown table cell). */
static void gate_md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n' || *s == '\r' || *s == '\t') fputc(' ', f);
        else fputc(*s, f);
    }
}

/* A time in us with digits that suit its size, or "-" when unknown. */
static const char *gate_fmt_us(char *buf, size_t size, double us)
{
    if (isnan(us)) snprintf(buf, size, "-");
    else if (us >= 100) snprintf(buf, size, "%.1f", us);
    else if (us >= 10) snprintf(buf, size, "%.2f", us);
    else snprintf(buf, size, "%.3f", us);
    return buf;
}

static const char *gate_fmt_pct(char *buf, size_t size, double pct)
{
    if (isnan(pct)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%+.2f%%", pct);
    return buf;
}

static const char *gate_fmt_p(char *buf, size_t size, double p)
{
    if (isnan(p)) snprintf(buf, size, "-");
    else if (p < 1e-4) snprintf(buf, size, "%.1e", p);
    else snprintf(buf, size, "%.4f", p);
    return buf;
}

static const char *gate_samples_word(const gate_run *run)
{
    int samples = 0, real_time = 0;
    for (size_t i = 0; i < run->n_cases; i++) {
        if (!run->cases[i].n_samples) continue;
        if (run->cases[i].source == GATE_FROM_SAMPLES) samples = 1;
        else real_time = 1;
    }
    if (samples && real_time) return "samples_us where present, else real_time per repetition";
    if (real_time) return "real_time per repetition (no samples_us)";
    return "samples_us of every repetition";
}

/* Geometric mean of run/baseline over the cases of one (suite, variant) with
 * both medians, one line each, in the order the pairs first appear. */
static void gate_md_geomeans(FILE *f, const gate_report *r)
{
    int any = 0;
    for (size_t i = 0; i < r->n; i++) {
        const gate_result *x = &r->results[i];
        const gate_case *c = x->run ? x->run : x->base;
        if (!c || !c->suite || !c->variant) continue;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++) {
            const gate_case *o = r->results[k].run ? r->results[k].run : r->results[k].base;
            seen = o && o->suite && o->variant && strcmp(o->suite, c->suite) == 0 &&
                   strcmp(o->variant, c->variant) == 0;
        }
        if (seen) continue;
        double logsum = 0;
        size_t n = 0, cases = 0;
        for (size_t k = i; k < r->n; k++) {
            const gate_result *y = &r->results[k];
            const gate_case *o = y->run ? y->run : y->base;
            if (!o || !o->suite || !o->variant || strcmp(o->suite, c->suite) != 0 ||
                strcmp(o->variant, c->variant) != 0)
                continue;
            cases++;
            if (isfinite(y->change_pct) && y->change_pct > -100) {
                logsum += log1p(y->change_pct / 100.0);
                n++;
            }
        }
        if (!any) {
            fprintf(f, "\n### Geometric mean of the change, per suite and variant\n\n");
            fprintf(f, "| suite | variant | gated | cases timed | geomean change |\n|---|---|---|---:|---:|\n");
            any = 1;
        }
        char buf[64];
        fputs("| ", f);
        gate_md_cell(f, *c->suite ? c->suite : "-");
        fputs(" | ", f);
        gate_md_cell(f, *c->variant ? c->variant : "-");
        fprintf(f, " | %s | %zu of %zu | %s |\n", x->gated ? "yes" : "no", n, cases,
                n ? gate_fmt_pct(buf, sizeof buf, (exp(logsum / (double)n) - 1.0) * 100.0) : "-");
    }
}

static const char *gate_fmt_interval(char *buf, size_t size, double lo, double hi)
{
    if (isnan(lo) || isnan(hi)) snprintf(buf, size, "-");
    else snprintf(buf, size, "[%+.1f, %+.1f]", lo, hi);
    return buf;
}

static const char *gate_fmt_noise(char *buf, size_t size, double pct)
{
    if (isnan(pct)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.2f%%", pct);
    return buf;
}

int gate_write_markdown(FILE *f, const gate_report *r, const gate_run *run, const gate_run *base,
                        const gate_options *opt)
{
    char a[64], b[64], c[64], d[64], e[64], g[64];
    fprintf(f, "## Regression gate: %s\n\n", r->regressed ? "FAILED" : "passed");
    fprintf(f, "- GPU: %s\n", run->gpu_name);
    fprintf(f, "- Baseline: `%s` (commit %s, %s)\n", base->path,
            *base->git_commit ? base->git_commit : "?", *base->date ? base->date : "no date");
    fprintf(f, "- Run: `%s` (commit %s, %s)\n", run->path, *run->git_commit ? run->git_commit : "?",
            *run->date ? run->date : "no date");
    fprintf(f,
            "- Rule: one value per repetition (the median of its samples); %s on their logs, "
            "p < %g and |change| >= the case's threshold (%g%% unless results/thresholds.txt says "
            "otherwise) => SLOWER/FASTER; the %g%% interval of the change inside the threshold => "
            "SAME; otherwise, or repetition noise above %g%%, => AMBIGUOUS; fewer than %zu "
            "repetitions or %zu samples in one => UNKNOWN; a failed check or more "
            "kernels/launches/segments => REGRESSION\n",
            opt->test_mwu ? "the Mann-Whitney U test" : "Welch's t-test", opt->alpha,
            opt->threshold_pct, 100.0 * (1.0 - opt->alpha), opt->max_noise_pct, opt->min_reps,
            opt->min_samples);
    fprintf(f,
            "- Gated: the variants %s can fail the gate (column \"gated\"); the other rows are "
            "informational: reported, never a failure\n",
            opt->gate_variants ? opt->gate_variants : GATE_DEFAULT_VARIANTS);
    fprintf(f, "- Samples: run: %s; baseline: %s\n", gate_samples_word(run), gate_samples_word(base));
    if (opt->filter) fprintf(f, "- Cases: those matching `%s`\n", opt->filter);
    fprintf(f, "- Verdicts: %zu cases:", r->n);
    for (int v = 0; v < GATE_VERDICT_COUNT; v++)
        fprintf(f, " %zu %s%s", r->counts[v], gate_verdict_name((gate_verdict)v),
                v + 1 < GATE_VERDICT_COUNT ? "," : "\n");

    int bad_info = 0;
    for (size_t i = 0; i < r->n; i++) {
        const gate_result *x = &r->results[i];
        if (x->verdict != GATE_SLOWER && x->verdict != GATE_REGRESSION) continue;
        if (!x->gated) {
            bad_info++;
            continue;
        }
    }
    if (r->regressed) {
        fprintf(f, "\n### Regressions (gated)\n\n");
        for (size_t i = 0; i < r->n; i++) {
            const gate_result *x = &r->results[i];
            if (!x->gated || (x->verdict != GATE_SLOWER && x->verdict != GATE_REGRESSION)) continue;
            fprintf(f, "- `%s`: **%s** (%s): ", x->name, gate_verdict_name(x->verdict),
                    *x->reason ? x->reason : "time");
            gate_md_cell(f, x->detail);
            fputc('\n', f);
        }
    }
    if (bad_info) {
        fprintf(f, "\n### Slower or regressed, informational (not gated)\n\n");
        for (size_t i = 0; i < r->n; i++) {
            const gate_result *x = &r->results[i];
            if (x->gated || (x->verdict != GATE_SLOWER && x->verdict != GATE_REGRESSION)) continue;
            fprintf(f, "- `%s`: %s (%s): ", x->name, gate_verdict_name(x->verdict),
                    *x->reason ? x->reason : "time");
            gate_md_cell(f, x->detail);
            fputc('\n', f);
        }
    }
    gate_md_geomeans(f, r);

    fprintf(f, "\n### Cases%s\n\n", opt->only_changed ? " (only those not SAME)" : "");
    fprintf(f, "| case | gated | baseline median (us) | run median (us) | change | %g%% interval | "
               "noise | p-value | verdict | reason |\n",
            100.0 * (1.0 - opt->alpha));
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < r->n; i++) {
        const gate_result *x = &r->results[i];
        if (opt->only_changed && x->verdict == GATE_SAME) continue;
        int bad = x->gated && (x->verdict == GATE_SLOWER || x->verdict == GATE_REGRESSION);
        fputs("| ", f);
        gate_md_cell(f, x->name);
        fprintf(f, " | %s | %s | %s | %s | %s | %s | %s | %s%s%s | ", x->gated ? "yes" : "no",
                gate_fmt_us(a, sizeof a, x->base_median), gate_fmt_us(b, sizeof b, x->run_median),
                gate_fmt_pct(c, sizeof c, x->change_pct),
                gate_fmt_interval(e, sizeof e, x->ci_low_pct, x->ci_high_pct),
                gate_fmt_noise(g, sizeof g, x->noise_pct), gate_fmt_p(d, sizeof d, x->p_value),
                bad ? "**" : "", gate_verdict_name(x->verdict), bad ? "**" : "");
        if (*x->reason) {
            gate_md_cell(f, x->reason);
            fputs(": ", f);
        }
        gate_md_cell(f, x->detail);
        fputs(" |\n", f);
    }
    fflush(f);
    return ferror(f) ? -1 : 0;
}

static cJSON *gate_num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *gate_counts_pair(long base, long run)
{
    cJSON *a = cJSON_CreateArray();
    if (!a) return NULL;
    cJSON_AddItemToArray(a, base >= 0 ? cJSON_CreateNumber((double)base) : cJSON_CreateNull());
    cJSON_AddItemToArray(a, run >= 0 ? cJSON_CreateNumber((double)run) : cJSON_CreateNull());
    return a;
}

static cJSON *gate_side_json(const gate_run *run)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "file", run->path);
    cJSON_AddStringToObject(o, "git_commit", run->git_commit);
    cJSON_AddStringToObject(o, "date", run->date);
    return o;
}

int gate_write_json(FILE *f, const gate_report *r, const gate_run *run, const gate_run *base,
                    const gate_options *opt)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return -1;
    cJSON_AddStringToObject(root, "schema", "fusebench-gate/1");
    cJSON_AddStringToObject(root, "gpu_name", run->gpu_name);
    cJSON_AddStringToObject(root, "gpu_key", run->gpu_key);
    cJSON_AddItemToObject(root, "run", gate_side_json(run));
    cJSON_AddItemToObject(root, "baseline", gate_side_json(base));
    cJSON *rule = cJSON_AddObjectToObject(root, "rule");
    if (rule) {
        cJSON_AddNumberToObject(rule, "alpha", opt->alpha);
        cJSON_AddNumberToObject(rule, "default_threshold_pct", opt->threshold_pct);
        cJSON_AddNumberToObject(rule, "min_samples", (double)opt->min_samples);
        cJSON_AddNumberToObject(rule, "min_reps", (double)opt->min_reps);
        cJSON_AddNumberToObject(rule, "max_noise_pct", opt->max_noise_pct);
        cJSON_AddStringToObject(rule, "test", opt->test_mwu ? "mann-whitney" : "welch-log");
        cJSON_AddStringToObject(rule, "gate_variants",
                                opt->gate_variants ? opt->gate_variants : GATE_DEFAULT_VARIANTS);
        cJSON_AddBoolToObject(rule, "require_all", opt->require_all);
        if (opt->filter) cJSON_AddStringToObject(rule, "filter", opt->filter);
    }
    cJSON_AddBoolToObject(root, "regressed", r->regressed);
    cJSON *counts = cJSON_AddObjectToObject(root, "counts");
    for (int v = 0; counts && v < GATE_VERDICT_COUNT; v++)
        cJSON_AddNumberToObject(counts, gate_verdict_name((gate_verdict)v), (double)r->counts[v]);
    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    for (size_t i = 0; cases && i < r->n; i++) {
        const gate_result *x = &r->results[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(cases, o);
        cJSON_AddStringToObject(o, "name", x->name);
        cJSON_AddStringToObject(o, "verdict", gate_verdict_name(x->verdict));
        cJSON_AddBoolToObject(o, "gated", x->gated);
        cJSON_AddStringToObject(o, "timing", gate_verdict_name(x->timing));
        cJSON_AddStringToObject(o, "reason", x->reason);
        cJSON_AddStringToObject(o, "detail", x->detail);
        cJSON_AddItemToObject(o, "baseline_median_us", gate_num_or_null(x->base_median));
        cJSON_AddItemToObject(o, "run_median_us", gate_num_or_null(x->run_median));
        cJSON_AddItemToObject(o, "change_pct", gate_num_or_null(x->change_pct));
        cJSON_AddItemToObject(o, "p_value", gate_num_or_null(x->p_value));
        cJSON_AddBoolToObject(o, "exact_p", x->exact);
        cJSON_AddItemToObject(o, "ci_low_pct", gate_num_or_null(x->ci_low_pct));
        cJSON_AddItemToObject(o, "ci_high_pct", gate_num_or_null(x->ci_high_pct));
        cJSON_AddItemToObject(o, "noise_pct", gate_num_or_null(x->noise_pct));
        cJSON_AddNumberToObject(o, "threshold_pct", x->threshold_pct);
        cJSON_AddNumberToObject(o, "n_baseline", (double)x->n_base);
        cJSON_AddNumberToObject(o, "n_run", (double)x->n_run);
        const gate_case *b = x->base, *rc = x->run;
        cJSON_AddItemToObject(o, "kernels", gate_counts_pair(b ? b->kernels : -1, rc ? rc->kernels : -1));
        cJSON_AddItemToObject(o, "launches",
                              gate_counts_pair(b ? b->launches : -1, rc ? rc->launches : -1));
        cJSON_AddItemToObject(o, "segments",
                              gate_counts_pair(b ? b->segments : -1, rc ? rc->segments : -1));
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return -1;
    fputs(text, f);
    fputc('\n', f);
    cJSON_free(text);
    fflush(f);
    return ferror(f) ? -1 : 0;
}

static void gate_tsv_field(FILE *f, const char *s)
{
    for (; *s; s++) fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static void gate_tsv_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "\t%.9g", v);
    else fputc('\t', f);
}

int gate_write_tsv(FILE *f, const gate_report *r)
{
    fputs("name\tverdict\ttiming\treason\tbaseline_median_us\trun_median_us\tchange_pct\tp_value\t"
          "threshold_pct\tn_baseline\tn_run\tdetail\tgated\tnoise_pct\tci_low_pct\tci_high_pct\n",
          f);
    for (size_t i = 0; i < r->n; i++) {
        const gate_result *x = &r->results[i];
        gate_tsv_field(f, x->name);
        fprintf(f, "\t%s\t%s\t", gate_verdict_name(x->verdict), gate_verdict_name(x->timing));
        gate_tsv_field(f, x->reason);
        gate_tsv_num(f, x->base_median);
        gate_tsv_num(f, x->run_median);
        gate_tsv_num(f, x->change_pct);
        gate_tsv_num(f, x->p_value);
        gate_tsv_num(f, x->threshold_pct);
        fprintf(f, "\t%zu\t%zu\t", x->n_base, x->n_run);
        gate_tsv_field(f, x->detail);
        fprintf(f, "\t%d", x->gated);
        gate_tsv_num(f, x->noise_pct);
        gate_tsv_num(f, x->ci_low_pct);
        gate_tsv_num(f, x->ci_high_pct);
        fputc('\n', f);
    }
    fflush(f);
    return ferror(f) ? -1 : 0;
}
