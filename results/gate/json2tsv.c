/*
 * json2tsv.c -- fusebench-json2tsv: run files (docs/results-schema.md) as TSV
 * for shell scripts (scripts/plot, scripts/save_baseline, ci/nightly), so
 * that no script has to pick JSON apart with awk.
 *
 *   fusebench-json2tsv context RUN.json   key<TAB>value for each scalar context
 *                                         field (gpu_key derived when absent)
 *   fusebench-json2tsv cases RUN.json     a header, then one line per case (run.h
 *                                         says how repetitions are gathered)
 *   fusebench-json2tsv samples RUN.json   name<TAB>index<TAB>time_us for every
 *                                         sample the gate would use
 *   fusebench-json2tsv field KEY RUN.json name<TAB>repetition_index<TAB>value of
 *                                         the number KEY (e.g. floor_us) of every
 *                                         iteration entry that has one
 *
 * `cases` columns: name suite case variant dtype size status reps n_samples
 * median_us gbps kernels launches segments bytes max_rel_error source, where
 * status is failed (any repetition failed), skipped (none ran) or ok, gbps is
 * bytes / median time (or the median of the GB/s fields when bytes is
 * absent), source is samples_us or real_time, and unknown values are empty.
 * Exit status 0, or 2 on bad input (with a message).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run.h"
#include "util.h"

static void gate_tsv_str(const char *s)
{
    for (; s && *s; s++) putchar(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

static void gate_tsv_num(double v)
{
    putchar('\t');
    if (isfinite(v)) printf("%.10g", v);
}

static void gate_tsv_count(long v)
{
    putchar('\t');
    if (v >= 0) printf("%ld", v);
}

static void gate_print_context(const gate_run *run)
{
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(run->json, "context");
    int had_key = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, ctx)
    {
        if (!it->string) continue;
        if (cJSON_IsString(it)) {
            gate_tsv_str(it->string);
            putchar('\t');
            gate_tsv_str(it->valuestring);
            putchar('\n');
        } else if (cJSON_IsNumber(it)) {
            gate_tsv_str(it->string);
            gate_tsv_num(it->valuedouble);
            putchar('\n');
        } else if (cJSON_IsBool(it)) {
            gate_tsv_str(it->string);
            printf("\t%s\n", cJSON_IsTrue(it) ? "true" : "false");
        } else {
            continue;
        }
        if (strcmp(it->string, "gpu_key") == 0) had_key = 1;
    }
    if (!had_key) printf("gpu_key\t%s\n", run->gpu_key);
}

static void gate_print_cases(const gate_run *run)
{
    fputs("name\tsuite\tcase\tvariant\tdtype\tsize\tstatus\treps\tn_samples\tmedian_us\tgbps\tkernels\t"
          "launches\tsegments\tbytes\tmax_rel_error\tsource\n",
          stdout);
    for (size_t i = 0; i < run->n_cases; i++) {
        const gate_case *c = &run->cases[i];
        const char *status = c->n_failed ? "failed" : c->n_ok ? "ok" : "skipped";
        double median = c->n_samples ? gate_median(c->samples, c->n_samples) : NAN;
        double gbps = c->bytes > 0 && median > 0 ? c->bytes / median / 1e3 : c->gbps;
        gate_tsv_str(c->name);
        const char *ids[5] = {c->suite, c->kase, c->variant, c->dtype, c->size};
        for (int k = 0; k < 5; k++) {
            putchar('\t');
            gate_tsv_str(ids[k]);
        }
        printf("\t%s\t%d\t%zu", status, c->reps, c->n_samples);
        gate_tsv_num(median);
        gate_tsv_num(gbps);
        gate_tsv_count(c->kernels);
        gate_tsv_count(c->launches);
        gate_tsv_count(c->segments);
        gate_tsv_num(c->bytes >= 0 ? c->bytes : NAN);
        gate_tsv_num(c->max_rel_error);
        printf("\t%s\n", c->source == GATE_FROM_SAMPLES ? "samples_us" : "real_time");
    }
}

static void gate_print_samples(const gate_run *run)
{
    for (size_t i = 0; i < run->n_cases; i++) {
        const gate_case *c = &run->cases[i];
        for (size_t k = 0; k < c->n_samples; k++) {
            gate_tsv_str(c->name);
            printf("\t%zu\t%.10g\n", k, c->samples[k]);
        }
    }
}

/* name, repetition_index and the number `key` of every iteration entry that has it. */
static void gate_print_field(const gate_run *run, const char *key)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(run->json, "benchmarks"))
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "run_type");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "iteration") != 0) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
        const cJSON *rn = cJSON_GetObjectItemCaseSensitive(e, "run_name");
        if (!cJSON_IsString(rn) || !*rn->valuestring) rn = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !cJSON_IsString(rn)) continue;
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(e, "repetition_index");
        gate_tsv_str(rn->valuestring);
        printf("\t%d", cJSON_IsNumber(rep) ? rep->valueint : 0);
        gate_tsv_num(v->valuedouble);
        putchar('\n');
    }
}

static const char gate_tsv_usage[] = "usage: fusebench-json2tsv context|cases|samples RUN.json   (RUN.json may be .json.gz)\n"
                                     "       fusebench-json2tsv field KEY RUN.json\n";

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        fputs(gate_tsv_usage, stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("fusebench-json2tsv %s\n", FUSEBENCH_VERSION);
        return 0;
    }
    int is_field = argc == 4 && strcmp(argv[1], "field") == 0 && *argv[2];
    if (!is_field && (argc != 3 || (strcmp(argv[1], "context") && strcmp(argv[1], "cases") &&
                                    strcmp(argv[1], "samples")))) {
        fputs(gate_tsv_usage, stderr);
        return 2;
    }
    char err[1024];
    gate_run run;
    if (gate_run_load(&run, argv[is_field ? 3 : 2], err, sizeof err)) {
        fprintf(stderr, "json2tsv: %s\n", err);
        return 2;
    }
    if (is_field) gate_print_field(&run, argv[2]);
    else if (strcmp(argv[1], "context") == 0) gate_print_context(&run);
    else if (strcmp(argv[1], "cases") == 0) gate_print_cases(&run);
    else gate_print_samples(&run);
    gate_run_free(&run);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "json2tsv: writing to stdout failed\n");
        return 2;
    }
    return 0;
}
