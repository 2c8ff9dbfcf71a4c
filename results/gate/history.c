/*
 * history.c -- fusebench-history: step changes per case over the stored runs
 * of one GPU model (scripts/regressions and scripts/plot history run it).
 *
 *   fusebench-history [--runs DIR] [FILE...] [options]
 *
 * The runs are the *.json and *.json.gz files of DIR (default results/runs),
 * or the FILEs, in the order of their names (stored names begin with the date)
 * and only those of one GPU model (--gpu KEY, default the newest run's). Each
 * case's steps come from changepoint.h; each is reported with the first run
 * (commit) after it, its size, its p-value, and whether the kernels the case
 * ran (kernels_id, run.h) changed there. Exit status 0 (steps or not), 2 bad
 * input (a file and the key at fault).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changepoint.h"
#include "gate.h"
#include "run.h"
#include "util.h"

typedef struct hist_run {
    char *file, *commit, *date, *gpu_key, *gpu_name;
    gate_run run; /* cases only: the JSON tree is freed after reading */
} hist_run;

static void usage(FILE *f)
{
    fputs("usage: history [--runs DIR | FILE...] [options]\n"
          "  --runs DIR          the stored runs (*.json, *.json.gz; default results/runs)\n"
          "  --gpu KEY           the GPU model (gpu_key; default the newest run's)\n"
          "  --filter GLOB       only the cases whose name matches\n"
          "  --gate-variants V   variants whose steps count (default fuser,reference; all for every one);\n"
          "                      the others are listed as informational\n"
          "  --alpha P           significance of a step (Welch on the repetitions; default 0.01)\n"
          "  --threshold PCT     smallest step (default 3)\n"
          "  --noise-k K         a step must also be K times the case's run-to-run noise (default 3)\n"
          "  --markdown FILE     the Markdown report (default stdout)\n"
          "  --json FILE         the JSON report (schema fusebench-history/1)\n"
          "  --points FILE       TSV of every case's points, segments and steps (scripts/plot history)\n"
          "  -q                  no report on stdout\n"
          "  --version           the version\n"
          "exit status: 0, or 2 on bad input\n",
          f);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The run files of dir, sorted, into *files. Returns the count or -1. */
static long list_runs(const char *dir, char ***files)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "history: %s: cannot open the directory of stored runs: %s\n", dir,
                strerror(errno));
        return -1;
    }
    size_t n = 0, cap = 0;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || (!ends_with(de->d_name, ".json") && !ends_with(de->d_name, ".json.gz")))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(v, cap * sizeof *nv);
            if (!nv) break;
            v = nv;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        v[n] = malloc(len);
        if (!v[n]) break;
        snprintf(v[n], len, "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    qsort(v, n, sizeof *v, cmp_str);
    *files = v;
    return (long)n;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void hist_run_free(hist_run *h)
{
    free(h->file);
    free(h->commit);
    free(h->date);
    free(h->gpu_key);
    free(h->gpu_name);
    gate_run_free(&h->run);
}

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) fputc(*s == '|' ? '/' : *s, f);
}

