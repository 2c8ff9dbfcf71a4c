/*
 * merge.c -- fusebench-merge: joins run files of one build on one GPU model
 * (the per-suite files of ci/nightly --sharded, one GPU each) into one run file.
 *
 *   fusebench-merge -o OUT.json IN.json...
 *
 * The context is the first input's, with copy_bandwidth_gbps replaced by the
 * mean over the inputs (each shard measured its own GPU) and a "shards" array
 * recording every input's file, date, host and copy bandwidth; the benchmarks
 * are every input's entries, in input order. The inputs must share the schema,
 * gpu_name (one GPU model), git_commit (one build; a missing commit differs
 * from every commit) and timing_mode, and no case may appear in two of them;
 * the refusal names both files and their values. OUT is written whole or not
 * at all. Exit status 0, or 2 on bad input.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "util.h"

static void gate_merge_usage(FILE *f)
{
    fputs("usage: fusebench-merge -o OUT.json IN.json...\n", f);
}

static int gate_write_atomic(const char *path, const char *text)
{
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    if (!tmp) return -1;
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "merge: cannot write %s: %s\n", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF;
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "merge: cannot write %s: %s\n", path, strerror(errno));
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    const char **inputs = calloc((size_t)argc, sizeof *inputs);
    int n = 0;
    if (!inputs) return 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            gate_merge_usage(stdout);
            free(inputs);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("fusebench-merge %s\n", FUSEBENCH_VERSION);
            free(inputs);
            return 0;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "merge: unknown option '%s'\n", argv[i]);
            gate_merge_usage(stderr);
            free(inputs);
            return 2;
        } else {
            inputs[n++] = argv[i];
        }
    }
    if (!out || n == 0) {
        gate_merge_usage(stderr);
        free(inputs);
        return 2;
    }

    int status = 2, loaded = 0;
    char err[1024];
    cJSON *merged = NULL;
    char *text = NULL;
    gate_run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) goto done;
    for (; loaded < n; loaded++) {
        if (gate_run_load(&runs[loaded], inputs[loaded], err, sizeof err)) {
            fprintf(stderr, "merge: %s\n", err);
            goto done;
        }
        const gate_run *r = &runs[loaded], *first = &runs[0];
        if (strcmp(r->gpu_name, first->gpu_name) != 0) {
            fprintf(stderr, "merge: different GPU models: %s is from \"%s\", %s from \"%s\"\n",
                    first->path, first->gpu_name, r->path, r->gpu_name);
            loaded++;
            goto done;
        }
        /* One build: the same commit, a missing one included (a run without
         * its commit cannot be shown to come from the same build). */
        if (strcmp(r->git_commit, first->git_commit) != 0) {
            fprintf(stderr, "merge: different builds: %s is commit %s, %s is commit %s\n", first->path,
                    *first->git_commit ? first->git_commit : "(none)", r->path,
                    *r->git_commit ? r->git_commit : "(none)");
            loaded++;
            goto done;
        }
        /* Cold and hot L2 times are different measurements of a case. */
        if (strcmp(r->timing_mode, first->timing_mode) != 0) {
            fprintf(stderr, "merge: different timing modes: %s is \"%s\", %s is \"%s\"\n", first->path,
                    first->timing_mode, r->path, r->timing_mode);
            loaded++;
            goto done;
        }
        for (int j = 0; j < loaded; j++)
            for (size_t k = 0; k < r->n_cases; k++)
                if (gate_run_find(&runs[j], r->cases[k].name)) {
                    fprintf(stderr, "merge: case %s is in both %s and %s\n", r->cases[k].name,
                            runs[j].path, r->path);
                    loaded++;
                    goto done;
                }
    }

    merged = cJSON_Duplicate(runs[0].json, 1);
    cJSON *benches = cJSON_CreateArray();
    cJSON *shards = cJSON_CreateArray();
    if (!merged || !benches || !shards) {
        cJSON_Delete(benches);
        cJSON_Delete(shards);
        fprintf(stderr, "merge: out of memory\n");
        goto done;
    }
    double bw_sum = 0;
    int bw_n = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(runs[i].json, "benchmarks"))
            cJSON_AddItemToArray(benches, cJSON_Duplicate(e, 1));
        const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(runs[i].json, "context");
        const cJSON *host = cJSON_GetObjectItemCaseSensitive(ctx, "host_name");
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "file", runs[i].path);
        cJSON_AddStringToObject(s, "date", runs[i].date);
        if (cJSON_IsString(host)) cJSON_AddStringToObject(s, "host_name", host->valuestring);
        if (isfinite(runs[i].copy_bandwidth_gbps)) {
            cJSON_AddNumberToObject(s, "copy_bandwidth_gbps", runs[i].copy_bandwidth_gbps);
            bw_sum += runs[i].copy_bandwidth_gbps;
            bw_n++;
        }
        cJSON_AddItemToArray(shards, s);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(merged, "benchmarks", benches);
    cJSON *ctx = cJSON_GetObjectItemCaseSensitive(merged, "context");
    cJSON_DeleteItemFromObjectCaseSensitive(ctx, "shards");
    cJSON_AddItemToObject(ctx, "shards", shards);
    if (bw_n) {
        cJSON_DeleteItemFromObjectCaseSensitive(ctx, "copy_bandwidth_gbps");
        cJSON_AddNumberToObject(ctx, "copy_bandwidth_gbps", bw_sum / bw_n);
    }
    text = cJSON_Print(merged);
    if (!text) {
        fprintf(stderr, "merge: out of memory\n");
        goto done;
    }
    if (gate_write_atomic(out, text) == 0) status = 0;
done:
    if (text) cJSON_free(text);
    cJSON_Delete(merged);
    for (int i = 0; runs && i < loaded; i++) gate_run_free(&runs[i]);
    free(runs);
    free(inputs);
    return status;
}
