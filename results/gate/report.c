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

int gate_write_markdown(FILE *f, const gate_report *r, const gate_run *run, const gate_run *base,
                        const gate_options *opt)
{
    char a[64], b[64], c[64], d[64];
    fprintf(f, "## Regression gate: %s\n\n", r->regressed ? "FAILED" : "passed");
    fprintf(f, "- GPU: %s\n", run->gpu_name);
    fprintf(f, "- Run: `%s` (commit %s, %s)\n", run->path, *run->git_commit ? run->git_commit : "?",
            *run->date ? run->date : "no date");
    fprintf(f, "- Baseline: `%s` (commit %s, %s)\n", base->path,
            *base->git_commit ? base->git_commit : "?", *base->date ? base->date : "no date");
    fprintf(f,
            "- Rule: Mann-Whitney U two-sided p < %g and |median change| >= the case's threshold "
            "(%g%% unless results/thresholds.txt says otherwise) => SLOWER/FASTER; fewer than %zu "
            "samples => UNKNOWN; a failed check or more kernels/launches/segments => REGRESSION\n",
            opt->alpha, opt->threshold_pct, opt->min_samples);
    fprintf(f, "- Samples: run: %s; baseline: %s\n", gate_samples_word(run), gate_samples_word(base));
    if (opt->filter) fprintf(f, "- Cases: those matching `%s`\n", opt->filter);
    fprintf(f, "- Verdicts: %zu cases:", r->n);
    for (int v = 0; v < GATE_VERDICT_COUNT; v++)
        fprintf(f, " %zu %s%s", r->counts[v], gate_verdict_name((gate_verdict)v),
                v + 1 < GATE_VERDICT_COUNT ? "," : "\n");

    if (r->regressed) {
        fprintf(f, "\n### Regressions\n\n");
        for (size_t i = 0; i < r->n; i++) {
            const gate_result *x = &r->results[i];
            if (x->verdict != GATE_SLOWER && x->verdict != GATE_REGRESSION) continue;
            fprintf(f, "- `%s`: **%s** (%s): ", x->name, gate_verdict_name(x->verdict),
                    *x->reason ? x->reason : "time");
            gate_md_cell(f, x->detail);
            fputc('\n', f);
        }
    }

    fprintf(f, "\n### Cases\n\n");
    fprintf(f, "| case | baseline median (us) | run median (us) | change | p-value | verdict | reason |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < r->n; i++) {
        const gate_result *x = &r->results[i];
        int bad = x->verdict == GATE_SLOWER || x->verdict == GATE_REGRESSION;
        fputs("| ", f);
        gate_md_cell(f, x->name);
        fprintf(f, " | %s | %s | %s | %s | %s%s%s | ", gate_fmt_us(a, sizeof a, x->base_median),
                gate_fmt_us(b, sizeof b, x->run_median), gate_fmt_pct(c, sizeof c, x->change_pct),
                gate_fmt_p(d, sizeof d, x->p_value), bad ? "**" : "",
                gate_verdict_name(x->verdict), bad ? "**" : "");
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
        cJSON_AddStringToObject(o, "timing", gate_verdict_name(x->timing));
        cJSON_AddStringToObject(o, "reason", x->reason);
        cJSON_AddStringToObject(o, "detail", x->detail);
        cJSON_AddItemToObject(o, "baseline_median_us", gate_num_or_null(x->base_median));
        cJSON_AddItemToObject(o, "run_median_us", gate_num_or_null(x->run_median));
        cJSON_AddItemToObject(o, "change_pct", gate_num_or_null(x->change_pct));
        cJSON_AddItemToObject(o, "p_value", gate_num_or_null(x->p_value));
        cJSON_AddBoolToObject(o, "exact_p", x->exact);
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
          "threshold_pct\tn_baseline\tn_run\tdetail\n",
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
        fputc('\n', f);
    }
    fflush(f);
    return ferror(f) ? -1 : 0;
}