int main(int argc, char **argv)
{
    const char *runs_dir = NULL, *gpu = NULL, *filter = NULL, *md_path = NULL, *json_path = NULL;
    const char *points_path = NULL;
    gate_options gopt;
    gate_options_default(&gopt);
    gate_hist_options hopt;
    gate_hist_options_default(&hopt);
    int quiet = 0, nfiles = 0;
    char **files = calloc((size_t)argc + 1, sizeof *files);
    if (!files) return 2;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        char *end;
#define NEED_VALUE()                                                     \
    do {                                                                 \
        if (!val) {                                                      \
            fprintf(stderr, "history: option '%s' needs a value\n", a);  \
            goto bad_args;                                                    \
        }                                                                \
        i++;                                                             \
    } while (0)
#define NUMBER(dst, lo, hi)                                                                    \
    do {                                                                                       \
        NEED_VALUE();                                                                          \
        errno = 0;                                                                             \
        d = strtod(val, &end);                                                                 \
        if (end == val || *end || errno || !(d >= (lo) && d <= (hi))) {                        \
            fprintf(stderr, "history: option '%s' needs a number in [%g, %g], not '%s'\n", a, \
                    (double)(lo), (double)(hi), val);                                          \
            goto bad_args;                                                                          \
        }                                                                                      \
        dst = d;                                                                               \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            goto good_args;
        } else if (!strcmp(a, "--version")) {
            printf("fusebench-history %s\n", FUSEBENCH_VERSION);
            goto good_args;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--runs")) {
            NEED_VALUE();
            runs_dir = val;
        } else if (!strcmp(a, "--gpu")) {
            NEED_VALUE();
            gpu = val;
        } else if (!strcmp(a, "--filter")) {
            NEED_VALUE();
            filter = val;
        } else if (!strcmp(a, "--gate-variants")) {
            NEED_VALUE();
            gopt.gate_variants = val;
        } else if (!strcmp(a, "--markdown")) {
            NEED_VALUE();
            md_path = val;
        } else if (!strcmp(a, "--json")) {
            NEED_VALUE();
            json_path = val;
        } else if (!strcmp(a, "--points")) {
            NEED_VALUE();
            points_path = val;
        } else if (!strcmp(a, "--alpha")) {
            NUMBER(hopt.alpha, 1e-300, 1);
        } else if (!strcmp(a, "--threshold")) {
            NUMBER(hopt.threshold_pct, 0, 1e6);
        } else if (!strcmp(a, "--noise-k")) {
            NUMBER(hopt.noise_k, 0, 1e6);
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "history: unknown option '%s'\n", a);
            usage(stderr);
            goto bad_args;
        } else {
            files[nfiles++] = (char *)a;
        }
    }
    if (0) {
    bad_args:
        free(files);
        return 2;
    good_args:
        free(files);
        return 0;
    }
    char **owned = NULL;
    long nrun_files = nfiles;
    if (nfiles && runs_dir) {
        fprintf(stderr, "history: give --runs DIR or files, not both\n");
        goto bad_args;
    }
    if (!nfiles) {
        nrun_files = list_runs(runs_dir ? runs_dir : "results/runs", &owned);
        if (nrun_files < 0) goto bad_args;
        free(files);
        files = owned;
    } else {
        qsort(files, (size_t)nfiles, sizeof *files, cmp_str);
    }
    if (nrun_files == 0) {
        fprintf(stderr, "history: no stored runs (*.json, *.json.gz) in %s\n",
                runs_dir ? runs_dir : "results/runs");
        free(files);
        return 2;
    }

    /* Read every run; keep those of the GPU. */
    hist_run *runs = calloc((size_t)nrun_files, sizeof *runs);
    size_t nruns = 0;
    int status = 2;
    char err[1024];
    if (!runs) {
        status = 2;
        goto done;
    }
    for (long f = 0; f < nrun_files; f++) {
        hist_run *h = &runs[nruns];
        if (gate_run_load(&h->run, files[f], err, sizeof err)) {
            fprintf(stderr, "history: %s\n", err);
            goto done;
        }
        h->file = gate_strdup(files[f]);
        h->commit = gate_strdup(h->run.git_commit);
        h->date = gate_strdup(h->run.date);
        h->gpu_key = gate_strdup(h->run.gpu_key);
        h->gpu_name = gate_strdup(h->run.gpu_name);
        cJSON_Delete(h->run.json); /* the cases own their data */
        h->run.json = NULL;
        h->run.gpu_name = h->run.gpu_key = h->run.git_commit = h->run.date = h->run.timing_mode = "";
        nruns++;
        if (!h->file || !h->commit || !h->date || !h->gpu_key || !h->gpu_name) {
            fprintf(stderr, "history: out of memory\n");
            goto done;
        }
    }
    if (!gpu) gpu = runs[nruns - 1].gpu_key;
    const char *gpu_name = NULL;
    size_t nkept = 0;
    for (size_t i = 0; i < nruns; i++)
        if (strcmp(runs[i].gpu_key, gpu) == 0) {
            nkept++;
            gpu_name = runs[i].gpu_name;
        }
    if (!nkept) {
        fprintf(stderr, "history: no stored run is of the GPU '%s'\n", gpu);
        goto done;
    }

    FILE *md = stdout, *js = NULL, *pt = NULL;
    if (md_path && !(md = fopen(md_path, "w"))) {
        fprintf(stderr, "history: cannot write %s: %s\n", md_path, strerror(errno));
        goto done;
    }
    if (json_path && !(js = fopen(json_path, "w"))) {
        fprintf(stderr, "history: cannot write %s: %s\n", json_path, strerror(errno));
        goto done_files;
    }
    if (points_path && !(pt = fopen(points_path, "w"))) {
        fprintf(stderr, "history: cannot write %s: %s\n", points_path, strerror(errno));
        goto done_files;
    }
    if (quiet && !md_path) md = NULL;
    if (md) {
        fprintf(md, "## Step changes over %zu stored runs of %s\n\n", nkept, gpu_name);
        fprintf(md,
                "- Method: E-divisive means places a step; Welch's t-test on the repetitions "
                "of the runs on each side (p < %g) and a size of at least %g%% and %g times the "
                "case's run-to-run noise accept it (results/README.md)\n",
                hopt.alpha, hopt.threshold_pct, hopt.noise_k);
        fprintf(md, "- Gated variants: %s (the steps of the others are informational)\n\n",
                gopt.gate_variants ? gopt.gate_variants : GATE_DEFAULT_VARIANTS);
        fprintf(md, "| case | gated | runs | noise | step after (date, commit) | first run after "
                    "(date, commit) | change | p-value | before (us) | after (us) | kernels "
                    "changed |\n|---|---|---:|---:|---|---|---:|---:|---:|---:|---|\n");
    }
    if (pt) fputs("name\tindex\tfile\tdate\tcommit\tvalue_us\tsegment_us\tnoise_pct\tstep\tchange_pct\n", pt);
    cJSON *root = cJSON_CreateObject(), *jcases = NULL, *jruns = NULL;
    if (root) {
        cJSON_AddStringToObject(root, "schema", "fusebench-history/1");
        cJSON_AddStringToObject(root, "gpu_key", gpu);
        cJSON_AddStringToObject(root, "gpu_name", gpu_name);
        cJSON *m = cJSON_AddObjectToObject(root, "method");
        if (m) {
            cJSON_AddStringToObject(m, "location", "e-divisive means");
            cJSON_AddStringToObject(m, "test", "welch-log over repetitions");
            cJSON_AddNumberToObject(m, "alpha", hopt.alpha);
            cJSON_AddNumberToObject(m, "threshold_pct", hopt.threshold_pct);
            cJSON_AddNumberToObject(m, "noise_k", hopt.noise_k);
        }
        jruns = cJSON_AddArrayToObject(root, "runs");
        jcases = cJSON_AddArrayToObject(root, "cases");
    }
    for (size_t i = 0; i < nruns && jruns; i++) {
        if (strcmp(runs[i].gpu_key, gpu) != 0) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(jruns, o);
        cJSON_AddStringToObject(o, "file", base_name(runs[i].file));
        cJSON_AddStringToObject(o, "git_commit", runs[i].commit);
        cJSON_AddStringToObject(o, "date", runs[i].date);
    }

    /* Every case, in order of first appearance, once. */
    gate_hist_point *pts = calloc(nkept, sizeof *pts);
    size_t *at = calloc(nkept, sizeof *at);
    const gate_case **cs = calloc(nkept, sizeof *cs);
    size_t nsteps_gated = 0, ncases = 0, nwith = 0;
    if (!pts || !at || !cs) goto done_cases;
    for (size_t i = 0; i < nruns; i++) {
        if (strcmp(runs[i].gpu_key, gpu) != 0) continue;
        for (size_t c = 0; c < runs[i].run.n_cases; c++) {
            const char *name = runs[i].run.cases[c].name;
            if (filter && fnmatch(filter, name, 0) != 0) continue;
            int seen = 0;
            for (size_t k = 0; k < i && !seen; k++)
                seen = strcmp(runs[k].gpu_key, gpu) == 0 && gate_run_find(&runs[k].run, name);
            if (seen) continue;
            /* its points: the runs where it passed */
            size_t n = 0;
            for (size_t k = i; k < nruns; k++) {
                if (strcmp(runs[k].gpu_key, gpu) != 0) continue;
                const gate_case *x = gate_run_find(&runs[k].run, name);
                if (!x || !x->n_reps_ok) continue;
                pts[n].reps = x->rep_medians;
                pts[n].nreps = x->n_reps_ok;
                at[n] = k;
                cs[n] = x;
                n++;
            }
            ncases++;
            const gate_case *first = &runs[i].run.cases[c];
            int gated = !first->variant || !*first->variant || gate_variant_gated(&gopt, first->variant);
            gate_step *steps = NULL;
            long ns = gate_hist_steps(pts, n, &hopt, &steps);
            if (ns < 0) {
                fprintf(stderr, "history: %s: out of memory, or a repetition time that is not > 0\n", name);
                goto done_cases;
            }
            double noise = gate_hist_noise_pct(pts, n, &hopt);
            if (ns > 0) nwith++;
            if (gated) nsteps_gated += (size_t)ns;
            cJSON *jc = NULL, *jsteps = NULL;
            if (jcases) {
                jc = cJSON_CreateObject();
                cJSON_AddItemToArray(jcases, jc);
                cJSON_AddStringToObject(jc, "name", name);
                cJSON_AddBoolToObject(jc, "gated", gated);
                cJSON_AddNumberToObject(jc, "runs", (double)n);
                if (isfinite(noise)) cJSON_AddNumberToObject(jc, "noise_pct", noise);
                else cJSON_AddNullToObject(jc, "noise_pct");
                jsteps = cJSON_AddArrayToObject(jc, "steps");
            }
            for (long s = 0; s < ns; s++) {
                const gate_step *st = &steps[s];
                const hist_run *after = &runs[at[st->index]], *before = &runs[at[st->index - 1]];
                const char *ka = cs[st->index]->kernels_id, *kb = cs[st->index - 1]->kernels_id;
                const char *kchanged = !ka || !kb ? "unknown" : strcmp(ka, kb) ? "yes" : "no";
                if (md) {
                    fputs("| ", md);
                    md_cell(md, name);
                    fprintf(md, " | %s | %zu | %.2f%% | %.10s %s | %.10s %s | %+.2f%% | %.2g | %.3f | %.3f | %s |\n",
                            gated ? "yes" : "no", n, isfinite(noise) ? noise : 0.0, before->date,
                            before->commit, after->date, after->commit, st->change_pct, st->p_value,
                            st->before_us, st->after_us, kchanged);
                }
                if (jsteps) {
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddItemToArray(jsteps, o);
                    cJSON_AddNumberToObject(o, "index", (double)st->index);
                    cJSON_AddStringToObject(o, "file", base_name(after->file));
                    cJSON_AddStringToObject(o, "git_commit", after->commit);
                    cJSON_AddStringToObject(o, "date", after->date);
                    cJSON_AddStringToObject(o, "previous_commit", before->commit);
                    cJSON_AddNumberToObject(o, "change_pct", isfinite(st->change_pct) ? st->change_pct : 0);
                    cJSON_AddNumberToObject(o, "p_value", isfinite(st->p_value) ? st->p_value : 1);
                    cJSON_AddNumberToObject(o, "before_us", st->before_us);
                    cJSON_AddNumberToObject(o, "after_us", st->after_us);
                    cJSON_AddStringToObject(o, "kernels_changed", kchanged);
                }
            }
            if (pt) {
                /* segment means between the steps */
                size_t s = 0, seg_start = 0;
                for (size_t k = 0; k < n; k++) {
                    if (s < (size_t)ns && steps[s].index == k) {
                        seg_start = k;
                        s++;
                    }
                    size_t seg_end = s < (size_t)ns ? steps[s].index : n;
                    double sum = 0;
                    size_t cnt = 0;
                    for (size_t q = seg_start; q < seg_end; q++)
                        for (size_t r = 0; r < pts[q].nreps; r++, cnt++) sum += log(pts[q].reps[r]);
                    double v = 0;
                    for (size_t r = 0; r < pts[k].nreps; r++) v += log(pts[k].reps[r]);
                    const hist_run *h = &runs[at[k]];
                    int is_step = s > 0 && steps[s - 1].index == k;
                    fprintf(pt, "%s\t%zu\t%s\t%s\t%s\t%.9g\t%.9g\t%.6g\t%d\t", name, k,
                            base_name(h->file), h->date, h->commit, exp(v / (double)pts[k].nreps),
                            exp(sum / (double)cnt), isfinite(noise) ? noise : 0.0, is_step);
                    if (is_step && isfinite(steps[s - 1].change_pct)) fprintf(pt, "%.6g", steps[s - 1].change_pct);
                    fputc('\n', pt);
                }
            }
            free(steps);
        }
    }
    if (md)
        fprintf(md, "\n%zu cases, %zu with steps; %zu steps on gated cases\n", ncases, nwith, nsteps_gated);
    if (js && root) {
        cJSON_AddNumberToObject(root, "gated_steps", (double)nsteps_gated);
        char *text = cJSON_Print(root);
        if (text) {
            fputs(text, js);
            fputc('\n', js);
            cJSON_free(text);
        }
    }
    status = 0;
done_cases:
    cJSON_Delete(root);
    free(pts);
    free(at);
    free(cs);
done_files:
    if (md && md != stdout && fclose(md) != 0) status = 2;
    if (js && fclose(js) != 0) status = 2;
    if (pt && fclose(pt) != 0) status = 2;
done:
    for (size_t i = 0; i < nruns; i++) hist_run_free(&runs[i]);
    free(runs);
    if (owned) {
        for (long f = 0; f < nrun_files; f++) free(owned[f]);
        free(owned);
    } else {
        free(files);
    }
    return status;
}
