/* run.c -- see run.h. */
#include "run.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Per-case working state while the entries are read. */
typedef struct gate_case_acc {
    size_t cap_samples;
    double *real_times;
    size_t n_real_times, cap_real_times;
    double *gbps;
    size_t n_gbps, cap_gbps;
    int ok_with_samples; /* passing repetitions that had samples_us */
    size_t cap_rep_medians;
} gate_case_acc;

static int gate_push(double **a, size_t *n, size_t *cap, double v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        double *na = realloc(*a, nc * sizeof *na);
        if (!na) return -1;
        *a = na;
        *cap = nc;
    }
    (*a)[(*n)++] = v;
    return 0;
}

static void gate_case_free(gate_case *c)
{
    free(c->name);
    free(c->suite);
    free(c->kase);
    free(c->variant);
    free(c->dtype);
    free(c->size);
    free(c->samples);
    free(c->rep_medians);
    free(c->kernels_id);
    free(c->error);
}

void gate_run_free(gate_run *run)
{
    if (!run) return;
    for (size_t i = 0; i < run->n_cases; i++) gate_case_free(&run->cases[i]);
    free(run->cases);
    cJSON_Delete(run->json);
    free(run->path);
    free(run->gpu_key_owned);
    memset(run, 0, sizeof *run);
    run->copy_bandwidth_gbps = NAN;
}

const gate_case *gate_run_find(const gate_run *run, const char *name)
{
    for (size_t i = 0; i < run->n_cases; i++)
        if (strcmp(run->cases[i].name, name) == 0) return &run->cases[i];
    return NULL;
}

void gate_gpu_key_from_name(const char *name, char *out, size_t outlen)
{
    size_t n = 0;
    int pending_sep = 0;
    if (!outlen) return;
    for (const unsigned char *p = (const unsigned char *)name; *p && n + 1 < outlen; p++) {
        if (isalnum(*p)) {
            if (pending_sep && n > 0 && n + 2 < outlen) out[n++] = '_';
            pending_sep = 0;
            out[n++] = (char)tolower(*p);
        } else {
            pending_sep = 1;
        }
    }
    out[n] = '\0';
}

/* Reads an optional string member. Returns 0 (value in *out, or NULL when
 * absent), or -1 when the member is there but is not a string. */
static int gate_opt_string(const cJSON *obj, const char *key, const char **out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsString(it) || !it->valuestring) return -1;
    *out = it->valuestring;
    return 0;
}

/* Reads an optional finite number. Returns 0 (1 in *present when there), -1
 * when the member is there but is not a finite number. */
#define GATE_MAX_COUNT 9007199254740992.0 /* 2^53 */

static int gate_opt_number(const cJSON *obj, const char *key, double *out, int *present)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    *present = 0;
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) return -1;
    *out = it->valuedouble;
    *present = 1;
    return 0;
}

