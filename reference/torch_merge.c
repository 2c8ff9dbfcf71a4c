/*
 * torch_merge.c -- run reference/torch_bench.py, read its run file, merge.
 * See torch_merge.h. The run file is read with the project's own strict
 * reader (suites/harness/json_read.h), not cJSON: the harness takes no JSON
 * library, and the GPU machines' image has none.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_read.h"
#include "suite.h"
#include "torch_merge.h"

#ifndef HB_REFERENCE_DIR
#define HB_REFERENCE_DIR "reference"
#endif

extern char **environ;

void hb_torch_options_default(hb_torch_options *o)
{
    memset(o, 0, sizeof *o);
    o->repetitions = 3;
    o->time_limit_s = 2.0;
    o->mode = "cold";
    o->seed = 20261130;
}

void hb_torch_rows_free(hb_torch_rows *r)
{
    if (!r) return;
    for (int i = 0; r->samples && i < r->n; i++) free(r->samples[i]);
    free(r->samples);
    free(r->entries);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------ items and speed-ups */

/* name = suite/case/variant/dtype/size -> "suite/case/dtype/size" */
static bool item_of(const char *name, char *out, size_t cap)
{
    const char *p[5];
    size_t len[5];
    const char *s = name;
    for (int i = 0; i < 5; i++) {
        const char *e = i < 4 ? strchr(s, '/') : s + strlen(s);
        if (!e) return false;
        p[i] = s;
        len[i] = (size_t)(e - s);
        s = e + 1;
    }
    if (strchr(p[4], '/')) return false;
    int w = snprintf(out, cap, "%.*s/%.*s/%.*s/%.*s", (int)len[0], p[0], (int)len[1], p[1], (int)len[3], p[3],
                     (int)len[4], p[4]);
    return w > 0 && (size_t)w < cap;
}

char *hb_torch_items(const char *const *names, int n)
{
    size_t cap = 1;
    for (int i = 0; i < n; i++) cap += strlen(names[i]) + 1;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[0] = '\0';
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        char it[320];
        if (!item_of(names[i], it, sizeof it)) continue;
        /* already listed? (whole comma-separated fields only) */
        bool seen = false;
        size_t il = strlen(it);
        for (const char *q = out; *q && !seen;) {
            const char *e = strchr(q, ',');
            size_t fl = e ? (size_t)(e - q) : strlen(q);
            seen = fl == il && memcmp(q, it, il) == 0;
            q = e ? e + 1 : q + fl;
        }
        if (seen) continue;
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? "," : "", it);
    }
    return out;
}

double hb_torch_compile_time(const hb_entry *e, int n, const char *suite, const char *case_name, const char *dtype,
                             const char *size)
{
    return hb_entries_median_time(e, n, suite, case_name, dtype, size, "torch_compile", NULL);
}

int hb_torch_speedups(hb_entry *e, int n)
{
    int set = 0;
    for (int i = 0; i < n; i++) {
        hb_entry *x = &e[i];
        if (x->status != HB_STATUS_OK || !(x->real_time > 0)) continue;
        if (x->aggregate && strcmp(x->aggregate_name, "median") != 0 && strcmp(x->aggregate_name, "mean") != 0)
            continue;
        double tc = hb_torch_compile_time(e, n, x->suite, x->case_name, x->dtype, x->size);
        if (!isfinite(tc)) continue;
        x->speedup_vs_torch_compile = tc / x->real_time;
        set++;
    }
    return set;
}

void hb_torch_rebase(hb_entry *e, int n, double copy_gbps)
{
    for (int i = 0; i < n; i++) {
        hb_entry *x = &e[i];
        double bytes = hb_entry_get_counter(x, "bytes");
        if (x->status != HB_STATUS_OK || !(x->real_time > 0) || !isfinite(bytes)) continue;
        if (x->aggregate && strcmp(x->aggregate_unit[0] ? x->aggregate_unit : "time", "time") != 0) continue;
        if (x->aggregate && strcmp(x->aggregate_name, "stddev") == 0) continue;
        double gbps = bytes / (x->real_time * 1e-6) / 1e9;
        hb_entry_counter(x, "GB/s", gbps);
        if (isfinite(copy_gbps) && copy_gbps > 0) hb_entry_counter(x, "peak_fraction", gbps / copy_gbps);
    }
}

/* ------------------------------------------------------------ reading */

static void get_str(const jv *o, const char *key, char *out, size_t cap)
{
    const char *s = jv_str(o, key);
    snprintf(out, cap, "%s", s ? s : "");
}

static double get_num(const jv *o, const char *key, double dflt)
{
    const jv *v = jv_get(o, key);
    return v && v->kind == JV_NUM ? v->num : dflt;
}

