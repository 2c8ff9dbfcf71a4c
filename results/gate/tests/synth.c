/* synth.c -- see synth.h. */
#define _POSIX_C_SOURCE 200809L

#include "synth.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t synth_next(synth_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double synth_uniform(synth_rng *r)
{
    return ((double)(synth_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double synth_normal(synth_rng *r)
{
    double u1 = synth_uniform(r), u2 = synth_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void synth_defaults(synth_opts *o)
{
    memset(o, 0, sizeof *o);
    o->gpu_name = "NVIDIA H200";
    o->schema = "fusebench-run/1";
    o->commit = "abc1234";
    o->date = "2025-01-01T02:00:00+00:00";
    o->seed = 1;
    o->scale = 1.0;
    o->noise = 0.01;
    o->reps = 10;
    o->samples = 0;
    o->copy_gbps = 4000.0;
    o->time_unit = "us";
}

typedef struct synth_suite {
    const char *suite;
    const char *cases[3];
    const char *variants[4];
    const char *dtypes[2];
    const char *sizes[3];
    double bytes_per_elem;   /* bytes moved per element of the size product */
} synth_suite;

static const synth_suite synth_suites[] = {
    {"cross_entropy", {"fwd", "bwd"}, {"fuser", "reference", "torch_eager", "torch_compile"},
     {"bf16", "f32"}, {"2048x32768", "8192x32768", "16384x50304"}, 2.0},
    {"embedding", {"fwd", "bwd"}, {"fuser", "reference", "torch_compile"}, {"bf16"},
     {"8192x768", "32768x4096"}, 4.0},
    {"qkv_split", {"fwd"}, {"fuser", "torch_compile"}, {"bf16"}, {"12x1024x768", "16x1024x1600"}, 4.0},
};

static double synth_efficiency(const char *variant)
{
    if (strcmp(variant, "fuser") == 0) return 0.86;
    if (strcmp(variant, "reference") == 0) return 0.80;
    if (strcmp(variant, "torch_compile") == 0) return 0.62;
    return 0.35;
}

static double synth_size_product(const char *size)
{
    double p = 1;
    const char *s = size;
    while (*s) {
        char *end;
        double v = strtod(s, &end);
        if (end == s) break;
        p *= v;
        s = *end == 'x' ? end + 1 : end;
        if (end == s) break;
    }
    return p;
}

static double synth_unit_per_us(const char *unit)
{
    if (strcmp(unit, "ns") == 0) return 1e3;
    if (strcmp(unit, "ms") == 0) return 1e-3;
    if (strcmp(unit, "s") == 0) return 1e-6;
    return 1.0;
}

cJSON *synth_run(const synth_opts *o)
{
    synth_rng rng = {o->seed * 0x2545F4914F6CDD1Dull + 7};
    cJSON *root = cJSON_CreateObject();
    cJSON *ctx = cJSON_AddObjectToObject(root, "context");
    cJSON_AddStringToObject(ctx, "date", o->date);
    cJSON_AddStringToObject(ctx, "host_name", "synthetic");
    cJSON_AddStringToObject(ctx, "executable", "run_suite");
    cJSON_AddNumberToObject(ctx, "num_cpus", 16);
    cJSON_AddStringToObject(ctx, "library_build_type", "release");
    if (o->schema) cJSON_AddStringToObject(ctx, "schema", o->schema);
    cJSON_AddStringToObject(ctx, "gpu_name", o->gpu_name);
    char key[128];
    size_t n = 0;
    int sep = 0;
    for (const char *p = o->gpu_name; *p && n + 2 < sizeof key; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z')) {
            if (sep && n) key[n++] = '_';
            sep = 0;
            key[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        } else {
            sep = 1;
        }
    }
    key[n] = '\0';
    cJSON_AddStringToObject(ctx, "gpu_key", key);
    cJSON_AddStringToObject(ctx, "driver_version", "13.0");
    cJSON_AddNumberToObject(ctx, "sm_count", 132);
    cJSON_AddNumberToObject(ctx, "l2_bytes", 52428800);
    cJSON_AddNumberToObject(ctx, "copy_bandwidth_gbps", o->copy_gbps);
    cJSON_AddStringToObject(ctx, "git_commit", o->commit);
    cJSON_AddStringToObject(ctx, "build_type", "Release");
    cJSON_AddStringToObject(ctx, "timing_mode", "cold");
    cJSON *benches = cJSON_AddArrayToObject(root, "benchmarks");
    double unit = synth_unit_per_us(o->time_unit);

    for (size_t s = 0; s < sizeof synth_suites / sizeof synth_suites[0]; s++) {
        const synth_suite *su = &synth_suites[s];
        for (int c = 0; c < 3 && su->cases[c]; c++)
            for (int d = 0; d < 2 && su->dtypes[d]; d++)
                for (int z = 0; z < 3 && su->sizes[z]; z++)
                    for (int v = 0; v < 4 && su->variants[v]; v++) {
                        const char *variant = su->variants[v];
                        char name[256];
                        snprintf(name, sizeof name, "%s/%s/%s/%s/%s", su->suite, su->cases[c], variant,
                                 su->dtypes[d], su->sizes[z]);
                        if (o->only && fnmatch(o->only, name, 0) != 0) continue;
                        double elem = strcmp(su->dtypes[d], "f32") == 0 ? 2.0 : 1.0;
                        double bytes = synth_size_product(su->sizes[z]) * su->bytes_per_elem * elem *
                                       (strcmp(su->cases[c], "bwd") == 0 ? 1.5 : 1.0);
                        double gbps_model = o->copy_gbps * synth_efficiency(variant) *
                                            (1.0 - 0.15 / (1.0 + (double)z));
                        double t = bytes / gbps_model / 1e3; /* us */
                        if (!o->slow || fnmatch(o->slow, name, 0) == 0) t *= o->scale;
                        int fused = strcmp(variant, "fuser") == 0;
                        int kernels = fused ? 1 : (strcmp(variant, "torch_eager") == 0 ? 4 : 2);
                        if (fused) kernels += o->kernels_plus;
                        int failed = o->fail && fnmatch(o->fail, name, 0) == 0;
                        for (int r = 0; r < o->reps; r++) {
                            cJSON *e = cJSON_CreateObject();
                            cJSON_AddItemToArray(benches, e);
                            cJSON_AddStringToObject(e, "name", name);
                            cJSON_AddStringToObject(e, "run_name", name);
                            cJSON_AddStringToObject(e, "run_type", "iteration");
                            cJSON_AddNumberToObject(e, "repetitions", o->reps);
                            cJSON_AddNumberToObject(e, "repetition_index", r);
                            cJSON_AddNumberToObject(e, "threads", 1);
                            cJSON_AddNumberToObject(e, "iterations", o->samples ? o->samples : 1);
                            double rt = 0;
                            cJSON *samples = NULL;
                            if (!failed) {
                                if (o->samples > 0) {
                                    samples = cJSON_CreateArray();
                                    double *xs = malloc((size_t)o->samples * sizeof *xs);
                                    for (int k = 0; k < o->samples; k++) {
                                        xs[k] = t * (1.0 + o->noise * synth_normal(&rng));
                                        cJSON_AddItemToArray(samples, cJSON_CreateNumber(xs[k]));
                                        rt += xs[k];
                                    }
                                    rt /= o->samples;
                                    free(xs);
                                } else {
                                    rt = t * (1.0 + o->noise * synth_normal(&rng));
                                }
                            }
                            cJSON_AddNumberToObject(e, "real_time", rt * unit);
                            cJSON_AddNumberToObject(e, "cpu_time", rt * unit);
                            cJSON_AddStringToObject(e, "time_unit", o->time_unit);
                            cJSON_AddStringToObject(e, "suite", su->suite);
                            cJSON_AddStringToObject(e, "case", su->cases[c]);
                            cJSON_AddStringToObject(e, "variant", variant);
                            cJSON_AddStringToObject(e, "dtype", su->dtypes[d]);
                            cJSON_AddStringToObject(e, "size", su->sizes[z]);
                            cJSON_AddNumberToObject(e, "kernels", kernels);
                            cJSON_AddNumberToObject(e, "launches", kernels + (fused ? 0 : 1));
                            cJSON_AddNumberToObject(e, "segments", fused ? kernels : 0);
                            cJSON_AddNumberToObject(e, "bytes", bytes);
                            if (!failed) {
                                cJSON_AddNumberToObject(e, "GB/s", bytes / rt / 1e3);
                                cJSON_AddNumberToObject(e, "peak_fraction", bytes / rt / 1e3 / o->copy_gbps);
                                /* the floor: a copy of the bytes at the copy bandwidth, plus a launch */
                                double floor_us = 3.0 + bytes / o->copy_gbps / 1e3;
                                cJSON_AddNumberToObject(e, "floor_us", floor_us);
                                cJSON_AddNumberToObject(e, "floor_fraction", floor_us / rt);
                                cJSON_AddNumberToObject(e, "max_rel_error", 1e-6);
                                cJSON_AddStringToObject(e, "status", "ok");
                                if (samples) cJSON_AddItemToObject(e, "samples_us", samples);
                            } else {
                                cJSON_AddNumberToObject(e, "max_rel_error", 0.5);
                                cJSON_AddStringToObject(e, "status", "failed");
                                cJSON_AddStringToObject(e, "error", "max_rel_error 0.5 > 1e-2");
                            }
                        }
                        /* Google Benchmark's aggregates, which the gate ignores. */
                        if (!failed) {
                            cJSON *a = cJSON_CreateObject();
                            cJSON_AddItemToArray(benches, a);
                            char aname[300];
                            snprintf(aname, sizeof aname, "%s_median", name);
                            cJSON_AddStringToObject(a, "name", aname);
                            cJSON_AddStringToObject(a, "run_name", name);
                            cJSON_AddStringToObject(a, "run_type", "aggregate");
                            cJSON_AddStringToObject(a, "aggregate_name", "median");
                            cJSON_AddNumberToObject(a, "real_time", t * unit);
                            cJSON_AddStringToObject(a, "time_unit", o->time_unit);
                        }
                    }
    }
    return root;
}

char *synth_run_text(const synth_opts *o)
{
    cJSON *run = synth_run(o);
    char *text = cJSON_Print(run);
    cJSON_Delete(run);
    /* cJSON allocates with malloc by default; hand back a plain malloc'd copy. */
    if (!text) return NULL;
    size_t n = strlen(text) + 1;
    char *copy = malloc(n);
    if (copy) memcpy(copy, text, n);
    cJSON_free(text);
    return copy;
}

int synth_bump(cJSON *run, const char *name, const char *key, int delta)
{
    int changed = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(run, "benchmarks"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
        if (!cJSON_IsString(n) || strcmp(n->valuestring, name) != 0 || !cJSON_IsNumber(v)) continue;
        cJSON_SetNumberValue(v, v->valuedouble + delta);
        changed++;
    }
    return changed;
}
