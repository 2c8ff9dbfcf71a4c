/*
 * json.c -- a small streaming JSON writer, and the run file of
 * docs/results-schema.md on top of it: Google Benchmark's own JSON (context
 * and benchmarks, with its keys) plus our fields. Unit-tested in
 * suites/tests/test_harness_unit.c (round trip through a parser, and the
 * keys against Google Benchmark's documented ones).
 *
 * Google Benchmark's meaning, kept for every row:
 *   - iterations: how many times the timed code ran: the samples of the
 *     repetition (each one call);
 *   - real_time: wall (here CUDA-event) time per iteration; ours is the median
 *     of the samples, not GB's mean, and the row says so (real_time_statistic);
 *   - cpu_time: host CPU time per iteration. No row measures it: the samples
 *     are taken outside Google Benchmark's timed loop (bench_shim.cc runs
 *     one empty iteration with the median as its manual time, so GB's own
 *     cpu_time is that empty loop's), and the PyTorch rows time the GPU only.
 *     So cpu_time repeats real_time (compare.py's cpu column then agrees with
 *     its real one) and every timed row says so: cpu_time_measured: false;
 *   - a failed entry: error_occurred true and error_message; a skipped one:
 *     skipped true and skip_message (GB >= 1.8). Neither has a time, so GB's
 *     compare.py must never pair them with a timed baseline entry (it would
 *     read a time of 0 as a 100% speed-up): their `name` carries the suffix
 *     "/failed" or "/skipped" (GB's names carry suffixes, such as
 *     "/repeats:3", and compare.py pairs by name), while `run_name` stays the
 *     case's, which is what our gate matches.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ------------------------------------------------------------ writer */

void hb_json_init(hb_json *j, FILE *out, int indent)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->indent = indent;
}

static void newline(hb_json *j)
{
    if (!j->indent) return;
    fputc('\n', j->out);
    for (int i = 0; i < j->depth * j->indent; i++) fputc(' ', j->out);
}

/* Before any value: a comma and a new line inside arrays; nothing after a
 * key. A value in an object without a key is misuse. */
static bool before_value(hb_json *j)
{
    if (j->failed) return false;
    if (j->after_key) {
        j->after_key = false;
        return true;
    }
    if (j->depth > 0) {
        if (j->is_object[j->depth - 1]) {
            j->failed = true; /* a value where a key is needed */
            return false;
        }
        if (j->has_items[j->depth - 1]) fputc(',', j->out);
        j->has_items[j->depth - 1] = true;
        newline(j);
    }
    return true;
}

static void open_container(hb_json *j, bool object)
{
    if (!before_value(j)) return;
    if (j->depth >= HB_JSON_MAX_DEPTH) {
        j->failed = true;
        return;
    }
    fputc(object ? '{' : '[', j->out);
    j->is_object[j->depth] = object;
    j->has_items[j->depth] = false;
    j->depth++;
}

static void close_container(hb_json *j, bool object)
{
    if (j->failed) return;
    if (j->depth == 0 || j->is_object[j->depth - 1] != object || j->after_key) {
        j->failed = true;
        return;
    }
    j->depth--;
    if (j->has_items[j->depth]) newline(j);
    fputc(object ? '}' : ']', j->out);
}

void hb_json_object_begin(hb_json *j) { open_container(j, true); }
void hb_json_object_end(hb_json *j) { close_container(j, true); }
void hb_json_array_begin(hb_json *j) { open_container(j, false); }
void hb_json_array_end(hb_json *j) { close_container(j, false); }

static void write_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        default:
            if (*p < 0x20) fprintf(out, "\\u%04x", *p);
            else fputc(*p, out); /* UTF-8 passes through */
        }
    }
    fputc('"', out);
}

void hb_json_key(hb_json *j, const char *key)
{
    if (j->failed) return;
    if (j->depth == 0 || !j->is_object[j->depth - 1] || j->after_key || !key) {
        j->failed = true;
        return;
    }
    if (j->has_items[j->depth - 1]) fputc(',', j->out);
    j->has_items[j->depth - 1] = true;
    newline(j);
    write_escaped(j->out, key);
    fputs(j->indent ? ": " : ":", j->out);
    j->after_key = true;
}

void hb_json_string(hb_json *j, const char *s)
{
    if (!s) {
        hb_json_null(j);
        return;
    }
    if (before_value(j)) write_escaped(j->out, s);
}