static void gate_line_col(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* The case named name, created (with its accumulator) when new. */
static gate_case *gate_case_get(gate_run *run, gate_case_acc **accs, size_t *cap, const char *name,
                                size_t *index)
{
    for (size_t i = 0; i < run->n_cases; i++)
        if (strcmp(run->cases[i].name, name) == 0) {
            *index = i;
            return &run->cases[i];
        }
    if (run->n_cases == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        gate_case *ncases = realloc(run->cases, nc * sizeof *ncases);
        if (!ncases) return NULL;
        run->cases = ncases;
        gate_case_acc *nacc = realloc(*accs, nc * sizeof *nacc);
        if (!nacc) return NULL;
        *accs = nacc;
        *cap = nc;
    }
    gate_case *c = &run->cases[run->n_cases];
    memset(c, 0, sizeof *c);
    memset(&(*accs)[run->n_cases], 0, sizeof **accs);
    c->kernels = c->launches = c->segments = -1;
    c->bytes = -1;
    c->gbps = NAN;
    c->max_rel_error = NAN;
    c->speedup = NAN;
    c->name = gate_strdup(name);
    if (!c->name) return NULL;
    *index = run->n_cases++;
    return c;
}

static double gate_time_unit_us(const char *unit)
{
    if (!unit || strcmp(unit, "us") == 0) return 1.0;
    if (strcmp(unit, "ns") == 0) return 1e-3;
    if (strcmp(unit, "ms") == 0) return 1e3;
    if (strcmp(unit, "s") == 0) return 1e6;
    return NAN;
}

/* The kernels_id of an entry (run.h): kernel_source_hash, else a signature of
 * its kernel_records; NULL when it has neither (or memory ran out). Records
 * that are not objects of the documented shape count as absent. */
static char *gate_kernels_id(const cJSON *e)
{
    const char *hash = NULL;
    if (gate_opt_string(e, "kernel_source_hash", &hash) == 0 && hash && *hash) return gate_strdup(hash);
    const cJSON *recs = cJSON_GetObjectItemCaseSensitive(e, "kernel_records");
    if (!cJSON_IsArray(recs) || cJSON_GetArraySize(recs) == 0) return NULL;
    size_t cap = 256, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    buf[0] = '\0';
    const cJSON *r;
    cJSON_ArrayForEach(r, recs)
    {
        const char *name = NULL;
        if (!cJSON_IsObject(r) || gate_opt_string(r, "name", &name) || !name) continue;
        char part[512];
        int len = snprintf(part, sizeof part, "%s%s", n ? ";" : "", name);
        static const char *const keys[5] = {"grid", "block", "registers", "static_shared",
                                            "dynamic_shared"};
        for (int k = 0; k < 5 && len > 0 && (size_t)len < sizeof part; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, keys[k]);
            if (cJSON_IsArray(v)) {
                const cJSON *x;
                len += snprintf(part + len, sizeof part - (size_t)len, ":");
                cJSON_ArrayForEach(x, v) if (cJSON_IsNumber(x) && (size_t)len < sizeof part)
                    len += snprintf(part + len, sizeof part - (size_t)len, "%.0f,", x->valuedouble);
            } else if (cJSON_IsNumber(v) && (size_t)len < sizeof part) {
                len += snprintf(part + len, sizeof part - (size_t)len, ":%.0f", v->valuedouble);
            }
        }
        if (len < 0) continue;
        if ((size_t)len >= sizeof part) len = (int)sizeof part - 1;
        if (n + (size_t)len + 1 > cap) {
            while (n + (size_t)len + 1 > cap) cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + n, part, (size_t)len + 1);
        n += (size_t)len;
    }
    if (n == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

#define GATE_ENTRY_ERR(...)                                                                  \
    do {                                                                                     \
        char gate_what_[256];                                                                \
        snprintf(gate_what_, sizeof gate_what_, __VA_ARGS__);                                \
        gate_errf(err, errlen, "%s: benchmarks[%d]%s%s%s: %s", path, idx, ename ? " (" : "", \
                  ename ? ename : "", ename ? ")" : "", gate_what_);                         \
        goto fail;                                                                           \
    } while (0)

/* Reads one iteration entry into its case. Returns 0 or -1 (message in err). */
static int gate_read_entry(gate_run *run, gate_case_acc **accs, size_t *cap, const cJSON *e, int idx,
                           const char *path, char *err, size_t errlen)
{
    const char *ename = NULL, *rname = NULL, *status = NULL, *unit = NULL, *s = NULL;
    if (!cJSON_IsObject(e)) GATE_ENTRY_ERR("not an object");
    if (gate_opt_string(e, "name", &ename) || !ename || !*ename)
        GATE_ENTRY_ERR("has no \"name\" string");
    if (gate_opt_string(e, "run_name", &rname)) GATE_ENTRY_ERR("\"run_name\" is not a string");
    const char *key = rname && *rname ? rname : ename;
    if (gate_opt_string(e, "status", &status)) GATE_ENTRY_ERR("\"status\" is not a string");
    if (status && strcmp(status, "ok") && strcmp(status, "failed") && strcmp(status, "skipped"))
        GATE_ENTRY_ERR("\"status\" is \"%s\"; expected ok, failed or skipped", status);
    if (!status) { /* Google Benchmark's own forms */
        const cJSON *eo = cJSON_GetObjectItemCaseSensitive(e, "error_occurred");
        const cJSON *sk = cJSON_GetObjectItemCaseSensitive(e, "skipped");
        status = cJSON_IsTrue(eo) ? "failed" : cJSON_IsTrue(sk) ? "skipped" : "ok";
    }

    size_t ci;
    gate_case *c = gate_case_get(run, accs, cap, key, &ci);
    if (!c) GATE_ENTRY_ERR("out of memory");
    gate_case_acc *acc = &(*accs)[ci];
    c->reps++;

    static const char *const id_keys[5] = {"suite", "case", "variant", "dtype", "size"};
    char **id_fields[5] = {&c->suite, &c->kase, &c->variant, &c->dtype, &c->size};
    for (int k = 0; k < 5; k++) {
        if (gate_opt_string(e, id_keys[k], &s)) GATE_ENTRY_ERR("\"%s\" is not a string", id_keys[k]);
        if (!*id_fields[k] || (!**id_fields[k] && s && *s)) {
            free(*id_fields[k]);
            *id_fields[k] = gate_strdup(s ? s : "");
            if (!*id_fields[k]) GATE_ENTRY_ERR("out of memory");
        }
    }

    static const char *const count_keys[3] = {"kernels", "launches", "segments"};
    long *counts[3] = {&c->kernels, &c->launches, &c->segments};
    for (int k = 0; k < 3; k++) {
        double v;
        int present;
        /* Range-checked before the conversion: a double past LONG_MAX (1e300) cast
         * to long is undefined. 2^53 bounds the integers a JSON double holds exactly. */
        if (gate_opt_number(e, count_keys[k], &v, &present) ||
            (present && (v < 0 || v != floor(v) || v > GATE_MAX_COUNT)))
            GATE_ENTRY_ERR("\"%s\" is not a non-negative integer of at most 2^53", count_keys[k]);
        if (present && (long)v > *counts[k]) *counts[k] = (long)v;
    }
    double v;
    int present;
    if (gate_opt_number(e, "bytes", &v, &present) || (present && v < 0))
        GATE_ENTRY_ERR("\"bytes\" is not a non-negative number");
    if (present) c->bytes = v;
    if (gate_opt_number(e, "max_rel_error", &v, &present))
        GATE_ENTRY_ERR("\"max_rel_error\" is not a number");
    if (present && (isnan(c->max_rel_error) || v > c->max_rel_error)) c->max_rel_error = v;

    const char *error = NULL;
    if (gate_opt_string(e, "error", &error)) GATE_ENTRY_ERR("\"error\" is not a string");
    if (!error) gate_opt_string(e, "error_message", &error); /* Google Benchmark's own */
    if (!error) gate_opt_string(e, "skip_message", &error);
    if (error && *error && !c->error && strcmp(status, "ok") != 0) {
        c->error = gate_strdup(error);
        if (!c->error) GATE_ENTRY_ERR("out of memory");
    }

    if (strcmp(status, "failed") == 0) {
        c->n_failed++;
        return 0;
    }
    if (strcmp(status, "skipped") == 0) {
        c->n_skipped++;
        return 0;
    }
    c->n_ok++;

    if (gate_opt_string(e, "time_unit", &unit)) GATE_ENTRY_ERR("\"time_unit\" is not a string");
    double scale = gate_time_unit_us(unit);
    if (isnan(scale)) GATE_ENTRY_ERR("\"time_unit\" is \"%s\"; expected ns, us, ms or s", unit);
    if (gate_opt_number(e, "real_time", &v, &present) || !present || v < 0)
        GATE_ENTRY_ERR("status ok but no non-negative \"real_time\"");
    if (gate_push(&acc->real_times, &acc->n_real_times, &acc->cap_real_times, v * scale))
        GATE_ENTRY_ERR("out of memory");
    double rep_time = v * scale;
    if (!c->kernels_id) c->kernels_id = gate_kernels_id(e);
    if (gate_opt_number(e, "GB/s", &v, &present) || (present && v < 0))
        GATE_ENTRY_ERR("\"GB/s\" is not a non-negative number");
    if (present && gate_push(&acc->gbps, &acc->n_gbps, &acc->cap_gbps, v))
        GATE_ENTRY_ERR("out of memory");
    if (gate_opt_number(e, "speedup_vs_torch_compile", &v, &present) || (present && !(v > 0)))
        GATE_ENTRY_ERR("\"speedup_vs_torch_compile\" is not a number above 0");
    if (present) c->speedup = v;

    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(e, "samples_us");
    size_t first_sample = c->n_samples;
    if (samples && !cJSON_IsNull(samples)) {
        if (!cJSON_IsArray(samples)) GATE_ENTRY_ERR("\"samples_us\" is not an array");
        int k = 0, had = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, samples)
        {
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0)
                GATE_ENTRY_ERR("samples_us[%d] is not a non-negative number", k);
            if (gate_push(&c->samples, &c->n_samples, &acc->cap_samples, x->valuedouble))
                GATE_ENTRY_ERR("out of memory");
            k++;
            had = 1;
        }
        acc->ok_with_samples += had;
    }
    size_t nrep_samples = c->n_samples - first_sample;
    if (nrep_samples) {
        rep_time = gate_median(c->samples + first_sample, nrep_samples);
        if (!c->min_rep_samples || nrep_samples < c->min_rep_samples) c->min_rep_samples = nrep_samples;
    }
    if (gate_push(&c->rep_medians, &c->n_reps_ok, &acc->cap_rep_medians, rep_time))
        GATE_ENTRY_ERR("out of memory");
    return 0;
fail:
    return -1;
}