static const char *const counter_keys[] = {"kernels", "launches", "segments", "bytes", "GB/s", "peak_fraction",
                                           "kernel_time_us", "max_rel_error", "spread", "throttled_samples", NULL};

/* The whole file, or NULL and why (malloc'd: free()). */
static char *read_file(const char *path, char *why, size_t nwhy)
{
    return hb_read_text_file(path, why, nwhy);
}

/* One benchmark entry into e (samples into *samples, malloc'd). false and why. */
static bool read_entry(const jv *b, hb_entry *e, double **samples, const char *path, int index, char *why,
                       size_t nwhy)
{
    hb_entry_init(e);
    *samples = NULL;
    if (!b || b->kind != JV_OBJ) {
        snprintf(why, nwhy, "%s: benchmark %d is not an object", path, index);
        return false;
    }
    get_str(b, "name", e->name, sizeof e->name);
    get_str(b, "run_name", e->run_name, sizeof e->run_name);
    char run_type[32], status[16];
    get_str(b, "run_type", run_type, sizeof run_type);
    e->aggregate = strcmp(run_type, "aggregate") == 0;
    get_str(b, "aggregate_name", e->aggregate_name, sizeof e->aggregate_name);
    get_str(b, "aggregate_unit", e->aggregate_unit, sizeof e->aggregate_unit);
    e->family_index = (int64_t)get_num(b, "family_index", 0);
    e->per_family_instance_index = (int64_t)get_num(b, "per_family_instance_index", 0);
    e->repetitions = (int64_t)get_num(b, "repetitions", 1);
    e->repetition_index = (int64_t)get_num(b, "repetition_index", 0);
    e->threads = (int64_t)get_num(b, "threads", 1);
    e->iterations = (int64_t)get_num(b, "iterations", 1);
    e->real_time = get_num(b, "real_time", 0);
    e->cpu_time = get_num(b, "cpu_time", 0);
    get_str(b, "time_unit", e->time_unit, sizeof e->time_unit);
    if (!e->time_unit[0]) snprintf(e->time_unit, sizeof e->time_unit, "us");
    get_str(b, "suite", e->suite, sizeof e->suite);
    get_str(b, "case", e->case_name, sizeof e->case_name);
    get_str(b, "variant", e->variant, sizeof e->variant);
    get_str(b, "dtype", e->dtype, sizeof e->dtype);
    get_str(b, "size", e->size, sizeof e->size);
    get_str(b, "bytes_formula", e->bytes_formula, sizeof e->bytes_formula);
    get_str(b, "error", e->error, sizeof e->error);
    get_str(b, "status", status, sizeof status);
    e->status = strcmp(status, "ok") == 0 ? HB_STATUS_OK : strcmp(status, "skipped") == 0 ? HB_STATUS_SKIPPED : HB_STATUS_FAILED;
    if (strcmp(e->time_unit, "us") != 0 || !e->suite[0] || !e->case_name[0] || !e->variant[0] || !e->dtype[0] ||
        !e->size[0] || !e->name[0]) {
        snprintf(why, nwhy, "%s: benchmark %d ('%s') lacks name, suite, case, variant, dtype or size, or its time is "
                 "not in us", path, index, e->name);
        return false;
    }
    for (int k = 0; counter_keys[k]; k++) {
        double v = get_num(b, counter_keys[k], NAN);
        if (isfinite(v)) hb_entry_counter(e, counter_keys[k], v);
    }
    e->speedup_vs_torch_compile = get_num(b, "speedup_vs_torch_compile", NAN);
    const jv *smp = jv_get(b, "samples_us");
    if (smp && smp->kind == JV_ARR && smp->n > 0) {
        double *d = malloc((size_t)smp->n * sizeof *d);
        if (!d) {
            snprintf(why, nwhy, "out of memory");
            return false;
        }
        for (int k = 0; k < smp->n; k++) d[k] = smp->items[k].kind == JV_NUM ? smp->items[k].num : NAN;
        *samples = d;
        e->samples_us = d;
        e->nsamples = smp->n;
    }
    return true;
}