void hb_json_number(hb_json *j, double v)
{
    if (!before_value(j)) return;
    if (!isfinite(v)) {
        fputs("null", j->out);
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) { /* an integer, exactly */
        fprintf(j->out, "%.0f", v);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, j->out);
}

void hb_json_int(hb_json *j, int64_t v)
{
    if (before_value(j)) fprintf(j->out, "%" PRId64, v);
}

void hb_json_bool(hb_json *j, bool v)
{
    if (before_value(j)) fputs(v ? "true" : "false", j->out);
}

void hb_json_null(hb_json *j)
{
    if (before_value(j)) fputs("null", j->out);
}

bool hb_json_finish(hb_json *j)
{
    if (j->depth != 0 || j->after_key) j->failed = true;
    if (!j->failed && j->indent) fputc('\n', j->out);
    if (fflush(j->out) != 0 || ferror(j->out)) j->failed = true;
    return !j->failed;
}

/* ------------------------------------------------------------ helpers */

void hb_gpu_key(const char *gpu_name, char *out, size_t cap)
{
    if (!cap) return;
    size_t k = 0;
    bool sep = false;
    for (const unsigned char *p = (const unsigned char *)gpu_name; *p && k + 1 < cap; p++) {
        if (isalnum(*p)) {
            if (sep && k > 0 && k + 2 < cap) out[k++] = '_';
            sep = false;
            out[k++] = (char)tolower(*p);
        } else {
            sep = true;
        }
    }
    out[k] = '\0';
    if (k == 0) snprintf(out, cap, "none");
}

const char *hb_status_name(hb_status s)
{
    switch (s) {
    case HB_STATUS_OK: return "ok";
    case HB_STATUS_FAILED: return "failed";
    case HB_STATUS_SKIPPED: return "skipped";
    }
    return "?";
}

void hb_entry_init(hb_entry *e)
{
    memset(e, 0, sizeof *e);
    e->threads = 1;
    e->iterations = 1;
    e->repetitions = 1;
    snprintf(e->time_unit, sizeof e->time_unit, "us");
    e->speedup_vs_torch_compile = NAN;
}