int gate_run_parse(gate_run *run, const char *text, size_t len, const char *path, char *err,
                   size_t errlen)
{
    memset(run, 0, sizeof *run);
    run->copy_bandwidth_gbps = NAN;
    run->gpu_name = run->gpu_key = run->git_commit = run->date = run->timing_mode = "";
    gate_case_acc *accs = NULL;
    size_t cap = 0;
    int idx = -1;

    run->path = gate_strdup(path ? path : "(run)");
    if (!run->path) return gate_errf(err, errlen, "out of memory");
    path = run->path;

    const char *end = NULL;
    /* The length given to cJSON counts the NUL, which it wants to see after the
     * value when it rejects trailing garbage. */
    run->json = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    if (!run->json) {
        int line = 0, col = 0;
        if (end && end >= text && end <= text + len) gate_line_col(text, end, &line, &col);
        if (len == 0)
            gate_errf(err, errlen, "%s: empty file, not a run (JSON)", path);
        else if (line)
            gate_errf(err, errlen, "%s:%d:%d: not valid JSON", path, line, col);
        else
            gate_errf(err, errlen, "%s: not valid JSON", path);
        goto fail;
    }
    if (!cJSON_IsObject(run->json)) {
        gate_errf(err, errlen, "%s: the top level is not a JSON object; not a fusebench run", path);
        goto fail;
    }
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(run->json, "context");
    if (!cJSON_IsObject(ctx)) {
        gate_errf(err, errlen, "%s: no \"context\" object; not a fusebench run", path);
        goto fail;
    }
    const char *schema = NULL;
    if (gate_opt_string(ctx, "schema", &schema) || !schema) {
        gate_errf(err, errlen,
                  "%s: schema mismatch: context.schema is missing (expected \"%s\"); not a "
                  "fusebench run, or one from before the schema",
                  path, GATE_RUN_SCHEMA);
        goto fail;
    }
    if (strcmp(schema, GATE_RUN_SCHEMA) != 0) {
        gate_errf(err, errlen, "%s: schema mismatch: context.schema is \"%s\", this gate reads \"%s\"",
                  path, schema, GATE_RUN_SCHEMA);
        goto fail;
    }
    static const char *const ctx_keys[5] = {"gpu_name", "gpu_key", "git_commit", "date",
                                            "timing_mode"};
    const char **ctx_fields[5] = {&run->gpu_name, &run->gpu_key, &run->git_commit, &run->date,
                                  &run->timing_mode};
    for (int k = 0; k < 5; k++) {
        const char *s = NULL;
        if (gate_opt_string(ctx, ctx_keys[k], &s)) {
            gate_errf(err, errlen, "%s: context.%s is not a string", path, ctx_keys[k]);
            goto fail;
        }
        if (s) *ctx_fields[k] = s;
    }
    if (!*run->gpu_name) {
        gate_errf(err, errlen, "%s: context.gpu_name is missing (\"none\" when there is no GPU)", path);
        goto fail;
    }
    if (!*run->gpu_key) {
        char key[128];
        gate_gpu_key_from_name(run->gpu_name, key, sizeof key);
        run->gpu_key_owned = gate_strdup(*key ? key : "unknown");
        if (!run->gpu_key_owned) {
            gate_errf(err, errlen, "out of memory");
            goto fail;
        }
        run->gpu_key = run->gpu_key_owned;
    }
    double bw;
    int present;
    if (gate_opt_number(ctx, "copy_bandwidth_gbps", &bw, &present)) {
        gate_errf(err, errlen, "%s: context.copy_bandwidth_gbps is not a number", path);
        goto fail;
    }
    if (present) run->copy_bandwidth_gbps = bw;

    const cJSON *benches = cJSON_GetObjectItemCaseSensitive(run->json, "benchmarks");
    if (!cJSON_IsArray(benches)) {
        gate_errf(err, errlen, "%s: no \"benchmarks\" array; not a fusebench run", path);
        goto fail;
    }
    const cJSON *e;
    idx = 0;
    cJSON_ArrayForEach(e, benches)
    {
        const char *run_type = NULL;
        if (cJSON_IsObject(e) && gate_opt_string(e, "run_type", &run_type)) {
            gate_errf(err, errlen, "%s: benchmarks[%d]: \"run_type\" is not a string", path, idx);
            goto fail;
        }
        if (!run_type || strcmp(run_type, "iteration") == 0)
            if (gate_read_entry(run, &accs, &cap, e, idx, path, err, errlen)) goto fail;
        idx++;
    }

    /* Finish each case: choose its samples (see run.h), its GB/s. */
    for (size_t i = 0; i < run->n_cases; i++) {
        gate_case *c = &run->cases[i];
        gate_case_acc *acc = &accs[i];
        if (c->n_ok > 0 && acc->ok_with_samples == c->n_ok) {
            c->source = GATE_FROM_SAMPLES;
        } else {
            free(c->samples);
            c->samples = acc->real_times;
            c->n_samples = acc->n_real_times;
            acc->real_times = NULL;
            c->source = GATE_FROM_REAL_TIME;
        }
        if (acc->n_gbps) c->gbps = gate_median(acc->gbps, acc->n_gbps);
        free(acc->real_times);
        free(acc->gbps);
    }
    free(accs);
    return 0;

fail:
    for (size_t i = 0; i < run->n_cases && accs; i++) {
        free(accs[i].real_times);
        free(accs[i].gbps);
    }
    free(accs);
    gate_run_free(run);
    return -1;
}

int gate_run_load(gate_run *run, const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    memset(run, 0, sizeof *run);
    run->copy_bandwidth_gbps = NAN;
    char *text = gate_read_file(path, &len, err, errlen);
    if (!text) return -1;
    int rc = gate_run_parse(run, text, len, path, err, errlen);
    free(text);
    return rc;
}