bool hb_torch_read(const char *path, hb_torch_rows *out, char *why, size_t nwhy)
{
    memset(out, 0, sizeof *out);
    char *text = read_file(path, why, nwhy);
    if (!text) return false;
    char perr[160];
    jv *root = jv_parse(text, perr, sizeof perr);
    free(text);
    if (!root) {
        snprintf(why, nwhy, "%s is not JSON (%s)", path, perr);
        return false;
    }
    bool ok = false;
    const jv *bm = jv_get(root, "benchmarks");
    const char *schema = jv_str(jv_get(root, "context"), "schema");
    if (!schema || strcmp(schema, "fusebench-run/1") != 0) {
        snprintf(why, nwhy, "%s: context.schema is %s%s%s, not \"fusebench-run/1\"", path, schema ? "\"" : "",
                 schema ? schema : "missing", schema ? "\"" : "");
    } else if (!bm || bm->kind != JV_ARR) {
        snprintf(why, nwhy, "%s: no \"benchmarks\" array", path);
    } else {
        out->entries = calloc((size_t)bm->n + 1, sizeof *out->entries);
        out->samples = calloc((size_t)bm->n + 1, sizeof *out->samples);
        ok = out->entries && out->samples;
        if (!ok) snprintf(why, nwhy, "out of memory");
        for (int i = 0; ok && i < bm->n; i++) {
            ok = read_entry(&bm->items[i], &out->entries[i], &out->samples[i], path, i, why, nwhy);
            out->n = i + 1; /* what samples[] holds is freed with it */
        }
    }
    jv_free(root);
    if (!ok) hb_torch_rows_free(out);
    return ok;
}

/* ------------------------------------------------------------ running the script */

/* The first line of a small text file (the script's reason), or "". */
static void first_line(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(out, (int)cap, f)) out[strcspn(out, "\r\n")] = '\0';
    fclose(f);
}

hb_torch_result hb_torch_run(const hb_torch_options *o, const char *items, hb_torch_rows *out, char *msg,
                             size_t nmsg)
{
    memset(out, 0, sizeof *out);
    const char *python = o->python ? o->python : getenv("FUSEBENCH_PYTHON");
    if (!python || !python[0]) python = "python3";
    char script_buf[1024];
    const char *script = o->script ? o->script : getenv("FUSEBENCH_TORCH_SCRIPT");
    if (!script || !script[0]) {
        snprintf(script_buf, sizeof script_buf, "%s/torch_bench.py", HB_REFERENCE_DIR);
        script = script_buf;
    }
    if (access(script, R_OK) != 0) {
        snprintf(msg, nmsg, "--with-torch: %s: %s; PyTorch rows skipped", script, strerror(errno));
        return HB_TORCH_FAILED;
    }
    const char *tmpdir = getenv("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/fusebench-torch-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(msg, nmsg, "--with-torch: cannot make a temporary file in %s: %s", tmpdir ? tmpdir : "/tmp",
                 strerror(errno));
        return HB_TORCH_FAILED;
    }
    close(fd);
    char reps[32], limit[32], seed[32];
    snprintf(reps, sizeof reps, "%d", o->repetitions);
    snprintf(limit, sizeof limit, "%.17g", o->time_limit_s);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    char *argv[] = {(char *)python, "-u", (char *)script, "--items", (char *)items, "--repetitions", reps,
                    "--time-limit", limit, "--mode", (char *)(o->mode ? o->mode : "cold"), "--seed", seed,
                    "--out", path, "--quiet-if-absent", o->fusions ? "--fusions" : NULL, (char *)o->fusions, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO); /* our stdout may be JSON */
    fflush(stdout);
    fflush(stderr);
    pid_t pid;
    int rc = posix_spawnp(&pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    hb_torch_result res = HB_TORCH_FAILED;
    int status = 0;
    if (rc != 0) {
        snprintf(msg, nmsg, "--with-torch: %s not found or not runnable (%s); PyTorch rows skipped", python,
                 strerror(rc));
        res = rc == ENOENT || rc == EACCES ? HB_TORCH_ABSENT : HB_TORCH_FAILED;
    } else if (waitpid(pid, &status, 0) < 0) {
        snprintf(msg, nmsg, "--with-torch: waiting for %s: %s", python, strerror(errno));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(msg, nmsg, "--with-torch: %s not found; PyTorch rows skipped", python);
        res = HB_TORCH_ABSENT;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == HB_TORCH_EXIT_ABSENT) {
        char why[400];
        first_line(path, why, sizeof why);
        snprintf(msg, nmsg, "--with-torch: %s; PyTorch rows skipped", why[0] ? why : "PyTorch is not available");
        res = HB_TORCH_ABSENT;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status))
            snprintf(msg, nmsg, "--with-torch: %s exited with status %d; PyTorch rows skipped", script,
                     WEXITSTATUS(status));
        else
            snprintf(msg, nmsg, "--with-torch: %s was killed by signal %d; PyTorch rows skipped", script,
                     WTERMSIG(status));
    } else {
        char why[512];
        if (hb_torch_read(path, out, why, sizeof why)) {
            res = HB_TORCH_OK;
            snprintf(msg, nmsg, "--with-torch: %d PyTorch entries merged", out->n);
        } else {
            snprintf(msg, nmsg, "--with-torch: %s; PyTorch rows skipped", why);
        }
    }
    remove(path);
    return res;
}