void hb_entry_counter(hb_entry *e, const char *name, double value)
{
    for (int i = 0; i < e->ncounters; i++)
        if (strcmp(e->counters[i].name, name) == 0) {
            e->counters[i].value = value;
            return;
        }
    if (e->ncounters >= HB_MAX_COUNTERS) return;
    hb_counter *c = &e->counters[e->ncounters++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->value = value;
}

double hb_entry_get_counter(const hb_entry *e, const char *name)
{
    for (int i = 0; i < e->ncounters; i++)
        if (strcmp(e->counters[i].name, name) == 0) return e->counters[i].value;
    return NAN;
}

bool hb_entry_same_item(const hb_entry *e, const char *suite, const char *case_name, const char *dtype,
                        const char *size)
{
    return strcmp(e->suite, suite) == 0 && strcmp(e->case_name, case_name) == 0 && strcmp(e->dtype, dtype) == 0 &&
           strcmp(e->size, size) == 0;
}

double hb_entries_median_time(const hb_entry *e, int n, const char *suite, const char *case_name, const char *dtype,
                              const char *size, const char *variant, double *spread)
{
    if (spread) *spread = NAN;
    size_t cap = (size_t)(n > 0 ? n : 1);
    double *t = malloc(cap * sizeof *t), *sp = spread ? malloc(cap * sizeof *sp) : NULL;
    if (!t || (spread && !sp)) {
        free(t);
        free(sp);
        return NAN;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        const hb_entry *x = &e[i];
        if (x->aggregate || x->status != HB_STATUS_OK || !(x->real_time > 0) || strcmp(x->variant, variant) != 0 ||
            !hb_entry_same_item(x, suite, case_name, dtype, size))
            continue;
        t[k] = x->real_time;
        if (sp) sp[k] = hb_entry_get_counter(x, "spread");
        k++;
    }
    double m = k ? hb_median(t, k) : NAN;
    if (spread && k) *spread = hb_median(sp, k);
    free(t);
    free(sp);
    return m;
}

static void kv_string(hb_json *j, const char *k, const char *v)
{
    hb_json_key(j, k);
    hb_json_string(j, v);
}

static void kv_string_nonempty(hb_json *j, const char *k, const char *v)
{
    if (v && v[0]) kv_string(j, k, v);
}

static void kv_number_finite(hb_json *j, const char *k, double v)
{
    if (!isfinite(v)) return;
    hb_json_key(j, k);
    hb_json_number(j, v);
}

static void kv_int(hb_json *j, const char *k, int64_t v)
{
    hb_json_key(j, k);
    hb_json_int(j, v);
}

/* ------------------------------------------------------------ the run file */

static void write_context(hb_json *j, const hb_context *c)
{
    const hb_host_info *h = &c->host;
    hb_json_key(j, "context");
    hb_json_object_begin(j);
    /* Google Benchmark's keys, in its order */
    kv_string(j, "date", h->date);
    kv_string(j, "host_name", h->host_name);
    kv_string(j, "executable", h->executable);
    kv_int(j, "num_cpus", h->num_cpus);
    hb_json_key(j, "mhz_per_cpu");
    hb_json_number(j, round(h->mhz_per_cpu));
    if (h->cpu_scaling >= 0) {
        hb_json_key(j, "cpu_scaling_enabled");
        hb_json_bool(j, h->cpu_scaling == 1);
    }
    hb_json_key(j, "caches");
    hb_json_array_begin(j);
    for (int i = 0; i < h->ncaches; i++) {
        hb_json_object_begin(j);
        kv_string(j, "type", h->caches[i].type);
        kv_int(j, "level", h->caches[i].level);
        kv_int(j, "size", h->caches[i].size);
        kv_int(j, "num_sharing", h->caches[i].num_sharing);
        hb_json_object_end(j);
    }
    hb_json_array_end(j);
    if (h->nload > 0) {
        hb_json_key(j, "load_avg");
        hb_json_array_begin(j);
        for (int i = 0; i < h->nload; i++) hb_json_number(j, h->load_avg[i]);
        hb_json_array_end(j);
    }
    kv_string(j, "library_build_type", h->library_build_type[0] ? h->library_build_type : "release");
    kv_int(j, "json_schema_version", 1); /* Google Benchmark's JSON schema */
    kv_string(j, "library_version", "fusebench " FUSEBENCH_VERSION);
    /* ours */
    kv_string(j, "schema", "fusebench-run/1");
    kv_string(j, "gpu_name", c->gpu_name[0] ? c->gpu_name : "none");
    kv_string(j, "gpu_key", c->gpu_key[0] ? c->gpu_key : "none");
    kv_string(j, "driver_version", c->driver_version);
    kv_string_nonempty(j, "driver_release", c->driver_release);
    kv_int(j, "sm_count", c->sm_count);
    kv_int(j, "l2_bytes", c->l2_bytes);
    kv_number_finite(j, "copy_bandwidth_gbps", c->copy_bandwidth_gbps);
    kv_number_finite(j, "sm_clock_mhz", c->sm_clock_mhz);
    kv_number_finite(j, "mem_clock_mhz", c->mem_clock_mhz);
    kv_string(j, "git_commit", c->git_commit[0] ? c->git_commit : "unknown");
    kv_string(j, "build_type", c->build_type);
    kv_string(j, "timing_mode", c->timing_mode[0] ? c->timing_mode : "cold");
    kv_string_nonempty(j, "cupti", c->cupti);
    kv_string_nonempty(j, "clock_sampling", c->clock_sampling);
    kv_int(j, "l2_flush_bytes", c->l2_flush_bytes);
    kv_int(j, "min_samples", c->min_samples);
    kv_number_finite(j, "max_spread", c->max_spread);
    kv_number_finite(j, "time_limit_s", c->time_limit_s);
    kv_string_nonempty(j, "nvrtc_version", c->nvrtc);
    kv_string_nonempty(j, "arch", c->arch);
    hb_json_object_end(j);
}

static void write_entry(hb_json *j, const hb_entry *e)
{
    hb_json_object_begin(j);
    if (e->status == HB_STATUS_OK || e->aggregate) {
        kv_string(j, "name", e->name);
    } else {
        char name[sizeof e->name + 16];
        snprintf(name, sizeof name, "%s/%s", e->name, e->status == HB_STATUS_FAILED ? "failed" : "skipped");
        kv_string(j, "name", name);
    }
    kv_int(j, "family_index", e->family_index);
    kv_int(j, "per_family_instance_index", e->per_family_instance_index);
    kv_string(j, "run_name", e->run_name);
    kv_string(j, "run_type", e->aggregate ? "aggregate" : "iteration");
    kv_int(j, "repetitions", e->repetitions);
    if (!e->aggregate) kv_int(j, "repetition_index", e->repetition_index);
    kv_int(j, "threads", e->threads);
    if (e->aggregate) {
        kv_string(j, "aggregate_name", e->aggregate_name);
        kv_string(j, "aggregate_unit", e->aggregate_unit[0] ? e->aggregate_unit : "time");
    }
    bool ok = e->status == HB_STATUS_OK;
    if (e->status == HB_STATUS_FAILED) { /* as Google Benchmark writes a run that failed */
        hb_json_key(j, "error_occurred");
        hb_json_bool(j, true);
        kv_string(j, "error_message", e->error);
    } else if (e->status == HB_STATUS_SKIPPED) { /* and one that was skipped */
        hb_json_key(j, "skipped");
        hb_json_bool(j, true);
        kv_string(j, "skip_message", e->error);
    }
    /* iterations: the calls timed (see the top of this file); none when not ok. */
    int64_t iterations = !ok ? 0 : (!e->aggregate && e->nsamples > 0 && e->samples_us) ? e->nsamples : e->iterations;
    kv_int(j, "iterations", iterations);
    hb_json_key(j, "real_time");
    hb_json_number(j, ok ? e->real_time : 0.0);
    hb_json_key(j, "cpu_time");
    hb_json_number(j, ok ? e->real_time : 0.0); /* not measured: see the top of this file */
    kv_string(j, "time_unit", e->time_unit[0] ? e->time_unit : "us");
    if (ok && !e->aggregate) kv_string(j, "real_time_statistic", "median");
    if (ok) {
        hb_json_key(j, "cpu_time_measured");
        hb_json_bool(j, false);
    }
    /* ours */
    kv_string(j, "suite", e->suite);
    kv_string(j, "case", e->case_name);
    kv_string(j, "variant", e->variant);
    kv_string(j, "dtype", e->dtype);
    kv_string(j, "size", e->size);
    for (int i = 0; i < e->ncounters; i++) kv_number_finite(j, e->counters[i].name, e->counters[i].value);
    kv_string_nonempty(j, "bytes_formula", e->bytes_formula);
    kv_string_nonempty(j, "kernel_source_hash", e->kernel_source_hash);
    kv_string(j, "status", hb_status_name(e->status));
    kv_string_nonempty(j, "error", e->error);
    if (e->status == HB_STATUS_OK && e->nsamples > 0 && e->samples_us) {
        hb_json_key(j, "samples_us");
        int saved = j->indent;
        j->indent = 0; /* one line: there can be a thousand */
        hb_json_array_begin(j);
        for (int i = 0; i < e->nsamples; i++) hb_json_number(j, e->samples_us[i]);
        hb_json_array_end(j);
        j->indent = saved;
    }
    if (e->nkernel_records > 0 && e->kernel_records) {
        hb_json_key(j, "kernel_records");
        hb_json_array_begin(j);
        for (int i = 0; i < e->nkernel_records; i++) {
            const hb_kernel_record *k = &e->kernel_records[i];
            hb_json_object_begin(j);
            kv_string(j, "name", k->name);
            hb_json_key(j, "grid");
            hb_json_array_begin(j);
            for (int d = 0; d < 3; d++) hb_json_int(j, k->grid[d]);
            hb_json_array_end(j);
            hb_json_key(j, "block");
            hb_json_array_begin(j);
            for (int d = 0; d < 3; d++) hb_json_int(j, k->block[d]);
            hb_json_array_end(j);
            kv_int(j, "registers", k->registers);
            kv_int(j, "static_shared", k->static_shared);
            kv_int(j, "dynamic_shared", k->dynamic_shared);
            kv_number_finite(j, "time_us", k->us);
            hb_json_object_end(j);
        }
        hb_json_array_end(j);
    }
    kv_number_finite(j, "speedup_vs_torch_compile", e->speedup_vs_torch_compile);
    hb_json_object_end(j);
}

bool hb_json_write_run(FILE *out, const hb_context *c, const hb_entry *entries, int n)
{
    hb_json j;
    hb_json_init(&j, out, 2);
    hb_json_object_begin(&j);
    write_context(&j, c);
    hb_json_key(&j, "benchmarks");
    hb_json_array_begin(&j);
    for (int i = 0; i < n; i++) write_entry(&j, &entries[i]);
    hb_json_array_end(&j);
    hb_json_object_end(&j);
    return hb_json_finish(&j);
}
